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

# Foreground, terminal: true, no --console-socket: the pty is proxied to the caller's terminal (the
# first of stderr, stdout, stdin that is one, else /dev/tty, as runc finds it). With none (no
# controlling terminal: setsid), the process would wait on its pty for input nobody can type:
# it fails at once instead, and nothing is made (runc: "open /dev/tty: no such device or address").
@test "a foreground run with terminal: true and no terminal to attach fails at once, leaving nothing" {
  bundle_set_terminal "$BUNDLE" true
  set_args sh
  status=0
  timeout --kill-after=5 20 setsid -w "$CODEMODE" --root "$ROOT" run -b "$BUNDLE" "$CID" \
    </dev/null >"$TEST_DIR/out" 2>"$TEST_DIR/err" 3>&- || status=$?
  stderr=$(cat "$TEST_DIR/err")
  echo "status $status: $stderr"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *tty* ]]
  if codemode_part error-wording; then
    [[ "$stderr" == *".process.terminal"*"--console-socket"* ]]
  fi
  [ -z "$(cm list -q)" ]
  [ -z "$(ls -A "$ROOT")" ]
  [ -z "$(test_processes "$CM_TEST_TOKEN:$CID")" ]
}

@test "exec --tty in the foreground with no terminal to attach fails at once with 255" {
  set_args sleep 1000
  run_cm run --detach -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  status=0
  timeout --kill-after=5 20 setsid -w "$CODEMODE" --root "$ROOT" exec --tty "$CID" sh \
    </dev/null >"$TEST_DIR/out" 2>"$TEST_DIR/err" 3>&- || status=$?
  echo "status $status: $(cat "$TEST_DIR/err")"
  [ "$status" -eq 255 ]
  [[ "$(cat "$TEST_DIR/err")" == *tty* ]]
  # Nothing was started in the container.
  run_cm ps --format json "$CID"
  echo "$stdout" | jq -e 'length == 1'
}

# With a terminal the host terminal is raw, so a SIGINT is never a key typed for the container:
# it is the caller stopping the run (runc leaves on it too). The container is stopped with it.
@test "SIGINT stops a foreground run with a terminal, and its container" {
  bundle_set_terminal "$BUNDLE" true
  set_args sleep 1000
  # script(1) gives the run a pty as its terminal; -e returns the run's exit status.
  script -qefc "$(printf '%q ' "$CODEMODE" --root "$ROOT" run -b "$BUNDLE" "$CID")" /dev/null \
    </dev/null >"$TEST_DIR/out" 2>&1 3>&- &
  local script_pid=$! st=0 init run_pid
  bg_track "$script_pid"
  wait_status "$CID" running
  init=$(state_field "$CID" pid)
  run_pid=$(root_processes "$ROOT" | head -n 1)
  [ -n "$run_pid" ]
  kill -INT "$run_pid"
  local i
  for i in $(seq 100); do kill -0 "$script_pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$script_pid" 2>/dev/null; then
    echo "the run is still there 10 s after SIGINT: $(cat "$TEST_DIR/out")"
    return 1
  fi
  wait "$script_pid" || st=$?
  echo "run exited $st: $(cat "$TEST_DIR/out")"
  ! kill -0 "$init" 2>/dev/null
  if codemode_part run-tty-sigint; then
    # 128+SIGINT, and the run cleaned up as after any exit.
    [ "$st" -eq 130 ]
    [ -z "$(cm list -q)" ]
  fi
}

# runc 1.1.5 with this bundle, run in the foreground under a pty: exactly these bytes (the
# container's pty turns each \n into \r\n once; nothing added, nothing lost), and the pty belongs
# to the process user (runc chowns it; issue 14: it stayed root's).
@test "a foreground run with a terminal gives runc's bytes, and the pty belongs to the process user" {
  bundle_set_terminal "$BUNDLE" true
  set_cfg '.process.user = {uid: 1000, gid: 1000}'
  set_args sh -c 'printf "a\tb\nline2\n"; stat -c "%u" "$(tty)"'
  timeout 30 "$CM_HELPER_DIR/ptyrun" "$CODEMODE" --root "$ROOT" run -b "$BUNDLE" "$CID" >"$TEST_DIR/bytes" 2>&1 </dev/null 3>&-
  od -c "$TEST_DIR/bytes"
  printf 'a\tb\r\nline2\r\n1000\r\n' >"$TEST_DIR/want"
  cmp "$TEST_DIR/bytes" "$TEST_DIR/want"
}

# runc 1.1.5 on this bundle: a non-root process can reopen /dev/stdout when it is a pipe (runc
# chowns its stdio pipes to the process user; nginx and others log that way).
@test "a non-root process can reopen its stdout pipe through /dev/stdout" {
  set_cfg '.process.user = {uid: 1000, gid: 1000}'
  set_args sh -c 'echo through-dev-stdout >/dev/stdout'
  run cm run -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = through-dev-stdout ]
}

# runc 1.1.5 clears ONLCR on the container's pty it proxies in the foreground and leaves the host
# terminal's output processing alone (raw for input only): redirected output holds the program's
# own bytes, `hello\n`, and a terminal still shows `\r\n` (issue 28; the test above).
@test "a foreground run with a terminal writes hello\\n, not hello\\r\\n, to a redirected stdout" {
  bundle_set_terminal "$BUNDLE" true
  set_args echo hello
  timeout 30 "$CM_HELPER_DIR/ptyrun" sh -c '"$0" --root "$1" run -b "$2" "$3" >"$4"' \
    "$CODEMODE" "$ROOT" "$BUNDLE" "$CID" "$TEST_DIR/bytes" </dev/null 3>&-
  od -c "$TEST_DIR/bytes"
  printf 'hello\n' >"$TEST_DIR/want"
  cmp "$TEST_DIR/bytes" "$TEST_DIR/want"
}

@test "exec --tty in the foreground writes hello\\n to a redirected stdout" {
  codemode_only runc-exec-onlcr-race
  set_args sleep 1000
  run_cm run --detach -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  timeout 30 "$CM_HELPER_DIR/ptyrun" sh -c '"$0" --root "$1" exec --tty "$2" echo hello >"$3"' \
    "$CODEMODE" "$ROOT" "$CID" "$TEST_DIR/bytes" </dev/null 3>&-
  od -c "$TEST_DIR/bytes"
  printf 'hello\n' >"$TEST_DIR/want"
  cmp "$TEST_DIR/bytes" "$TEST_DIR/want"
}
