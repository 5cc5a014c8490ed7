#!/usr/bin/env bats
# Landlock (issue 18) and learn mode (issue 19) as an unprivileged user, with the real kernel:
# both issues say "works rootless"; tests/security/landlock.bats and learn.bats are their root
# forms. tests/rootless/run.sh runs this file as its test user (pass 1: only the user's own uid
# mapped). Every bundle here is made by the user (rootfs-tools/make-busybox-bundle.sh).
#   CM_ROOTLESS_SUBUID=1   /etc/subuid ranges (pass 2)
# A denial is shown to be Landlock's by a control: the same operation on the same mounts passes
# where the layer is off (--profile default has no Landlock; without --deny the path is allowed).

load ../lib/helpers

setup_file() {
  [ "$(id -u)" -ne 0 ] || {
    echo "tests/rootless/features.bats runs as an unprivileged user (tests/rootless/run.sh)" >&2
    return 1
  }
  cm_setup_file
  export CODEMODE_RUN=${CODEMODE_RUN:-$(dirname "$CODEMODE")/codemode-run}
  export PROBE=$BATS_FILE_TMPDIR/probe
  cc -static -O2 -Wall -Wextra -o "$PROBE" "$CM_REPO/tests/security/landlock/probe.c"
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
