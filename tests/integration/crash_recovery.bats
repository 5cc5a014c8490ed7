#!/usr/bin/env bats
# Crash recovery: `create` SIGKILLed at each of its steps, then `list` and `delete --force`
# recover to a clean state (no state dir, process, cgroup or mount left).
#
# CODEMODE_TEST_PAUSE_AT=<point> makes create stop itself (SIGSTOP) at a named point of
# src/runtime/create.c: state-dir, cgroup, fork, ready, state.

load ../lib/helpers
codemode_only_file fault-injection

# create_killed_at POINT: start create paused at POINT, wait until it stops there, SIGKILL it.
create_killed_at() {
  local point=$1 pid tries=300 state=
  CODEMODE_TEST_PAUSE_AT=$point "$CODEMODE" --root "$ROOT" create --bundle "$BUNDLE" "$CID" \
    </dev/null >"$TEST_DIR/create.out" 2>"$TEST_DIR/create.err" 3>&- &
  pid=$!
  while [ "$tries" -gt 0 ]; do
    state=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)
    [ "$state" = T ] && break
    [ -z "$state" ] || [ "$state" = Z ] && break
    sleep 0.1
    tries=$((tries - 1))
  done
  if [ "$state" != T ]; then
    echo "create did not pause at $point (state '$state'): $(cat "$TEST_DIR/create.err")" >&2
    kill -9 "$pid" 2>/dev/null
    return 1
  fi
  grep -q "paused at $point" "$TEST_DIR/create.err"
  # What it recorded so far (read before the kill, to check it is gone afterwards).
  RECORDED_PID=$(jq -r '.pid // 0' "$ROOT/$CID/creating.json" 2>/dev/null || echo 0)
  kill -9 "$pid"
  wait "$pid" 2>/dev/null || true
}

# assert_clean: nothing of $CID survives.
assert_clean() {
  local left
  [ ! -e "$ROOT/$CID" ] || { echo "state dir left: $(ls -a "$ROOT/$CID")" >&2; return 1; }
  sleep 0.2
  left=$(test_processes "$CM_TEST_TOKEN:$CID"; root_processes "$ROOT")
  [ -z "$left" ] || { echo "processes left: $left" >&2; return 1; }
  if [ "${RECORDED_PID:-0}" -gt 0 ] && [ -e "/proc/$RECORDED_PID" ]; then
    ! grep -qzF -- "--root" "/proc/$RECORDED_PID/cmdline" ||
      { echo "recorded pid $RECORDED_PID still alive" >&2; return 1; }
  fi
  left=$(find /sys/fs/cgroup -mindepth 1 -maxdepth 6 -type d -name "*$CID*" 2>/dev/null)
  [ -z "$left" ] || { echo "cgroups left: $left" >&2; return 1; }
  left=$(mounts_under "$TEST_DIR")
  [ -z "$left" ] || { echo "mounts left: $left" >&2; return 1; }
  run_cm list -q
  [ "$status" -eq 0 ]
  ! grep -qx -- "$CID" <<<"$stdout"
}

recover_from() {
  set_args sleep 1000
  create_killed_at "$1"
  # A restarted runtime can read what the killed one left: list works and names the container.
  run_cm list
  [ "$status" -eq 0 ]
  grep -q -- "$CID" <<<"$stdout"
  run_cm delete --force "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  assert_clean
}

@test "crash recovery: killed right after the state dir is made" {
  recover_from state-dir
}

@test "crash recovery: killed right after the cgroup is made" {
  recover_from cgroup
}

@test "crash recovery: killed right after init is forked, before it joins the cgroup" {
  recover_from fork
}

@test "crash recovery: killed after init is ready, before state.json is written" {
  recover_from ready
}

@test "crash recovery: killed after state.json, before the pid file; state reads it" {
  set_args sleep 1000
  create_killed_at state
  run_cm state "$CID"
  [ "$status" -eq 0 ]
  echo "$stdout" | jq -e --arg id "$CID" '.id == $id and (.status == "created" or .status == "stopped")'
  run_cm delete --force "$CID"
  [ "$status" -eq 0 ]
  assert_clean
}

@test "crash recovery: a user-namespace container (stage1 path) killed after fork and after ready" {
  [ -e /proc/self/ns/user ] || skip "no user namespaces"
  set_cfg '.linux.namespaces += [{"type": "user"}]
    | .linux.uidMappings = [{"containerID": 0, "hostID": 0, "size": 65536}]
    | .linux.gidMappings = [{"containerID": 0, "hostID": 0, "size": 65536}]'
  recover_from fork
  recover_from ready
}

@test "crash recovery: delete without --force also clears a killed create" {
  set_args sleep 1000
  create_killed_at ready
  run_cm delete "$CID"
  [ "$status" -eq 0 ]
  assert_clean
}

@test "crash recovery: delete of a create killed before anything was made finds nothing to do" {
  run_cm state "$CID"
  [ "$status" -eq 1 ]
  grep -q "container does not exist: \"$CID\"" <<<"$output"
  # delete --force of a container that does not exist succeeds (runc, crun; containerd relies on it).
  run_cm delete --force "$CID"
  [ "$status" -eq 0 ]
  [ ! -e "$ROOT/$CID" ]
}

@test "crash recovery: the state file is written by rename, never in place" {
  set_args sleep 1000
  run_cm create --bundle "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  # No temp or progress file is left next to state.json once create succeeded.
  [ -z "$(find "$ROOT/$CID" -name '.*.tmp' -o -name creating.json)" ]
  jq -e . "$ROOT/$CID/state.json" >/dev/null
}

@test "crash recovery: a state.json cut short by a system crash (not fsynced): delete --force removes it" {
  # What a power loss can leave: the rename landed, the data did not. No process survived it.
  mkdir -p "$ROOT/$CID"
  : >"$ROOT/$CID/state.json"
  run_cm state "$CID"
  [ "$status" -eq 1 ]
  grep -q "state of container \"$CID\" is corrupt" <<<"$output"
  run_cm delete "$CID"
  [ "$status" -eq 1 ]
  [ -d "$ROOT/$CID" ]
  echo '{"id": "'"$CID"'", "pi' >"$ROOT/$CID/state.json"
  run_cm delete --force "$CID"
  [ "$status" -eq 0 ]
  [ ! -e "$ROOT/$CID" ]
}
