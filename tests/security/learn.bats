#!/usr/bin/env bats
# Learn mode and learned policies (issue 19), on the busybox bundle: codemode-run --learn writes
# the run's own seccomp profile, Landlock rules and egress allowlist; --policy applies them on top
# of the mcp profile (the kernel denies what the run never did, and the audit log names it, with
# the policy line that would allow it); codemode learn --merge and codemode policy diff; the
# learned profile against Docker's default; a hostile server quiet while learning and attacking
# later stays contained, by the learned policy and, where that is widened by hand, by the mcp
# profile underneath. The real MCP server's sessions are tests/mcp (cases 14-18).

load ../lib/helpers
load mcp_escape/escape
codemode_only_file mcp-profile

setup_file() { escape_setup_file; }

setup() {
  cm_setup
  [ -x "$CODEMODE_RUN" ] || { echo "$CODEMODE_RUN is not built (run make)" >&2; return 1; }
  POL=$TEST_DIR/policy.json
  LOG=$TEST_DIR/audit.log
}

# cmr [codemode-run options…] -- CMD…: run the bundle; $status, $output (stdout+stderr).
cmr() {
  local opts=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  status=0
  timeout --kill-after=5 60 "$CODEMODE_RUN" --root "$ROOT" --id "$CID" "${opts[@]}" "$BUNDLE" -- "$@" \
    </dev/null >"$TEST_DIR/out" 2>&1 3>&- || status=$?
  output=$(cat "$TEST_DIR/out")
  echo "# status $status: $output" >&3
}

WORK='ls / >/dev/null; cat /etc/passwd >/tmp/x; mkdir /tmp/d; mv /tmp/x /tmp/d/y; echo worked'

# log_has 'jq condition': some record of the audit log satisfies it.
log_has() {
  jq -se "map(select($1)) | length > 0" "$LOG" >/dev/null || { echo "no record with $1 in:"; cat "$LOG"; return 1; }
}

nothing_left() {
  [ ! -e "$ROOT/$CID" ]
  ! find /sys/fs/cgroup -maxdepth 4 -type d -name "$CID" 2>/dev/null | grep -q .
}

@test "learn: the run's syscalls (with clone, ioctl, prctl arguments), files and comments in one file" {
  cmr --learn "$POL" -- sh -c "$WORK"
  [ "$status" -eq 0 ]
  [[ "$output" == *worked* ]]
  [[ "$output" == *"learned policy written to $POL"* ]]
  nothing_left
  [ "$(jq .codemodePolicy "$POL")" = 1 ]
  [ "$(jq -r '.seccomp.defaultAction' "$POL")" = SCMP_ACT_ERRNO ]
  # what the shell did is there, each with when it was seen
  for sc in execve openat mkdir rename getdents64 wait4; do
    jq -e --arg s "$sc" '.seccomp.syscalls[] | select(.names == [$s]) | .comment | test("^seen [0-9]+ times?, first 20")' "$POL" >/dev/null
  done
  # argument rules: clone's flags, ioctl's requests (TCGETS…), one entry each, commented
  jq -e '[.seccomp.syscalls[] | select(.names == ["clone"]) | .args[0].op] | length > 0 and all(. == "SCMP_CMP_EQ")' "$POL"
  jq -e '.seccomp.syscalls[] | select(.names == ["ioctl"]) | select(.args[0].index == 1) | .comment | test("TCGETS|TIOCGWINSZ")' "$POL" >/dev/null
  # never seen: not there
  ! jq -e '.seccomp.syscalls[] | select(.names == ["chmod"] or .names == ["ptrace"])' "$POL" >/dev/null
  # clone3 keeps mcp's ENOSYS
  [ "$(jq '.seccomp.syscalls[] | select(.names == ["clone3"]) | .errnoRet' "$POL")" = 38 ]
  # files: /tmp written (created, renamed within it), /etc/passwd read exactly, busybox executed
  jq -e '.landlock.pathBeneath[] | select(.parent == ["/tmp"]) | .allowedAccess | (index("make_reg") and index("make_dir") and index("remove_file") and index("write_file"))' "$POL" >/dev/null
  jq -e '.landlock.pathBeneath[] | select(.parent == ["/etc/passwd"]) | .allowedAccess == ["read_file"]' "$POL" >/dev/null
  jq -e '.landlock.pathBeneath[] | select(.parent == ["/bin/busybox"]) | .allowedAccess == ["execute"]' "$POL" >/dev/null
  ! jq -e '.landlock.pathBeneath[] | select(.parent == ["/etc"] or .parent == ["/"] and (.allowedAccess | index("read_file")))' "$POL" >/dev/null
  [ "$(jq -r '.runs[0].command' "$POL")" = "sh -c $WORK" ]
  # each section stands alone: the seccomp one is a Docker profile codemode-run --seccomp takes
  jq .seccomp "$POL" >"$TEST_DIR/docker.json"
  cmr --seccomp "$TEST_DIR/docker.json" -- sh -c "$WORK"
  [ "$status" -eq 0 ]
  [[ "$output" == *worked* ]]
}

@test "learn: the same run under its policy passes; a new syscall and a new file are denied, one audit record each" {
  cmr --learn "$POL" -- sh -c "$WORK"
  [ "$status" -eq 0 ]
  cmr --policy "$POL" --audit-log "$LOG" --audit-summary -- sh -c "$WORK"
  [ "$status" -eq 0 ]
  [[ "$output" == *worked* ]]
  [[ "$output" == *"audit: no denial in this run"* ]]
  [ ! -s "$LOG" ]
  cmr --policy "$POL" --audit-log "$LOG" --audit-summary -- sh -c 'chmod 700 /tmp/.; cat /etc/group; echo end'
  [ "$status" -eq 0 ]
  [[ "$output" == *"chmod: /tmp/.: Operation not permitted"* ]]
  [[ "$output" == *"/etc/group"*"Permission denied"* ]]
  # the kernel's own record of the seccomp denial, named, with the rule and the line to add
  log_has '.event == "syscall" and .syscall == "chmod" and .decision == "deny" and .by == "seccomp"
           and .comm == "chmod" and .pid > 0 and (.rule | test("not in seccomp.syscalls"))
           and (.allow_with | test("\"names\": \\[\"chmod\"\\]"))'
  log_has '.event == "file" and .path == "/etc/group" and .access == "read_file" and .layer == "learned policy" and .errno == 13'
  [ "$(jq -s 'map(select(.decision == "deny")) | length' "$LOG")" -eq 2 ]
  CID=$CID log_has '.v == 1 and .id == env.CID and (.time | test("^20..-..-..T..:..:..\\....Z$"))'
  # the summary: each denial, and the policy line that would allow it
  [[ "$output" == *"audit: 2 denials in this run"* ]]
  [[ "$output" == *'"seccomp": {"syscalls": [{"names": ["chmod"], "action": "SCMP_ACT_ALLOW"}]}'* ]]
  [[ "$output" == *'"landlock": {"pathBeneath": [{"allowedAccess": ["read_file"], "parent": ["/etc"]}]}'* ]]
  nothing_left
}

@test "learn: the kernel enforces: without an audit there is no listener, and the policy still denies" {
  cmr --learn "$POL" -- sh -c 'grep Seccomp_filters /proc/self/status'
  [ "$status" -eq 0 ]
  learning=$(grep -o 'Seccomp_filters:[[:space:]]*[0-9]*' <<<"$output" | grep -o '[0-9]*$')
  cmr --profile mcp -- sh -c 'grep Seccomp_filters /proc/self/status'
  plain=$(grep -o 'Seccomp_filters:[[:space:]]*[0-9]*' <<<"$output" | grep -o '[0-9]*$')
  # learning adds exactly one filter (the learning one) to the profile's
  [ "$learning" -eq $((plain + 1)) ]
  cmr --learn "$POL" -- sh -c "$WORK; grep Seccomp_filters /proc/self/status"
  cmr --policy "$POL" -- sh -c "$WORK; grep Seccomp_filters /proc/self/status; chmod 700 /tmp/. || echo chmod-denied"
  [ "$status" -eq 0 ]
  [[ "$output" == *worked* ]]
  [[ "$output" == *chmod-denied* ]]
  # the policy's filter, and no listener's
  policy=$(grep -o 'Seccomp_filters:[[:space:]]*[0-9]*' <<<"$output" | grep -o '[0-9]*$')
  [ "$policy" -eq $((plain + 1)) ]
  # what the mcp profile denies while learning is denied (the listener decides nothing) and listed
  cp "$PAYLOAD" "$BUNDLE/rootfs/escape"
  echo "codemode mcp escape test bundle" >"$BUNDLE/rootfs/.codemode-escape-marker"
  cmr --learn "$POL" -- /escape ptrace
  [ "$status" -eq 0 ]
  [[ "$output" == *contained* ]]
  jq -e '.deniedDuringLearning[] | select(.what == "syscall ptrace") | .comment | test("a policy cannot allow it")' "$POL" >/dev/null
}

@test "learn: merge two runs that did different things: both pass under the merged policy; policy diff" {
  cmr --learn "$TEST_DIR/a.json" -- sh -c 'cat /etc/passwd >/dev/null; echo a-done'
  [ "$status" -eq 0 ]
  cmr --learn "$TEST_DIR/b.json" -- sh -c 'mkdir /tmp/d && touch /tmp/d/f && chmod 600 /tmp/d/f && echo b-done'
  [ "$status" -eq 0 ]
  # each alone does not cover the other
  cmr --policy "$TEST_DIR/a.json" -- sh -c 'mkdir /tmp/d && touch /tmp/d/f && chmod 600 /tmp/d/f && echo b-done'
  [[ "$output" != *b-done* ]]
  run -1 "$CODEMODE" policy diff "$TEST_DIR/a.json" "$TEST_DIR/b.json"
  [[ "$output" == *"seccomp: + chmod"* ]]
  [[ "$output" == *"seccomp: + mkdir"* ]]
  [[ "$output" == *"landlock: - /etc/passwd: read_file"* ]]
  run -0 "$CODEMODE" learn --merge "$TEST_DIR/a.json" "$TEST_DIR/b.json" -o "$TEST_DIR/ab.json"
  [ "$(jq '.runs | length' "$TEST_DIR/ab.json")" -eq 2 ]
  [ "$(jq '.runs[1].run' "$TEST_DIR/ab.json")" -eq 2 ]
  jq -e '.seccomp.syscalls[] | select(.names == ["chmod"]) | .comment | test("\\(run 2\\)")' "$TEST_DIR/ab.json" >/dev/null
  cmr --policy "$TEST_DIR/ab.json" -- sh -c 'cat /etc/passwd >/dev/null; echo a-done'
  [ "$status" -eq 0 ] && [[ "$output" == *a-done* ]]
  cmr --policy "$TEST_DIR/ab.json" -- sh -c 'mkdir /tmp/d && touch /tmp/d/f && chmod 600 /tmp/d/f && echo b-done'
  [ "$status" -eq 0 ] && [[ "$output" == *b-done* ]]
  # the merged policy adds to a, takes nothing away
  run -1 "$CODEMODE" policy diff "$TEST_DIR/a.json" "$TEST_DIR/ab.json"
  [[ "$output" != *"seccomp: -"* ]]
  run -0 "$CODEMODE" policy diff "$TEST_DIR/ab.json" "$TEST_DIR/ab.json"
  [ -z "$output" ]
  # merging again changes nothing it allows
  run -0 "$CODEMODE" learn --merge "$TEST_DIR/ab.json" "$TEST_DIR/b.json" -o "$TEST_DIR/abb.json"
  run -0 "$CODEMODE" policy diff "$TEST_DIR/ab.json" "$TEST_DIR/abb.json"
  run -2 "$CODEMODE" policy diff "$TEST_DIR/ab.json" "$TEST_DIR/missing.json"
  [[ "$output" == *missing.json* ]]
}

@test "learn: codemode learn runs a bundle in learn mode; the learned profile allows far fewer syscalls than Docker's default" {
  run -0 timeout 60 "$CODEMODE" --root "$ROOT" learn -o "$POL" --id "$CID" "$BUNDLE" -- sh -c "$WORK" </dev/null
  [[ "$output" == *worked* ]]
  [ -s "$POL" ]
  run -0 "$CODEMODE_RUN" --explain --policy "$POL" "$BUNDLE"
  line=$(grep '^policy: .*seccomp: allows' <<<"$output")
  learned=$(sed -E 's/.*allows ([0-9]+) syscalls.*/\1/' <<<"$line")
  docker=$(sed -E "s/.*Docker's default profile: ([0-9]+).*/\1/" <<<"$line")
  echo "# learned policy: $learned syscalls; Docker's default profile: $docker" >&3
  [ "$learned" -gt 20 ]
  [ "$learned" -lt "$docker" ]
  [ "$docker" -gt 300 ]
}

@test "learn: a server quiet while learning that attacks under its policy is contained" {
  cp "$PAYLOAD" "$BUNDLE/rootfs/escape"
  echo "codemode mcp escape test bundle" >"$BUNDLE/rootfs/.codemode-escape-marker"
  cmr --learn "$POL" -- /escape quiet
  [ "$status" -eq 0 ]
  attacks=(ptrace process_vm mount fsopen unshare setns clone_newuser clone3 packet raw vsock alg netlink_audit
    keyctl bpf perf io_uring userfaultfd module chroot mknod misc self_exe)
  for a in "${attacks[@]}"; do
    cmr --policy "$POL" -- /escape "$a"
    [ "$status" -eq 0 ] || { echo "policy: $a: status $status: $output"; return 1; }
    [[ "$output" == *contained* && "$output" != *ESCAPED* ]] || { echo "policy: $a: $output"; return 1; }
  done
  # The same policy widened by hand to allow every attack: the mcp profile underneath still
  # contains each one (a policy is stacked on mcp, never instead of it).
  jq '.seccomp.syscalls += [{"names": ["ptrace","process_vm_readv","process_vm_writev","mount","fsopen","unshare",
        "setns","clone","clone3","socket","socketpair","keyctl","add_key","bpf","perf_event_open","io_uring_setup",
        "userfaultfd","init_module","finit_module","chroot","mknod","mknodat","capget","capset","modify_ldt","execveat",
        "memfd_secret","vmsplice","name_to_handle_at","open_by_handle_at","openat","open","prctl"],"action":"SCMP_ACT_ALLOW"}]
      | .landlock.pathBeneath += [{"allowedAccess": ["execute","write_file","read_file","read_dir","remove_dir",
        "remove_file","make_char","make_dir","make_reg","make_sock","make_fifo","make_block","make_sym","refer",
        "truncate","ioctl_dev"], "parent": ["/"]}]' "$POL" >"$TEST_DIR/wide.json"
  # (caps: the payload checks it holds none, which needs capget, so only under the widened policy)
  for a in "${attacks[@]}" caps; do
    cmr --policy "$TEST_DIR/wide.json" -- /escape "$a"
    [ "$status" -eq 0 ] || { echo "widened: $a: status $status: $output"; return 1; }
    [[ "$output" == *contained* && "$output" != *ESCAPED* ]] || { echo "widened: $a: $output"; return 1; }
  done
  # and the widened policy really is wider: a call the learned one refused now passes the policy
  cmr --policy "$TEST_DIR/wide.json" -- /escape write /tmp/f
  [[ "$output" == *contained* || "$output" == *ESCAPED* ]]
  nothing_left
}

@test "learn: bad input is refused with the flag or JSON path, and leaves nothing" {
  cmr --profile default --learn "$POL" -- true
  [ "$status" -eq 125 ]
  [[ "$output" == *"--learn: needs the mcp profile"* ]]
  [ ! -e "$POL" ]
  echo '{"codemodePolicy": 1}' >"$TEST_DIR/empty.json"
  cmr --learn "$POL" --policy "$TEST_DIR/empty.json" -- true
  [ "$status" -eq 125 ]
  [[ "$output" == *"--learn and --policy"* ]]
  echo '{"codemodePolicy": 1, "landlock": {"abi": 3, "pathBeneath": [{"allowedAccess": ["rd"], "parent": ["/x"]}]}}' >"$TEST_DIR/bad.json"
  cmr --policy "$TEST_DIR/bad.json" -- true
  [ "$status" -eq 125 ]
  [[ "$output" == *".landlock.pathBeneath[0].allowedAccess[0]"* ]]
  [[ "$output" == *'"rd"'* ]]
  cmr --policy "$TEST_DIR/nope.json" -- true
  [ "$status" -eq 125 ]
  [[ "$output" == *"nope.json"* ]]
  # one listener per filter stack: a config that notifies an agent of its own cannot learn
  set_cfg '.linux.seccomp = {"defaultAction": "SCMP_ACT_ALLOW", "listenerPath": "/tmp/none.sock",
            "syscalls": [{"names": ["mkdir"], "action": "SCMP_ACT_NOTIFY"}]}'
  cmr --learn "$POL" -- true
  [ "$status" -eq 125 ]
  [[ "$output" == *"SCMP_ACT_NOTIFY rules cannot be combined"* ]]
  [ ! -e "$POL" ]
  nothing_left
  # an audit log that is not one
  echo "not json" >"$TEST_DIR/other.log"
  cmr --audit-log "$TEST_DIR/other.log" -- true
  [ "$status" -eq 125 ]
  [[ "$output" == *"is not a codemode audit log"* ]]
  [ "$(cat "$TEST_DIR/other.log")" = "not json" ]
}

@test "learn: --profile mcp-audit is learn mode (the policy on stderr); elsewhere it enforces mcp.json" {
  cmr --profile mcp-audit -- sh -c 'echo hi'
  [ "$status" -eq 0 ]
  [[ "$output" == *'"codemodePolicy": 1'* ]]
  [[ "$output" == *'"names": ["execve"]'* ]]
  # no log-only filter is left anywhere: create/run under mcp-audit refuse what mcp refuses
  set_args sh -c 'unshare -U true 2>/dev/null && echo unshared || echo refused'
  run_cm --profile mcp-audit run -b "$BUNDLE" "$CID"
  [[ "$stdout" == *refused* ]]
  run -0 "$CODEMODE" --profile mcp-audit policy explain -b "$BUNDLE"
  [[ "$output" == *"mcp-audit enforces mcp.json"* ]]
}

@test "learn: --host: the host's system directories bound read-only are mount points of the collapse; the replay passes" {
  timeout --kill-after=5 60 "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --learn "$POL" --host -- \
    /bin/sh -c 'ls /usr/bin >/dev/null; echo host-ok' </dev/null >"$TEST_DIR/out" 2>&1
  grep -q host-ok "$TEST_DIR/out"
  jq -e '.runs[0].mounts | index("/usr")' "$POL" >/dev/null
  jq -e '.landlock.pathBeneath[] | select(.parent == ["/usr"]) | .allowedAccess | index("read_file")' "$POL" >/dev/null
  ! jq -e '.landlock.pathBeneath[] | select(.parent == ["/"])' "$POL" >/dev/null
  timeout --kill-after=5 60 "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --policy "$POL" --audit-summary --host -- \
    /bin/sh -c 'ls /usr/bin >/dev/null; echo host-ok' </dev/null >"$TEST_DIR/out" 2>&1
  grep -q host-ok "$TEST_DIR/out"
  grep -q "audit: no denial in this run" "$TEST_DIR/out"
  nothing_left
}
