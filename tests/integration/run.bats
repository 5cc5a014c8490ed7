#!/usr/bin/env bats
# `run`: foreground, exit status, --detach, --keep, --config, --pid-file, --preserve-fds, …

load ../lib/helpers

@test "run prints the output and exits 0" {
  set_args echo hello from codemode
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = "hello from codemode" ]
}

@test "run passes stdin through" {
  set_args cat
  run bash -c 'echo piped-in | "$0" --root "$1" run -b "$2" "$3"' "$CODEMODE" "$ROOT" "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = piped-in ]
}

@test "run keeps stdout and stderr apart" {
  set_args sh -c 'echo to-out; echo to-err >&2'
  run --separate-stderr cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = to-out ]
  [ "$stderr" = to-err ]
}

@test "run exits with the container's exit status" {
  set_args sh -c 'exit 3'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 3 ]
}

@test "run deletes the container afterwards, also after a failure" {
  set_args sh -c 'exit 7'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 7 ]
  run cm state "$CID"
  [ "$status" -eq 1 ]
  [ -z "$(cm list -q)" ]
}

@test "a process killed by a signal gives 128+signal (no pid namespace: SIGUSR1 → 138)" {
  # Without a pid namespace the shell is not an init, so it can signal itself.
  bundle_remove_namespace "$BUNDLE" pid
  set_args sh -c 'kill -USR1 $$; sleep 5'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 138 ]
}

@test "an init killed from outside gives 128+9" {
  set_args sleep 1000
  (exec "$CODEMODE" --root "$ROOT" run -b "$BUNDLE" "$CID" </dev/null >"$TEST_DIR/out" 2>&1 3>&-) &
  local runner=$!
  bg_track "$runner"
  wait_status "$CID" running
  cm kill "$CID" KILL
  local rc=0
  wait "$runner" || rc=$?
  [ "$rc" -eq 137 ]
}

@test "run with a missing executable fails with a clear error" {
  set_args /no/such/binary
  run --separate-stderr cm run -b "$BUNDLE" "$CID"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"/no/such/binary"* ]]
  [ -z "$(cm list -q)" ]
}

@test "run uses the current directory as the bundle" {
  set_args echo cwd-bundle
  cd "$BUNDLE"
  run cm run "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = cwd-bundle ]
}

@test "run --detach returns with the container running" {
  set_args sleep 1000
  run_cm run --detach -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$(state_field "$CID" status)" = running ]
}

@test "run -d is --detach" {
  set_args sleep 1000
  run_cm run -d -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$(state_field "$CID" status)" = running ]
}

@test "run --detach --pid-file writes the init's pid" {
  set_args sleep 1000
  run_cm run --detach --pid-file "$TEST_DIR/pid" -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$(cat "$TEST_DIR/pid")" = "$(state_field "$CID" pid)" ]
  grep -q sleep "/proc/$(cat "$TEST_DIR/pid")/cmdline"
}

@test "run --keep leaves a stopped container" {
  set_args sh -c 'exit 5'
  run cm run --keep -b "$BUNDLE" "$CID"
  [ "$status" -eq 5 ]
  [ "$(state_field "$CID" status)" = stopped ]
  run cm delete "$CID"
  [ "$status" -eq 0 ]
}

@test "run --config FILE uses that file instead of the bundle's config.json" {
  codemode_only crun-flags
  set_args echo from-bundle
  cp "$BUNDLE/config.json" "$TEST_DIR/other.json"
  bundle_jq "$BUNDLE" '.' # no-op, keeps the bundle's own config valid
  jq '.process.args = ["echo", "from-config-file"]' "$TEST_DIR/other.json" >"$TEST_DIR/o.json"
  run cm run --config "$TEST_DIR/o.json" -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = from-config-file ]
}

@test "run --config with a missing file is an error naming it" {
  codemode_only crun-flags
  run --separate-stderr cm run --config "$TEST_DIR/missing.json" -b "$BUNDLE" "$CID"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *missing.json* ]]
}

@test "run --preserve-fds 1 passes fd 3 into the container" {
  echo fd3-content >"$TEST_DIR/fd3"
  set_args cat /proc/self/fd/3
  run cm run --preserve-fds 1 -b "$BUNDLE" "$CID" 3<"$TEST_DIR/fd3"
  [ "$status" -eq 0 ]
  [ "$output" = fd3-content ]
}

@test "without --preserve-fds no extra fd reaches the container" {
  echo secret >"$TEST_DIR/fd3"
  # `[` is a shell builtin: it opens nothing, so any fd above 2 it sees was inherited.
  set_args sh -c 'for n in 3 4 5 6 7 8 9 10 11 12; do [ -e /proc/self/fd/$n ] && echo "leaked fd $n"; done; echo end'
  run cm run -b "$BUNDLE" "$CID" 3<"$TEST_DIR/fd3" 4<"$TEST_DIR/fd3"
  [ "$status" -eq 0 ]
  [ "$output" = end ]
}

@test "run --no-pivot runs in the bundle rootfs" {
  echo pivotless >"$BUNDLE/rootfs/marker"
  set_args cat /marker
  run cm run --no-pivot -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = pivotless ]
}

@test "run --no-new-keyring is accepted" {
  set_args echo keyring
  run cm run --no-new-keyring -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = keyring ]
}

@test "run of an existing id is refused" {
  set_args sleep 1000
  run_cm run --detach -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *exist* ]]
  [ "$(state_field "$CID" status)" = running ]
}

@test "run forwards SIGTERM from the caller to the container" {
  set_args sh -c 'trap "exit 9" TERM; while :; do sleep 0.1; done'
  (exec "$CODEMODE" --root "$ROOT" run -b "$BUNDLE" "$CID" </dev/null >"$TEST_DIR/out" 2>&1 3>&-) &
  local runner=$!
  bg_track "$runner"
  wait_status "$CID" running
  sleep 0.3
  # $runner is codemode itself (exec); it must pass TERM on to the container.
  kill -TERM "$runner"
  local rc=0
  wait "$runner" || rc=$?
  [ "$rc" -eq 9 ]
}
