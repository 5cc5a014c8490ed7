#!/usr/bin/env bats
# Landlock (issue 18) and learn mode (issue 19) as an unprivileged user, with the real kernel:
# both issues say "works rootless"; tests/security/landlock.bats and learn.bats are their root
# forms, tests/mcp/run.sh cases 14-18 the real MCP server's (also run as the user, pass 2).
# tests/rootless/run.sh runs this file as its test user in pass 1 (only the user's own uid is
# mapped). Every bundle here is made by the user (rootfs-tools/make-busybox-bundle.sh).
# A denial is shown to be Landlock's by a control: the same operation on the same mounts passes
# where the layer is off (--profile default has no Landlock; without --deny the path is allowed).
# Rootless, the kernel's seccomp records cannot be read (CAP_AUDIT_READ): seccomp still denies,
# and the learned policy and the audit must say that they cannot show those denials.
# Hostile payloads (tests/security/landlock/probe.c, mcp_escape/payload.c) refuse to run without
# their bundle's marker.

load ../lib/helpers

setup_file() {
  [ "$(id -u)" -ne 0 ] || {
    echo "tests/rootless/features.bats runs as an unprivileged user (tests/rootless/run.sh)" >&2
    return 1
  }
  cm_setup_file
  export CODEMODE_RUN=${CODEMODE_RUN:-$(dirname "$CODEMODE")/codemode-run}
  export PROBE=$BATS_FILE_TMPDIR/probe PAYLOAD=$BATS_FILE_TMPDIR/payload
  cc -static -O2 -Wall -Wextra -o "$PROBE" "$CM_REPO/tests/security/landlock/probe.c"
  cc -static -O2 -Wall -Wextra -o "$PAYLOAD" "$CM_REPO/tests/security/mcp_escape/payload.c"
}

setup() {
  cm_setup
  [ -x "$CODEMODE_RUN" ] || { echo "$CODEMODE_RUN is not built (run make)" >&2; return 1; }
  # The probe refuses to run without its marker (tests/security/landlock/probe.c).
  cp "$PROBE" "$BUNDLE/rootfs/probe"
  echo "codemode landlock test bundle" >"$BUNDLE/rootfs/.codemode-landlock-marker"
  # Bind sources under /tmp: the mcp profile refuses binds from /dev (TMPDIR may be /dev/shm).
  HOST_DIR=$(mktemp -d /tmp/cm-rlfeat.XXXXXX)
  mkdir -p "$HOST_DIR/data/sub"
  echo secret >"$HOST_DIR/data/.env"
  echo public >"$HOST_DIR/data/pub"
  echo inside >"$HOST_DIR/data/sub/f"
  POL=$TEST_DIR/policy.json
  LOG=$TEST_DIR/audit.log
}

teardown() {
  cm_teardown
  rm -rf --one-file-system "$HOST_DIR"
}

# cmr [codemode-run options…] -- CMD…: the bundle under codemode-run (profile mcp unless the
# options say otherwise); $status, $output (stdout+stderr).
cmr() {
  local opts=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  status=0
  timeout --kill-after=5 "$CM_TIMEOUT" "$CODEMODE_RUN" --root "$ROOT" --id "$CID" "${opts[@]}" "$BUNDLE" -- "$@" \
    </dev/null >"$TEST_DIR/out" 2>&1 3>&- || status=$?
  output=$(cat "$TEST_DIR/out")
  echo "# codemode-run ${opts[*]} -- $* -> $status: $output" >&3
}

# says OP RESULT: the probe printed "OP: RESULT".
says() { grep -qxF -- "$1: $2" <<<"$output" || { echo "expected \"$1: $2\" in: $output" >&2; return 1; }; }

# log_has 'jq condition': some record of the audit log satisfies it.
log_has() {
  jq -se "map(select($1)) | length > 0" "$LOG" >/dev/null || { echo "no record with $1 in:"; cat "$LOG"; return 1; }
}

nothing_left() {
  [ ! -e "$ROOT/$CID" ]
  [ -z "$(test_processes "$CM_TEST_TOKEN:$CID")" ]
}

# --- Landlock (issue 18) ------------------------------------------------------------------------

@test "rootless landlock: codemode-run --profile mcp --deny: the denied file is EACCES, the rest of the bind works" {
  # Control: the writable bind lets the user's container read and write the file.
  cmr --mount "$HOST_DIR/data:/data:rw" -- /probe read /data/.env write /data/pub
  [ "$status" -eq 0 ]
  says "read /data/.env" ok
  says "write /data/pub" ok
  cmr --mount "$HOST_DIR/data:/data:rw" --deny /data/.env -- \
    /probe read /data/.env write /data/.env unlink /data/.env read /data/pub read /data/sub/f create /data/sub/new
  [ "$status" -eq 0 ]
  says "read /data/.env" EACCES
  says "write /data/.env" EACCES
  says "unlink /data/.env" EACCES
  says "read /data/pub" ok
  says "read /data/sub/f" ok
  says "create /data/sub/new" ok
  [ "$(cat "$HOST_DIR/data/.env")" = secret ]
  [ -e "$HOST_DIR/data/sub/new" ]
  # --explain names the layer that refuses it.
  run "$CODEMODE_RUN" --explain --mount "$HOST_DIR/data:/data:rw" --deny /data/.env "$BUNDLE"
  echo "$output" >&3
  [ "$status" -eq 0 ]
  [[ "$output" == *"landlock: enforced at ABI"* ]]
  [[ "$output" == *"landlock layer 1 (profile mcp, best effort):"* ]]
  [[ "$output" == *"  /data/.env: denied"* ]]
  nothing_left
}

@test "rootless landlock: codemode --profile mcp run and exec: the deny annotation and ioctl on /dev/null are EACCES; allowed paths work" {
  set_cfg '.mounts += [{destination: "/data", type: "bind", source: $s, options: ["rbind", "rw"]}]' --arg s "$HOST_DIR/data"
  set_args /probe read /data/.env ioctl /dev/null read /data/pub create /tmp/x read /etc/passwd
  # Control: no Landlock under the default profile; the same mounts allow all of it.
  run_cm run -b "$BUNDLE" "$CID"
  echo "$output" >&3
  [ "$status" -eq 0 ]
  says "read /data/.env" ok
  says "ioctl /dev/null" ENOTTY # reaches the driver, which has no terminal ioctls
  run_cm --profile default policy explain -b "$BUNDLE"
  [[ "$output" == *"landlock: none"* ]]
  set_cfg '.annotations["run.codemode.landlock.deny"] = "[\"/data/.env\"]"'
  run_cm --profile mcp run -b "$BUNDLE" "$CID"
  echo "$output" >&3
  [ "$status" -eq 0 ]
  says "read /data/.env" EACCES
  # the profile grants ioctl_dev on terminals only (ABI 5)
  says "ioctl /dev/null" EACCES
  says "read /data/pub" ok
  says "create /tmp/x" ok
  says "read /etc/passwd" ok
  # an exec'd process gets the same domain
  set_args sleep 60
  run_cm --profile mcp run --detach -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  run_cm --profile mcp exec "$CID" /probe read /data/.env ioctl /dev/null read /data/pub
  echo "$output" >&3
  [ "$status" -eq 0 ]
  says "read /data/.env" EACCES
  says "ioctl /dev/null" EACCES
  says "read /data/pub" ok
  cm kill "$CID" KILL
  run_cm --profile mcp policy explain -b "$BUNDLE"
  [[ "$output" == *"landlock layer 1 (profile mcp, best effort):"* ]]
  [[ "$output" == *"  /data/.env: denied"* ]]
}

@test "rootless landlock: the run.codemode.landlock annotation: a read outside the allowed trees is EACCES" {
  set_cfg '.mounts += [{destination: "/data", type: "bind", source: $s, options: ["rbind", "ro"]}]' --arg s "$HOST_DIR/data"
  set_args /probe read /data/pub read /data/sub/f read /etc/passwd
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  says "read /data/sub/f" ok # control
  # execve opens the program for reading: /probe needs read_file too.
  set_cfg '.annotations["run.codemode.landlock"] = $a' --arg a '{"abi": 1,
    "ruleset": [{"handledAccessFs": ["read_file"]}],
    "pathBeneath": [{"allowedAccess": ["read_file"], "parent": ["/data/pub", "/etc", "/probe"]}]}'
  run_cm run -b "$BUNDLE" "$CID"
  echo "$output" >&3
  [ "$status" -eq 0 ]
  says "read /data/pub" ok
  says "read /etc/passwd" ok
  says "read /data/sub/f" EACCES
}

@test "rootless landlock: scoped signal and abstract socket: an exec'd process cannot reach init of the same uid (ABI 6)" {
  # Rootless, every process of the container is the user's own uid: only Landlock's scopes keep
  # an exec'd process (its own domain) from signalling init or reaching another's socket.
  set_args sleep 60
  # Control: without Landlock (profile default) the same uid may signal init and connect.
  run_cm run --detach -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  run_cm exec "$CID" /probe abstract-listen ctl 10
  run_cm exec "$CID" /probe kill 1 abstract-connect ctl
  echo "$output" >&3
  says "kill 1" ok
  says "abstract-connect ctl" ok
  cm delete --force "$CID"
  run_cm --profile mcp run --detach -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  # one domain: its own listener is reachable
  run_cm --profile mcp exec "$CID" /probe abstract-listen same 5 abstract-connect same
  says "abstract-connect same" ok
  run_cm --profile mcp exec "$CID" /probe abstract-listen other 10
  run_cm --profile mcp exec "$CID" /probe kill 1 abstract-connect other
  echo "$output" >&3
  says "kill 1" EPERM
  says "abstract-connect other" EPERM
  cm delete --force "$CID"
}

# --- learn mode and learned policies (issue 19) -------------------------------------------------

# The run to learn reads a file of the /data bind (its directory is learned: files in a bind
# collapse to their directory), writes, makes and renames in /tmp; it never touches /secret.
WORK='ls / >/dev/null; cat /etc/passwd >/tmp/x; mkdir /tmp/d; mv /tmp/x /tmp/d/y; cat /data/pub; echo worked'

learn_mounts() {
  mkdir -p "$HOST_DIR/secret"
  echo key >"$HOST_DIR/secret/key"
  MOUNTS=(--mount "$HOST_DIR/data:/data:ro" --mount "$HOST_DIR/secret:/secret:ro")
}

@test "rootless learn: codemode-run --learn as the user writes the run's syscalls and files" {
  learn_mounts
  cmr --learn "$POL" "${MOUNTS[@]}" -- sh -c "$WORK"
  [ "$status" -eq 0 ]
  [[ "$output" == *worked* ]]
  [[ "$output" == *"learned policy written to $POL"* ]]
  nothing_left
  [ "$(jq .codemodePolicy "$POL")" = 1 ]
  [ "$(jq -r '.seccomp.defaultAction' "$POL")" = SCMP_ACT_ERRNO ]
  for sc in execve openat mkdir rename getdents64 wait4; do
    jq -e --arg s "$sc" '.seccomp.syscalls[] | select(.names == [$s]) | .comment | test("^seen [0-9]+ times?")' "$POL" >/dev/null ||
      { echo "no $sc in the policy"; return 1; }
  done
  ! jq -e '.seccomp.syscalls[] | select(.names == ["chmod"] or .names == ["fchmodat"] or .names == ["ptrace"])' "$POL" >/dev/null || false
  jq -e '.landlock.pathBeneath[] | select(.parent == ["/tmp"]) | .allowedAccess | (index("make_reg") and index("make_dir") and index("write_file"))' "$POL" >/dev/null
  jq -e '.landlock.pathBeneath[] | select(.parent == ["/etc/passwd"]) | .allowedAccess == ["read_file"]' "$POL" >/dev/null
  jq -e '.landlock.pathBeneath[] | select(.parent == ["/data"]) | .allowedAccess | index("read_file")' "$POL" >/dev/null
  ! jq -e '.landlock.pathBeneath[] | select(.parent[0] | startswith("/secret") or . == "/etc/group")' "$POL" >/dev/null || false
  [ "$(jq -r '.runs[0].command' "$POL")" = "sh -c $WORK" ]
  # Without CAP_AUDIT_READ the kernel's seccomp records cannot be read: what the profile denied
  # while learning is unknown, and the file says so rather than an empty list alone.
  [[ "$output" == *"needs CAP_AUDIT_READ"*"the syscalls the profile denies while learning are not listed"* ]]
  jq -e '.runs[0].seccompDenialsUnseen | test("CAP_AUDIT_READ")' "$POL" >/dev/null
  [ "$(jq '.deniedDuringLearning | length' "$POL")" -eq 0 ]
  # a merge keeps the note
  run -0 "$CODEMODE" learn --merge "$POL" "$POL" -o "$TEST_DIR/merged.json"
  [ "$(jq '[.runs[] | select(.seccompDenialsUnseen)] | length' "$TEST_DIR/merged.json")" -eq 2 ]
}

@test "rootless learn: under --policy the same run passes; a file and a syscall it never used are denied; the audit says what it cannot see" {
  learn_mounts
  cmr --learn "$POL" "${MOUNTS[@]}" -- sh -c "$WORK"
  [ "$status" -eq 0 ]
  cmr --policy "$POL" "${MOUNTS[@]}" --audit-log "$LOG" --audit-summary -- sh -c "$WORK"
  [ "$status" -eq 0 ]
  [[ "$output" == *worked* ]]
  [[ "$output" == *"audit: no file or host denial in this run"* ]]
  [[ "$output" != *"audit: no denial in this run"* ]]
  [ "$(jq -s 'map(select(.decision == "deny")) | length' "$LOG")" -eq 0 ]
  # What the run never did: read /secret (another bind) and /etc/group, chmod(2).
  rm "$LOG"
  cmr --policy "$POL" "${MOUNTS[@]}" --audit-log "$LOG" --audit-summary -- \
    sh -c 'cat /secret/key; cat /etc/group; chmod 700 /tmp/.; echo end'
  [ "$status" -eq 0 ]
  [[ "$output" == *end* ]]
  ! grep -qx key <<<"$output" || false
  [[ "$output" == *"/secret/key"*"Permission denied"* ]]
  [[ "$output" == *"/etc/group"*"Permission denied"* ]]
  [[ "$output" == *"chmod: /tmp/.: Operation not permitted"* ]]
  # Landlock's denials are named (codemode-run's audit filter is a user-notification listener,
  # which needs no privilege), each with the line that would allow it.
  log_has '.event == "file" and .path == "/secret/key" and .access == "read_file" and .layer == "learned policy" and .errno == 13'
  log_has '.event == "file" and .path == "/etc/group" and .layer == "learned policy"'
  [[ "$output" == *"audit: 2 file or host denials in this run:"* ]]
  [[ "$output" == *'allowed by this policy line: "landlock": {"pathBeneath": [{"allowedAccess": ["read_file"], "parent": ["/secret"]}]}'* ]]
  # The seccomp denial (chmod) is enforced but has no kernel record to read: one "audit" record
  # and the summary say so, instead of counting it as no denial.
  log_has '.event == "audit" and .decision == "incomplete" and .by == "seccomp" and (.reason | test("CAP_AUDIT_READ"))'
  [ "$(jq -s 'map(select(.event == "syscall")) | length' "$LOG")" -eq 0 ]
  [[ "$output" == *"audit: syscalls denied by seccomp cannot be shown (the kernel enforced them regardless)"*"CAP_AUDIT_READ"* ]]
  nothing_left
}

@test "rootless learn: codemode learn on a bundle, then policy explain: the learned profile allows fewer syscalls than Docker's" {
  run -0 timeout "$CM_TIMEOUT" "$CODEMODE" --root "$ROOT" learn -o "$POL" --id "$CID" "$BUNDLE" -- sh -c "${WORK%%; cat /data/pub*}; echo worked" </dev/null
  [[ "$output" == *worked* ]]
  [ -s "$POL" ]
  run -0 "$CODEMODE_RUN" --explain --policy "$POL" "$BUNDLE"
  line=$(grep '^policy: .*seccomp: allows' <<<"$output")
  learned=$(sed -E 's/.*allows ([0-9]+) syscalls.*/\1/' <<<"$line")
  docker=$(sed -E "s/.*Docker's default profile: ([0-9]+).*/\1/" <<<"$line")
  echo "# learned policy: $learned syscalls; Docker's default profile: $docker" >&3
  [ "$learned" -gt 20 ]
  [ "$learned" -lt "$docker" ]
  jq -e '.runs[0].seccompDenialsUnseen | test("CAP_AUDIT_READ")' "$POL" >/dev/null
  # and the run under it passes, as the user
  cmr --policy "$POL" -- sh -c "${WORK%%; cat /data/pub*}; echo worked"
  [ "$status" -eq 0 ]
  [[ "$output" == *worked* ]]
  [[ "$output" != *"can't"* ]]
}

@test "rootless learn: a server quiet while learning that attacks under its policy is contained, also when the policy is widened by hand" {
  # The payload refuses to run without its marker (tests/security/mcp_escape/payload.c).
  cp "$PAYLOAD" "$BUNDLE/rootfs/escape"
  echo "codemode mcp escape test bundle" >"$BUNDLE/rootfs/.codemode-escape-marker"
  cmr --learn "$POL" -- /escape quiet
  [ "$status" -eq 0 ]
  # Widened to allow every attack's syscalls and every file right: the mcp profile underneath
  # still contains each one (a policy is stacked on mcp, never instead of it).
  jq '.seccomp.syscalls += [{"names": ["ptrace","process_vm_readv","mount","fsopen","unshare","setns","clone",
        "clone3","keyctl","add_key","bpf","io_uring_setup","userfaultfd","chroot","mknod","mknodat","openat","open",
        "socket"],"action":"SCMP_ACT_ALLOW"}]
      | .landlock.pathBeneath += [{"allowedAccess": ["execute","write_file","read_file","read_dir","remove_dir",
        "remove_file","make_char","make_dir","make_reg","make_sock","make_fifo","make_block","make_sym","refer",
        "truncate","ioctl_dev"], "parent": ["/"]}]' "$POL" >"$TEST_DIR/wide.json"
  local a
  for a in ptrace mount fsopen unshare setns clone_newuser keyctl bpf io_uring userfaultfd chroot mknod packet self_exe; do
    cmr --policy "$POL" -- /escape "$a"
    [ "$status" -eq 0 ] || { echo "policy: $a: status $status: $output"; return 1; }
    [[ "$output" == *contained* && "$output" != *ESCAPED* ]] || { echo "policy: $a: $output"; return 1; }
    cmr --policy "$TEST_DIR/wide.json" -- /escape "$a"
    [ "$status" -eq 0 ] || { echo "widened: $a: status $status: $output"; return 1; }
    [[ "$output" == *contained* && "$output" != *ESCAPED* ]] || { echo "widened: $a: $output"; return 1; }
  done
  nothing_left
}
