#!/usr/bin/env bats
# The systemd cgroup driver (--systemd-cgroup / --cgroup-manager systemd). Without systemd as
# PID 1 (this machine) only the refusal is testable; tests/vm/run.sh systemd boots systemd and
# runs this file again, where the scope tests run.

load ../lib/helpers

has_systemd() { [ -d /run/systemd/system ]; }
need_systemd() { has_systemd || skip "systemd is not PID 1 here (tests/vm/run.sh systemd runs these)"; }

unit_of() { echo "cm-test-$CID.scope"; }
prop() { systemctl show -P "$2" "$1"; }

start_scope() {
  set_cfg '.linux.cgroupsPath = "system.slice:cm-test:" + $id' --arg id "$CID"
  set_args sleep 1000
  run_cm --systemd-cgroup run --detach -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  PID=$(state_field "$CID" pid)
  [ -n "$PID" ]
}

@test "systemd driver without systemd: a clear error, never a silent fallback, nothing left" {
  has_systemd && skip "systemd runs here"
  set_cfg '.linux.cgroupsPath = "system.slice:cm-test:" + $id' --arg id "$CID"
  run_cm --systemd-cgroup run -b "$BUNDLE" "$CID"
  [ "$status" -ne 0 ]
  if codemode_part error-wording; then
    [[ "$stderr" == *"systemd cgroup driver: systemd is not running (no /run/systemd/system)"* ]]
  fi
  if codemode_part crun-flags; then
    run_cm --cgroup-manager systemd create -b "$BUNDLE" "$CID"
    [ "$status" -ne 0 ]
    if codemode_part error-wording; then
      [[ "$stderr" == *"systemd is not running"* ]]
    fi
  fi
  [ -z "$(cm list -q)" ]
  [ -z "$(find /sys/fs/cgroup -maxdepth 4 -name "*$CID*" 2>/dev/null)" ]
}

@test "systemd: the container runs in a transient scope with Delegate=yes and its limits as properties" {
  need_systemd
  set_cfg '.linux.resources.memory = {limit: 67108864} | .linux.resources.pids = {limit: 20} |
           .linux.resources.cpu = {shares: 512, quota: 50000, period: 100000}'
  start_scope
  local u d
  u=$(unit_of)
  grep -qx "0::/system.slice/$u" "/proc/$PID/cgroup"
  [ "$(prop "$u" ActiveState)" = active ]
  [ "$(prop "$u" Delegate)" = yes ]
  [ "$(prop "$u" MemoryMax)" = 67108864 ]
  [ "$(prop "$u" TasksMax)" = 20 ]
  [ "$(prop "$u" CPUWeight)" = 20 ]
  [ "$(prop "$u" CPUQuotaPerSecUSec)" = 500ms ]
  d=/sys/fs/cgroup/system.slice/$u
  [ "$(cat "$d/memory.max")" = 67108864 ]
  [ "$(cat "$d/pids.max")" = 20 ]
  [ "$(cat "$d/cpu.max")" = "50000 100000" ]
}

@test "systemd: update changes the unit's properties and the files" {
  need_systemd
  set_cfg '.linux.resources.memory = {limit: 67108864}'
  start_scope
  cm update --memory 100m --pids-limit 30 "$CID"
  local u
  u=$(unit_of)
  [ "$(prop "$u" MemoryMax)" = 104857600 ]
  [ "$(prop "$u" TasksMax)" = 30 ]
  [ "$(cat "/sys/fs/cgroup/system.slice/$u/memory.max")" = 104857600 ]
}

@test "systemd: exec joins the scope; pause, resume and kill --all work" {
  need_systemd
  start_scope
  local u
  u=$(unit_of)
  run_cm exec "$CID" cat /proc/self/cgroup
  [ "$status" -eq 0 ]
  [[ "$stdout" == *"$u"* ]]
  cm pause "$CID"
  [ "$(state_field "$CID" status)" = paused ]
  cm resume "$CID"
  [ "$(state_field "$CID" status)" = running ]
  cm kill --all "$CID" KILL
  wait_status "$CID" stopped
}

@test "systemd: delete stops the unit and removes its cgroup" {
  need_systemd
  start_scope
  local u
  u=$(unit_of)
  cm delete --force "$CID"
  [ ! -d "/sys/fs/cgroup/system.slice/$u" ]
  local state
  state=$(prop "$u" LoadState)
  [ "$state" = not-found ] || [ "$(prop "$u" ActiveState)" = inactive ]
}

@test "systemd: without cgroupsPath the scope is system.slice/codemode-ID.scope" {
  need_systemd
  set_cfg 'del(.linux.cgroupsPath)'
  set_args cat /proc/self/cgroup
  run_cm --systemd-cgroup run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [[ "$stdout" == *"/system.slice/codemode-$CID.scope"* ]] || [ "$stdout" = "0::/" ]
}

@test "systemd: a cgroupsPath that is not slice:prefix:name is refused clearly" {
  need_systemd
  set_cfg '.linux.cgroupsPath = "/plain/path"'
  run_cm --systemd-cgroup run -b "$BUNDLE" "$CID"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"slice:prefix:name"* ]]
}
