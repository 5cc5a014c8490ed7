#!/usr/bin/env bats
# hooks: every kind, their order, the state on stdin, failures.

load ../lib/helpers

# A host-side hook: appends its name to $TEST_DIR/hookout/order and saves stdin (the state JSON).
write_host_hook() {
  mkdir -p "$TEST_DIR/hookout"
  cat >"$TEST_DIR/hook.sh" <<'SH'
#!/bin/sh
# $1: hook kind, $2: output dir
cat >"$2/$1.json"
echo "$1" >>"$2/order"
SH
  chmod +x "$TEST_DIR/hook.sh"
}

hook_json() { # KIND → the hooks entry for the host-side hook
  jq -n --arg p "$TEST_DIR/hook.sh" --arg k "$1" --arg o "$TEST_DIR/hookout" \
    '{path: $p, args: ["hook.sh", $k, $o], env: ["HOOK_ENV=1"], timeout: 10}'
}

all_hooks_bundle() {
  write_host_hook
  chmod 0777 "$TEST_DIR/hookout"
  # startContainer runs inside the container: its path resolves in the container's root, so it
  # uses the rootfs's /bin/sh and writes through a bind mount of the same output dir.
  bundle_add_mount "$BUNDLE" "$(jq -n --arg s "$TEST_DIR/hookout" '{destination: "/hookout", source: $s, options: ["bind"]}')"
  set_cfg '.hooks = {
      prestart: [$pre], createRuntime: [$cr], createContainer: [$cc],
      startContainer: [{path: "/bin/sh", args: ["sh", "-c", "cat >/hookout/startContainer.json; echo startContainer >>/hookout/order"]}],
      poststart: [$ps], poststop: [$pst]}' \
    --argjson pre "$(hook_json prestart)" --argjson cr "$(hook_json createRuntime)" \
    --argjson cc "$(hook_json createContainer)" --argjson ps "$(hook_json poststart)" \
    --argjson pst "$(hook_json poststop)"
}

@test "all six hooks run, in the spec's order, with the state on stdin" {
  all_hooks_bundle
  set_args sh -c 'echo container-ran >>/hookout/order'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  local out=$TEST_DIR/hookout
  cat "$out/order"
  # prestart and createRuntime both run before the pivot; the spec orders prestart first in
  # practice (runc), but accept either between the two.
  run sed -n '1,2p' "$out/order"
  [ "$(echo "$output" | sort | tr '\n' ' ')" = "createRuntime prestart " ]
  run sed -n '3,$p' "$out/order"
  # poststart may race with the container's own output; poststop is always last.
  [ "${lines[0]}" = createContainer ]
  [ "${lines[-1]}" = poststop ]
  [[ " ${lines[*]} " == *" poststart "* ]]
  # startContainer before the program (poststart may land between them, or after).
  [[ " ${lines[*]} " == *" startContainer "*"container-ran "* ]]
  if codemode_part runc-poststart-race; then
    # poststart runs after the process was executed, so after startContainer.
    [ "${lines[1]}" = startContainer ]
  fi
  local k
  for k in prestart createRuntime createContainer startContainer poststart poststop; do
    jq -e --arg id "$CID" --arg b "$BUNDLE" '.id == $id and .bundle == $b and (.ociVersion | type == "string")' "$out/$k.json"
  done
  jq -e '.pid > 0' "$out/prestart.json"
  if codemode_part runc-poststart-race; then
    # The process runs when poststart is called (runc's often says "created").
    jq -e '.status == "running"' "$out/poststart.json"
  fi
  jq -e '.status == "stopped"' "$out/poststop.json"
}

@test "hooks get only their own env and args" {
  write_host_hook
  cat >"$TEST_DIR/envhook.sh" <<'SH'
#!/bin/sh
{ echo "args:$*"; env | sort; } >"$1"
SH
  chmod +x "$TEST_DIR/envhook.sh"
  set_cfg '.hooks.createRuntime = [{path: $p, args: ["envhook", $o, "extra"], env: ["ONLY=this"]}]' \
    --arg p "$TEST_DIR/envhook.sh" --arg o "$TEST_DIR/env.out"
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  grep -qx "args:$TEST_DIR/env.out extra" "$TEST_DIR/env.out"
  grep -qx 'ONLY=this' "$TEST_DIR/env.out"
  ! grep -q '^BATS_' "$TEST_DIR/env.out"
}

@test "a failing prestart hook makes create fail and leaves nothing" {
  set_cfg '.hooks.prestart = [{path: "/bin/false"}]'
  set_args sleep 1000
  run_cm create --bundle "$BUNDLE" "$CID"
  [ "$status" -eq 1 ]
  if codemode_part error-wording; then
    [[ "$stderr" == *prestart* ]]
  fi
  run cm state "$CID"
  [ "$status" -eq 1 ]
  [ ! -e "$ROOT/$CID" ]
  [ -z "$(test_processes "$CM_TEST_TOKEN:$CID")" ]
}

@test "a failing createRuntime hook makes run fail with its status and leaves nothing" {
  set_cfg '.hooks.createRuntime = [{path: "/bin/sh", args: ["sh", "-c", "echo hook-says-no >&2; exit 4"]}]'
  set_args sleep 1000
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 1 ]
  if codemode_part error-wording; then
    [[ "$stderr" == *createRuntime* ]]
  fi
  [ -z "$(cm list -q)" ]
}

@test "a hook that outlives its timeout is killed and fails the create" {
  set_cfg '.hooks.prestart = [{path: "/bin/sleep", args: ["sleep", "123.456"], timeout: 1}]'
  set_args sleep 1000
  local t0=$SECONDS
  run_cm create --bundle "$BUNDLE" "$CID"
  [ "$status" -eq 1 ]
  [ $((SECONDS - t0)) -lt 20 ]
  if codemode_part error-wording; then
    [[ "$stderr" == *prestart* ]]
  fi
  ! pgrep -fx "sleep 123.456" >/dev/null
}

@test "a failing poststart hook: the container is still cleaned up" {
  set_cfg '.hooks.poststart = [{path: "/bin/false"}]'
  set_args true
  run_cm run -b "$BUNDLE" "$CID"
  [ -z "$(cm list -q)" ]
}

@test "a failing poststop hook does not fail delete" {
  set_cfg '.hooks.poststop = [{path: "/bin/false"}]'
  set_args true
  run cm run --keep -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  run cm delete "$CID"
  [ "$status" -eq 0 ]
  run cm state "$CID"
  [ "$status" -eq 1 ]
}

@test "poststop runs on delete --force of a running container" {
  write_host_hook
  set_cfg '.hooks.poststop = [$h]' --argjson h "$(hook_json poststop)"
  set_args sleep 1000
  run_cm run --detach -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ ! -e "$TEST_DIR/hookout/poststop.json" ]
  cm delete --force "$CID"
  [ -e "$TEST_DIR/hookout/poststop.json" ]
}

@test "a hook with a relative path is refused naming the field" {
  set_cfg '.hooks.prestart = [{path: "relative/hook"}]'
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 1 ]
  if codemode_part error-wording; then
    [[ "$stderr" == *hooks.prestart* ]]
  fi
}

# runc 1.1.5 on this bundle: the hook is uid 1000 with no capabilities left after its execve, the
# config's bounding set, NoNewPrivs 1, Seccomp 2, in the process's cwd, with the process's
# environment and the state "created" on stdin. Issue 21: it ran as root with every capability.
@test "startContainer hooks run as the process would: its user, caps, no_new_privs, seccomp, cwd, env" {
  mkdir -p "$TEST_DIR/hookout"
  chmod 0777 "$TEST_DIR/hookout"
  bundle_add_mount "$BUNDLE" "$(jq -n --arg s "$TEST_DIR/hookout" '{destination: "/hookout", source: $s, options: ["bind"]}')"
  set_cfg '.process.user = {uid: 1000, gid: 1000} | .process.cwd = "/hookout" | .process.env += ["HOOKPROBE=from-process"]
    | .linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW", architectures: ["SCMP_ARCH_X86_64"],
                        syscalls: [{names: ["mkdirat", "mkdir"], action: "SCMP_ACT_ERRNO"}]}
    | .hooks.startContainer = [{path: "/bin/sh", args: ["sh", "-c",
        "{ grep -E \"^(Uid|CapEff|CapPrm|CapBnd|NoNewPrivs|Seccomp):\" /proc/self/status; echo cwd=$(pwd); echo env=$HOOKPROBE; cat; } >/hookout/start"]}]'
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  output=$(cat "$TEST_DIR/hookout/start")
  echo "$output"
  [ "$(awk '$1 == "Uid:" {print $2 $3 $4 $5}' <<<"$output")" = 1000100010001000 ]
  [ "$(awk '$1 == "CapEff:" {print $2}' <<<"$output")" = 0000000000000000 ]
  [ "$(awk '$1 == "CapPrm:" {print $2}' <<<"$output")" = 0000000000000000 ]
  [ "$(awk '$1 == "CapBnd:" {print $2}' <<<"$output")" = 0000000020000420 ]
  [ "$(awk '$1 == "NoNewPrivs:" {print $2}' <<<"$output")" = 1 ]
  [ "$(awk '$1 == "Seccomp:" {print $2}' <<<"$output")" = 2 ]
  [[ $output == *cwd=/hookout* ]]
  [[ $output == *env=from-process* ]]
  [[ $output == *'"status":"created"'* ]]
}

# runc 1.1.5 on this bundle: cwd is the rootfs directory, the environment is the process's
# (PATH, TERM…), not the runtime's.
@test "createContainer hooks run in the rootfs directory with the process's environment" {
  cat >"$TEST_DIR/cwdhook.sh" <<'SH'
#!/bin/sh
{ echo "cwd=$(pwd)"; env | sort; } >"$1"
SH
  chmod +x "$TEST_DIR/cwdhook.sh"
  set_cfg '.process.env += ["HOOKPROBE=from-process"] | .hooks.createContainer = [{path: $p, args: ["cwdhook", $o]}]' \
    --arg p "$TEST_DIR/cwdhook.sh" --arg o "$TEST_DIR/cc.out"
  CM_RUNTIME_ONLY=runtime-env run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  cat "$TEST_DIR/cc.out"
  grep -qx "cwd=$(cd "$BUNDLE/rootfs" && pwd -P)" "$TEST_DIR/cc.out"
  grep -qx 'HOOKPROBE=from-process' "$TEST_DIR/cc.out"
  ! grep -q '^CM_RUNTIME_ONLY=' "$TEST_DIR/cc.out"
}

# runc 1.1.5 (and crun) on this bundle: a hook without "env" gets the runtime's environment
# and runs in the bundle directory. Issue 14: it got an empty environment.
@test "runtime-side hooks without env get the runtime's environment, in the bundle directory" {
  cat >"$TEST_DIR/envhook.sh" <<'SH'
#!/bin/sh
{ echo "cwd=$(pwd)"; env | sort; } >"$1"
SH
  chmod +x "$TEST_DIR/envhook.sh"
  set_cfg '.hooks.prestart = [{path: $p, args: ["envhook", ($o + ".prestart")]}]
    | .hooks.poststop = [{path: $p, args: ["envhook", ($o + ".poststop")]}]' \
    --arg p "$TEST_DIR/envhook.sh" --arg o "$TEST_DIR/env.out"
  (cd / && CM_RUNTIME_ONLY=runtime-env run_cm run -b "$BUNDLE" "$CID")
  local k
  for k in prestart poststop; do
    cat "$TEST_DIR/env.out.$k"
    grep -qx 'CM_RUNTIME_ONLY=runtime-env' "$TEST_DIR/env.out.$k"
    grep -qx "cwd=$(cd "$BUNDLE" && pwd -P)" "$TEST_DIR/env.out.$k"
  done
}

# The runtime-spec: if a poststart (poststop) hook fails, the runtime MUST log a warning and the
# remaining hooks and the lifecycle continue. runc 1.1.5 stops at the first failing hook (and
# fails `run` for poststart).
@test "a failing poststart or poststop hook is logged and the next hooks of its phase still run" {
  codemode_only hooks-keep-going
  write_host_hook
  set_cfg '.hooks.poststart = [{path: "/bin/sh", args: ["sh", "-c", "exit 3"]}, $ps]
    | .hooks.poststop = [{path: "/bin/sh", args: ["sh", "-c", "exit 4"]}, $pst]' \
    --argjson ps "$(hook_json poststart)" --argjson pst "$(hook_json poststop)"
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [[ $stderr == *warn*poststart*"exit status 3"* ]]
  [[ $stderr == *warn*poststop*"exit status 4"* ]]
  [ -e "$TEST_DIR/hookout/poststart.json" ]
  [ -e "$TEST_DIR/hookout/poststop.json" ]
  [ -z "$(cm list -q)" ]
}
