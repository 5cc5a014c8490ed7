# shellcheck shell=bash
# The differential harness (issue 14): the bats suites run unchanged against another runtime,
# runc or crun, as the oracle (`CODEMODE=/usr/sbin/runc make check-oracle`, tests/oracle/run.sh).
# Sourced by helpers.bash. A test whose expectation the oracle does not meet carries a marker
# naming an entry of tests/KNOWN_DIFFERENCES.md:
#
#   codemode_only ID        first line of a test: the whole test is about codemode's own
#                           behaviour; under an oracle the entry applies to, it is skipped
#                           ("# skip codemode-only: ID")
#   codemode_only_file ID   at the top of a file: every test of the file, as codemode_only
#   if codemode_part ID; then …; fi
#                           the assertions inside are codemode's (its wording, say); the rest
#                           of the test (fails non-zero, leaves nothing behind) holds for every
#                           runtime. False under an oracle the entry applies to.
#   oracle_pending ID       the test asserts what codemode does today although the oracle is
#                           right: a known defect, still open, listed under "Pending" with its
#                           owner; skipped under the oracle ("# skip oracle-pending: ID")
#
# Each entry says which oracles it applies to ([runc crun]); under any other runtime the marker
# does nothing, so a runc difference never hides a test from crun and the reverse.
# tests/oracle/check.sh checks both directions: every marker names an entry of the right kind,
# every entry is used by a marker; the oracle pass then fails on any test that fails (a
# difference nobody listed).
# CM_ORACLE_AUDIT=1 turns the markers off (nothing skipped, every part run) and logs each marker
# hit to $CM_ORACLE_AUDIT_LOG: a marker through which every test then passes against the oracle
# is stale (tests/oracle/run.sh --audit reports them).

CM_KNOWN_DIFFERENCES=$CM_REPO/tests/KNOWN_DIFFERENCES.md

# cm_detect_runtime: codemode, runc, crun or unknown, from the first line of `$CODEMODE --version`.
cm_detect_runtime() {
  local v
  v=$("$CODEMODE" --version 2>/dev/null | head -n 1)
  case $v in
    "codemode version"*) echo codemode ;;
    "runc version"*) echo runc ;;
    "crun version"*) echo crun ;;
    *) echo unknown ;;
  esac
}

: "${CM_RUNTIME:=$(cm_detect_runtime)}"
export CM_RUNTIME

# kd_entry ID: "KIND RUNTIME…" of the entry (KIND intentional or pending); fails when there is
# none. Entries are lines "- `ID` [runtime …]: text" under "## Intentional…" or "## Pending…".
kd_entry() {
  awk -v id="$1" '
    /^## Intentional/ { kind = "intentional" }
    /^## Pending/ { kind = "pending" }
    kind != "" && index($0, "- `" id "` [") == 1 {
      s = substr($0, length(id) + 7)
      sub(/\].*/, "", s)
      print kind, s
      found = 1
      exit
    }
    END { exit !found }' "$CM_KNOWN_DIFFERENCES"
}

# kd_applies ID KIND: 0 when entry ID (of KIND) applies to the runtime under test, 1 when it does
# not (always under codemode), 2 (with a message) when there is no such entry.
kd_applies() {
  local id=$1 want=$2 entry kind rt
  entry=$(kd_entry "$id") || {
    echo "oracle marker: no entry '$id' in tests/KNOWN_DIFFERENCES.md" >&2
    return 2
  }
  read -r kind rt <<<"$entry"
  if [ "$kind" != "$want" ]; then
    echo "oracle marker: '$id' is a $kind entry of tests/KNOWN_DIFFERENCES.md, not $want" >&2
    return 2
  fi
  [ "$CM_RUNTIME" != codemode ] || return 1
  [[ " $rt " == *" $CM_RUNTIME "* ]] || return 1
  if [ -n "${CM_ORACLE_AUDIT:-}" ]; then
    # The marker's place (file:line of the codemode_only/_part/oracle_pending call), so that a
    # marker in a shared helper counts as stale only when every test through it passes.
    local where=${BASH_SOURCE[2]}
    # A test file runs from bats' preprocessed copy (same lines): name the file itself.
    [[ $where == *.src ]] && where=${BATS_TEST_FILENAME:-$where}
    printf '%s\t%s:%s\t%s\n' "$id" "${where##*/tests/}" "${BASH_LINENO[1]}" \
      "${BATS_TEST_DESCRIPTION:-}" >>"${CM_ORACLE_AUDIT_LOG:-/dev/null}"
    return 1
  fi
  return 0
}

codemode_only() {
  local rc=0
  kd_applies "$1" intentional || rc=$?
  case $rc in
    0) skip "codemode-only: $1" ;;
    2) return 1 ;;
  esac
  return 0
}

codemode_part() {
  local rc=0
  kd_applies "$1" intentional || rc=$?
  case $rc in
    0) return 1 ;;
    2) echo "codemode_part $1: the part runs anyway" >&2 ;;
  esac
  return 0
}

oracle_pending() {
  local rc=0
  kd_applies "$1" pending || rc=$?
  case $rc in
    0) skip "oracle-pending: $1" ;;
    2) return 1 ;;
  esac
  return 0
}

# codemode_only_file ID: cm_setup (and so every test of the file) honours it.
codemode_only_file() { CM_FILE_ONLY=$1; }

# cm_oracle_adapt_template DIR: the two changes the test bundle needs before crun 1.8.1 runs it
# at all, and nothing for codemode or runc: ociVersion 1.1.0 (crun refuses 1.2.0, "unknown
# version specified"), and no linux.resources.devices (crun raises RLIMIT_MEMLOCK for its device
# eBPF program, which this machine, without CAP_SYS_RESOURCE, forbids; DESIGN.md §5).
cm_oracle_adapt_template() {
  [ "$CM_RUNTIME" = crun ] || return 0
  bundle_jq "$1" '.ociVersion = "1.1.0" | del(.linux.resources.devices)'
}
