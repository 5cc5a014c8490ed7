#!/usr/bin/env bats
# The program name selects the profile: codemode installed (or linked) as codemode-mcp applies
# mcp to every command, the way a containerd handler (BinaryName, a Kubernetes RuntimeClass)
# reaches the profile without runtime arguments. The name is a floor: --profile may add, never
# take away.

load ../lib/helpers
codemode_only_file mcp-profile

# cm_as NAME ARGS…: codemode run through a link called NAME, with the test's --root.
cm_as() {
  local name=$1
  shift
  ln -sfn "$CODEMODE" "$TEST_DIR/$name"
  timeout --kill-after=5 "$CM_TIMEOUT" "$TEST_DIR/$name" --root "$ROOT" "$@"
}

@test "codemode-mcp: policy explain shows the mcp profile; the plain name, none" {
  run cm_as codemode-mcp policy explain -b "$BUNDLE"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "profile: mcp" ]
  run cm_as codemode policy explain -b "$BUNDLE"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "profile: default" ]
  run cm_as codemode-mcp-audit policy explain -b "$BUNDLE"
  [ "${lines[0]}" = "profile: mcp-audit" ]
  # Only those exact names: another link name is the plain runtime.
  run cm_as codemode-mcpx policy explain -b "$BUNDLE"
  [ "${lines[0]}" = "profile: default" ]
}

@test "codemode-ci: the name selects ci (docker run --runtime=codemode-ci); --profile mcp raises it, default does not lower it" {
  run cm_as codemode-ci policy explain -b "$BUNDLE"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "profile: ci" ]
  [[ "$output" == *"ci.json"* ]]
  run cm_as codemode-ci --profile default policy explain -b "$BUNDLE"
  [ "${lines[0]}" = "profile: ci" ]
  run cm_as codemode-ci --profile mcp policy explain -b "$BUNDLE"
  [ "${lines[0]}" = "profile: mcp" ]
  # A read-only root (codemode's CLI on a plain bundle): the job runs, root in its own range.
  set_cfg '.root.readonly = true'
  set_args sh -c 'cat /proc/self/uid_map; echo x >/tmp/t && echo tmp-writable'
  run cm_as codemode-ci run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [[ "$output" =~ \ 0\ +[1-9][0-9]*\ +1048576 ]]
  [[ "$output" == *tmp-writable* ]]
}

@test "codemode-mcp: --profile can raise the floor, never lower it" {
  run cm_as codemode-mcp --profile default policy explain -b "$BUNDLE"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "profile: mcp" ]
  run cm_as codemode-mcp-audit --profile mcp policy explain -b "$BUNDLE"
  [ "${lines[0]}" = "profile: mcp" ]
}

@test "codemode-mcp: create hardens the container, records the profile, and exec gets it too" {
  set_args sleep 100
  cm_as codemode-mcp create -b "$BUNDLE" "$CID"
  [ "$(cm_as codemode-mcp state "$CID" | jq -r '.annotations["run.codemode.profile"]')" = mcp ]
  cm_as codemode-mcp start "$CID"
  pid=$(cm state "$CID" | jq -r .pid)
  grep -q '^CapEff:[[:space:]]*0000000000000000$' "/proc/$pid/status"
  grep -q '^NoNewPrivs:[[:space:]]*1$' "/proc/$pid/status"
  # An exec through the plain name still gets the recorded profile.
  run cm exec "$CID" sh -c 'grep -E "^(CapEff|NoNewPrivs)" /proc/self/status'
  [ "$status" -eq 0 ]
  [[ $output == *"CapEff:"*"0000000000000000"* ]]
  [[ $output == *"NoNewPrivs:"*"1"* ]]
  cm_as codemode-mcp delete --force "$CID"
}
