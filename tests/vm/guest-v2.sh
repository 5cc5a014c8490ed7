#!/bin/bash
# In-VM tests: the cgroupfs driver on cgroup v2 with every controller. Kept tight: under TCG each
# container costs about a second.
# shellcheck source=tests/vm/guest-lib.sh
. "$CMVM_REPO/tests/vm/guest-lib.sh"

echo "# kernel $(uname -r), controllers: $(cat $CG/cgroup.controllers)"

controllers() {
  local c
  for c in cpuset cpu io memory hugetlb pids rdma misc; do
    grep -qw "$c" $CG/cgroup.controllers || { echo "missing controller $c"; return 1; }
  done
}
t "cgroup2 at /sys/fs/cgroup has every controller" controllers

shell() {
  bundle shell sh -c 'echo hello; sleep 1; echo bye' >/dev/null
  local out
  out=$(cm run -b $BUNDLES/shell shell </dev/null 2>&1)
  [ "$out" = "hello
bye" ] || { echo "$out"; return 1; }
}
t "a shell container runs (sh -c)" shell

# The cmocka v2 unit tests: here every controller they check is present.
unit_v2() {
  local bin=$CMVM_REPO/build/tests/test_cgroup_v2
  [ -x "$bin" ] || { echo "$bin not built (make unit-bins)"; return 1; }
  CMOCKA_MESSAGE_OUTPUT=TAP "$bin"
}
t "unit tests test_cgroup_v2" unit_v2

limits() {
  local d=$CG/cmvm/limits
  bundle limits sleep 1000 >/dev/null
  cfg limits '.linux.resources = {
      memory: {limit: 67108864, reservation: 33554432, swap: 67108864},
      cpu: {shares: 512, quota: 50000, period: 100000, cpus: "1", mems: "0"},
      pids: {limit: 50},
      blockIO: {weight: 500},
      hugepageLimits: [{pageSize: "2MB", limit: 4194304}],
      unified: {"memory.high": "61440000"}}'
  run_detached limits || return 1
  expect $d/memory.max 67108864 &&
    expect $d/memory.low 33554432 &&
    expect $d/memory.swap.max 0 &&
    expect $d/memory.high 61440000 &&
    expect $d/cpu.weight 20 &&
    expect $d/cpu.max "50000 100000" &&
    expect $d/cpuset.cpus 1 &&
    expect $d/cpuset.mems 0 &&
    expect $d/pids.max 50 &&
    expect $d/io.weight "default 4950" &&
    expect $d/hugetlb.2MB.max 4194304 &&
    grep -qx "$(pid_of limits)" $d/cgroup.procs
}
t "memory, cpu, cpuset, pids, io, hugetlb and unified values land in the cgroup files" limits

update() {
  local d=$CG/cmvm/limits
  cm update --memory 100m --memory-swap 100m --pids-limit 30 --cpu-quota 20000 --cpu-period 50000 \
    --cpuset-cpus 0 --cpu-share 1024 --blkio-weight 1000 limits || return 1
  expect $d/memory.max 104857600 && expect $d/pids.max 30 && expect $d/cpu.max "20000 50000" &&
    expect $d/cpuset.cpus 0 && expect $d/cpu.weight 39 && expect $d/io.weight "default 10000" || return 1
  echo '{"memory": {"limit": 83886080, "swap": 83886080}, "pids": {"limit": 40}}' | cm update --resources - limits ||
    return 1
  expect $d/memory.max 83886080 && expect $d/pids.max 40
}
t "update (runc's flags and --resources -) changes live limits" update

ps_json() {
  local pids
  pids=$(cm ps --format json limits) || return 1
  echo "$pids" | jq -e --argjson p "$(pid_of limits)" 'index($p) != null' >/dev/null
}
t "ps --format json lists the container's init" ps_json

stats() {
  local out
  out=$(cm events --stats limits) || return 1
  echo "$out" | jq -e '.type == "stats" and .id == "limits" and .data.memory.usage.usage > 0 and
      .data.memory.usage.limit == 83886080 and .data.pids.current >= 1 and .data.pids.limit == 40 and
      .data.cpu.usage.total > 0 and (.data.hugetlb | has("2MB"))' >/dev/null || { echo "$out"; return 1; }
}
t "events --stats reports the v2 counters in runc's format" stats
cleanup_container limits

# A frozen container burns no CPU; resume lets it run again.
freeze() {
  local d=$CG/cmvm/spin u1 u2
  bundle spin sh -c 'while :; do :; done' >/dev/null
  run_detached spin || return 1
  cm pause spin || return 1
  expect $d/cgroup.freeze 1 && [ "$(key $d/cgroup.events frozen)" = 1 ] && [ "$(state_of spin)" = paused ] || return 1
  u1=$(key $d/cpu.stat usage_usec)
  sleep 1
  u2=$(key $d/cpu.stat usage_usec)
  [ "$u1" = "$u2" ] || { echo "frozen but usage_usec went $u1 -> $u2"; return 1; }
  cm resume spin || return 1
  expect $d/cgroup.freeze 0 && [ "$(state_of spin)" = running ] || return 1
  sleep 0.5
  u2=$(key $d/cpu.stat usage_usec)
  [ "$u2" -gt "$u1" ] || { echo "resumed but usage_usec stayed $u1"; return 1; }
}
t "pause freezes (cgroup.freeze, no CPU used) and resume thaws" freeze
cleanup_container spin

# wait_for's conditions: a "$(...)" in its arguments would be expanded once, before the polling.
procs_at_least() { [ "$(wc -l <"$1/cgroup.procs")" -ge "$2" ]; }
procs_none() { [ ! -s "$1/cgroup.procs" ]; }
is_stopped() { [ "$(state_of "$1")" = stopped ]; }
pids_max_hit() { [ "$(key "$1/pids.events" max)" -ge 1 ]; }

kill_all() {
  local d=$CG/cmvm/many
  bundle many sh -c 'sleep 1000 & sleep 1000 & sleep 1000 & sleep 1000' >/dev/null
  run_detached many || return 1
  wait_for 10 procs_at_least $d 4 || return 1
  cm kill --all many KILL || return 1
  wait_for 10 procs_none $d || { cat $d/cgroup.procs; return 1; }
  wait_for 5 is_stopped many
}
t "kill --all KILL (cgroup.kill) reaches every process" kill_all
cleanup_container many

oom() {
  local d=$CG/cmvm/hog rc=0
  bundle hog dd if=/dev/zero of=/dev/null bs=64M count=1 >/dev/null
  cfg hog '.linux.resources.memory = {limit: 16777216, swap: 16777216}'
  cm run --keep -b $BUNDLES/hog hog </dev/null >/dev/null 2>&1 || rc=$?
  [ "$rc" -eq 137 ] || { echo "exit status $rc, want 137"; return 1; }
  [ "$(key $d/memory.events oom_kill)" -ge 1 ] || { cat $d/memory.events; return 1; }
  cm delete hog
}
t "a memory hog over memory.max is OOM-killed (exit 137, oom_kill counted)" oom

oom_event() {
  local ev rc=0
  bundle hog2 sh -c 'sleep 2; dd if=/dev/zero of=/dev/null bs=64M count=1; sleep 1000' >/dev/null
  cfg hog2 '.linux.resources.memory = {limit: 16777216, swap: 16777216}'
  run_detached hog2 || return 1
  timeout 30 "$CODEMODE" --root "$STATE" events --interval 60s hog2 >/run/hog2.events 2>&1 &
  ev=$!
  wait_for 20 grep -q '"type":"oom"' /run/hog2.events || { cat /run/hog2.events; rc=1; }
  cm kill hog2 KILL
  wait "$ev" || { echo "events exited $? after the container stopped"; rc=1; }
  head -n 3 /run/hog2.events
  return $rc
}
t "events streams {\"type\":\"oom\"} (memory.events) and ends when the container stops" oom_event
cleanup_container hog2

fork_bomb() {
  local d=$CG/cmvm/bomb
  bundle bomb sh -c 'i=0; while [ $i -lt 40 ]; do sleep 1000 & i=$((i+1)); done 2>/dev/null; sleep 1000' >/dev/null
  cfg bomb '.linux.resources.pids = {limit: 10}'
  run_detached bomb || return 1
  wait_for 20 pids_max_hit $d || { cat $d/pids.events; return 1; }
  [ "$(cat $d/pids.current)" -le 10 ] || { echo "pids.current $(cat $d/pids.current) > 10"; return 1; }
}
t "a fork bomb stops at pids.max (fork fails, pids.events max counted)" fork_bomb
cleanup_container bomb

devices() {
  bundle dev sh -c 'head -c 1 /dev/zero >/dev/null || exit 10; mknod /tmp/mem c 1 1 || exit 11; head -c 1 /tmp/mem >/dev/null 2>&1 && exit 12; exit 0' >/dev/null
  cfg dev '.process.capabilities.bounding += ["CAP_MKNOD"] | .process.capabilities.effective += ["CAP_MKNOD"] |
    .process.capabilities.permitted += ["CAP_MKNOD"] |
    .mounts += [{destination: "/tmp", type: "tmpfs", source: "tmpfs", options: ["nosuid"]}]'
  cm run -b $BUNDLES/dev dev </dev/null || { echo "exit status $? (10: /dev/zero denied, 11: mknod failed, 12: /dev/mem readable)"; return 1; }
}
t "the eBPF device filter allows /dev/zero and denies a mknod'ed /dev/mem (c 1:1)" devices
cleanup_container dev

# blockIO throttles through io.max on run.sh's scratch disk (/dev/vda, 64 MiB of zeros). The
# container gets the node via linux.devices plus a device-cgroup allow rule; dd uses O_DIRECT so
# every byte passes the throttle (buffered writes would land in the page cache). Timed inside the
# container with /proc/uptime. Only a lower bound: TCG is slow, this checks the throttle works.
throttle() {
  local d=$CG/cmvm/blk devno maj min out
  rm -f /run/cmvm-blk.times
  devno=$(cat /sys/block/vda/dev 2>/dev/null) || { echo "no /sys/block/vda (run.sh's scratch disk)"; return 1; }
  maj=${devno%:*} min=${devno#*:}
  # The same write outside any limit, for the report: shows the slowness is the throttle, not TCG.
  local u0 u1
  u0=$(cut -d" " -f1 /proc/uptime)
  dd if=/dev/zero of=/dev/vda bs=64k count=64 oflag=direct 2>/dev/null || { echo "unthrottled dd to /dev/vda failed"; return 1; }
  u1=$(cut -d" " -f1 /proc/uptime)
  local script='t0=$(cut -d" " -f1 /proc/uptime);
    dd if=/dev/zero of=/dev/vda bs=64k count=64 oflag=direct || exit 10; t1=$(cut -d" " -f1 /proc/uptime);
    dd if=/dev/vda of=/dev/null bs=64k count=32 iflag=direct || exit 11; t2=$(cut -d" " -f1 /proc/uptime);
    echo "$t0 $t1 $t2"'
  # Joined into one line: bundle() takes no newlines in arguments.
  bundle blk sh -c "${script//$'\n'/ }" >/dev/null
  cfg blk ".linux.devices += [{path: \"/dev/vda\", type: \"b\", major: $maj, minor: $min, fileMode: 432, uid: 0, gid: 0}] |
    .linux.resources.devices += [{allow: true, type: \"b\", major: $maj, minor: $min, access: \"rw\"}] |
    .linux.resources.blockIO = {
      throttleWriteBpsDevice: [{major: $maj, minor: $min, rate: 1048576}],
      throttleReadBpsDevice: [{major: $maj, minor: $min, rate: 2097152}]}"
  # create's stdio is the container's: the dd timings land in /run/cmvm-blk.log.
  cm create -b $BUNDLES/blk blk </dev/null >/run/cmvm-blk.log 2>&1 || { cat /run/cmvm-blk.log; return 1; }
  # Checked before start: the limits must be in place before the first write.
  out=$(grep "^$devno " $d/io.max)
  [[ $out == "$devno rbps=2097152 wbps=1048576 riops=max wiops=max" ]] || { echo "io.max: '$out'"; cat $d/io.max; return 1; }
  cm start blk || return 1
  wait_for 60 is_stopped blk || return 1
  cat /run/cmvm-blk.log
  out=$(tail -n 1 /run/cmvm-blk.log)
  [[ $out =~ ^[0-9.]+\ [0-9.]+\ [0-9.]+$ ]] || { echo "the container did not finish (10: write failed, 11: read failed)"; return 1; }
  echo "$out $u0 $u1" | awk '{ w = $2 - $1; r = $3 - $2
      printf "# write 4 MiB at 1 MiB/s: %.2f s (unthrottled: %.2f s), read 2 MiB at 2 MiB/s: %.2f s\n", w, $5 - $4, r
      exit !(w >= 2 && r >= 0.5) }' | tee /run/cmvm-blk.times
  return "${PIPESTATUS[1]}"
}
t "blockIO throttle{Write,Read}BpsDevice: io.max set, direct dd to /dev/vda slowed to the limit" throttle
[ -s /run/cmvm-blk.times ] && cat /run/cmvm-blk.times
cleanup_container blk

# linux.devices only makes the node (runc): a /dev/zero the config lists itself loses its default
# allow, so the config's deny of c 1:5 holds in the eBPF filter; an unlisted default keeps it.
devices_listed() {
  local out
  bundle devl sh -c 'for d in zero null; do if (exec 3<>/dev/$d) 2>/dev/null; then echo $d:open; else echo $d:denied; fi; done' >/dev/null
  cfg devl '.linux.devices = [{path: "/dev/zero", type: "c", major: 1, minor: 5, fileMode: 438}] |
    .linux.resources.devices = [{allow: false, access: "rwm"}, {allow: false, type: "c", major: 1, minor: 5, access: "rwm"}]'
  out=$(cm run -b $BUNDLES/devl devl </dev/null 2>&1 | tr '\n' ' ')
  [ "$out" = "zero:denied null:open " ] || { echo "$out"; return 1; }
}
t "linux.devices adds no allow: resources.devices' deny of a listed default device holds (eBPF)" devices_listed
cleanup_container devl

# A cgroup frozen from above: create fails at once naming it (runc and crun wait for ever).
frozen_parent() {
  local out rc=0
  mkdir -p $CG/cmvm/frozen
  echo 1 >$CG/cmvm/frozen/cgroup.freeze
  bundle frz echo hi >/dev/null
  cfg frz '.linux.cgroupsPath = "/cmvm/frozen/frz"'
  # To a file: a frozen init that outlived a hung runtime would hold a capture pipe for ever.
  timeout -s KILL 20 "$CODEMODE" --root "$STATE" run -b $BUNDLES/frz frz </dev/null >/run/cmvm-frz.out 2>&1 || rc=$?
  echo 0 >$CG/cmvm/frozen/cgroup.freeze
  out=$(cat /run/cmvm-frz.out)
  echo "$out"
  [ "$rc" -eq 1 ] || { echo "exit status $rc"; return 1; }
  [[ $out == *"cgroup /cmvm/frozen/frz is frozen"* ]] || return 1
  [ ! -e $CG/cmvm/frozen/frz ] && [ -z "$(state_of frz)" ] && rmdir $CG/cmvm/frozen
}
t "run into a cgroup frozen from above (cgroup.freeze) fails at once, naming it, leaving nothing" frozen_parent

# exec --ignore-paused waits for resume without holding the container's lock (runc's behaviour).
exec_paused() {
  local rc=0
  bundle paused sleep 1000 >/dev/null
  run_detached paused || return 1
  cm pause paused || return 1
  timeout -s KILL 60 "$CODEMODE" --root "$STATE" exec --ignore-paused paused echo exec-ran </dev/null >/run/cmvm-paused.out 2>&1 &
  local ex=$!
  sleep 2
  [ ! -s /run/cmvm-paused.out ] || { echo "ran while paused: $(cat /run/cmvm-paused.out)"; rc=1; }
  [ "$(timeout -s KILL 10 "$CODEMODE" --root "$STATE" state paused | jq -r .status)" = paused ] || { echo "state did not answer 'paused'"; rc=1; }
  timeout -s KILL 10 "$CODEMODE" --root "$STATE" ps paused >/dev/null || { echo "ps did not answer"; rc=1; }
  timeout -s KILL 10 "$CODEMODE" --root "$STATE" resume paused || { echo "resume did not answer"; rc=1; }
  wait "$ex" || { echo "exec exited $?"; rc=1; }
  [ "$(cat /run/cmvm-paused.out)" = exec-ran ] || { cat /run/cmvm-paused.out; rc=1; }
  return $rc
}
t "exec --ignore-paused runs once resumed; state, ps and resume answer meanwhile" exec_paused

# exec --cgroup on cgroup v2: one hierarchy, a path alone; a controller prefix is refused (runc).
exec_sub_cgroup() {
  local out
  mkdir $CG/cmvm/paused/sub || return 1
  out=$(cm exec --cgroup sub paused cat /proc/self/cgroup 2>&1)
  [ "$out" = "0::/cmvm/paused/sub" ] || { echo "$out"; return 1; }
  out=$(cm exec --cgroup memory:sub paused true 2>&1) && { echo "memory:sub accepted"; return 1; }
  [[ $out == *"give the path alone"* ]] || { echo "$out"; return 1; }
}
t "exec --cgroup PATH runs in the sub-cgroup (0::/…/sub); controller:PATH refused on v2" exec_sub_cgroup
cleanup_container paused

# process.apparmorProfile: Debian's kernel has AppArmor built in and on by default. The profile
# allows everything but writes to /tmp/denied (audited, for the kernel log check), so a working
# label shows as exactly that EACCES.
AA_PROFILE=$BUNDLES/codemode-test.aa
cat >"$AA_PROFILE" <<'PROFILE'
profile codemode-test flags=(attach_disconnected,mediate_deleted) {
  file,
  capability,
  network,
  mount,
  umount,
  pivot_root,
  signal,
  ptrace,
  unix,
  audit deny /tmp/denied w,
}
PROFILE
aa_load() {
  [ "$(cat /sys/module/apparmor/parameters/enabled 2>&1)" = Y ] || { echo "AppArmor is not enabled in this kernel"; return 1; }
  [ -d /sys/kernel/security/apparmor ] || { echo "no /sys/kernel/security/apparmor (securityfs)"; return 1; }
  apparmor_parser --skip-cache --replace "$AA_PROFILE" || return 1
  grep -qx 'codemode-test (enforce)' /sys/kernel/security/apparmor/profiles
}
aa_confined() {
  bundle aa sh -c 'cat /proc/self/attr/current; echo ok >/tmp/allowed && cat /tmp/allowed; echo no >/tmp/denied; echo "rc=$?"' >/dev/null
  cfg aa '.process.apparmorProfile = "codemode-test" |
    .mounts += [{destination: "/tmp", type: "tmpfs", source: "tmpfs", options: ["nosuid"]}]'
  local out want
  out=$(cm run -b $BUNDLES/aa aa </dev/null 2>&1)
  want='codemode-test (enforce)
ok
sh: can'"'"'t create /tmp/denied: Permission denied
rc=1'
  [ "$out" = "$want" ] || { echo "got:"; echo "$out"; echo "want:"; echo "$want"; return 1; }
  # The EACCES came from AppArmor, not from something else in the container setup.
  dmesg | grep -q 'apparmor="DENIED".*profile="codemode-test" name="/tmp/denied"' ||
    { dmesg | grep apparmor | tail -n 5; return 1; }
}
aa_missing() {
  local out rc=0
  bundle aa-missing true >/dev/null
  cfg aa-missing '.process.apparmorProfile = "codemode-not-loaded"'
  out=$(cm create -b $BUNDLES/aa-missing aa-missing </dev/null 2>&1) || rc=$?
  echo "$out"
  [ "$rc" -ne 0 ] || { echo "create succeeded"; return 1; }
  [[ $out == *"apparmor profile codemode-not-loaded is not loaded"* ]] ||
    { echo "the error does not say the profile is not loaded"; return 1; }
  [ -z "$(state_of aa-missing)" ] || { echo "a failed create left state behind"; return 1; }
}
if ! command -v apparmor_parser >/dev/null; then
  echo "ok $((T += 1)) - apparmor: profile codemode-test confines the container # skip apparmor_parser is not installed"
else
  t "apparmor: profile codemode-test is loaded (apparmor_parser)" aa_load
  t "apparmor: process.apparmorProfile confines the container (attr/current, deny w -> EACCES, allowed write works)" aa_confined
  t "apparmor: create fails naming a profile that is not loaded" aa_missing
fi
cleanup_container aa
cleanup_container aa-missing

# Without a cgroup namespace the cgroup mount is a bind of the container's own directory
# (src/linux/mount_cgroup.c): its limits at the root, no sibling visible, and the guest's cgroup2
# keeps the nsdelegate it was mounted with. runc's fresh cgroup2 mount, made from the host's
# cgroup namespace, re-applies its own options to the whole hierarchy and drops nsdelegate.
own_cgroup_view() {
  local out
  grep -q " $CG cgroup2 [^ ]*nsdelegate" /proc/mounts || { echo "no nsdelegate on $CG before the test"; grep " $CG " /proc/mounts; return 1; }
  bundle cgview sh -c 'cat /sys/fs/cgroup/memory.max; grep " /sys/fs/cgroup " /proc/self/mountinfo | cut -d" " -f4; ls /sys/fs/cgroup | grep -c "^cmvm$"; true' >/dev/null
  cfg cgview '.linux.resources = {memory: {limit: 33554432}} | .linux.namespaces |= map(select(.type != "cgroup"))
              | .mounts |= map(select(.destination != "/sys/fs/cgroup"))
              | .mounts += [{destination: "/sys/fs/cgroup", type: "cgroup", source: "cgroup", options: ["ro", "nosuid", "nodev", "noexec"]}]'
  out=$(cm run -b $BUNDLES/cgview cgview </dev/null 2>&1)
  [ "$out" = "33554432
/cmvm/cgview
0" ] || { echo "$out"; return 1; }
  grep -q " $CG cgroup2 [^ ]*nsdelegate" /proc/mounts || { echo "the guest's cgroup2 lost nsdelegate"; grep " $CG " /proc/mounts; return 1; }
}
t "cgroup mount without a cgroup namespace: own directory only, host's nsdelegate kept" own_cgroup_view
cleanup_container cgview

# --- rootless (issue 15): an unprivileged user with a cgroup v2 subtree delegated to it, as
# systemd delegates user@UID.service: its containers' limits are enforced in their own cgroup.
# The user exists in this VM's overlay only.
. "$CMVM_REPO/tests/vm/guest-rootless.sh"
rl_user_setup
rl_delegated() {
  local d=$CG/cmvm-rl out
  # What the delegated subtree may hand down (the root's own subtree_control is root's to set).
  echo "+memory +pids +cpu" >$CG/cgroup.subtree_control
  mkdir -p "$d/shell"
  chown "$RL_UID:$RL_UID" "$d" "$d/cgroup.procs" "$d/cgroup.subtree_control" "$d/cgroup.threads" "$d/shell" \
    "$d/shell/cgroup.procs"
  # stdout is the container's; stderr codemode-run's (the profile's limits, one line each).
  out=$(
    echo $BASHPID >"$d/shell/cgroup.procs"
    rl_as "$CODEMODE_RUN" --root /run/cmvm-rl/state --id rl1 --rootfs "$TEMPLATE/rootfs" -- \
      sh -c 'cat /proc/self/uid_map; cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/pids.max /sys/fs/cgroup/cpu.max' \
      2>/run/cmvm-rl/err
  )
  echo "$out"
  cat /run/cmvm-rl/err
  ! grep -q warning /run/cmvm-rl/err || return 1
  [ "$(sed -n 2p <<<"$out")" = 536870912 ] && [ "$(sed -n 3p <<<"$out")" = 256 ] &&
    [ "$(sed -n 4p <<<"$out")" = "100000 100000" ] || return 1
  # Gone after the run, the delegated subtree as it was.
  [ -z "$(find "$d" -mindepth 1 -type d ! -path "$d/shell")" ] || { find "$d"; return 1; }
  rmdir "$d/shell" "$d"
}
t "rootless: under a delegated cgroup v2 subtree the mcp profile's memory, pids and cpu limits apply" rl_delegated
if [ -e /proc/sys/kernel/apparmor_restrict_unprivileged_userns ]; then
  t "rootless: AppArmor's user namespace restriction is detected with the fix, and the shipped profile lifts it" rl_apparmor
else
  # Debian 12's kernel (6.1) has no AppArmor user namespace mediation (Linux 6.7, Ubuntu's
  # kernels): nothing to restrict here. tests/unit/test_linux_userns.c checks the detection.
  echo "ok $((T += 1)) - rootless: AppArmor's user namespace restriction is detected # skip this kernel ($(uname -r)) has no AppArmor user namespace mediation"
fi

t "delete leaves no cgroup and no state behind" nothing_left
rmdir $CG/cmvm 2>/dev/null
echo "# $T tests, $FAILED failed"
