#!/usr/bin/env bats
# `spec`: the default config.json, --rootless, -b, refusing to overwrite.

load ../lib/helpers

@test "spec writes a runc-shaped config.json in the current directory" {
  mkdir "$TEST_DIR/s" && cd "$TEST_DIR/s"
  run cm spec
  [ "$status" -eq 0 ]
  [ -f config.json ]
  jq -e '
    (.ociVersion | startswith("1."))
    and .process.args == ["sh"] and .process.terminal == true
    and .root.path == "rootfs"
    and .process.user.uid == 0
    and (.linux.namespaces | map(.type) | index("pid") and index("mount") and index("network")
         and index("ipc") and index("uts"))
    and (.mounts | map(.destination) | index("/proc") and index("/dev") and index("/sys"))
    and (.process.capabilities.bounding | index("CAP_SYS_ADMIN") | not)' config.json
}

@test "spec -b DIR writes DIR/config.json and nothing in the current directory" {
  mkdir "$TEST_DIR/s" "$TEST_DIR/cwd"
  cd "$TEST_DIR/cwd"
  run cm spec -b "$TEST_DIR/s"
  [ "$status" -eq 0 ]
  jq -e . "$TEST_DIR/s/config.json"
  [ -z "$(ls -A "$TEST_DIR/cwd")" ]
}

@test "spec --bundle DIR is -b DIR" {
  mkdir "$TEST_DIR/s"
  run cm spec --bundle "$TEST_DIR/s"
  [ "$status" -eq 0 ]
  [ -f "$TEST_DIR/s/config.json" ]
}

@test "spec refuses to overwrite an existing config.json" {
  mkdir "$TEST_DIR/s"
  echo '{"mine": true}' >"$TEST_DIR/s/config.json"
  run --separate-stderr cm spec -b "$TEST_DIR/s"
  [ "$status" -eq 1 ]
  if codemode_part error-wording; then
    [[ "$stderr" == codemode:* ]]
  fi
  [[ "$stderr" == *config.json* ]]
  [ "$(cat "$TEST_DIR/s/config.json")" = '{"mine": true}' ]
}

@test "spec --rootless adds a user namespace mapping the caller and drops the network namespace" {
  mkdir "$TEST_DIR/s"
  run cm spec --rootless -b "$TEST_DIR/s"
  [ "$status" -eq 0 ]
  local c=$TEST_DIR/s/config.json
  jq -e '.linux.namespaces | map(.type) | index("user")' "$c"
  jq -e '.linux.namespaces | map(.type) | index("network") | not' "$c"
  jq -e --argjson u "$(id -u)" '.linux.uidMappings[0] | .containerID == 0 and .hostID == $u and .size == 1' "$c"
  jq -e --argjson g "$(id -g)" '.linux.gidMappings[0] | .containerID == 0 and .hostID == $g and .size == 1' "$c"
}

@test "the spec config runs the busybox bundle once made non-interactive" {
  rm "$BUNDLE/config.json"
  cm spec -b "$BUNDLE"
  set_args echo spec-works
  bundle_set_terminal "$BUNDLE" false
  set_env "CODEMODE_TEST_CONTAINER=$CM_TEST_TOKEN:$CID"
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = spec-works ]
}

@test "make-busybox-bundle.sh uses \$CODEMODE spec when CODEMODE is set" {
  run env CODEMODE="$CODEMODE" "$CM_REPO/rootfs-tools/make-busybox-bundle.sh" "$TEST_DIR/b2"
  [ "$status" -eq 0 ]
  cd "$TEST_DIR" && mkdir s && cd s && cm spec
  diff "$TEST_DIR/s/config.json" "$TEST_DIR/b2/config.json"
}

@test "the embedded default in rootfs-tools matches what spec writes" {
  codemode_only spec-default
  mkdir "$TEST_DIR/s"
  cm spec -b "$TEST_DIR/s"
  rt_write_default_config "$TEST_DIR/embedded.json"
  diff <(jq -S . "$TEST_DIR/embedded.json") <(jq -S . "$TEST_DIR/s/config.json")
}
