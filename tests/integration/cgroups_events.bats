#!/usr/bin/env bats
# `events`: --stats in runc's JSON layout and the OOM stream, on whatever cgroup layout the host
# has (v1/hybrid here; tests/vm runs the v2 checks with every controller).

load ../lib/helpers

start_detached() {
  run_cm run --detach -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  PID=$(state_field "$CID" pid)
  [ -n "$PID" ]
}

@test "events --stats prints one stats object in runc's layout" {
  set_cfg '.linux.resources.memory = {limit: 67108864} | .linux.resources.pids = {limit: 20}'
  set_args sleep 1000
  start_detached
  run_cm events --stats "$CID"
  [ "$status" -eq 0 ]
  [ "${#lines[@]}" -eq 1 ]
  echo "$stdout" | jq -e --arg id "$CID" '.type == "stats" and .id == $id' >/dev/null
  echo "$stdout" | jq -e '.data.memory.usage.limit == 67108864 and .data.memory.usage.usage > 0' >/dev/null
  echo "$stdout" | jq -e '.data.pids.current == 1 and .data.pids.limit == 20' >/dev/null
  echo "$stdout" | jq -e '.data.cpu.usage.total > 0 and (.data.cpu.usage | has("kernel") and has("user"))' >/dev/null
  echo "$stdout" | jq -e '(.data | has("blkio") and has("hugetlb") and has("intel_rdt")) and .data.network_interfaces == null' >/dev/null
}

@test "events --stats has the same keys as runc's for the same container" {
  command -v runc >/dev/null || skip "runc is not installed"
  set_cfg '.linux.resources.memory = {limit: 67108864} | .linux.resources.pids = {limit: 20}'
  set_args sleep 1000
  start_detached
  run_cm events --stats "$CID"
  [ "$status" -eq 0 ]
  local ours=$stdout theirs rid=$CID-runc
  set_cfg '.linux.cgroupsPath = "/cm-test-bats-runc/" + $id' --arg id "$rid"
  runc --root "$TEST_DIR/runc" run -d -b "$BUNDLE" "$rid" </dev/null >/dev/null 2>&1
  theirs=$(runc --root "$TEST_DIR/runc" events --stats "$rid")
  runc --root "$TEST_DIR/runc" delete -f "$rid"
  rmdir /sys/fs/cgroup/*/cm-test-bats-runc 2>/dev/null || true
  # cpuset is runc's v1 extra; hugetlb ours (it lives in cgroup2 on a hybrid host, which runc does
  # not read); memory.cache is omitted when zero by both (omitempty), so it depends on the value;
  # everything else matches key for key (values differ).
  local keys='[.data | del(.cpuset) | paths(type != "object" and type != "array") | map(tostring) | join(".")] | map(select(test("^memory.raw|percpu|^hugetlb|^memory.cache$") | not)) | sort'
  diff <(echo "$ours" | jq -c "$keys") <(echo "$theirs" | jq -c "$keys")
}

@test "events streams an OOM kill and exits when the container stops" {
  set_cfg '.linux.resources.memory = {limit: 16777216, swap: 16777216}'
  set_args sh -c 'sleep 1; dd if=/dev/zero of=/dev/null bs=64M count=1; sleep 1000'
  start_detached
  cm events --interval 60s "$CID" >"$TEST_DIR/events" 2>&1 &
  local ev=$!
  bg_track "$ev"
  wait_file_content() { grep -q '"type":"oom"' "$TEST_DIR/events"; }
  local i
  for i in $(seq 100); do wait_file_content && break; sleep 0.1; done
  cat "$TEST_DIR/events"
  grep -qx "{\"type\":\"oom\",\"id\":\"$CID\"}" "$TEST_DIR/events"
  cm kill "$CID" KILL
  if codemode_part events-end; then
    # The stream ends by itself once init is gone.
    for i in $(seq 50); do kill -0 "$ev" 2>/dev/null || break; sleep 0.1; done
    ! kill -0 "$ev" 2>/dev/null
    wait "$ev"
  fi
}

@test "events prints stats every --interval" {
  set_args sleep 1000
  start_detached
  run timeout 2 "$CODEMODE" --root "$ROOT" events --interval 300ms "$CID"
  [ "${#lines[@]}" -ge 3 ]
  echo "${lines[0]}" | jq -e '.type == "stats"' >/dev/null
}

@test "events on a missing or stopped container fails with runc's wording" {
  run_cm events --stats nosuch-"$CID"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"does not exist"* ]]
  if codemode_part error-wording; then
    [[ "$stderr" == *"container does not exist: \"nosuch-$CID\""* ]]
  fi
  set_args true
  run_cm create -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  cm start "$CID"
  wait_status "$CID" stopped
  run_cm events --stats "$CID"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"not running"* ]]
  if codemode_part error-wording; then
    [[ "$stderr" == *"container not running"* ]]
  fi
}

@test "events rejects a bad --interval" {
  run_cm events --interval soon "$CID"
  [ "$status" -ne 0 ]
  if codemode_part error-wording; then
    [[ "$stderr" == *"--interval"* ]]
  fi
}
