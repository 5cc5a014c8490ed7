#!/usr/bin/env bats
# Malformed configs: an error naming the JSON field, exit 1, no state left behind.
# (A larger catalogue lives elsewhere; these cover each section of the config once.)

load ../lib/helpers

# expect_config_error JQ-EXPR FIELD: break config.json with JQ-EXPR; create must fail with exit 1,
# a `codemode:` message on stderr containing FIELD, and leave no container and no state dir.
expect_config_error() {
  set_cfg "$1"
  run_cm create --bundle "$BUNDLE" "$CID"
  echo "stderr: $stderr"
  [ "$status" -eq 1 ]
  if codemode_part error-wording; then
    [[ "$stderr" == codemode:* ]]
    [[ "$stderr" == *"$2"* ]]
  fi
  [ ! -e "$ROOT/$CID" ]
  [ -z "$(cm list -q)" ]
  [ -z "$(test_processes "$CM_TEST_TOKEN:$CID")" ]
}

@test "config.json that is not JSON" {
  echo '{"ociVersion": "1.2.0", "process": ' >"$BUNDLE/config.json"
  run_cm create --bundle "$BUNDLE" "$CID"
  [ "$status" -eq 1 ]
  if codemode_part error-wording; then
    [[ "$stderr" == codemode:*config.json* ]]
  fi
  [ ! -e "$ROOT/$CID" ]
}

@test "a missing config.json names the file" {
  rm "$BUNDLE/config.json"
  run_cm create --bundle "$BUNDLE" "$CID"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *config.json* ]]
  [ ! -e "$ROOT/$CID" ]
}

@test "a bundle that does not exist names it" {
  run_cm create --bundle "$TEST_DIR/nope" "$CID"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"$TEST_DIR/nope"* ]]
}

@test "ociVersion missing" {
  codemode_only oci-version
  expect_config_error 'del(.ociVersion)' ociVersion
}
@test "process.args empty" { expect_config_error '.process.args = []' process.args; }
@test "process.args not strings" { expect_config_error '.process.args = ["sh", 1]' process.args; }
@test "process.cwd relative" { expect_config_error '.process.cwd = "tmp"' process.cwd; }
@test "process.user.uid a string" { expect_config_error '.process.user.uid = "0"' process.user.uid; }
@test "process.env not an array" { expect_config_error '.process.env = "PATH=/bin"' process.env; }
@test "process.rlimits unknown type" { expect_config_error '.process.rlimits = [{type: "RLIMIT_BOGUS", soft: 1, hard: 1}]' process.rlimits; }
@test "process.rlimits soft above hard" { expect_config_error '.process.rlimits = [{type: "RLIMIT_NOFILE", soft: 10, hard: 5}]' process.rlimits; }
@test "root missing" { expect_config_error 'del(.root)' root; }
@test "root.path does not exist" { expect_config_error '.root.path = "no-such-rootfs"' root.path; }
@test "mounts[] not an object" { expect_config_error '.mounts += ["oops"]' 'mounts[7]'; }
@test "linux.namespaces unknown type" { expect_config_error '.linux.namespaces += [{type: "bogus"}]' linux.namespaces; }
@test "linux.namespaces duplicate type" { expect_config_error '.linux.namespaces += [{type: "pid"}]' linux.namespaces; }
@test "linux.uidMappings size 0" {
  expect_config_error '.linux.namespaces += [{type: "user"}] | .linux.uidMappings = [{containerID: 0, hostID: 100000, size: 0}] | .linux.gidMappings = [{containerID: 0, hostID: 100000, size: 1}]' linux.uidMappings
}
@test "linux.devices bad type" { expect_config_error '.linux.devices = [{path: "/dev/x", type: "q", major: 1, minor: 3}]' linux.devices; }
@test "linux.resources.memory.limit a string" { expect_config_error '.linux.resources.memory = {limit: "lots"}' linux.resources.memory.limit; }
@test "linux.sysctl value not a string" { expect_config_error '.linux.sysctl = {"net.ipv4.ip_forward": 1}' linux.sysctl; }
@test "linux.seccomp unknown action" { expect_config_error '.linux.seccomp = {defaultAction: "SCMP_ACT_BOGUS"}' linux.seccomp.defaultAction; }
@test "hooks.prestart path missing" { expect_config_error '.hooks = {prestart: [{args: ["x"]}]}' hooks.prestart; }
@test "hostname not a string" { expect_config_error '.hostname = 42' hostname; }

@test "unknown fields are ignored, as the spec says" {
  set_cfg '.someFutureField = {x: 1} | .process.alsoNew = true | .linux.brandNew = []'
  set_args echo fine
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = fine ]
}

@test "a config error with --log-format json logs the same message as an error line" {
  set_cfg '.process.args = []'
  run_cm --log "$TEST_DIR/log.json" --log-format json create --bundle "$BUNDLE" "$CID"
  [ "$status" -eq 1 ]
  jq -e -s '[.[] | select(.level == "error")] | length > 0' "$TEST_DIR/log.json"
  if codemode_part error-wording; then
    jq -e -s '[.[] | select(.level == "error")] | last | .msg | contains("process.args")' "$TEST_DIR/log.json"
  fi
}
