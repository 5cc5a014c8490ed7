#!/bin/bash
# In-VM tests of the ci profile's delegated cgroup v2 subtree (issue 26, src/cgroup/delegate.c):
# a `codemode-run --profile ci --host` job whose cgroup is given to the job's root the way
# systemd delegates, the host's podman nested in it with cgroups enabled, a nested
# `podman run --memory` limit below the job's own, and nothing left of any of it after the job.
# Its own variant (tests/vm/run.sh ci): the ci profile needs Linux 6.3 or later (idmapped tmpfs),
# which run.sh boots for it (Debian 12's 6.12 kernel package). Under TCG a nested podman run
# takes several seconds.
# shellcheck source=tests/vm/guest-lib.sh
. "$CMVM_REPO/tests/vm/guest-lib.sh"
CODEMODE_RUN=$(dirname "$CODEMODE")/codemode-run
CI_ROOT=/run/cmvm-ci-state
# Under /tmp: the profile refuses writable binds from /run (a host system tree).
W=/tmp/cmvm-ci
# codemode-run's cgroups are /codemode/<id>: the job's parent.
JOBS=$CG/codemode
echo "# kernel $(uname -r), controllers: $(cat $CG/cgroup.controllers)"

mkdir -p "$W/ws" "$CI_ROOT"
cat >"$W/img.json" <<JSON
{"format": "docker-archive", "images": [{"tag": "bb", "platforms": [{"arch": "amd64",
  "layers": [[{"from_dir": "$TEMPLATE/rootfs"}]], "config": {"Cmd": ["sh"]},
  "history": [{"created": "2026-01-01T00:00:00Z", "created_by": "busybox rootfs"}]}]}]}
JSON
python3 "$CMVM_REPO/tests/image/mkimage.py" "$W/img.json" "$W/ws/img.tar"
# The workspace: an unprivileged owner's (a writable bind of host root's is refused).
chown -R 65534:65534 "$W/ws"

# ci_start ID [codemode-run options…] -- SCRIPT: the job in the background (its pid in CI_PID,
# its output in $W/out-ID), the workspace at /ws.
ci_start() {
  local id=$1 opts=()
  shift
  while [ "$1" != -- ]; do opts+=("$1"); shift; done
  rm -f "$W/ws/ready" "$W/ws/checked"
  "$CODEMODE_RUN" --root "$CI_ROOT" --id "$id" --profile ci --host --mount "$W/ws:/ws:rw" --cwd /ws "${opts[@]}" \
    -- sh -c "$2" </dev/null >"$W/out-$id" 2>&1 &
  CI_PID=$!
}

# owner FILE: its host uid.
owner() { stat -c %u "$1"; }

# No cgroup below the jobs' parent, no state, no process of the range left.
ci_nothing_left() {
  local left
  wait_for 30 sh -c "[ -z \"\$(find $JOBS -mindepth 1 -type d 2>/dev/null)\" ]" >/dev/null || {
    echo "cgroups left below $JOBS: $(find $JOBS -mindepth 1 -type d)"
    return 1
  }
  wait_for 30 sh -c "[ -z \"\$(ls -A $CI_ROOT)\" ]" >/dev/null || { echo "state left: $(ls -A $CI_ROOT)"; return 1; }
  left=$(grep -l "^0::/codemode/" /proc/[0-9]*/cgroup 2>/dev/null)
  [ -z "$left" ] || { echo "processes left in job cgroups: $left"; return 1; }
}

delegated() {
  local d=$JOBS/ci1 r nested out rc=0
  ci_start ci1 -- 'cat /proc/self/uid_map >uid_map; cat /proc/self/cgroup
    echo 1 >/sys/fs/cgroup/memory.max 2>/dev/null && echo memory.max-written || echo memory.max-refused
    echo 1 >/sys/fs/cgroup/pids.max 2>/dev/null && echo pids.max-written || echo pids.max-refused
    echo 100 >/sys/fs/cgroup/cgroup.max.descendants 2>/dev/null && echo max.descendants-written || echo max.descendants-refused
    grep " /sys/fs/cgroup " /proc/self/mountinfo | grep -q " rw," && echo cgroupfs-rw
    grep "^cgroups" /etc/containers/containers.conf.d/zz-codemode-ci.conf
    podman load -q -i img.tar >/dev/null &&
      podman run -d --name n1 --memory 64m --network none localhost/test/bb:latest sleep 1000 >/dev/null &&
      echo "nested memory.max $(podman exec n1 cat /sys/fs/cgroup/memory.max)" &&
      touch ready && while [ ! -e checked ]; do sleep 0.2; done'
  wait_for 400 test -e "$W/ws/ready" >/dev/null || { cat "$W/out-ci1"; kill "$CI_PID"; return 1; }
  r=$(awk 'NR == 1 {print $2}' "$W/ws/uid_map")
  echo "job range from $r; $d:"
  ls -ln "$d" | head -12
  # What is the job's root's, and what stays host root's.
  for f in "$d" "$d/cgroup.procs" "$d/cgroup.threads" "$d/cgroup.subtree_control" "$d/job" "$d/job/cgroup.procs"; do
    [ "$(owner "$f")" = "$r" ] || { echo "$f: owner $(owner "$f"), want $r"; rc=1; }
  done
  for f in "$d/memory.max" "$d/memory.swap.max" "$d/pids.max" "$d/cpu.max" "$d/cgroup.max.depth" \
    "$d/cgroup.max.descendants" "$d/cgroup.freeze" "$d/cgroup.kill" "$d/cgroup.type"; do
    [ "$(owner "$f")" = 0 ] || { echo "$f: owner $(owner "$f"), want 0"; rc=1; }
  done
  expect "$d/memory.max" 4294967296 || rc=1
  expect "$d/pids.max" 4096 || rc=1
  expect "$d/cgroup.max.descendants" 1024 || rc=1
  # No process in the delegated cgroup itself; the job's in its leaf; controllers handed down.
  [ -z "$(cat "$d/cgroup.procs")" ] || { echo "processes in $d itself: $(cat "$d/cgroup.procs")"; rc=1; }
  [ -n "$(cat "$d/job/cgroup.procs")" ] || { echo "no process in $d/job"; rc=1; }
  for c in memory pids cpu; do grep -qw "$c" "$d/cgroup.subtree_control" || { echo "$c not handed down"; rc=1; }; done
  # The nested container's cgroup: below the job's, outside its leaf, with podman's limit.
  nested=$(grep -lx 67108864 $(find "$d" -mindepth 2 -name memory.max ! -path "$d/job/*") 2>/dev/null)
  echo "nested container's memory.max: ${nested:-none}"
  [ -n "$nested" ] || { find "$d" -type d; rc=1; }
  # exec joins the leaf, never the delegated cgroup itself.
  out=$(timeout 60 "$CODEMODE" --root "$CI_ROOT" exec ci1 cat /proc/self/cgroup 2>&1)
  [ "$out" = "0::/job" ] || { echo "exec: $out"; rc=1; }
  touch "$W/ws/checked"
  wait "$CI_PID" || { echo "codemode-run exited $?"; rc=1; }
  out=$(cat "$W/out-ci1")
  echo "$out"
  for want in "0::/job" memory.max-refused pids.max-refused max.descendants-refused cgroupfs-rw \
    'cgroups = "enabled"' "nested memory.max 67108864"; do
    grep -qxF -- "$want" <<<"$out" || { echo "missing in the job's output: $want"; rc=1; }
  done
  # The nested container was left running: the job's end took it and its cgroups.
  ci_nothing_left || rc=1
  return $rc
}
t "ci: the job's cgroup is delegated (dir, cgroup.procs/threads/subtree_control its root's, limits host root's), nested podman --memory 64m below it, nothing left" delegated

killed() {
  local rc=0
  ci_start ci2 -- 'podman load -q -i img.tar >/dev/null &&
      podman run -d --memory 32m --network none localhost/test/bb:latest sleep 1000 >/dev/null &&
      mkdir -p /sys/fs/cgroup/own/deeper/still && echo $$ >/sys/fs/cgroup/own/deeper/still/cgroup.procs &&
      touch ready && sleep 1000'
  wait_for 400 test -e "$W/ws/ready" >/dev/null || { cat "$W/out-ci2"; kill "$CI_PID"; return 1; }
  [ -d "$JOBS/ci2/own/deeper/still" ] || { echo "the job's own sub-cgroups are not there"; rc=1; }
  kill -KILL "$CI_PID"
  wait "$CI_PID" 2>/dev/null
  ci_nothing_left || { cat "$W/out-ci2"; rc=1; }
  return $rc
}
t "ci: codemode-run SIGKILLed with a nested container and sub-cgroups of the job's own: every one removed" killed

timed_out() {
  local rc=0 status=0
  ci_start ci3 --timeout 60 -- 'mkdir -p /sys/fs/cgroup/a/b && echo $$ >/sys/fs/cgroup/a/b/cgroup.procs &&
      podman load -q -i img.tar >/dev/null &&
      podman run -d --memory 32m --network none localhost/test/bb:latest sleep 1000 >/dev/null && touch ready && sleep 1000'
  wait "$CI_PID" || status=$?
  [ "$status" = 124 ] || { echo "codemode-run exited $status, want 124"; cat "$W/out-ci3"; rc=1; }
  [ -e "$W/ws/ready" ] || { echo "the job never got its nested container up before the timeout"; cat "$W/out-ci3"; rc=1; }
  ci_nothing_left || rc=1
  return $rc
}
t "ci: --timeout ends a job with a nested container in cgroups of its own: none left" timed_out

echo "# $T tests, $FAILED failed"
