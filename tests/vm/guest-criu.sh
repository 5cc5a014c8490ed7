#!/bin/bash
# In-VM tests: checkpoint and restore through CRIU (issue 28). Debian 12's criu 3.17 works on its
# own 6.1 kernel, booted here (it does not on the host's newer kernel: tests/integration/
# checkpoint.bats checks the clear error there). Each container keeps its counter in a tmpfs of
# its own (CRIU carries the tmpfs content in the images), read back with exec.
# shellcheck source=tests/vm/guest-lib.sh
. "$CMVM_REPO/tests/vm/guest-lib.sh"

IMG=/run/cmvm-criu
mkdir -p "$IMG"
# CRIU probes TCP repair over loopback at start-up (the guest's own lo is down until now).
ip link set lo up
# tests/containerd/containerd.bash uses process substitution (/dev/fd): the guest's devtmpfs lacks it.
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
echo "# kernel $(uname -r), $(criu --version 2>&1 | head -n 1)"

criu_usable() {
  local f
  f=$(cm features) || return 1
  echo "$f" | jq -e '.annotations["run.codemode.checkpoint.enabled"] == "true"' >/dev/null ||
    { echo "$f" | jq '.annotations'; return 1; }
  "$CODEMODE" --version | grep -q '^criu: /'
}
t "features says CRIU works on this kernel, --version names criu" criu_usable

# run_piped NAME / restore_piped NAME RESTORE-ARGS…: stdout and stderr an anonymous pipe to a cat
# writing $IMG/NAME.out (its stderr not t's capture pipe, which it would hold open).
run_piped() {
  cm run --detach -b "$BUNDLES/$1" "$1" </dev/null > >(cat >"$IMG/$1.out" 2>/dev/null) 2>&1
}
restore_piped() {
  local name=$1
  shift
  cm restore "$@" "$name" </dev/null > >(cat >"$IMG/$name.rout" 2>/dev/null) 2>"$IMG/$name.err" ||
    { cat "$IMG/$name.err"; return 1; }
}

# On a failure: CRIU's own error lines (its log's tail is mostly its clean-up).
log_errors() { grep -v 'Diag module' "$1" | grep -B 10 -m 1 'Error'; }

# counter NAME: a container counting into /data/n (a tmpfs), five times a second.
counter() {
  bundle "$1" sh -c 'i=0; while :; do i=$((i+1)); echo $i >/data/n; sleep 0.2; done' >/dev/null
  cfg "$1" '.mounts += [{destination: "/data", type: "tmpfs", source: "tmpfs", options: ["nosuid", "nodev"]}]'
}
count_of() { cm exec "$1" cat /data/n 2>/dev/null; }
# grows ID FROM: the counter of ID gets past FROM.
grows() { local n; n=$(count_of "$1") && [ -n "$n" ] && [ "$n" -gt "$2" ]; }

checkpoint_restore() {
  counter cr
  # A createRuntime hook: at restore it runs again, with the restored init's pid in its state.
  cfg cr '.hooks.createRuntime = [{path: "/bin/sh", args: ["sh", "-c", "cat >/run/cmvm-criu/hook-state"]}]'
  run_piped cr || return 1
  wait_for 10 grows cr 3 || return 1
  local after pid
  cm checkpoint --image-path $IMG/cr --work-path $IMG/cr-work cr || { log_errors $IMG/cr-work/dump.log; return 1; }
  # Dumped without --leave-running: the container is gone, as with runc.
  cm state cr >/dev/null 2>&1 && { echo "cr still exists after checkpoint"; return 1; }
  restore_piped cr --detach --image-path $IMG/cr --work-path $IMG/cr-work --pid-file $IMG/cr.pid -b $BUNDLES/cr ||
    { log_errors $IMG/cr-work/restore.log; return 1; }
  [ "$(state_of cr)" = running ] || { cm state cr; return 1; }
  pid=$(pid_of cr)
  [ "$pid" = "$(cat $IMG/cr.pid)" ] || { echo "state pid $pid, pid file $(cat $IMG/cr.pid)"; return 1; }
  # The counter goes on from where it was (the tmpfs came back with it), in its own cgroup.
  after=$(count_of cr) || return 1
  [ "$after" -ge 3 ] || { echo "counter restarted: $after"; return 1; }
  wait_for 10 grows cr "$after" || return 1
  grep -qx "$pid" $CG/cmvm/cr/cgroup.procs || { echo "pid $pid not in $CG/cmvm/cr"; cat $CG/cmvm/cr/cgroup.procs; return 1; }
  jq -e --argjson p "$pid" '.pid == $p and .id == "cr"' $IMG/hook-state >/dev/null || { cat $IMG/hook-state; return 1; }
}
t "checkpoint then restore: the counter goes on, state/pid file/cgroup name the restored init" checkpoint_restore

restored_lifecycle() {
  local pid
  pid=$(pid_of cr)
  [ -n "$pid" ] && [ "$pid" = "$(cat $IMG/cr.pid 2>/dev/null)" ] || { echo "cr is not the restored container"; return 1; }
  cm ps --format json cr | jq -e --argjson p "$pid" 'index($p) != null' >/dev/null || { cm ps --format json cr; return 1; }
  cm kill cr KILL || return 1
  wait_for 10 sh -c "[ \"\$($CODEMODE --root $STATE state cr | jq -r .status)\" = stopped ]" || return 1
  cm delete cr || return 1
  ! cm state cr >/dev/null 2>&1 && [ ! -d $CG/cmvm/cr ]
}
t "a restored container: ps, kill and delete work on it" restored_lifecycle
cleanup_container cr

new_id() {
  counter orig
  run_piped orig || return 1
  wait_for 10 grows orig 3 || return 1
  cm checkpoint --leave-running --image-path $IMG/orig orig || { log_errors $IMG/orig/dump.log; return 1; }
  [ "$(state_of orig)" = running ] || { echo "orig is $(state_of orig) after --leave-running"; return 1; }
  # The copy: its own bundle (its own cgroup), its own id.
  mkdir -p $BUNDLES/copy
  jq '.linux.cgroupsPath = "/cmvm/copy"' $BUNDLES/orig/config.json >$BUNDLES/copy/config.json
  restore_piped copy -d --image-path $IMG/orig -b $BUNDLES/copy || { log_errors $IMG/orig/restore.log; return 1; }
  [ "$(state_of copy)" = running ] && [ "$(state_of orig)" = running ] || return 1
  [ "$(pid_of copy)" != "$(pid_of orig)" ] || return 1
  grep -qx "$(pid_of copy)" $CG/cmvm/copy/cgroup.procs || { echo "copy not in its cgroup"; return 1; }
  local n
  n=$(count_of copy) && [ "$n" -ge 3 ] && wait_for 10 grows copy "$n" || { echo "copy counter: $n"; return 1; }
  cm delete -f copy && cm delete -f orig
}
t "checkpoint --leave-running, restore into a new id beside the original" new_id
cleanup_container copy
cleanup_container orig

pre_dump_chain() {
  counter pre
  run_piped pre || return 1
  wait_for 10 grows pre 3 || return 1
  cm checkpoint --pre-dump --image-path $IMG/pre/1 pre || { log_errors $IMG/pre/1/pre-dump.log; return 1; }
  [ "$(state_of pre)" = running ] || { echo "pre-dump stopped it"; return 1; }
  cm checkpoint --pre-dump --image-path $IMG/pre/2 --parent-path ../1 pre || { log_errors $IMG/pre/2/pre-dump.log; return 1; }
  cm checkpoint --image-path $IMG/pre/3 --parent-path ../2 pre || { log_errors $IMG/pre/3/dump.log; return 1; }
  # The final dump only holds what changed: its pages are linked to the parent's.
  [ -L $IMG/pre/3/parent ] || { ls -la $IMG/pre/3; return 1; }
  restore_piped pre -d --image-path $IMG/pre/3 -b $BUNDLES/pre || { log_errors $IMG/pre/3/restore.log; return 1; }
  local n
  n=$(count_of pre) && [ "$n" -ge 3 ] && wait_for 10 grows pre "$n" || { echo "counter: $n"; return 1; }
  cm delete -f pre
}
t "a pre-dump chain (--pre-dump, then checkpoint --parent-path) restores" pre_dump_chain
cleanup_container pre

# Both ends of a TCP connection in the container (its own network namespace): a sender writes a
# line every 0.2 s into nc, the listener appends them to /data/got (its stdin a pipe that stays
# open: busybox's nc -l hangs up when its stdin ends).
tcp_bundle() {
  bundle tcp sh -c 'sleep 100000 | nc -l -p 5000 >/data/got & sleep 1; i=0; while :; do i=$((i+1)); echo $i; sleep 0.2; done | nc 127.0.0.1 5000' >/dev/null
  cfg tcp '.mounts += [{destination: "/data", type: "tmpfs", source: "tmpfs", options: ["nosuid", "nodev"]}]'
}
got_lines() { cm exec tcp wc -l /data/got 2>/dev/null | awk '{print $1}'; }
got_grows() { local n; n=$(got_lines) && [ -n "$n" ] && [ "$n" -gt "$1" ]; }

tcp_established() {
  tcp_bundle
  run_piped tcp || return 1
  wait_for 15 got_grows 3 || return 1
  # Without --tcp-established CRIU refuses, and says why (its log quoted).
  local out
  out=$(cm checkpoint --image-path $IMG/tcp-no tcp 2>&1) && { echo "dumped an established connection without the flag"; return 1; }
  [[ $out == *"criu dump failed"*"Error"* ]] || { echo "$out"; return 1; }
  [ "$(state_of tcp)" = running ] || { echo "a failed dump stopped it"; return 1; }
  cm checkpoint --tcp-established --image-path $IMG/tcp tcp || { log_errors $IMG/tcp/dump.log; return 1; }
  restore_piped tcp -d --tcp-established --image-path $IMG/tcp -b $BUNDLES/tcp || { log_errors $IMG/tcp/restore.log; return 1; }
  local n
  n=$(got_lines) && [ "$n" -ge 3 ] && wait_for 10 got_grows "$n" || { echo "lines: $n"; return 1; }
  cm delete -f tcp
}
t "a TCP connection (--tcp-established) survives checkpoint and restore; refused without the flag" tcp_established
cleanup_container tcp

# containerd with codemode as the runc binary: `ctr containers checkpoint --task` (the shim runs
# `codemode checkpoint --image-path … --work-path …`), then `ctr containers restore --live` (the
# shim runs `codemode restore --detach --pid-file … --bundle …`). A private containerd (tests/
# containerd/containerd.bash), its state under /run.
through_containerd() {
  command -v containerd >/dev/null && command -v ctr >/dev/null || { echo "containerd is not installed"; return 1; }
  # shellcheck source=tests/containerd/containerd.bash
  export CM_REPO=$CMVM_REPO
  . "$CMVM_REPO/tests/containerd/containerd.bash"
  # Each ctr call bounded: a hang is a failure with its output, not the whole boot's timeout.
  export CTR_TIMEOUT=30
  ctrd_start /run/cmvm-ctrd || { echo "ctrd_start failed"; tail -n 20 /run/cmvm-ctrd/containerd.log; ctrd_stop; return 1; }
  local id=ctrcr rc=0 n shim_root=/run/cmvm-ctrd/codemode-root
  cctr run -d --runc-binary "$CODEMODE" --mount type=tmpfs,src=tmpfs,dst=/data,options=nosuid:nodev "$CTR_IMAGE" $id \
    sh -c 'i=0; while :; do i=$((i+1)); echo $i >/data/n; sleep 0.2; done' >/dev/null || { echo "ctr run failed"; rc=1; }
  ctr_count() { cctr tasks exec --exec-id "e$RANDOM" $id cat /data/n 2>/dev/null; }
  ctr_grows() { local c; c=$(ctr_count) && [ -n "$c" ] && [ "$c" -gt "$1" ]; }
  [ $rc = 0 ] && { wait_for 15 ctr_grows 3 || rc=1; }
  echo "# ctr: counting" >/dev/ttyS0
  [ $rc = 0 ] && { cctr containers checkpoint --task $id cmvm/ctrcr:1 2>&1 | tail -n 3; [ "${PIPESTATUS[0]}" = 0 ] || rc=1; }
  if [ $rc = 0 ]; then
    cctr tasks kill -s KILL $id >/dev/null 2>&1
    sleep 1
    cctr tasks delete $id >/dev/null 2>&1
    cctr containers delete $id || rc=1
  fi
  echo "# ctr: checkpointed, rc $rc" >/dev/ttyS0
  [ $rc = 0 ] && { cctr containers restore --live $id cmvm/ctrcr:1 >/run/cmvm-ctrd/restore.out 2>&1 || rc=1; }
  sed 's/^/# ctr restore: /' /run/cmvm-ctrd/restore.out | tail -n 5 >/dev/ttyS0
  [ $rc = 0 ] && { cctr tasks start -d $id >/dev/null 2>&1 || true; }
  echo "# ctr: restored, rc $rc" >/dev/ttyS0
  if [ $rc = 0 ]; then
    cctr tasks ls
    n=$(ctr_count)
    [ -n "$n" ] && [ "$n" -ge 3 ] && wait_for 10 ctr_grows "$n" || { echo "restored counter: '$n'"; rc=1; }
  fi
  [ $rc = 0 ] || { grep -v 'loading plugin' /run/cmvm-ctrd/containerd.log | tail -n 8; }
  ctrd_stop
  return $rc
}
t "through containerd: ctr containers checkpoint --task, then restore --live, the counter goes on" through_containerd

# Docker with codemode as a runtime: `docker checkpoint create` (dockerd asks containerd, whose
# shim runs `codemode checkpoint`), then `docker start --checkpoint` (the shim runs `codemode
# restore`). A private dockerd (tests/docker/dockerd.bash), --experimental as Docker 20.10's
# checkpoints need; its directories under /run: the guest's / is an overlayfs, which overlay2
# cannot stack on, /run is a tmpfs.
through_docker() {
  command -v dockerd >/dev/null && command -v docker >/dev/null || { echo "docker.io is not installed"; return 1; }
  export CM_REPO=$CMVM_REPO DK_DAEMON_ARGS=--experimental DK_TIMEOUT=60
  # shellcheck source=tests/docker/dockerd.bash
  . "$CMVM_REPO/tests/docker/dockerd.bash"
  dockerd_start /run/cmvm-dk || { echo "dockerd_start failed"; tail -n 20 /run/cmvm-dk/dockerd.log; dockerd_stop; return 1; }
  local id=dkcr rc=0 before after
  # The counter's line starts with a token drawn when the process starts: a restored process keeps
  # it, a fresh start (a restore quietly replaced by a new run) would draw another.
  dk_count() { dk exec $id cat /data/n 2>/dev/null; }
  dk_grows() { local c; c=$(dk_count) && [ -n "$c" ] && [ "${c#* }" -gt "$1" ]; }
  dk run -d --name $id --runtime=codemode --network none --tmpfs /data cm-busybox \
    sh -c 'tok=$RANDOM$RANDOM; i=0; while :; do i=$((i+1)); echo "$tok $i" >/data/n; sleep 0.2; done' >/dev/null ||
    { echo "docker run failed"; rc=1; }
  [ $rc = 0 ] && { [ "$(dk inspect -f '{{.HostConfig.Runtime}}' $id)" = codemode ] || { echo "not run by codemode"; rc=1; }; }
  [ $rc = 0 ] && { wait_for 15 dk_grows 3 || rc=1; }
  [ $rc = 0 ] && { before=$(dk_count) && dk checkpoint create $id cp1 || rc=1; }
  # Without --leave-running the container stops, as with runc; CRIU's images are in Docker's store.
  [ $rc = 0 ] && { [ "$(dk inspect -f '{{.State.Running}}' $id)" = false ] || { echo "$id still running after checkpoint"; rc=1; }; }
  [ $rc = 0 ] && { dk checkpoint ls $id | grep -qw cp1 || { dk checkpoint ls $id; rc=1; }; }
  [ $rc = 0 ] && { ls /run/cmvm-dk/data/containers/*/checkpoints/cp1/inventory.img >/dev/null || rc=1; }
  echo "# docker: checkpointed, rc $rc" >/dev/ttyS0
  [ $rc = 0 ] && { dk start --checkpoint cp1 $id || rc=1; }
  if [ $rc = 0 ]; then
    # Same token, counting on from at least where it was before the dump.
    wait_for 10 dk_grows "${before#* }" || rc=1
    after=$(dk_count)
    echo "# docker: before the checkpoint '$before', after the restore '$after'" >/dev/ttyS0
    [ "${after%% *}" = "${before%% *}" ] || { echo "not the checkpointed process: '$before' then '$after'"; rc=1; }
  fi
  [ $rc = 0 ] && { dk rm -f $id >/dev/null || rc=1; }
  [ $rc = 0 ] || { grep -iE 'error|criu|checkpoint|restore' /run/cmvm-dk/dockerd.log | tail -n 12; }
  dockerd_stop
  # Nothing of it is left: no process, no mount, no cgroup.
  pgrep -f /run/cmvm-dk/ && { echo "processes left"; rc=1; }
  grep -q /run/cmvm-dk /proc/self/mountinfo && { echo "mounts left"; rc=1; }
  [ -d $CG/docker ] && { echo "cgroup $CG/docker left"; rc=1; }
  return $rc
}
t "through Docker: docker checkpoint create, then docker start --checkpoint, the counter goes on" through_docker

t "nothing is left behind (cgroups, state)" nothing_left
exit 0
