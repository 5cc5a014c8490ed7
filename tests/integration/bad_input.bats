#!/usr/bin/env bats
# The bad-input catalogue (issue 8): every case feeds `create` or `run` something wrong and
# checks three things: exit status 1; one error message that names the field (or path) and
# says what is wrong with it; and nothing left behind: no state dir under --root, no new mount on
# the host, no container process.

load ../lib/helpers

# The helpers' test_processes forks tr and grep once per process in /proc: 20 s a call on this
# busy machine, twice per test. The same answer from one grep over every environ file.
test_processes() {
  local token=${1:-$CM_TEST_TOKEN} re
  re=$(printf '%s' "CODEMODE_TEST_CONTAINER=$token" | sed 's/[^A-Za-z0-9_=-]/\\&/g')
  grep -lsazE -- "^$re" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3
  return 0
}

setup() {
  cm_setup
  MOUNTS_BEFORE=$TEST_DIR/.mounts.before
  mount_table >"$MOUNTS_BEFORE"
}

# mount_table: "<mount id> <mount point>" for every mount in our mount namespace, sorted.
mount_table() {
  awk '{ print $1, $5 }' /proc/self/mountinfo | sort
}

# leaked_mounts: mounts that appeared since setup in places a failed create may have touched:
# the test dir (the rootfs) or the host's own tree. New mounts under the shared temp and state
# dirs belong to whatever else runs on this machine at the same time.
leaked_mounts() {
  mount_table | comm -13 "$MOUNTS_BEFORE" - | while read -r _ mp; do
    case $mp in
      "$TEST_DIR" | "$TEST_DIR"/*) echo "$mp" ;;
      /tmp/* | /var/tmp/* | /var/lib/* | /run/*) ;;
      *) echo "$mp" ;;
    esac
  done
}

# leaked_processes: any process whose root is inside the test dir (a container init after
# pivot_root), whose command line names this test's container id (an init or runtime that did not
# exit), or that carries this test's token (the container process itself).
leaked_processes() {
  {
    # One ls and one grep over all of /proc: a per-process loop would fork hundreds of times.
    ls -l /proc/[0-9]*/root 2>/dev/null | awk -v d="$TEST_DIR/" 'index($NF, d) == 1 { split($(NF-2), a, "/"); print a[3] }'
    # The id comes from a file so grep's own command line does not match it.
    printf '%s\n' "$CID" >"$TEST_DIR/.cid"
    grep -lsF -f "$TEST_DIR/.cid" /proc/[0-9]*/cmdline | cut -d/ -f3
    test_processes "$CM_TEST_TOKEN:$CID"
  } | grep -vxE "$$|$BASHPID|self|thread-self" || true
}

# nothing_left [ID...]: no state dir except those of the given (pre-existing) containers, no
# leaked mount, no leaked process.
nothing_left() {
  local keep=" $* " entry
  for entry in "$ROOT"/* "$ROOT"/.[!.]*; do
    [ -e "$entry" ] || continue
    [[ "$keep" == *" ${entry##*/} "* ]] && continue
    echo "state left behind: $entry"
    return 1
  done
  local m p
  m=$(leaked_mounts)
  [ -z "$m" ] || {
    echo "mounts left behind: $m"
    return 1
  }
  p=$(leaked_processes | sort -u)
  [ -z "$p" ] || {
    echo "processes left behind: $p"
    return 1
  }
}

# fails_with PATTERN...: the last run_cm exited 1 and its output matches every extended regex
# (case-insensitive), and nothing is left behind. The wording is codemode's; every runtime must
# fail with 1 and leave nothing.
fails_with() {
  echo "exit $status; output: $output"
  [ "$status" -eq 1 ] || {
    echo "expected exit status 1, got $status"
    return 1
  }
  local pat
  if codemode_part error-wording; then
    for pat in "$@"; do
      grep -qiE -- "$pat" <<<"$output" || {
        echo "output does not match /$pat/"
        return 1
      }
    done
  fi
  nothing_left
}

# bad_config JQ-EXPR PATTERN...: break config.json with JQ-EXPR, then `create` must fail so.
bad_config() {
  local expr=$1
  shift
  set_cfg "$expr"
  run_cm create --bundle "$BUNDLE" "$CID"
  fails_with "$@"
}

# bad_config_run: the same through `run` (create + start + wait in one).
bad_config_run() {
  local expr=$1
  shift
  set_cfg "$expr"
  run_cm run --bundle "$BUNDLE" "$CID"
  fails_with "$@"
}

userns='.linux.namespaces += [{type: "user"}]'
maps='.linux.uidMappings = [{containerID: 0, hostID: 100000, size: 65536}]
      | .linux.gidMappings = [{containerID: 0, hostID: 100000, size: 65536}]'

# ------------------------------------------------------------------------------------------
# The document itself

@test "bad input: truncated JSON" {
  printf '{"ociVersion": "1.2.0", "process": {"args": [' >"$BUNDLE/config.json"
  run_cm create --bundle "$BUNDLE" "$CID"
  fails_with 'config\.json' 'invalid JSON'
}

@test "bad input: empty config.json" {
  : >"$BUNDLE/config.json"
  run_cm create --bundle "$BUNDLE" "$CID"
  fails_with 'config\.json' 'invalid JSON|empty'
}

@test "bad input: config.json is an array, not an object" {
  echo '[1, 2, 3]' >"$BUNDLE/config.json"
  run_cm create --bundle "$BUNDLE" "$CID"
  fails_with 'config\.json' 'object'
}

@test "bad input: trailing garbage after the document" {
  codemode_only strict-json
  jq . "$BUNDLE/config.json" >"$TEST_DIR/c" && { cat "$TEST_DIR/c"; echo '}{'; } >"$BUNDLE/config.json"
  run_cm create --bundle "$BUNDLE" "$CID"
  fails_with 'config\.json' 'invalid JSON|garbage'
}

@test "bad input: NUL byte inside a string" {
  codemode_only strict-json
  jq -c . "$BUNDLE/config.json" | sed 's/"ociVersion"/"oci\\u0000Version"/' >"$TEST_DIR/c"
  mv "$TEST_DIR/c" "$BUNDLE/config.json"
  run_cm create --bundle "$BUNDLE" "$CID"
  fails_with 'config\.json' 'NUL'
}

@test "bad input: missing config.json" {
  rm "$BUNDLE/config.json"
  run_cm create --bundle "$BUNDLE" "$CID"
  fails_with 'config\.json' 'No such file'
}

@test "bad input: bundle directory does not exist" {
  run_cm create --bundle "$TEST_DIR/no-such-bundle" "$CID"
  fails_with 'no-such-bundle' 'No such file'
}

@test "bad input: ociVersion of another major version" {
  codemode_only oci-version
  bad_config '.ociVersion = "2.0.0"' '\.ociVersion' 'unsupported|version'
}

@test "bad input: ociVersion missing" {
  codemode_only oci-version
  bad_config 'del(.ociVersion)' '\.ociVersion' 'missing|required'
}

@test "bad input: ociVersion is a number" {
  bad_config '.ociVersion = 1' '\.ociVersion' 'string'
}

# ------------------------------------------------------------------------------------------
# process

@test "bad input: process missing" {
  bad_config 'del(.process)' '\.process' 'missing|required'
}

@test "bad input: process.args missing" {
  bad_config 'del(.process.args)' '\.process\.args' 'missing|required|non-empty'
}

@test "bad input: process.args empty" {
  bad_config '.process.args = []' '\.process\.args' 'non-empty|empty'
}

@test "bad input: process.args is a string" {
  bad_config '.process.args = "sh -c true"' '\.process\.args' 'array'
}

@test "bad input: process.args holds a number" {
  bad_config '.process.args = ["sh", 1]' '\.process\.args(\[1\])?' 'string'
}

@test "bad input: process.env holds a non-string" {
  bad_config '.process.env += [42]' '\.process\.env' 'string'
}

@test "bad input: process.cwd relative" {
  bad_config '.process.cwd = "tmp"' '\.process\.cwd' 'absolute'
}

@test "bad input: process.cwd missing" {
  bad_config 'del(.process.cwd)' '\.process\.cwd' 'missing|required'
}

@test "bad input: process.terminal is a string" {
  bad_config '.process.terminal = "yes"' '\.process\.terminal' 'bool'
}

@test "bad input: process.user.uid negative" {
  bad_config '.process.user.uid = -1' '\.process\.user\.uid' 'range|negative|integer|between'
}

@test "bad input: process.user.gid a string" {
  bad_config '.process.user.gid = "0"' '\.process\.user\.gid' 'integer|number'
}

@test "bad input: unknown rlimit" {
  bad_config '.process.rlimits = [{type: "RLIMIT_BOGUS", soft: 1, hard: 1}]' \
    '\.process\.rlimits\[0\]' 'RLIMIT_BOGUS|unknown'
}

@test "bad input: duplicate rlimit" {
  bad_config '.process.rlimits = [{type: "RLIMIT_NOFILE", soft: 1, hard: 1}, {type: "RLIMIT_NOFILE", soft: 2, hard: 2}]' \
    '\.process\.rlimits' 'duplicate|more than once|twice'
}

@test "bad input: rlimit soft above hard" {
  bad_config '.process.rlimits = [{type: "RLIMIT_NOFILE", soft: 10, hard: 5}]' \
    '\.process\.rlimits\[0\]' 'soft|hard'
}

@test "bad input: oomScoreAdj out of range" {
  bad_config '.process.oomScoreAdj = 5000' '\.process\.oomScoreAdj' 'range|between|1000'
}

@test "bad input: unknown ioPriority class" {
  codemode_only runc11-unsupported
  bad_config '.process.ioPriority = {class: "IOPRIO_CLASS_BOGUS", priority: 1}' \
    '\.process\.ioPriority\.class' 'unknown|IOPRIO_CLASS_BOGUS'
}

@test "bad input: unknown scheduler policy" {
  codemode_only runc11-unsupported
  bad_config '.process.scheduler = {policy: "SCHED_BOGUS"}' \
    '\.process\.scheduler\.policy' 'unknown|SCHED_BOGUS'
}

@test "bad input: the program does not exist in the rootfs (run)" {
  set_args /no-such-binary
  run_cm run --bundle "$BUNDLE" "$CID"
  fails_with 'no-such-binary' 'not found|No such file'
}

@test "bad input: terminal without --console-socket on create" {
  bad_config '.process.terminal = true' 'console-socket|console socket' 'terminal'
}

@test "bad input: --console-socket that does not exist" {
  set_cfg '.process.terminal = true'
  run_cm create --bundle "$BUNDLE" --console-socket "$TEST_DIR/no-such.sock" "$CID"
  fails_with 'no-such\.sock' 'No such file|connect'
}

# ------------------------------------------------------------------------------------------
# root

@test "bad input: root missing" {
  bad_config 'del(.root)' '\.root' 'missing|required'
}

@test "bad input: root.path empty" {
  bad_config '.root.path = ""' '\.root\.path' 'empty'
}

@test "bad input: root.path does not exist" {
  bad_config '.root.path = "no-such-rootfs"' 'no-such-rootfs' 'No such file'
}

@test "bad input: root.path is a file" {
  echo x >"$BUNDLE/not-a-dir"
  bad_config '.root.path = "not-a-dir"' 'not-a-dir' 'Not a directory|not a directory'
}

# ------------------------------------------------------------------------------------------
# container ids

@test "bad input: id ../x" {
  run_cm create --bundle "$BUNDLE" ../x
  fails_with 'id' '\.\./x'
  [ ! -e "$TEST_DIR/x" ]
}

@test "bad input: id a/b" {
  run_cm create --bundle "$BUNDLE" a/b
  fails_with 'id' 'a/b'
}

@test "bad input: id empty" {
  run_cm create --bundle "$BUNDLE" ""
  fails_with 'id' 'empty|missing|requires'
}

@test "bad input: id of 1025 characters" {
  run_cm create --bundle "$BUNDLE" "$(printf 'a%.0s' {1..1025})"
  fails_with 'id' '1024|long'
}

@test "bad input: id .." {
  run_cm create --bundle "$BUNDLE" ..
  fails_with 'id' '\.\.'
}

@test "bad input: duplicate id leaves the first container untouched" {
  set_args sleep 1000
  run_cm create --bundle "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  local pid
  pid=$(state_field "$CID" pid)
  run_cm create --bundle "$BUNDLE" "$CID"
  echo "exit $status; output: $output"
  [ "$status" -eq 1 ]
  # runc's phrase, which engines and scripts match (issue 28), with the id.
  grep -qF "container with given ID already exists" <<<"$output"
  if codemode_part error-wording; then
    grep -qF -- "already exists: \"$CID\"" <<<"$output"
  fi
  [ "$(state_field "$CID" status)" = created ]
  [ "$(state_field "$CID" pid)" = "$pid" ]
  kill -0 "$pid"
  [ "$(ls -A "$ROOT")" = "$CID" ]
}

# ------------------------------------------------------------------------------------------
# kill

@test "bad input: kill with an unknown signal name" {
  set_args sleep 1000
  run_cm create --bundle "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  run_cm kill "$CID" SIGBOGUS
  echo "exit $status; output: $output"
  [ "$status" -eq 1 ]
  grep -qiE 'signal' <<<"$output"
  grep -qF 'SIGBOGUS' <<<"$output"
  [ "$(state_field "$CID" status)" = created ]
}

@test "bad input: kill with an out-of-range signal number" {
  set_args sleep 1000
  run_cm create --bundle "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  run_cm kill "$CID" 99
  echo "exit $status; output: $output"
  [ "$status" -eq 1 ]
  grep -qiE 'signal' <<<"$output"
  if codemode_part error-wording; then
    grep -qF '99' <<<"$output"
  fi
  [ "$(state_field "$CID" status)" = created ]
}

# ------------------------------------------------------------------------------------------
# mounts

@test "bad input: mount destination with .." {
  codemode_only mount-dest-dotdot
  bad_config '.mounts += [{destination: "/mnt/../../etc", type: "tmpfs", source: "tmpfs"}]' \
    '\.mounts\[[0-9]+\]\.destination' '\.\.'
}

@test "bad input: mount that is not an object" {
  bad_config '.mounts += ["/mnt"]' '\.mounts\[[0-9]+\]' 'object'
}

@test "bad input: bind mount of a missing source" {
  bad_config '.mounts += [{destination: "/mnt", type: "bind", source: "'"$TEST_DIR/no-such-source"'", options: ["rbind"]}]' \
    'no-such-source' 'No such file'
}

@test "bad input: mount option the filesystem rejects" {
  bad_config '.mounts += [{destination: "/mnt", type: "tmpfs", source: "tmpfs", options: ["size=banana"]}]' \
    '/mnt' 'Invalid argument|size=banana'
}

@test "bad input: unknown filesystem type" {
  bad_config '.mounts += [{destination: "/mnt", type: "nosuchfs", source: "none"}]' \
    '/mnt|nosuchfs' 'No such device|unknown|not supported'
}

# ------------------------------------------------------------------------------------------
# linux: namespaces, id mappings

@test "bad input: unknown namespace type" {
  bad_config '.linux.namespaces += [{type: "bogus"}]' '\.linux\.namespaces\[[0-9]+\]\.type' 'bogus|unknown'
}

@test "bad input: namespace listed twice" {
  bad_config '.linux.namespaces += [{type: "pid"}]' '\.linux\.namespaces' 'duplicate|twice|more than once'
}

@test "bad input: namespace path that does not exist" {
  bad_config '.linux.namespaces = [.linux.namespaces[] | select(.type != "network")] + [{type: "network", path: "'"$TEST_DIR/no-such-netns"'"}]' \
    'no-such-netns' 'No such file'
}

@test "bad input: namespace path of the wrong type" {
  bad_config '.linux.namespaces = [.linux.namespaces[] | select(.type != "network")] + [{type: "network", path: "/proc/self/ns/uts"}]' \
    '/proc/self/ns/uts|\.linux\.namespaces' 'network|type'
}

@test "bad input: zero-size uid mapping" {
  bad_config "$userns | $maps | .linux.uidMappings[0].size = 0" '\.linux\.uidMappings\[0\]\.size' 'zero|0|positive|at least'
}

@test "bad input: overlapping uid mappings" {
  bad_config "$userns | $maps | .linux.uidMappings = [{containerID: 0, hostID: 100000, size: 1000}, {containerID: 500, hostID: 200000, size: 1000}]" \
    '\.linux\.uidMappings' 'overlap'
}

@test "bad input: uid mappings without a user namespace" {
  codemode_only idmap-without-userns
  bad_config "$maps" '\.linux\.uidMappings|user namespace' 'user namespace|without'
}

@test "bad input: user namespace without mappings or a path" {
  bad_config "$userns | del(.linux.uidMappings, .linux.gidMappings)" '\.linux\.(uid|gid)Mappings|user namespace' 'mapping'
}

@test "bad input: hostname without a uts namespace" {
  bad_config '.linux.namespaces = [.linux.namespaces[] | select(.type != "uts")] | .hostname = "h"' \
    '\.hostname' 'uts'
}

# ------------------------------------------------------------------------------------------
# linux: seccomp, sysctl, devices, resources, paths

@test "bad input: unknown seccomp default action" {
  bad_config '.linux.seccomp = {defaultAction: "SCMP_ACT_BOGUS"}' '\.linux\.seccomp\.defaultAction' 'unknown|SCMP_ACT_BOGUS'
}

@test "bad input: unknown seccomp rule action" {
  bad_config '.linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW", syscalls: [{names: ["mkdir"], action: "SCMP_ACT_NOPE"}]}' \
    '\.linux\.seccomp\.syscalls\[0\]\.action' 'unknown|SCMP_ACT_NOPE'
}

@test "bad input: unknown seccomp architecture" {
  bad_config '.linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW", architectures: ["SCMP_ARCH_Z80"]}' \
    '\.linux\.seccomp\.architectures' 'unknown|SCMP_ARCH_Z80'
}

@test "bad input: unknown seccomp comparison operator" {
  bad_config '.linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW", syscalls: [{names: ["personality"], action: "SCMP_ACT_ERRNO", args: [{index: 0, value: 1, op: "SCMP_CMP_SOMETIMES"}]}]}' \
    '\.linux\.seccomp\.syscalls\[0\]\.args\[0\]\.op' 'unknown|SCMP_CMP_SOMETIMES'
}

@test "bad input: seccomp argument index out of range" {
  bad_config '.linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW", syscalls: [{names: ["personality"], action: "SCMP_ACT_ERRNO", args: [{index: 9, value: 1, op: "SCMP_CMP_EQ"}]}]}' \
    '\.linux\.seccomp\.syscalls\[0\]\.args\[0\]\.index' 'range|between|at most|5'
}

@test "bad input: hostile host-wide sysctl kernel.core_pattern" {
  local before
  before=$(cat /proc/sys/kernel/core_pattern)
  bad_config '.linux.sysctl = {"kernel.core_pattern": "|/bin/sh -c evil"}' \
    'kernel\.core_pattern' 'namespace|not allowed|host'
  [ "$(cat /proc/sys/kernel/core_pattern)" = "$before" ]
}

@test "bad input: net.* sysctl without a network namespace" {
  local before
  before=$(cat /proc/sys/net/ipv4/ip_forward)
  bad_config '.linux.namespaces = [.linux.namespaces[] | select(.type != "network")]
              | .linux.sysctl = {"net.ipv4.ip_forward": (if "'"$before"'" == "1" then "0" else "1" end)}' \
    'net\.ipv4\.ip_forward' 'network namespace|namespace'
  [ "$(cat /proc/sys/net/ipv4/ip_forward)" = "$before" ]
}

@test "bad input: .hostname with linux.sysctl kernel.hostname (two fields for one value)" {
  bad_config '.hostname = "h1" | .linux.sysctl = {"kernel.hostname": "h2"}' \
    'kernel\.hostname' 'conflicts with .hostname'
}

@test "bad input: .domainname with linux.sysctl kernel.domainname" {
  # runc 1.1.5 has no .domainname (runc11-unsupported): it starts and sets the sysctl's.
  codemode_only runc11-unsupported
  bad_config '.domainname = "d1" | .linux.sysctl = {"kernel.domainname": "d2"}' \
    'kernel\.domainname' 'conflicts with .domainname'
}

@test "bad input: sysctl name that walks out of /proc/sys" {
  bad_config '.linux.sysctl = {"net/../../../kernel/core_pattern": "x"}' \
    'core_pattern|\.linux\.sysctl' 'invalid|\.\.|not allowed'
}

@test "bad input: device of unknown type" {
  bad_config '.linux.devices = [{path: "/dev/x", type: "q", major: 1, minor: 3}]' \
    '\.linux\.devices\[0\]\.type' "q|unknown|must be"
}

@test "bad input: device with a relative path" {
  codemode_only relative-paths
  bad_config '.linux.devices = [{path: "dev/x", type: "c", major: 1, minor: 3}]' \
    '\.linux\.devices\[0\]\.path' 'absolute'
}

@test "bad input: memory limit is a string" {
  bad_config '.linux.resources.memory = {limit: "lots"}' '\.linux\.resources\.memory\.limit' 'integer|number'
}

@test "bad input: pids limit is an object" {
  bad_config '.linux.resources.pids = {limit: {}}' '\.linux\.resources\.pids\.limit' 'integer|number'
}

@test "bad input: cgroupsPath that climbs out with .." {
  codemode_only cgroupspath-dotdot
  bad_config '.linux.cgroupsPath = "/../../../escape"' '\.linux\.cgroupsPath|cgroup' '\.\.'
}

@test "bad input: unknown rootfsPropagation" {
  bad_config '.linux.rootfsPropagation = "sideways"' '\.linux\.rootfsPropagation' 'sideways|unknown|invalid'
}

@test "bad input: relative masked path" {
  codemode_only relative-paths
  bad_config '.linux.maskedPaths = ["proc/kcore"]' '\.linux\.maskedPaths\[0\]' 'absolute'
}

@test "bad input: unknown personality domain" {
  codemode_only runc11-unsupported
  bad_config '.linux.personality = {domain: "WINDOWS"}' '\.linux\.personality\.domain' 'WINDOWS|unknown'
}

# ------------------------------------------------------------------------------------------
# hooks

@test "bad input: hook with a relative path" {
  bad_config '.hooks = {prestart: [{path: "bin/true"}]}' '\.hooks\.prestart\[0\]\.path' 'absolute'
}

@test "bad input: hook with a zero timeout" {
  bad_config '.hooks = {createRuntime: [{path: "/bin/true", timeout: 0}]}' \
    '\.hooks\.createRuntime\[0\]\.timeout' 'positive|greater|at least|> ?0'
}

@test "bad input: createRuntime hook binary missing" {
  bad_config '.hooks = {createRuntime: [{path: "'"$TEST_DIR/no-such-hook"'"}]}' \
    'createRuntime' 'no-such-hook'
}

@test "bad input: prestart hook binary missing (run)" {
  bad_config_run '.hooks = {prestart: [{path: "'"$TEST_DIR/no-such-hook"'"}]}' \
    'prestart' 'no-such-hook'
}

# ------------------------------------------------------------------------------------------
# annotations and command line

@test "bad input: annotation value that is not a string" {
  bad_config '.annotations = {"org.example": 1}' '\.annotations' 'string'
}

@test "bad input: --pid-file in a directory that does not exist" {
  set_args sleep 1000
  run_cm create --bundle "$BUNDLE" --pid-file "$TEST_DIR/no-such-dir/pid" "$CID"
  fails_with '--pid-file' 'no-such-dir' 'No such file'
}

@test "bad input: relative cwd through run" {
  bad_config_run '.process.cwd = "."' '\.process\.cwd' 'absolute'
}
