#!/usr/bin/env bats
# systemd integration as runc does it: NOTIFY_SOCKET (the container's READY=1 reaches the host's
# socket with MAINPID, podman --sdnotify=container) and socket activation (LISTEN_FDS with
# --preserve-fds). Observed with runc 1.1.5 on the same bundles.

load ../lib/helpers

setup() {
  cm_setup
  # The container's sd_notify(3): a static sender, so it runs in the busybox rootfs.
  cc -static -O2 -o "$BUNDLE/rootfs/bin/sd-notify" "$CM_REPO/tests/helpers/sd-notify.c"
  NOTIFY=$TEST_DIR/host-notify.sock
}
teardown() { cm_teardown; }

# start_listener: a unix datagram socket at $NOTIFY, as systemd gives a Type=notify unit.
start_listener() {
  "$CM_HELPER_DIR/notify-listen" "$NOTIFY" 20 >"$TEST_DIR/notify.out" 2>&1 3>&- &
  bg_track $!
  wait_file "$NOTIFY" 5
}

# runc 1.1.5: the process sees NOTIFY_SOCKET=/run/notify/notify.sock; the host's socket gets
# READY=1 and MAINPID=<init's pid>, not the STATUS= lines; `run --detach` returns once READY came.
@test "NOTIFY_SOCKET: run --detach relays the container's READY=1 with MAINPID, nothing else" {
  start_listener
  set_args sh -c 'echo "sock=$NOTIFY_SOCKET"; sd-notify STATUS=starting READY=1 STATUS=up; sleep 30'
  NOTIFY_SOCKET=$NOTIFY run_cm run -d --pid-file "$TEST_DIR/pid" -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  # Returned only once READY was relayed: it is there already.
  cat "$TEST_DIR/notify.out"
  grep -qx 'msg READY=1' "$TEST_DIR/notify.out"
  grep -qx "msg MAINPID=$(cat "$TEST_DIR/pid")" "$TEST_DIR/notify.out"
  ! grep -q STATUS "$TEST_DIR/notify.out"
  [[ $(cat "$TEST_DIR"/.run_cm.*.out) == *"sock=/run/notify/notify.sock"* ]]
}

# runc 1.1.5: `start` returns once the container said READY, and relays it as run does.
@test "NOTIFY_SOCKET: create + start relays READY=1 with init's pid" {
  start_listener
  set_args sh -c 'sleep 0.3; sd-notify READY=1; sleep 30'
  NOTIFY_SOCKET=$NOTIFY run_cm create --pid-file "$TEST_DIR/pid" -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  NOTIFY_SOCKET=$NOTIFY run_cm start "$CID"
  [ "$status" -eq 0 ]
  cat "$TEST_DIR/notify.out"
  grep -qx 'msg READY=1' "$TEST_DIR/notify.out"
  grep -qx "msg MAINPID=$(cat "$TEST_DIR/pid")" "$TEST_DIR/notify.out"
  # `state` is not held up by a start that waits (nor is anything else).
  [ "$(state_field "$CID" status)" = running ]
}

# runc 1.1.5: in the foreground, MAINPID is the runtime's own pid (it stays the main process).
@test "NOTIFY_SOCKET: a foreground run relays READY=1 with the runtime's own pid" {
  start_listener
  set_args sh -c 'sd-notify READY=1; sleep 1'
  NOTIFY_SOCKET=$NOTIFY "$CODEMODE" --root "$ROOT" run -b "$BUNDLE" "$CID" </dev/null >"$TEST_DIR/run.out" 2>&1 3>&- &
  local runtime=$!
  wait "$runtime"
  cat "$TEST_DIR/notify.out"
  grep -qx 'msg READY=1' "$TEST_DIR/notify.out"
  grep -qx "msg MAINPID=$runtime" "$TEST_DIR/notify.out"
}

# runc 1.1.5 (and crun): LISTEN_FDS fds addressed to the runtime (LISTEN_PID = its pid) reach the
# process at the same numbers, before the --preserve-fds ones, with LISTEN_FDS and LISTEN_PID=1
# (its pid in its pid namespace).
@test "socket activation: LISTEN_FDS fds reach the process, then the --preserve-fds ones" {
  echo activated >"$TEST_DIR/listen-input"
  echo preserved >"$TEST_DIR/preserved-input"
  set_args sh -c 'echo "LISTEN_FDS=$LISTEN_FDS LISTEN_PID=$LISTEN_PID"; cat <&3; cat <&4; ls /proc/self/fd'
  # What systemd does: the fds from 3 on, LISTEN_PID the pid it execs.
  run bash -c 'exec 3<"$1" 4<"$2"; export LISTEN_FDS=1 LISTEN_PID=$$; exec "$3" --root "$4" run --preserve-fds 1 -b "$5" "$6" </dev/null' \
    _ "$TEST_DIR/listen-input" "$TEST_DIR/preserved-input" "$CODEMODE" "$ROOT" "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "LISTEN_FDS=1 LISTEN_PID=1" ]
  [ "${lines[1]}" = activated ]
  [ "${lines[2]}" = preserved ]
  # Nothing else of ours: 0-2, 3 and 4, and ls's own listing fd.
  [ "$(echo "${lines[3]}" | wc -w)" -le 6 ]
}

# runc 1.1.5: LISTEN_FDS meant for another process (LISTEN_PID not the runtime's) pass nothing.
@test "socket activation: LISTEN_FDS for another pid are ignored" {
  echo activated >"$TEST_DIR/listen-input"
  set_args sh -c 'echo "LISTEN_FDS=$LISTEN_FDS"; { cat <&3; } 2>/dev/null || echo no-fd-3'
  run bash -c 'exec 3<"$1"; export LISTEN_FDS=1 LISTEN_PID=1; exec "$2" --root "$3" run -b "$4" "$5" </dev/null' \
    _ "$TEST_DIR/listen-input" "$CODEMODE" "$ROOT" "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "LISTEN_FDS=" ]
  [ "${lines[1]}" = no-fd-3 ]
}
