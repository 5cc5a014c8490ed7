#!/usr/bin/env bats
# terminal: true with --console-socket: the pty master goes to the socket via SCM_RIGHTS.

load ../lib/helpers

# start_receiver [INPUT]: run tests/helpers/recvtty on $TEST_DIR/console.sock, output in
# $TEST_DIR/tty.out; waits until it listens.
start_receiver() {
  SOCK=$TEST_DIR/console.sock
  if [ -n "${1:-}" ]; then
    "$CM_HELPER_DIR/recvtty" -i "$1" "$SOCK" >"$TEST_DIR/tty.out" 2>"$TEST_DIR/tty.err" 3>&- &
  else
    "$CM_HELPER_DIR/recvtty" "$SOCK" >"$TEST_DIR/tty.out" 2>"$TEST_DIR/tty.err" 3>&- &
  fi
  RECEIVER=$!
  bg_track "$RECEIVER"
  wait_file "$SOCK" 5
}

# wait_receiver: wait for recvtty to see the terminal close; its output without CRs in $output.
wait_receiver() {
  local rc=0
  wait "$RECEIVER" || rc=$?
  output=$(tr -d '\r' <"$TEST_DIR/tty.out")
  mapfile -t lines <<<"$output"
  cat "$TEST_DIR/tty.err" >&2
  return "$rc"
}

@test "run --detach with terminal sends the pty master to --console-socket" {
  start_receiver
  bundle_set_terminal "$BUNDLE" true
  set_args sh -c 'tty; test -t 0 && test -t 1 && test -t 2 && echo all-tty'
  run_cm run --detach --console-socket "$SOCK" -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  wait_receiver
  [[ "${lines[0]}" == /dev/pts/* || "${lines[0]}" == /dev/console ]]
  [ "${lines[1]}" = all-tty ]
}

@test "create + start with a terminal: input typed on the master reaches the process" {
  start_receiver $'typed-input\n'
  bundle_set_terminal "$BUNDLE" true
  set_args sh -c 'read line; echo "got:$line"'
  run_cm create --console-socket "$SOCK" --bundle "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  cm start "$CID"
  wait_receiver
  [[ "$output" == *got:typed-input* ]]
}

@test "foreground run with --console-socket waits and returns the exit status" {
  codemode_only run-console-socket
  start_receiver
  bundle_set_terminal "$BUNDLE" true
  set_args sh -c 'echo on-tty; exit 6'
  run_cm run --console-socket "$SOCK" -b "$BUNDLE" "$CID"
  [ "$status" -eq 6 ]
  wait_receiver
  [[ "$output" == *on-tty* ]]
}

@test "consoleSize sets the window size" {
  start_receiver
  bundle_set_terminal "$BUNDLE" true
  set_cfg '.process.consoleSize = {height: 30, width: 100}'
  set_args stty size
  run_cm run --detach --console-socket "$SOCK" -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  wait_receiver
  [ "${lines[0]}" = "30 100" ]
}

@test "the terminal is the container's controlling tty and /dev/console points at it" {
  start_receiver
  bundle_set_terminal "$BUNDLE" true
  set_args sh -c 'stat -c "%t" /dev/console; ps -o pid,tty 2>/dev/null | tail -1; echo done'
  run_cm run --detach --console-socket "$SOCK" -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  wait_receiver
  # /dev/console is a bind of the pty slave: devpts major 136 (0x88).
  [ "${lines[0]}" = 88 ]
}

@test "terminal: true without --console-socket for create is refused" {
  bundle_set_terminal "$BUNDLE" true
  set_args true
  run_cm create --bundle "$BUNDLE" "$CID"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *console* ]]
  [ -z "$(cm list -q)" ]
}

@test "--console-socket without terminal: true is refused" {
  start_receiver
  set_args true
  run_cm run --detach --console-socket "$SOCK" -b "$BUNDLE" "$CID"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *terminal* || "$stderr" == *console* ]]
}

@test "a console socket that nobody listens on is an error" {
  bundle_set_terminal "$BUNDLE" true
  set_args true
  run_cm run --detach --console-socket "$TEST_DIR/nobody.sock" -b "$BUNDLE" "$CID"
  echo "status $status, stderr: $stderr" # shown when the test fails
  [ "$status" -eq 1 ]
  [[ "$stderr" == *nobody.sock* ]]
  [ -z "$(cm list -q)" ]
}
