#!/usr/bin/env bats
# Landlock, for real, inside containers (this kernel: ABI 7): the mcp profiles' rules derived from
# the mounts, codemode-run --deny, the run.codemode.landlock annotation (landlockconfig format)
# for any caller, exec'd processes, and refusal of rights the kernel lacks. Each test has a
# control that shows the same operation succeeding without the rule, so a denial is Landlock's
# and not the mount's or a missing file's. The probe (landlock/probe.c, static) does one
# operation per word and prints "<op>: ok" or the errno's name.

load ../lib/helpers
codemode_only_file landlock

setup_file() {
  cm_setup_file
  export CODEMODE_RUN=${CODEMODE_RUN:-$(dirname "$CODEMODE")/codemode-run}
  export PROBE=$BATS_FILE_TMPDIR/probe PROBE_HOST=$BATS_FILE_TMPDIR/probe-host
  cc -static -O2 -Wall -Wextra -o "$PROBE" "$CM_REPO/tests/security/landlock/probe.c"
  cc -static -O2 -Wall -Wextra -DPROBE_HOST -o "$PROBE_HOST" "$CM_REPO/tests/security/landlock/probe.c"
}

setup() {
  cm_setup
  [ -x "$CODEMODE_RUN" ] || { echo "$CODEMODE_RUN is not built (run make)" >&2; return 1; }
  cp "$PROBE" "$BUNDLE/rootfs/probe"
  echo "codemode landlock test bundle" >"$BUNDLE/rootfs/.codemode-landlock-marker"
  # Bind sources under /tmp: the mcp profile refuses binds from /dev (the suite's TMPDIR may be
  # on /dev/shm).
  HOST_DIR=$(mktemp -d /tmp/cm-landlock.XXXXXX)
  mkdir -p "$HOST_DIR/data/sub"
  echo secret >"$HOST_DIR/data/.env"
  echo public >"$HOST_DIR/data/pub"
  echo inside >"$HOST_DIR/data/sub/f"
}

teardown() {
  local m
  for m in $(mounts_under "$HOST_DIR") $(mounts_under "$BUNDLE/rootfs"); do umount -l "$m" || true; done
  cm_teardown
  rm -rf --one-file-system "$HOST_DIR"
}

# ll [codemode-run options…] -- PROBE-ARGS…: the probe under codemode-run (profile $PROFILE,
# default mcp); $status, $output.
ll() {
  local opts=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  status=0
  timeout --kill-after=5 60 "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --profile "${PROFILE:-mcp}" "${opts[@]}" \
    "$BUNDLE" -- /probe "$@" </dev/null >"$TEST_DIR/out" 2>&1 3>&- || status=$?
  output=$(cat "$TEST_DIR/out")
  echo "# ll ${opts[*]} -- $* -> $status: $output" >&3
}

# says OP RESULT: the probe printed "OP: RESULT".
says() { grep -qxF -- "$1: $2" <<<"$output" || { echo "expected \"$1: $2\" in: $output" >&2; return 1; }; }

set_landlock() { set_cfg '.annotations["run.codemode.landlock"] = $a' --arg a "$1"; }

# A bind in config.json (what Docker, containerd and Kubernetes hand over).
add_bind_cfg() {
  set_cfg '.mounts += [{destination: $d, type: "bind", source: $s, options: ["rbind", $m]}]' \
    --arg d "$2" --arg s "$1" --arg m "${3:-rw}"
}

# --- the mcp profile's rules and --deny ---------------------------------------------------------

@test "landlock: --deny makes a file inside a writable bind unreadable; the rest of the bind is as before" {
  ll --mount "$HOST_DIR/data:/data:rw" -- read /data/.env read /data/pub
  says "read /data/.env" ok # control: the bind allows it
  ll --mount "$HOST_DIR/data:/data:rw" --deny /data/.env -- \
    read /data/.env write /data/.env read /data/pub read /data/sub/f create /data/sub/new unlink /data/.env
  [ "$status" -eq 0 ]
  says "read /data/.env" EACCES
  says "write /data/.env" EACCES
  says "unlink /data/.env" EACCES
  says "read /data/pub" ok
  says "read /data/sub/f" ok
  says "create /data/sub/new" ok
  [ "$(cat "$HOST_DIR/data/.env")" = secret ]
  [ -e "$HOST_DIR/data/sub/new" ]
}

@test "landlock: a denied file cannot be moved or linked into a tree where it would be readable (refer)" {
  ll --mount "$HOST_DIR/data:/data:rw" --deny /data/.env -- \
    rename /data/.env /data/sub/moved link /data/.env /data/sub/linked
  says "rename /data/.env /data/sub/moved" EACCES
  says "link /data/.env /data/sub/linked" EXDEV
  [ -e "$HOST_DIR/data/.env" ] && [ ! -e "$HOST_DIR/data/sub/moved" ] && [ ! -e "$HOST_DIR/data/sub/linked" ]
}

@test "landlock: a second bind of the same directory does not undo a deny" {
  ll --mount "$HOST_DIR/data:/data:rw" --mount "$HOST_DIR/data:/again:ro" --deny /data/.env -- \
    read /again/.env read /again/pub
  says "read /again/.env" EACCES
  says "read /again/pub" ok
}

@test "landlock: --deny of a directory in the read-only rootfs" {
  mkdir -p "$BUNDLE/rootfs/secrets"
  echo key >"$BUNDLE/rootfs/secrets/key"
  ll --deny /secrets -- read /secrets/key read /etc/passwd
  says "read /secrets/key" EACCES
  says "read /etc/passwd" ok
}

@test "landlock: mounts the profile never saw stay read-only: a writable mount under the rootfs and under a read-only bind" {
  # The holes: a tmpfs already mounted in the bundle's rootfs (carried in by the recursive bind
  # of the rootfs) and one under the source of a read-only bind (the bind is recursive, its
  # read-only flag is not): the mounts themselves let a write through.
  mkdir -p "$BUNDLE/rootfs/hole"
  mount -t tmpfs -o size=1m tmpfs "$BUNDLE/rootfs/hole"
  mount -t tmpfs -o size=1m tmpfs "$HOST_DIR/data/sub"
  echo y >"$HOST_DIR/data/sub/y"
  PROFILE=default ll --mount "$HOST_DIR/data:/data:ro" -- create /hole/x create /data/sub/x
  says "create /hole/x" ok
  says "create /data/sub/x" ok
  rm -f "$BUNDLE/rootfs/hole/x" "$HOST_DIR/data/sub/x"
  ll --mount "$HOST_DIR/data:/data:ro" -- create /hole/x create /data/sub/x read /data/sub/y create /tmp/x
  [ "$status" -eq 0 ]
  # Under mcp the mount policy (non-recursive binds, issue 21) already leaves both tmpfs out: the
  # writes meet the read-only directories beneath (EROFS). Landlock is the second wall: with a
  # profile that lets the holes in (the annotation below, profile default), it alone refuses.
  says "create /hole/x" EROFS || says "create /hole/x" EACCES
  says "create /data/sub/x" EROFS || says "create /data/sub/x" EACCES
  says "create /tmp/x" ok
  [ ! -e "$BUNDLE/rootfs/hole/x" ] && [ ! -e "$HOST_DIR/data/sub/x" ]
  set_landlock '{"abi": 7, "ruleset": [{"handledAccessFs": ["abi.all"]}],
    "pathBeneath": [{"allowedAccess": ["abi.read_execute"], "parent": ["/"]},
                    {"allowedAccess": ["abi.read_write"], "parent": ["/tmp"]}]}'
  PROFILE=default ll --mount "$HOST_DIR/data:/data:ro" -- create /hole/x create /data/sub/x read /data/sub/y create /tmp/x
  says "create /hole/x" EACCES
  says "create /data/sub/x" EACCES
  says "read /data/sub/y" ok
  [ ! -e "$BUNDLE/rootfs/hole/x" ] && [ ! -e "$HOST_DIR/data/sub/x" ]
}

@test "landlock: --ephemeral's writable root stays writable under the profile's rules" {
  ll --ephemeral -- create /newfile read /etc/passwd
  says "create /newfile" ok
  [ ! -e "$BUNDLE/rootfs/newfile" ]
}

@test "landlock: ioctl on a device without ioctl_dev is refused (ABI 5)" {
  PROFILE=default ll -- ioctl /dev/null
  says "ioctl /dev/null" ENOTTY # control: the driver's own answer
  ll -- ioctl /dev/null
  says "ioctl /dev/null" EACCES
}

@test "landlock: an exec'd process gets the container's rules; exec is refused when they are missing" {
  add_bind_cfg "$HOST_DIR/data" /data rw
  set_cfg '.annotations["run.codemode.landlock.deny"] = "[\"/data/.env\"]"'
  set_args sleep 60
  run_cm --profile mcp run --detach --bundle "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$(cm state "$CID" | jq -r '.annotations["run.codemode.landlock.abi"]')" = 7 ]
  [ -s "$ROOT/$CID/landlock.json" ]
  run_cm exec "$CID" /probe read /data/.env read /data/pub create /probe2 ioctl /dev/null \
    exec /probe read /data/.env
  [ "$status" -eq 0 ]
  says "read /data/.env" EACCES
  says "read /data/pub" ok
  says "create /probe2" EROFS
  says "ioctl /dev/null" EACCES
  [ "$(grep -c 'read /data/.env: EACCES' <<<"$output")" -eq 2 ] # and after an execve
  # Never looser: without the kept rules there is no exec at all.
  mv "$ROOT/$CID/landlock.json" "$TEST_DIR/kept.json"
  run_cm exec "$CID" /probe read /data/.env
  [ "$status" -ne 0 ]
  [[ "$output" == *"exec refused"*"Landlock"* ]]
  mv "$TEST_DIR/kept.json" "$ROOT/$CID/landlock.json"
}

@test "landlock: scoped signal and abstract_unix_socket keep an exec'd process and init apart (ABI 6)" {
  set_args sleep 60
  run_cm --profile mcp run --detach --bundle "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  # One domain: its own listener, its own child.
  run_cm exec "$CID" /probe abstract-listen same 5 abstract-connect same
  says "abstract-connect same" ok
  # Another exec is another domain: init (pid 1) and the first exec's listener are outside it.
  run_cm exec "$CID" /probe abstract-listen other 10
  run_cm exec "$CID" /probe kill 1 abstract-connect other
  says "kill 1" EPERM
  says "abstract-connect other" EPERM
}

# --- the annotation, for any caller -------------------------------------------------------------

@test "landlock annotation: read outside the allowed trees is EACCES" {
  mkdir -p "$BUNDLE/rootfs/home/user"
  echo x >"$BUNDLE/rootfs/home/user/notes"
  set_landlock '{"abi": 7, "ruleset": [{"handledAccessFs": ["abi.all"]}],
    "pathBeneath": [{"allowedAccess": ["abi.read_execute"], "parent": ["/probe", "/etc", "/proc", "/dev"]}]}'
  PROFILE=default ll -- read /etc/passwd read /home/user/notes read /bin/sh
  [ "$status" -eq 0 ]
  says "read /etc/passwd" ok
  says "read /home/user/notes" EACCES
  says "read /bin/sh" EACCES
}

@test "landlock annotation: writes to the rootfs and to a writable bind the rules make read-only" {
  set_cfg '.root.readonly = false'
  add_bind_cfg "$HOST_DIR/data" /data rw
  PROFILE=default ll -- create /newfile create /data/newfile
  says "create /newfile" ok # control: both mounts are writable
  says "create /data/newfile" ok
  rm -f "$BUNDLE/rootfs/newfile" "$HOST_DIR/data/newfile"
  set_landlock '{"abi": 7, "ruleset": [{"handledAccessFs": ["abi.all"]}],
    "pathBeneath": [{"allowedAccess": ["abi.read_execute"], "parent": ["/", "/data"]}]}'
  PROFILE=default ll -- create /newfile create /data/newfile write /data/pub read /data/pub
  says "create /newfile" EACCES
  says "create /data/newfile" EACCES
  says "write /data/pub" EACCES
  says "read /data/pub" ok
  [ ! -e "$BUNDLE/rootfs/newfile" ] && [ ! -e "$HOST_DIR/data/newfile" ] && [ "$(cat "$HOST_DIR/data/pub")" = public ]
}

@test "landlock annotation: moving or linking a file where it would gain a right is EXDEV (refer, ABI 2)" {
  mkdir -p "$HOST_DIR/data/a" "$HOST_DIR/data/b"
  echo f >"$HOST_DIR/data/b/f"
  echo g >"$HOST_DIR/data/a/g"
  add_bind_cfg "$HOST_DIR/data" /data rw
  # b: everything but writing files; a: everything.
  set_landlock '{"abi": 7, "ruleset": [{"handledAccessFs": ["abi.all"]}],
    "variable": [{"name": "b", "literal": ["/data/b"]}],
    "pathBeneath": [{"allowedAccess": ["abi.read_execute"], "parent": ["/"]},
                    {"allowedAccess": ["abi.all"], "parent": ["/data/a"]},
                    {"allowedAccess": ["read_file", "read_dir", "make_reg", "remove_file", "refer"], "parent": ["${b}"]}]}'
  PROFILE=default ll -- link /data/b/f /data/a/f2 rename /data/b/f /data/a/f rename /data/a/g /data/b/g write /data/b/f
  says "link /data/b/f /data/a/f2" EXDEV
  says "rename /data/b/f /data/a/f" EXDEV
  says "rename /data/a/g /data/b/g" ok # losing a right is fine
  says "write /data/b/f" EACCES
  [ -e "$HOST_DIR/data/b/f" ] && [ -e "$HOST_DIR/data/b/g" ]
}

@test "landlock annotation: truncate is its own right (ABI 3)" {
  add_bind_cfg "$HOST_DIR/data" /data rw
  set_landlock '{"abi": 3, "ruleset": [{"handledAccessFs": ["abi.all"]}],
    "pathBeneath": [{"allowedAccess": ["abi.read_execute"], "parent": ["/"]},
                    {"allowedAccess": ["read_file", "write_file", "read_dir"], "parent": ["/data"]}]}'
  PROFILE=default ll -- write /data/pub truncate /data/pub
  says "write /data/pub" ok
  says "truncate /data/pub" EACCES
  [ -s "$HOST_DIR/data/pub" ]
}

@test "landlock annotation: TCP connect only to the allowed port (ABI 4)" {
  set_landlock '{"abi": 4, "ruleset": [{"handledAccessNet": ["connect_tcp"]}],
    "netPort": [{"allowedAccess": ["connect_tcp"], "port": [8080]}]}'
  PROFILE=default ll -- tcp-listen 8080 5 tcp-listen 9090 5 tcp-connect 8080 tcp-connect 9090
  says "tcp-listen 8080" ok
  says "tcp-listen 9090" ok
  says "tcp-connect 8080" ok
  says "tcp-connect 9090" EACCES
  # Stacked on the mcp profile's layer: both apply.
  ll -- tcp-listen 8080 5 tcp-listen 9090 5 tcp-connect 8080 tcp-connect 9090 ioctl /dev/null
  says "tcp-connect 8080" ok
  says "tcp-connect 9090" EACCES
  says "ioctl /dev/null" EACCES
}

@test "landlock annotation: kill(2) and an abstract socket outside the domain (ABI 6)" {
  # The host's pid and network namespaces, so a host process and a host abstract socket are
  # there to reach; without the rules the container reaches both.
  set_cfg '.linux.namespaces |= map(select(.type != "pid"))'
  sleep 60 &
  local victim=$!
  bg_track "$victim"
  local name=cm-landlock-$RANDOM
  "$PROBE_HOST" abstract-serve "$name" 30 &
  bg_track $!
  sleep 0.3
  PROFILE=default ll --net host -- kill "$victim" abstract-connect "$name"
  says "kill $victim" ok
  says "abstract-connect $name" ok
  set_landlock '{"abi": 6, "ruleset": [{"scoped": ["signal", "abstract_unix_socket"]}]}'
  PROFILE=default ll --net host -- kill "$victim" abstract-connect "$name" abstract-listen mine 5 abstract-connect mine
  says "kill $victim" EPERM
  says "abstract-connect $name" EPERM
  says "abstract-connect mine" ok
  kill -0 "$victim"
}

@test "landlock annotation: a right newer than the kernel's is refused with its name; nothing is left behind" {
  set_landlock '{"ruleset": [{"handledAccessFs": ["read_file", 65536]}]}'
  run_cm run --bundle "$BUNDLE" "$CID"
  [ "$status" -eq 1 ]
  [[ "$output" == *'.annotations["run.codemode.landlock"]: handledAccessFs 0x10000 is not a filesystem access right of Landlock ABI 7 or older; this kernel has ABI 7'* ]]
  [ -z "$(ls -A "$ROOT")" ]
  set_landlock '{"abi": 8, "ruleset": [{"handledAccessFs": ["abi.all"]}]}'
  run_cm run --bundle "$BUNDLE" "$CID"
  [ "$status" -eq 1 ]
  [[ "$output" == *'"abi": 8 needs Landlock ABI 8; this kernel has ABI 7'* ]]
  [ -z "$(ls -A "$ROOT")" ]
  # The same with the profile: its own layer is best effort, the annotation's never.
  run_cm --profile mcp run --bundle "$BUNDLE" "$CID"
  [ "$status" -eq 1 ]
  [ -z "$(ls -A "$ROOT")" ]
}

@test "landlock annotation: errors name the JSON path inside the annotation" {
  set_landlock '{"abi": 7, "pathBeneath": [{"allowedAccess": ["read_file", "rd"], "parent": ["/"]}]}'
  run_cm run --bundle "$BUNDLE" "$CID"
  [ "$status" -eq 1 ]
  [[ "$output" == *'config.json: .annotations["run.codemode.landlock"]: .pathBeneath[0].allowedAccess[1]: unknown filesystem access right "rd"'* ]]
  set_landlock '{"pathBeneath": [{"allowedAccess": ["abi.all"], "parent": ["/"]}]}'
  run_cm run --bundle "$BUNDLE" "$CID"
  [[ "$output" == *'.pathBeneath[0].allowedAccess[0]: "abi.all" needs the document'* ]]
  set_cfg '.annotations["run.codemode.landlock.deny"] = "[\"relative\"]"'
  set_landlock '{"abi": 7, "ruleset": [{"scoped": ["signal"]}]}'
  run_cm run --bundle "$BUNDLE" "$CID"
  [[ "$output" == *'.annotations["run.codemode.landlock.deny"]: [0]: "relative": must be an absolute path'* ]]
  [ -z "$(ls -A "$ROOT")" ]
}

@test "landlock annotation: a ruleset whose rights resolve to none (scopes at ABI 3) adds no layer; exec works" {
  set_landlock '{"abi": 3, "ruleset": [{"scoped": ["abi.all"]}]}'
  set_args sleep 60
  run_cm run --detach --bundle "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ ! -e "$ROOT/$CID/landlock.json" ]
  run_cm exec "$CID" /probe read /etc/passwd
  [ "$status" -eq 0 ]
  says "read /etc/passwd" ok
}

# --- reporting ------------------------------------------------------------------------------------

@test "landlock: features reports the ABI; policy explain prints the effective rules" {
  run_cm features
  [ "$(jq -r '.annotations["run.codemode.landlock.abi"]' <<<"$stdout")" = 7 ]
  [ "$(jq -r '.annotations["run.codemode.landlock.abi.known"]' <<<"$stdout")" = 7 ]
  add_bind_cfg "$HOST_DIR/data" /data ro
  set_cfg '.annotations["run.codemode.landlock.deny"] = "[\"/data/.env\"]"'
  set_landlock '{"abi": 4, "netPort": [{"allowedAccess": ["connect_tcp"], "port": [443]}]}'
  run_cm --profile mcp policy explain --bundle "$BUNDLE"
  [ "$status" -eq 0 ]
  [[ "$output" == *"landlock: enforced at ABI 7 (this kernel)"* ]]
  [[ "$output" == *"landlock layer 1 (profile mcp, best effort):"* ]]
  [[ "$output" == *"  scoped: abstract_unix_socket signal"* ]]
  [[ "$output" == *"  /: execute read_file read_dir refer"* ]]
  [[ "$output" == *"  /data: execute read_file read_dir refer"* ]]
  [[ "$output" == *"  /tmp: execute write_file read_file"* ]]
  [[ "$output" == *"  /data/.env: denied"* ]]
  [[ "$output" == *"landlock layer 2 (config.json: .annotations[\"run.codemode.landlock\"], refused where the kernel lacks a right):"* ]]
  [[ "$output" == *"  tcp port 443: connect_tcp"* ]]
  # codemode-run --explain says the same.
  run "$CODEMODE_RUN" --explain --mount "$HOST_DIR/data:/data:ro" --deny /data/.env "$BUNDLE"
  [ "$status" -eq 0 ]
  [[ "$output" == *"  /data/.env: denied"* ]]
  [[ "$output" == *"landlock: enforced at ABI 7 (this kernel)"* ]]
}

# --- rootless -------------------------------------------------------------------------------------

@test "landlock: with a user namespace (container root is host uid 100000) the rules hold" {
  # Rootless codemode (issue 15) is not there yet: a user-namespace config is what Landlock
  # meets there too (it needs no privilege: no_new_privs is enough).
  bundle_add_namespace "$BUNDLE" user
  set_cfg '.linux.uidMappings = [{containerID: 0, hostID: 100000, size: 65536}]
           | .linux.gidMappings = [{containerID: 0, hostID: 100000, size: 65536}]'
  chown -R 100000:100000 "$BUNDLE/rootfs"
  local d=$BUNDLE
  while [ "$d" != / ]; do chmod o+x "$d"; d=$(dirname "$d"); done
  mkdir -p "$BUNDLE/rootfs/secrets" && echo k >"$BUNDLE/rootfs/secrets/k" && chown -R 100000:100000 "$BUNDLE/rootfs/secrets"
  ll --deny /secrets -- read /secrets/k read /etc/passwd ioctl /dev/null create /tmp/x
  [ "$status" -eq 0 ]
  says "read /secrets/k" EACCES
  says "read /etc/passwd" ok
  says "ioctl /dev/null" EACCES
  says "create /tmp/x" ok
}
