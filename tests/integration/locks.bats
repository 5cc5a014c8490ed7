#!/usr/bin/env bats
# No command waits on a lock held by a process that waits for the container: state, list, ps
# take no lock; start and exec give theirs up before waiting for the container's processes;
# poststop hooks run once the state is gone; a writer meeting a create at work fails at once,
# but start waits for it (not from that create's own hook).
# Every wait below is bounded by QUICK seconds: a command that blocks fails the test.

load ../lib/helpers

QUICK=10

# quick ARGS…: codemode ARGS, killed after QUICK seconds. Only for commands that leave no
# process behind holding stdout (use run_cm for create and run --detach).
quick() { timeout -s KILL "$QUICK" "$CODEMODE" --root "$ROOT" "$@" </dev/null 3>&-; }

run_sleeper() {
  set_args sleep 1000
  run_cm run --detach -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
}

# runc 1.1.5: the exec'd process waits for the container to be resumed, and everything else
# answers meanwhile (observed by hand). Before, the exec held the lock while it waited, and
# resume, state, list and ps all blocked behind it for ever.
@test "exec --ignore-paused into a paused container runs once resumed; nothing waits meanwhile" {
  run_sleeper
  cm pause "$CID"
  quick exec --ignore-paused "$CID" echo exec-ran >"$TEST_DIR/exec.out" 2>&1 &
  local exec_pid=$!
  bg_track "$exec_pid"
  sleep 1
  # Still waiting for the container: nothing printed yet.
  [ ! -s "$TEST_DIR/exec.out" ]
  run quick state "$CID"
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | jq -r .status)" = paused ]
  run quick list
  [ "$status" -eq 0 ]
  [[ $output == *"$CID"*paused* ]]
  run quick ps --format json "$CID"
  [ "$status" -eq 0 ]
  run quick resume "$CID"
  [ "$status" -eq 0 ]
  local rc=0
  wait "$exec_pid" || rc=$?
  cat "$TEST_DIR/exec.out"
  [ "$rc" -eq 0 ]
  [ "$(cat "$TEST_DIR/exec.out")" = exec-ran ]
}

@test "exec into a paused container without --ignore-paused is refused at once (runc's words)" {
  run_sleeper
  cm pause "$CID"
  run quick exec "$CID" true
  [ "$status" -ne 0 ]
  [[ $output == *"cannot exec in a paused container (use --ignore-paused to override)"* ]]
}

# runc: a created container can be paused; it is then "paused", and start refuses it.
@test "a paused created container says paused, start refuses it, and starts once resumed" {
  set_args sh -c 'echo started >/tmp/started; sleep 1000'
  set_cfg '.root.readonly = false'
  run_cm create -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  cm pause "$CID"
  [ "$(state_field "$CID" status)" = paused ]
  run quick start "$CID"
  [ "$status" -ne 0 ]
  [[ $output == *"cannot start a container in the paused state"* ]]
  run quick resume "$CID"
  [ "$status" -eq 0 ]
  [ "$(state_field "$CID" status)" = created ]
  run quick start "$CID"
  [ "$status" -eq 0 ]
  wait_status "$CID" running
}

# A hook that asks the runtime about its own container: during create (createRuntime), after
# start (poststart) and at delete (poststop). Each logs what state and list said.
@test "hooks that run state and list on their own container do not wait for its lock" {
  cat >"$TEST_DIR/ask.sh" <<'SH'
#!/bin/sh
# $1 phase, $2 codemode, $3 root, $4 log; the state JSON on stdin names the container.
id=$(jq -r .id)
st=$(timeout -s KILL 5 "$2" --root "$3" state "$id" 2>&1 | jq -r '.status' 2>/dev/null)
ls=$(timeout -s KILL 5 "$2" --root "$3" list -q 2>&1)
echo "$1 state=${st:-none} list=$ls" >>"$4"
SH
  chmod +x "$TEST_DIR/ask.sh"
  local h
  h() { jq -n --arg p "$TEST_DIR/ask.sh" --arg k "$1" --arg c "$CODEMODE" --arg r "$ROOT" --arg l "$TEST_DIR/hooks.log" \
    '{path: $p, args: ["ask.sh", $k, $c, $r, $l], timeout: 10}'; }
  set_cfg '.hooks = {createRuntime: [$cr], poststart: [$ps], poststop: [$pst]}' \
    --argjson cr "$(h createRuntime)" --argjson ps "$(h poststart)" --argjson pst "$(h poststop)"
  set_args sleep 1000
  CM_TIMEOUT=$QUICK run_cm create -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  CM_TIMEOUT=$QUICK run_cm start "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  CM_TIMEOUT=$QUICK run_cm delete --force "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  cat "$TEST_DIR/hooks.log"
  # Every hook got its answers (a hook that had waited for the lock would have been killed at 5 s
  # and logged nothing, or the whole command would have hit its 10 s hook timeout).
  run cat "$TEST_DIR/hooks.log"
  [ "${#lines[@]}" -eq 3 ]
  # During create codemode says "creating" (runc: "does not exist" yet).
  [[ ${lines[0]} == "createRuntime state="* ]]
  # runc's poststart still sees "created".
  [[ ${lines[1]} =~ ^"poststart state="(running|created)" list=$CID"$ ]]
  # Poststop runs once the state is gone, as with runc.
  [ "${lines[2]}" = "poststop state=none list=" ]
}

# Stops create at a point with CODEMODE_TEST_PAUSE_AT (src/runtime/create.c).
# issue 28: start issued while the create is finishing waits for it, then starts the container.
@test "start issued while a create is at work waits for it, then starts the container" {
  codemode_only state-while-creating
  set_args sleep 1000
  CODEMODE_TEST_PAUSE_AT=ready "$CODEMODE" --root "$ROOT" create -b "$BUNDLE" "$CID" \
    </dev/null >"$TEST_DIR/create.out" 2>"$TEST_DIR/create.err" 3>&- &
  local create_pid=$!
  bg_track "$create_pid"
  local tries=100
  until grep -q "paused at ready" "$TEST_DIR/create.err" || [ "$tries" -eq 0 ]; do
    sleep 0.1
    tries=$((tries - 1))
  done
  grep -q "paused at ready" "$TEST_DIR/create.err"
  quick start "$CID" >"$TEST_DIR/start.out" 2>&1 &
  local start_pid=$!
  bg_track "$start_pid"
  sleep 1
  # Still waiting for the create (not failed, not started).
  kill -0 "$start_pid"
  [ "$(quick state "$CID" | jq -r .status)" = creating ]
  kill -CONT "$create_pid"
  local rc=0
  wait "$create_pid" || rc=$?
  cat "$TEST_DIR/create.err"
  [ "$rc" -eq 0 ]
  rc=0
  wait "$start_pid" || rc=$?
  cat "$TEST_DIR/start.out"
  [ "$rc" -eq 0 ]
  wait_status "$CID" running
}

# The one start that must not wait: a hook of the create, which the create waits for.
@test "a createRuntime hook that starts its own container is refused at once, not deadlocked" {
  cat >"$TEST_DIR/start.sh" <<'SH'
#!/bin/sh
# $1 codemode, $2 root, $3 log; the state JSON on stdin names the container.
id=$(jq -r .id)
out=$(timeout -s KILL 5 "$1" --root "$2" start "$id" 2>&1)
echo "rc=$? $out" >>"$3"
SH
  chmod +x "$TEST_DIR/start.sh"
  set_cfg '.hooks = {createRuntime: [{path: $p, args: ["start.sh", $c, $r, $l], timeout: 10}]}' \
    --arg p "$TEST_DIR/start.sh" --arg c "$CODEMODE" --arg r "$ROOT" --arg l "$TEST_DIR/hook.log"
  set_args sleep 1000
  CM_TIMEOUT=$QUICK run_cm create -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  cat "$TEST_DIR/hook.log"
  # Failed, not killed by the timeout (137).
  grep -q '^rc=1 ' "$TEST_DIR/hook.log"
  if codemode_part error-wording; then
    grep -q "is busy: it is being created by codemode process [0-9]*, which is an ancestor of this one" "$TEST_DIR/hook.log"
  fi
  [ "$(state_field "$CID" status)" = created ]
}

@test "while a create is at work, writers fail at once saying so, and readers answer" {
  codemode_only state-while-creating
  set_args sleep 1000
  CODEMODE_TEST_PAUSE_AT=ready "$CODEMODE" --root "$ROOT" create -b "$BUNDLE" "$CID" \
    </dev/null >"$TEST_DIR/create.out" 2>"$TEST_DIR/create.err" 3>&- &
  local create_pid=$!
  bg_track "$create_pid"
  wait_file "$ROOT/$CID/creating.json"
  local tries=100
  until grep -q "paused at ready" "$TEST_DIR/create.err" || [ "$tries" -eq 0 ]; do
    sleep 0.1
    tries=$((tries - 1))
  done
  grep -q "paused at ready" "$TEST_DIR/create.err"
  local verb
  for verb in "kill $CID KILL" "pause $CID" "delete --force $CID"; do
    # shellcheck disable=SC2086 # the words of verb are the arguments
    run quick $verb
    echo "$verb: $status $output"
    [ "$status" -eq 1 ]
    [[ $output == *"container \"$CID\" is busy: another codemode process is creating"* ]]
  done
  run quick state "$CID"
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | jq -r .status)" = creating ]
  run quick list -q
  [ "$status" -eq 0 ]
  [ "$output" = "$CID" ]
  # The create killed, its leftover is a writer's again.
  kill -9 "$create_pid"
  wait "$create_pid" 2>/dev/null || true
  run quick delete --force "$CID"
  [ "$status" -eq 0 ]
  [ ! -e "$ROOT/$CID" ]
}
