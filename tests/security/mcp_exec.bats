#!/usr/bin/env bats
# exec into a container created under a hardening profile: the exec'd process gets no more than
# init got — no capability (even with --cap or a process.json that asks), no_new_privs, the
# profile's seccomp filter stacked on the container's, its rlimits and oomScoreAdj — whether the
# profile came from --profile at create or from the config's run.codemode.profile annotation.
# The container's config.json (kept in the state dir) is the caller's untightened one, which is
# exactly what exec must not hand out. Escape attempts use the marker-guarded static payload of
# mcp_escape/.

load ../lib/helpers
codemode_only_file mcp-profile

setup_file() {
  cm_setup_file
  export PAYLOAD=$BATS_FILE_TMPDIR/payload
  cc -static -O2 -Wall -Wextra -o "$PAYLOAD" "$CM_REPO/tests/security/mcp_escape/payload.c"
}

setup() {
  cm_setup
  cp "$PAYLOAD" "$BUNDLE/rootfs/escape"
  echo "codemode mcp escape test bundle" >"$BUNDLE/rootfs/.codemode-escape-marker"
  # What a careless caller would hand over: capabilities (in every set), no no_new_privs.
  set_cfg '.process.noNewPrivileges = false
    | .process.capabilities = {bounding: ["CAP_SYS_ADMIN", "CAP_NET_ADMIN", "CAP_CHOWN"],
        effective: ["CAP_SYS_ADMIN", "CAP_NET_ADMIN", "CAP_CHOWN"],
        permitted: ["CAP_SYS_ADMIN", "CAP_NET_ADMIN", "CAP_CHOWN"]}'
  set_args sleep 300
}

teardown() { cm_teardown; }

# start_container [GLOBAL-OPTIONS…]: create + start $CID with the given global options.
start_container() {
  run_cm "$@" create --bundle "$BUNDLE" "$CID"
  [ "$status" -eq 0 ] || { echo "create: $output" >&2; return 1; }
  run_cm start "$CID"
  [ "$status" -eq 0 ] || { echo "start: $output" >&2; return 1; }
  INIT_PID=$(state_field "$CID" pid)
  [ -n "$INIT_PID" ]
}

# status_field PID-OR-self FIELD: a line of /proc/PID/status, from the host or from an exec.
host_status() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
exec_status() {
  run_cm exec "${@:3}" "$CID" cat /proc/self/status
  [ "$status" -eq 0 ] || { echo "exec: $output" >&2; return 1; }
  awk -v k="$2:" '$1 == k { print $2 }' <<<"$stdout"
}

@test "mcp exec: the state records the profile" {
  start_container --profile mcp
  run jq -r '.annotations["run.codemode.profile"]' < <(cm state "$CID")
  [ "$output" = mcp ]
}

@test "mcp exec: no capabilities, no_new_privs, the same number of seccomp filters as init" {
  start_container --profile mcp
  [ "$(host_status "$INIT_PID" CapEff)" = 0000000000000000 ]
  [ "$(exec_status self CapEff)" = 0000000000000000 ]
  [ "$(exec_status self CapPrm)" = 0000000000000000 ]
  [ "$(exec_status self CapBnd)" = 0000000000000000 ]
  [ "$(exec_status self CapAmb)" = 0000000000000000 ]
  [ "$(exec_status self NoNewPrivs)" = 1 ]
  [ "$(exec_status self Seccomp)" = 2 ]
  # Init has the profile's filter (the config has none of its own): so must the exec.
  local init_filters
  init_filters=$(host_status "$INIT_PID" Seccomp_filters)
  [ "$init_filters" -ge 1 ]
  [ "$(exec_status self Seccomp_filters)" = "$init_filters" ]
}

@test "mcp exec: --cap and --process cannot add capabilities or drop no_new_privs" {
  start_container --profile mcp
  [ "$(exec_status self CapEff --cap CAP_SYS_ADMIN --cap CAP_NET_RAW)" = 0000000000000000 ]
  cat >"$TEST_DIR/process.json" <<'EOF'
{"args": ["cat", "/proc/self/status"], "cwd": "/", "env": ["PATH=/bin"], "user": {"uid": 0, "gid": 0},
 "noNewPrivileges": false,
 "capabilities": {"bounding": ["CAP_SYS_ADMIN"], "effective": ["CAP_SYS_ADMIN"],
                  "permitted": ["CAP_SYS_ADMIN"], "inheritable": ["CAP_SYS_ADMIN"], "ambient": ["CAP_SYS_ADMIN"]},
 "rlimits": [{"type": "RLIMIT_NOFILE", "soft": 100000, "hard": 100000}]}
EOF
  run_cm exec --process "$TEST_DIR/process.json" "$CID"
  [ "$status" -eq 0 ]
  [[ "$stdout" == *$'CapEff:\t0000000000000000'* ]]
  [[ "$stdout" == *$'CapInh:\t0000000000000000'* ]]
  [[ "$stdout" == *$'CapAmb:\t0000000000000000'* ]]
  [[ "$stdout" == *$'NoNewPrivs:\t1'* ]]
}

@test "mcp exec: rlimits and oom_score_adj as init (a looser process.json limit is tightened)" {
  start_container --profile mcp
  run_cm exec "$CID" cat /proc/self/limits /proc/self/oom_score_adj
  [ "$status" -eq 0 ]
  # The same limits as init (the config's 1024/1024 is stricter than the profile's 1024/4096).
  [[ "$stdout" == *"$(grep 'Max open files' "/proc/$INIT_PID/limits")"* ]]
  [[ "$stdout" =~ "Max core file size"\ +0\ +0 ]]
  [ "${lines[-1]}" = 1000 ]
  [ "$(cat "/proc/$INIT_PID/oom_score_adj")" = 1000 ]
  # A process.json replaces the config's rlimits; the profile still bounds them.
  cat >"$TEST_DIR/process.json" <<'EOF'
{"args": ["cat", "/proc/self/limits"], "cwd": "/", "env": ["PATH=/bin"], "user": {"uid": 0, "gid": 0},
 "oomScoreAdj": -500,
 "rlimits": [{"type": "RLIMIT_NOFILE", "soft": 100000, "hard": 100000},
             {"type": "RLIMIT_CORE", "soft": 1000000, "hard": 1000000}]}
EOF
  run_cm exec --process "$TEST_DIR/process.json" "$CID"
  [ "$status" -eq 0 ]
  [[ "$stdout" =~ "Max open files"\ +1024\ +4096 ]]
  [[ "$stdout" =~ "Max core file size"\ +0\ +0 ]]
}

@test "mcp exec: the stacked filter holds (unshare, clone3, io_uring, keyctl, TIOCSTI)" {
  start_container --profile mcp
  local a
  for a in unshare clone3 io_uring keyctl tiocsti ptrace; do
    run_cm exec "$CID" /escape "$a"
    echo "# $a: $status $output" >&3
    [ "$status" -eq 0 ]
    [[ "$output" == *contained* ]]
    [[ "$output" != *ESCAPED* ]]
  done
}

@test "mcp exec: the annotation alone (no --profile at create) hardens exec too" {
  set_cfg '.annotations["run.codemode.profile"] = "mcp"'
  start_container
  [ "$(exec_status self CapEff --cap CAP_SYS_ADMIN)" = 0000000000000000 ]
  [ "$(exec_status self NoNewPrivs)" = 1 ]
  run_cm exec "$CID" /escape unshare
  [ "$status" -eq 0 ]
  [[ "$output" == *contained* ]]
}

@test "mcp exec: --profile mcp on exec hardens an exec into a default container" {
  start_container
  # Control: without a profile the caller's capabilities are given as asked.
  [ "$(exec_status self CapEff)" != 0000000000000000 ]
  run_cm --profile mcp exec "$CID" cat /proc/self/status
  [ "$status" -eq 0 ]
  [[ "$stdout" == *$'CapEff:\t0000000000000000'* ]]
  [[ "$stdout" == *$'NoNewPrivs:\t1'* ]]
}

@test "mcp exec: --profile default on exec cannot loosen an mcp container" {
  start_container --profile mcp
  run_cm --profile default exec --cap CAP_SYS_ADMIN "$CID" cat /proc/self/status
  [ "$status" -eq 0 ]
  [[ "$stdout" == *$'CapEff:\t0000000000000000'* ]]
  [[ "$stdout" == *$'NoNewPrivs:\t1'* ]]
}

@test "mcp exec: mcp-audit (mcp's rules since its log-only filter is retired) stacks its filter on exec too" {
  start_container --profile mcp-audit
  [ "$(exec_status self CapEff)" = 0000000000000000 ]
  [ "$(exec_status self Seccomp_filters)" = "$(host_status "$INIT_PID" Seccomp_filters)" ]
}

@test "mcp exec: an unknown recorded profile is refused, not read as default" {
  # Forge a state whose annotation names a profile this codemode does not know: exec must fail
  # closed rather than hand out the config's capabilities.
  start_container --profile mcp
  local st=$ROOT/$CID/state.json
  [ -f "$st" ] || skip "state file layout differs ($st)"
  jq '.annotations["run.codemode.profile"] = "mcp-future"' "$st" >"$st.new" && mv "$st.new" "$st"
  run_cm exec "$CID" true
  [ "$status" -ne 0 ]
  [[ "$output" == *"mcp-future"* ]]
}
