#!/bin/bash
# tests/oracle/run.sh [--audit] — the oracle pass (`make check-oracle`, issue 14): the integration
# and security suites, unchanged, against another runtime, then tests/oracle/check.sh on the result.
#
#   CODEMODE=/usr/sbin/runc tests/oracle/run.sh     (the default runtime; what CI runs)
#   CODEMODE=/usr/bin/crun tests/oracle/run.sh      crun 1.8.1 refuses a hybrid cgroup host, so the
#                                                   pass runs in a private mount namespace with
#                                                   cgroup2 at /sys/fs/cgroup, as `make bench` does
#
# Every test that fails against the oracle is a difference tests/KNOWN_DIFFERENCES.md does not
# list: the pass fails. Tests marked codemode_only / oracle_pending for this runtime are skipped
# (the markers: tests/lib/oracle.bash). Suites: tests/integration and tests/security; the two
# security files about codemode's own hardening profile (mcp_escape, mcp_exec) are marked
# codemode_only_file and skip at once.
#
# --audit: the markers are turned off; every marked test runs in full against the oracle, and a
# marked test that passes is reported as a stale marker (the difference is gone: remove the marker,
# and the entry when nothing else names it). Slower, and by hand: its failures are expected.
#
# Knobs: CM_TEST_FILTER (a bats --filter regex), CM_ORACLE_SUITES (default "integration security").
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
audit=
[ "${1:-}" = --audit ] && audit=1

: "${CODEMODE:=/usr/sbin/runc}"
case $CODEMODE in /*) ;; *) CODEMODE=$(command -v "$CODEMODE" || echo "$PWD/$CODEMODE") ;; esac
export CODEMODE
[ -x "$CODEMODE" ] || {
  echo "tests/oracle/run.sh: CODEMODE=$CODEMODE is not an executable" >&2
  exit 1
}
case $("$CODEMODE" --version 2>/dev/null | head -n 1) in
  "runc version"*) CM_RUNTIME=runc ;;
  "crun version"*) CM_RUNTIME=crun ;;
  "codemode version"*) CM_RUNTIME=codemode ;;
  *)
    echo "tests/oracle/run.sh: $CODEMODE is neither runc, crun nor codemode (its --version)" >&2
    exit 1
    ;;
esac
export CM_RUNTIME

# crun: into a private mount namespace with a cgroup2 view (tests/bench/lib.sh), once.
if [ "$CM_RUNTIME" = crun ]; then
  # shellcheck source=tests/bench/lib.sh
  . "$repo/tests/bench/lib.sh"
  bench_enter_cgroup2 "$here/run.sh" "$@"
fi

echo "# oracle pass: $CODEMODE ($CM_RUNTIME)${audit:+, audit: markers off}"
"$here/check.sh" || exit 1

log=$(mktemp /tmp/cm-oracle.XXXXXX)
trap 'rm -f "$log" "$log.audit"' EXIT
if [ -n "$audit" ]; then
  export CM_ORACLE_AUDIT=1 CM_ORACLE_AUDIT_LOG=$log.audit
  : >"$CM_ORACLE_AUDIT_LOG"
fi
rc=0
CM_SUITES=${CM_ORACLE_SUITES:-integration security} "$repo/tests/run-all.sh" </dev/null 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}

if [ -n "$audit" ]; then
  # A marker (entry and place) through which every test passed with the markers off is stale;
  # one that a failing test went through is still needed.
  declare -A needed seen
  while IFS=$'\t' read -r id site desc; do
    seen["$id $site"]=1
    if ! grep -qxE "ok [0-9]+ $(printf '%s' "$desc" | sed 's/[][\.*^$(){}?+|/]/\\&/g')" "$log"; then
      needed["$id $site"]=1
    fi
  done < <(sort -u "$CM_ORACLE_AUDIT_LOG")
  stale=0
  for k in "${!seen[@]}"; do
    [ -n "${needed[$k]:-}" ] && continue
    echo "# stale marker: ${k%% *} at ${k#* }: every test through it passes against $CM_RUNTIME"
    stale=$((stale + 1))
  done
  echo "# audit: ${#seen[@]} markers hit, $stale stale"
  [ "$stale" -eq 0 ]
  exit
fi

"$here/check.sh" "$log" || rc=1
if [ "$rc" -ne 0 ]; then
  echo "tests/oracle/run.sh: the oracle pass against $CM_RUNTIME failed: a difference that tests/KNOWN_DIFFERENCES.md does not list (see the \"unlisted difference\" lines), or a broken marker" >&2
fi
exit "$rc"
