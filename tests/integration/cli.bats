#!/usr/bin/env bats
# The command line itself: --version, --help, features, error format, global options.

load ../lib/helpers

@test "--version prints the version and the spec version" {
  run cm --version
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" =~ ^[a-z]+\ version\ [0-9]+\.[0-9]+\.[0-9]+ ]]
  printf '%s\n' "${lines[@]}" | grep -qE '^spec: [0-9]+\.[0-9]+\.[0-9]+'
  if codemode_part identity; then
    [[ "${lines[0]}" =~ ^codemode\ version\ [0-9]+\.[0-9]+\.[0-9]+ ]]
  fi
  if codemode_part spec-version; then
    [ "${lines[1]}" = "spec: 1.2.0" ]
  fi
}

@test "-v is the same as --version" {
  run cm --version
  local long=$output
  run cm -v
  [ "$status" -eq 0 ]
  [ "$output" = "$long" ]
}

@test "--version works without --root" {
  run "$CODEMODE" --version
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" =~ ^[a-z]+\ version ]]
  if codemode_part identity; then
    [[ "${lines[0]}" =~ ^codemode\ version ]]
  fi
}

@test "every command has --help" {
  local c
  for c in create start run state kill delete list spec features; do
    run "$CODEMODE" "$c" --help
    echo "command $c: status $status: $output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"$c"* ]]
  done
}

@test "--help lists the commands" {
  run "$CODEMODE" --help
  [ "$status" -eq 0 ]
  local c
  for c in create start run state kill delete list spec features; do
    [[ "$output" == *"$c"* ]]
  done
}

@test "an unknown command is an error" {
  run --separate-stderr cm no-such-command
  [ "$status" -ne 0 ]
  if codemode_part cli-usage-exit; then
    [ "$status" -eq 1 ]
  fi
  if codemode_part error-wording; then
    [[ "$stderr" == codemode:* ]]
  fi
}

@test "an unknown global option is an error" {
  run --separate-stderr "$CODEMODE" --no-such-option list
  [ "$status" -eq 1 ]
  if codemode_part error-wording; then
    [[ "$stderr" == codemode:* ]]
  fi
}

@test "no command is an error" {
  codemode_only cli-usage-exit
  run --separate-stderr "$CODEMODE"
  [ "$status" -ne 0 ]
}

@test "errors go to stderr as 'codemode: <message>' with exit 1" {
  run --separate-stderr cm state nosuch
  [ "$status" -eq 1 ]
  [ -z "$output" ]
  [[ "$stderr" == *"container does not exist"* ]]
  if codemode_part error-wording; then
    [ "$stderr" = 'codemode: container does not exist: "nosuch"' ]
  fi
}

@test "every command that takes an id reports a missing container the same way" {
  local c
  for c in start state kill delete; do
    run --separate-stderr cm "$c" nosuch
    echo "command $c: $status: $stderr"
    [ "$status" -eq 1 ]
    [[ "$stderr" == *"container does not exist"* ]]
    if codemode_part error-wording; then
      [[ "$stderr" == *'container does not exist: "nosuch"'* ]]
    fi
  done
}

@test "a command missing its id is an error" {
  local c
  for c in create start state kill delete; do
    run --separate-stderr cm "$c"
    echo "command $c: $status: $stderr"
    [ "$status" -eq 1 ]
    if codemode_part error-wording; then
      [[ "$stderr" == codemode:* ]]
    fi
  done
}

@test "features prints the OCI features document" {
  run --separate-stderr cm features
  [ "$status" -eq 0 ]
  echo "$output" | jq -e '.ociVersionMin and .ociVersionMax'
  if codemode_part spec-version; then
    [ "$(echo "$output" | jq -r .ociVersionMax)" = "1.2.0" ]
  fi
  echo "$output" | jq -e '.linux.namespaces | index("pid") and index("user") and index("network")'
  echo "$output" | jq -e '.hooks | index("prestart") and index("poststop")'
  echo "$output" | jq -e '.mountOptions | index("ro") and index("bind")'
}

# runtime-spec 1.2 features.md and features-linux.md: the only fields a 1.2 document may have.
FEATURES_1_2_SHAPE='
  def only($allowed): (keys - $allowed) == [];
  only(["ociVersionMin", "ociVersionMax", "hooks", "mountOptions", "linux", "annotations",
        "potentiallyUnsafeConfigAnnotations"])
  and ((.linux // {}) | only(["namespaces", "capabilities", "cgroup", "seccomp", "apparmor", "selinux",
        "intelRdt", "mountExtensions"]))
  and ((.linux.cgroup // {}) | only(["v1", "v2", "systemd", "systemdUser", "rdma"]))
  and ((.linux.seccomp // {}) | only(["enabled", "actions", "operators", "archs", "knownFlags", "supportedFlags"]))
  and all((.linux.apparmor, .linux.selinux, .linux.intelRdt) // {}; only(["enabled"]))
  and ((.linux.mountExtensions // {}) | only(["idmap"]))
  and ((.linux.mountExtensions.idmap // {}) | only(["enabled"]))'

@test "features has only runtime-spec 1.2 fields, and says what codemode implements and nothing else" {
  run --separate-stderr cm features
  [ "$status" -eq 0 ]
  echo "$output" | jq -e "$FEATURES_1_2_SHAPE"
  if codemode_part features-set; then
    local f=$output
    # Implemented: the time namespace, every hook, rro and idmapped mounts (mount_setattr), the
    # systemd driver (system bus, and the user's manager rootless), the rdma controller, AppArmor
    # and SELinux labels, the profile annotation.
    echo "$f" | jq -e '.linux.namespaces | index("time") and index("cgroup")'
    echo "$f" | jq -e '.hooks | length == 6'
    echo "$f" | jq -e '.mountOptions | index("rro") and index("nosymfollow") and index("tmpcopyup") and index("idmap") and index("ridmap")'
    echo "$f" | jq -e '.linux.cgroup == {v1: true, v2: true, systemd: true, systemdUser: true, rdma: true}'
    echo "$f" | jq -e '.linux.mountExtensions.idmap.enabled'
    echo "$f" | jq -e '.linux.apparmor.enabled and .linux.selinux.enabled'
    # The annotations that change codemode's behaviour (the profile, Landlock): a prefix.
    echo "$f" | jq -e '.potentiallyUnsafeConfigAnnotations == ["run.codemode."]'
    # Not implemented, so not promised: Intel RDT is not applied.
    echo "$f" | jq -e '.linux.intelRdt.enabled == false'
    # Every listed seccomp action and operator is one the config parser takes.
    local a
    for a in $(echo "$f" | jq -r '.linux.seccomp.actions[]'); do
      set_cfg '.linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW", syscalls: [{names: ["getcwd"], action: $a, errnoRet: 1}]}' --arg a "$a"
      run_cm create --bundle "$BUNDLE" "$CID-a"
      [[ "$stderr" != *"unknown"* ]] || { echo "action $a: $stderr"; return 1; }
      cm delete --force "$CID-a" >/dev/null 2>&1 || true
    done
  fi
}

@test "features lists rro only if the kernel has mount_setattr" {
  run cm features
  [ "$status" -eq 0 ]
  if echo "$output" | jq -e '.mountOptions | index("rro")' >/dev/null; then
    # rro needs mount_setattr (5.12+); this kernel has it, so listing it is honest here.
    uname -r | awk -F. '{ exit !($1 > 5 || ($1 == 5 && $2 >= 12)) }'
  fi
}

@test "--log FILE --log-format json writes {level,msg,time} lines on an error" {
  local log=$TEST_DIR/log.json
  run --separate-stderr cm --log "$log" --log-format json state nosuch
  [ "$status" -eq 1 ]
  [ -s "$log" ]
  # Every line is one JSON object with level, msg and time.
  jq -e -s 'all(.[]; has("level") and has("msg") and has("time"))' "$log"
  # The last error line is what containerd-shim-runc-v2 shows the user.
  run jq -r -s '[.[] | select(.level == "error")] | last | .msg' "$log"
  [[ "$output" == *"container does not exist"* ]]
  if codemode_part error-wording; then
    [[ "$output" == *'container does not exist: "nosuch"'* ]]
  fi
}

@test "--log-format text writes plain lines" {
  local log=$TEST_DIR/log.txt
  run cm --log "$log" --log-format text state nosuch
  [ "$status" -eq 1 ]
  grep -q 'does not exist' "$log"
  ! jq -e . "$log" >/dev/null 2>&1
}

@test "--log-format with a bad value is an error" {
  run --separate-stderr cm --log-format yaml list
  [ "$status" -eq 1 ]
  [[ "$stderr" == *yaml* ]]
  if codemode_part error-wording; then
    [[ "$stderr" == codemode:* ]]
  fi
}

# runc's logrus shapes (issue 28): text `time="…Z" level=… msg="…"` (runc may add fields after
# msg), JSON {"level","msg","time"}, the time RFC 3339 to the second.
log_lines_are_text() {
  local line n=0
  while IFS= read -r line; do
    n=$((n + 1))
    [[ $line =~ ^time=\"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z\"\ level=(debug|info|warning|error)\ msg= ]] || {
      echo "not a logrus text line: $line"
      return 1
    }
  done <"$1"
  [ "$n" -gt 0 ]
}

@test "--debug --log FILE: logrus text lines with the steps of a start, the container's own among them" {
  local log=$TEST_DIR/debug.log
  set_args echo hello
  run_cm --debug --log "$log" run -b "$BUNDLE" "$CID"
  echo "$output"
  cat "$log"
  [ "$status" -eq 0 ]
  # The container's output is its own: no log line reached it.
  [ "$stdout" = hello ]
  log_lines_are_text "$log"
  grep -q 'level=debug' "$log"
  if codemode_part debug-steps; then
    grep -q 'msg="config .*config.json: parsed' "$log"
    grep -q 'msg="cgroup: ' "$log"
    grep -q 'msg="namespaces: ' "$log"
    # init's lines, sent over the sync socket and written by the runtime.
    grep -q 'msg="init\[1\]: mount proc on /proc' "$log"
    grep -q 'msg="init\[1\]: rootfs .*: pivot_root' "$log"
    grep -q 'msg="init\[1\]: start: exec /bin/echo' "$log"
  fi
}

@test "--debug without --log writes the lines to stderr, never to the container's stdout" {
  set_args echo hello
  run_cm --debug run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$stdout" = hello ]
  printf '%s\n' "$stderr" | grep -v '^$' >"$TEST_DIR/stderr"
  log_lines_are_text "$TEST_DIR/stderr"
  if codemode_part debug-steps; then
    grep -q 'msg="init\[1\]: mount ' "$TEST_DIR/stderr"
  fi
}

@test "--debug --log-format json: every line {level,msg,time}; exec's steps too; nothing without --debug" {
  set_args sleep 1000
  run_cm run -d -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  local log=$TEST_DIR/exec.json
  run_cm --debug --log "$log" --log-format json exec "$CID" echo hi
  cat "$log"
  [ "$status" -eq 0 ]
  [ "$stdout" = hi ]
  jq -e -s 'length > 0 and all(.[]; (.level | type == "string") and (.msg | type == "string")
    and (.time | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$")))' "$log"
  jq -e -s 'any(.[]; .level == "debug")' "$log"
  if codemode_part debug-steps; then
    jq -e -s 'any(.[]; .msg | test("^exec .*: process echo"))' "$log"
    jq -e -s 'any(.[]; .msg | test("^exec\\[[0-9]+\\]: exec /bin/echo"))' "$log"
  fi
  # Off: no debug line at all.
  local quiet=$TEST_DIR/quiet.json
  run_cm --log "$quiet" --log-format json exec "$CID" echo hi
  [ "$status" -eq 0 ]
  [ ! -s "$quiet" ] || ! jq -e -s 'any(.[]; .level == "debug")' "$quiet"
}

@test "--cgroup-manager cgroupfs and disabled are accepted" {
  codemode_only crun-flags
  set_args true
  run_cm --cgroup-manager cgroupfs run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  run_cm --cgroup-manager disabled run -b "$BUNDLE" "$CID-2"
  [ "$status" -eq 0 ]
}

@test "--cgroup-manager with a bad value is an error" {
  run --separate-stderr cm --cgroup-manager nope list
  [ "$status" -eq 1 ]
  if codemode_part error-wording; then
    [[ "$stderr" == codemode:* ]]
  fi
}

@test "--systemd-cgroup works where systemd runs, fails clearly where it does not" {
  set_args true
  set_cfg '.linux.cgroupsPath = "system.slice:codemode:" + $id' --arg id "$CID"
  run_cm --systemd-cgroup run -b "$BUNDLE" "$CID"
  if [ -d /run/systemd/system ]; then
    [ "$status" -eq 0 ]
  elif [ "$status" -ne 0 ]; then
    # No systemd here: falling back to cgroupfs is fine, a clear error is fine, a crash is not.
    [ "$status" -eq 1 ]
    if codemode_part error-wording; then
      [[ "$stderr" == codemode:* ]]
    fi
  fi
}

@test "list with a --root that does not exist yet is empty, not an error" {
  ROOT=$TEST_DIR/new/state/dir
  run cm list -q
  [ "$status" -eq 0 ]
  [ -z "$output" ]
}
