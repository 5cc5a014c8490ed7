#!/usr/bin/env bats
# exec: a new process in a running container — namespaces, cgroup, seccomp, caps, user, env,
# cwd, terminal, exit status, --detach + pid file, --process, and the paused/stopped errors.

load ../lib/helpers

# start_container: the bundle's container running `sleep 1000`, detached.
start_container() {
  set_args sleep 1000
  run_cm run --detach --bundle "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  wait_status "$CID" running
  INIT=$(state_field "$CID" pid)
}

@test "exec runs in every namespace and the cgroup of the container" {
  start_container
  run_cm exec "$CID" sh -c 'for n in mnt uts ipc net pid cgroup; do readlink /proc/self/ns/$n; done; cat /proc/self/cgroup'
  [ "$status" -eq 0 ]
  local want
  want=$(for n in mnt uts ipc net pid cgroup; do readlink "/proc/$INIT/ns/$n"; done; cat "/proc/$INIT/cgroup")
  [ "$stdout" = "$want" ]
  # pid namespace: init is 1, we are someone else.
  run_cm exec "$CID" sh -c 'cat /proc/1/comm; echo $$'
  [ "${lines[0]}" = sleep ]
  [ "${lines[1]}" != 1 ]
  run_cm exec "$CID" hostname
  [ "$stdout" = cm-test ]
}

@test "exec propagates the exit status, 128+N when killed" {
  start_container
  run_cm exec "$CID" sh -c 'exit 7'
  [ "$status" -eq 7 ]
  run_cm exec "$CID" sh -c 'kill -KILL $$'
  [ "$status" -eq 137 ]
  run_cm exec "$CID" true
  [ "$status" -eq 0 ]
}

@test "exec takes the container's process and applies --env, --cwd, --user, --additional-gids" {
  set_env BASE=from-config FOO=old
  start_container
  run_cm exec -e FOO=new -e BAR=1 --cwd /tmp -u 1000:100 -g 20 -g 30 "$CID" sh -c 'echo $BASE $FOO $BAR; pwd; id -u; id -g; id -G'
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "from-config new 1" ]
  [ "${lines[1]}" = /tmp ]
  [ "${lines[2]}" = 1000 ]
  [ "${lines[3]}" = 100 ]
  [[ " ${lines[4]} " == *" 20 "* ]] && [[ " ${lines[4]} " == *" 30 "* ]]
  # HOME from the container's /etc/passwd.
  run_cm exec -u 1000 "$CID" sh -c 'echo $HOME'
  [ "$stdout" = "$(awk -F: '$3 == 1000 {print $6}' "$BUNDLE/rootfs/etc/passwd")" ]
}

@test "exec: capabilities from the config, --cap adds (never inheritable), --no-new-privs" {
  set_cfg '.process.noNewPrivileges = false | .process.capabilities = {"bounding": ["CAP_KILL"], "effective": ["CAP_KILL"], "permitted": ["CAP_KILL"]}'
  start_container
  run_cm exec "$CID" grep -E '^Cap(Eff|Inh)' /proc/self/status
  [ "${lines[0]}" = "CapInh:	0000000000000000" ]
  [ "${lines[1]}" = "CapEff:	0000000000000020" ]
  run_cm exec --cap CAP_NET_ADMIN "$CID" grep -E '^Cap(Inh|Eff|Bnd)' /proc/self/status
  [ "${lines[0]}" = "CapInh:	0000000000000000" ]
  [ "${lines[1]}" = "CapEff:	0000000000001020" ]
  [ "${lines[2]}" = "CapBnd:	0000000000001020" ]
  run_cm exec "$CID" grep NoNewPrivs /proc/self/status
  [ "$stdout" = "NoNewPrivs:	0" ]
  run_cm exec --no-new-privs "$CID" grep NoNewPrivs /proc/self/status
  [ "$stdout" = "NoNewPrivs:	1" ]
}

@test "exec gets the container's seccomp filter and rlimits" {
  set_cfg '.linux.seccomp = {"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]}
           | .process.rlimits = [{"type": "RLIMIT_NOFILE", "soft": 321, "hard": 321}]'
  start_container
  run_cm exec "$CID" sh -c 'mkdir /tmp/x 2>/dev/null || echo denied; grep "^Seccomp:" /proc/self/status; ulimit -n'
  [ "${lines[0]}" = denied ]
  [ "${lines[1]}" = "Seccomp:	2" ]
  [ "${lines[2]}" = 321 ]
}

@test "exec --process takes the whole process from process.json" {
  start_container
  cat >"$TEST_DIR/process.json" <<'EOF'
{"args": ["sh", "-c", "echo $ONLY; pwd; id -u"], "cwd": "/etc", "env": ["ONLY=json", "PATH=/bin"],
 "user": {"uid": 5, "gid": 6}}
EOF
  run_cm exec --process "$TEST_DIR/process.json" -e IGNORED=1 "$CID"
  [ "$status" -eq 0 ]
  [ "$stdout" = "json
/etc
5" ]
  echo '{"args": [], "cwd": "/", "user": {"uid": 0, "gid": 0}}' >"$TEST_DIR/bad.json"
  run_cm exec --process "$TEST_DIR/bad.json" "$CID"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *args* ]]
}

@test "exec --detach returns at once and writes the pid file" {
  start_container
  run_cm exec --detach --pid-file "$TEST_DIR/exec.pid" "$CID" sleep 500
  [ "$status" -eq 0 ]
  local pid
  pid=$(cat "$TEST_DIR/exec.pid")
  grep -q sleep "/proc/$pid/cmdline"
  [ "$(readlink "/proc/$pid/ns/pid")" = "$(readlink "/proc/$INIT/ns/pid")" ]
  run_cm ps --format json "$CID"
  echo "$stdout" | jq -e --argjson p "$pid" 'index($p) != null'
}

@test "exec --tty sends the pty master to --console-socket" {
  start_container
  SOCK=$TEST_DIR/console.sock
  "$CM_HELPER_DIR/recvtty" "$SOCK" >"$TEST_DIR/tty.out" 2>"$TEST_DIR/tty.err" 3>&- &
  local receiver=$!
  bg_track "$receiver"
  wait_file "$SOCK" 5
  run_cm exec --tty --detach --console-socket "$SOCK" "$CID" sh -c 'tty; [ -t 0 ] && echo stdin-tty'
  [ "$status" -eq 0 ]
  wait "$receiver"
  run tr -d '\r' <"$TEST_DIR/tty.out"
  [[ "$output" == */dev/pts/* ]]
  [[ "$output" == *stdin-tty* ]]
}

@test "exec --tty --detach without --console-socket is refused" {
  start_container
  run_cm exec --tty --detach "$CID" true
  [ "$status" -eq 255 ]
  [[ "$stderr" == *console[-\ ]socket* ]]
}

@test "exec --preserve-fds passes extra fds" {
  start_container
  echo passed >"$TEST_DIR/extra"
  status=0
  stdout=$(cm exec --preserve-fds 1 "$CID" cat /proc/self/fd/3 3<"$TEST_DIR/extra" </dev/null 2>&1) || status=$?
  [ "$status" -eq 0 ]
  [ "$stdout" = passed ]
  # Without it, fd 3 does not reach the process.
  stdout=$(cm exec "$CID" sh -c 'ls /proc/self/fd/3 2>/dev/null || echo none' 3<"$TEST_DIR/extra" </dev/null 2>&1)
  [ "$stdout" = none ]
}

# exec's own failures exit 255 (runc), so a caller can tell them from the command's status.
@test "exec in a paused container, a stopped one, a missing one: clear errors, status 255" {
  start_container
  run_cm pause "$CID"
  [ "$status" -eq 0 ]
  run_cm exec "$CID" true
  [ "$status" -eq 255 ]
  [[ "$stderr" == *"cannot exec in a paused container"* ]]
  run_cm resume "$CID"
  run_cm kill "$CID" KILL
  wait_status "$CID" stopped
  run_cm exec "$CID" true
  [ "$status" -eq 255 ]
  [[ "$stderr" == *"cannot exec in a stopped container"* ]]
  run_cm exec nosuch-container true
  [ "$status" -eq 255 ]
  [[ "$stderr" == *"does not exist"* ]]
  if codemode_part error-wording; then
    [[ "$stderr" == *'container does not exist: "nosuch-container"'* ]]
  fi
}

@test "exec: its own failures exit 255, the command's status passes through, bad flags are usage errors (1)" {
  start_container
  run_cm exec "$CID" sh -c 'exit 255'
  [ "$status" -eq 255 ]
  run_cm exec "$CID" sh -c 'exit 7'
  [ "$status" -eq 7 ]
  # The runtime's own failures: a bad process.json, a bad --user, a cwd that is not there, no command.
  echo '{bad' >"$TEST_DIR/bad.json"
  run_cm exec -p "$TEST_DIR/bad.json" "$CID"
  [ "$status" -eq 255 ]
  run_cm exec -p "$TEST_DIR/no-such.json" "$CID"
  [ "$status" -eq 255 ]
  run_cm exec --user abc "$CID" true
  [ "$status" -eq 255 ]
  run_cm exec --cwd /no/such/dir "$CID" true
  [ "$status" -eq 255 ]
  run_cm exec "$CID"
  [ "$status" -eq 255 ]
  run_cm exec --pid-file "$TEST_DIR/no-such-dir/pid" --detach "$CID" true
  [ "$status" -eq 255 ]
  # A flag the parser does not know, or no container id: usage errors, 1, as runc.
  run_cm exec --no-such-flag "$CID" true
  [ "$status" -eq 1 ]
  run_cm exec
  [ "$status" -eq 1 ]
}

@test "exec -p process.json without .user runs as uid 0, gid 0" {
  start_container
  jq -n '{args: ["sh", "-c", "id -u; id -g"], cwd: "/", env: ["PATH=/bin:/usr/bin"]}' >"$TEST_DIR/p.json"
  run_cm exec -p "$TEST_DIR/p.json" "$CID"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = 0 ]
  [ "${lines[1]}" = 0 ]
  # Also when the container's own process runs as another user: process.json replaces it whole.
  set_cfg '.process.user = {uid: 1000, gid: 1000}'
  set_args sleep 1000
  run_cm run -d -b "$BUNDLE" "$CID-u"
  [ "$status" -eq 0 ]
  run_cm exec -p "$TEST_DIR/p.json" "$CID-u"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = 0 ]
  [ "${lines[1]}" = 0 ]
}

@test "exec: a missing command is reported by the child, with Go's wording" {
  start_container
  run_cm exec "$CID" nosuchcommand
  [ "$status" -eq 255 ]
  [[ "$stderr" == *nosuchcommand*'executable file not found in $PATH'* ]]
  if codemode_part error-wording; then
    [[ "$stderr" == *'"nosuchcommand": executable file not found in $PATH'* ]]
  fi
  run_cm exec "$CID" /etc/passwd
  [ "$status" -eq 255 ]
  [[ "$stderr" == *"permission denied"* ]]
  run_cm exec --cwd relative "$CID" true
  [ "$status" -ne 0 ]
}

@test "exec does not hold the container's lock while it waits" {
  start_container
  cm exec "$CID" sleep 3 </dev/null >/dev/null 2>&1 &
  local bg=$!
  sleep 0.5
  run_cm state "$CID"
  [ "$status" -eq 0 ]
  wait "$bg"
}

@test "exec forwards signals to the process" {
  start_container
  "$CODEMODE" --root "$ROOT" exec "$CID" sh -c 'trap "echo got-term; exit 3" TERM; while :; do sleep 0.1; done' \
    </dev/null >"$TEST_DIR/sig.out" 2>&1 3>&- &
  local bg=$! st=0
  sleep 1
  kill -TERM "$bg"
  wait "$bg" || st=$?
  [ "$st" -eq 3 ]
  grep -q got-term "$TEST_DIR/sig.out"
}

@test "exec --log-format json writes the error as a JSON line" {
  start_container
  run cm --log "$TEST_DIR/log.json" --log-format json exec "$CID" nosuchcommand
  [ "$status" -ne 0 ]
  tail -1 "$TEST_DIR/log.json" | jq -e '.level == "error" and (.msg | contains("executable file not found")) and has("time")'
}
