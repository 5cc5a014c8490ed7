#!/usr/bin/env bats
# Capabilities as the process sees them in /proc/self/status, for root and non-root users, and
# CVE-2022-29162 / CVE-2022-27650: the inheritable set stays empty unless the spec asks for it
# (a non-empty inheritable set would let a file with inheritable file caps gain them).

load lib

STATUS_DUMP='grep -E "^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):" /proc/self/status'

@test "CVE-2022-29162: inheritable caps are empty for root unless asked" {
  set_args sh -c "$STATUS_DUMP"
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$(status_field CapInh)" = 0000000000000000 ]
  [ "$(status_field CapAmb)" = 0000000000000000 ]
  assert_host_untouched
}

@test "CVE-2022-29162: inheritable caps are empty for a non-root user unless asked" {
  set_args sh -c "$STATUS_DUMP"
  set_cfg '.process.user = {"uid": 1000, "gid": 1000}'
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$(status_field CapInh)" = 0000000000000000 ]
  # A non-root user keeps only what is listed as ambient (here: none raisable without inheritable).
  [ "$(status_field CapEff)" = 0000000000000000 ]
  [ "$(status_field CapPrm)" = 0000000000000000 ]
  [ "$(status_field CapAmb)" = 0000000000000000 ]
  assert_host_untouched
}

@test "the default config gives exactly runc's default capability set" {
  command -v runc >/dev/null || skip "runc is not installed"
  mkdir "$TEST_DIR/runc-spec" "$TEST_DIR/cm-spec"
  (cd "$TEST_DIR/runc-spec" && runc spec)
  (cd "$TEST_DIR/cm-spec" && "$CODEMODE" spec)
  local field
  for field in bounding effective permitted inheritable ambient; do
    [ "$(jq -c ".process.capabilities.$field // [] | sort" "$TEST_DIR/runc-spec/config.json")" = \
      "$(jq -c ".process.capabilities.$field // [] | sort" "$TEST_DIR/cm-spec/config.json")" ]
  done
  # And the process really gets it: runc's three caps in CapEff/CapPrm/CapBnd.
  cp "$TEST_DIR/cm-spec/config.json" "$BUNDLE/config.json"
  set_cfg '.process.terminal = false'
  set_env "CODEMODE_TEST_CONTAINER=$CM_TEST_TOKEN:$CID"
  set_args sh -c "$STATUS_DUMP"
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  local want
  want=$(cap_mask CAP_AUDIT_WRITE CAP_KILL CAP_NET_BIND_SERVICE)
  [ "$(status_field CapEff)" = "$want" ]
  [ "$(status_field CapPrm)" = "$want" ]
  [ "$(status_field CapBnd)" = "$want" ]
  [ "$(status_field CapInh)" = 0000000000000000 ]
}

@test "all five sets as the config says, for root" {
  set_cfg '.process.capabilities = {"bounding": ["CAP_CHOWN", "CAP_KILL", "CAP_NET_RAW", "CAP_SETPCAP"],
    "permitted": ["CAP_CHOWN", "CAP_KILL", "CAP_NET_RAW"], "effective": ["CAP_CHOWN", "CAP_KILL"],
    "inheritable": ["CAP_KILL"], "ambient": ["CAP_KILL"]}'
  set_args sh -c "$STATUS_DUMP"
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$(status_field CapBnd)" = "$(cap_mask CAP_CHOWN CAP_KILL CAP_NET_RAW CAP_SETPCAP)" ]
  # uid 0 execs as if every file had full file caps (no SECBIT_NOROOT), so effective becomes the
  # whole permitted set; no_new_privs keeps permitted from growing past the config's at execve.
  [ "$(status_field CapPrm)" = "$(cap_mask CAP_CHOWN CAP_KILL CAP_NET_RAW)" ]
  [ "$(status_field CapEff)" = "$(cap_mask CAP_CHOWN CAP_KILL CAP_NET_RAW)" ]
  [ "$(status_field CapInh)" = "$(cap_mask CAP_KILL)" ]
  [ "$(status_field CapAmb)" = "$(cap_mask CAP_KILL)" ]
  [ "$(status_field NoNewPrivs)" = 1 ]
}

@test "a non-root user gets exactly the listed sets (kept across the user switch, ambient raised)" {
  set_cfg '.process.user = {"uid": 1000, "gid": 1000} | .process.noNewPrivileges = false |
    .process.capabilities = {"bounding": ["CAP_KILL", "CAP_NET_BIND_SERVICE"],
    "permitted": ["CAP_KILL", "CAP_NET_BIND_SERVICE"], "effective": ["CAP_KILL", "CAP_NET_BIND_SERVICE"],
    "inheritable": ["CAP_NET_BIND_SERVICE"], "ambient": ["CAP_NET_BIND_SERVICE"]}'
  set_args sh -c "id -u; $STATUS_DUMP"
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = 1000 ]
  # After execve of a file without file caps, a non-root process keeps only its ambient set.
  [ "$(status_field CapAmb)" = "$(cap_mask CAP_NET_BIND_SERVICE)" ]
  [ "$(status_field CapEff)" = "$(cap_mask CAP_NET_BIND_SERVICE)" ]
  [ "$(status_field CapPrm)" = "$(cap_mask CAP_NET_BIND_SERVICE)" ]
  [ "$(status_field CapInh)" = "$(cap_mask CAP_NET_BIND_SERVICE)" ]
  [ "$(status_field CapBnd)" = "$(cap_mask CAP_KILL CAP_NET_BIND_SERVICE)" ]
  [ "$(status_field NoNewPrivs)" = 0 ]
}

# runc 1.1.5 on this bundle: `level=warning msg="ignoring unknown or unavailable capabilities:
# [CAP_NO_SUCH_THING]"`, and the container runs with the known ones (runtime-spec: runtimes
# SHOULD NOT fail on capabilities that cannot be granted).
@test "an unknown capability name in the config is a warning that names it; the known ones apply" {
  set_cfg '.process.capabilities.bounding += ["CAP_NO_SUCH_THING"] | .process.capabilities.effective += ["CAP_NO_SUCH_THING"]'
  set_args grep ^Cap /proc/self/status
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [[ $stderr == *warn*CAP_NO_SUCH_THING* ]]
  [ "$(status_field CapBnd)" = "$(cap_mask CAP_AUDIT_WRITE CAP_KILL CAP_NET_BIND_SERVICE)" ]
}

@test "an unknown capability name in exec --cap is a warning that names it; the known ones apply" {
  set_args sleep 30
  run_cm run -d -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  run_cm exec --cap CAP_NO_SUCH_THING --cap CAP_CHOWN "$CID" grep ^Cap /proc/self/status
  [ "$status" -eq 0 ]
  [[ $stderr == *warn*CAP_NO_SUCH_THING* ]]
  [ "$(status_field CapBnd)" = "$(cap_mask CAP_CHOWN CAP_AUDIT_WRITE CAP_KILL CAP_NET_BIND_SERVICE)" ]
}

# runc 1.1.5 on this bundle: the program runs (CAP_DAC_OVERRIDE lets the user exec a file only
# its owner may), and ends as uid 1000 with no capability (none is ambient). Issue 14: the exec
# trampoline's own execve dropped them first, so the program's execve failed with EACCES.
@test "a non-root user with CAP_DAC_OVERRIDE execs a 0744 root-owned binary, and ends as one execve would" {
  cp "$HOSTILE_BIN" "$BUNDLE/rootfs/bin/owner-only"
  chmod 0744 "$BUNDLE/rootfs/bin/owner-only"
  set_cfg '.process.user = {uid: 1000, gid: 1000}
    | .process.capabilities.bounding += ["CAP_DAC_OVERRIDE"] | .process.capabilities.effective += ["CAP_DAC_OVERRIDE"]
    | .process.capabilities.permitted += ["CAP_DAC_OVERRIDE"] | .process.capabilities.ambient = []'
  set_args /bin/owner-only "$MARKER" ids
  run_cm run -b "$BUNDLE" "$CID"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $stdout == *"ruid=1000 euid=1000 suid=1000"* ]]
  # And what that execve leaves: no capability in any set but the bounding one.
  set_args sh -c "$STATUS_DUMP"
  run_cm run -b "$BUNDLE" "$CID-2"
  [ "$status" -eq 0 ]
  [ "$(status_field CapPrm)" = 0000000000000000 ]
  [ "$(status_field CapEff)" = 0000000000000000 ]
  [ "$(status_field CapBnd)" = "$(cap_mask CAP_DAC_OVERRIDE CAP_AUDIT_WRITE CAP_KILL CAP_NET_BIND_SERVICE)" ]
}
