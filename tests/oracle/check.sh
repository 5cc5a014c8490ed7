#!/bin/bash
# tests/oracle/check.sh [LOG…] — the oracle markers against tests/KNOWN_DIFFERENCES.md, both ways.
#
# Without arguments (static; `make check` runs it through tests/integration/known_differences.bats):
#   - every entry of KNOWN_DIFFERENCES.md is one well-formed line, "- `ID` [RUNTIME…]: text",
#     under "## Intentional differences" (with "Why:") or "## Pending" (with "Owner:"), ids unique,
#     runtimes among runc and crun;
#   - every marker in the suites (codemode_only, codemode_only_file, codemode_part,
#     oracle_pending; tests/lib/oracle.bash) names an entry, of the right kind;
#   - every entry is named by at least one marker: no difference is listed that no test shows.
# With LOG files (the output of tests/run-all.sh against an oracle, as tests/oracle/run.sh
# writes it): also
#   - every failed test is a difference nobody listed: each is printed, and the check fails;
#   - the skipped tests are counted per entry; a skip that names no entry is printed (an
#     environment skip, e.g. systemd not running).
# Exit status 0 when everything holds, 1 otherwise, each problem on one line of stderr.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
kd=$repo/tests/KNOWN_DIFFERENCES.md
problems=0
problem() {
  echo "oracle check: $*" >&2
  problems=$((problems + 1))
}

[ -f "$kd" ] || {
  echo "oracle check: $kd is missing" >&2
  exit 1
}

# --- the entries ------------------------------------------------------------------------------
declare -A kind_of used
while IFS=$'\t' read -r lineno kind id rts text; do
  if [ "$kind" = bad ]; then
    problem "KNOWN_DIFFERENCES.md:$lineno: not an entry line (want: - \`id\` [runc crun]: text): $text"
    continue
  fi
  [ -z "${kind_of[$id]:-}" ] || problem "KNOWN_DIFFERENCES.md:$lineno: entry '$id' is listed twice"
  kind_of[$id]=$kind
  used[$id]=0
  for rt in $rts; do
    case $rt in runc | crun) ;; *) problem "KNOWN_DIFFERENCES.md:$lineno: '$id': unknown runtime '$rt'" ;; esac
  done
  [ -n "$rts" ] || problem "KNOWN_DIFFERENCES.md:$lineno: '$id' names no runtime"
  case $kind in
    intentional) [[ $text == *"Why: "* ]] || problem "KNOWN_DIFFERENCES.md:$lineno: '$id' gives no reason (Why: …)" ;;
    pending) [[ $text == *"Owner: "* ]] || problem "KNOWN_DIFFERENCES.md:$lineno: pending '$id' names no owner (Owner: …)" ;;
  esac
done < <(awk '
  /^## Intentional/ { kind = "intentional"; next }
  /^## Pending/ { kind = "pending"; next }
  /^## / { kind = ""; next }
  kind != "" && /^- / {
    if (match($0, /^- `[a-z0-9][a-z0-9-]*` \[[a-z ]*\]: /)) {
      head = substr($0, 1, RLENGTH)
      text = substr($0, RLENGTH + 1)
      id = head; sub(/^- `/, "", id); sub(/`.*/, "", id)
      rts = head; sub(/^[^[]*\[/, "", rts); sub(/\].*/, "", rts)
      printf "%d\t%s\t%s\t%s\t%s\n", NR, kind, id, rts, text
    } else {
      printf "%d\tbad\t-\t-\t%s\n", NR, $0
    }
  }' "$kd")

# --- the markers ------------------------------------------------------------------------------
# (known_differences.bats tests this script with markers of its own: not scanned.)
marker_re='(^|[[:space:];&|!(])(codemode_only|codemode_only_file|codemode_part|oracle_pending)[[:space:]]+[^[:space:];)]+'
files=("$repo"/tests/integration/*.bats "$repo"/tests/security/*.bats "$repo"/tests/security/lib.bash
  "$repo"/tests/lib/helpers.bash)
while IFS= read -r hit; do
  file=${hit%%:*}
  rest=${hit#*:}
  lineno=${rest%%:*}
  line=${rest#*:}
  # Comments and the definitions are not markers.
  [[ $line =~ ^[[:space:]]*# ]] && continue
  while [[ $line =~ $marker_re ]]; do
    fn=${BASH_REMATCH[2]}
    id=${BASH_REMATCH[0]##*[[:space:]]}
    line=${line#*"${BASH_REMATCH[0]}"}
    where="${file#"$repo"/}:$lineno"
    # The marker calls helpers make with their own argument ("$CM_FILE_ONLY").
    [[ $id == \"\$* || $id == \$* ]] && [[ $file == */helpers.bash ]] && continue
    if [[ ! $id =~ ^[a-z0-9][a-z0-9-]*$ ]]; then
      problem "$where: $fn needs a literal entry id, not '$id'"
      continue
    fi
    want=intentional
    [ "$fn" = oracle_pending ] && want=pending
    if [ -z "${kind_of[$id]:-}" ]; then
      problem "$where: $fn $id: no such entry in tests/KNOWN_DIFFERENCES.md"
    elif [ "${kind_of[$id]}" != "$want" ]; then
      problem "$where: $fn $id: '$id' is a ${kind_of[$id]} entry, $fn wants a $want one"
    else
      used[$id]=$((used[$id] + 1))
    fi
  done
done < <(grep -HnE "$marker_re" "${files[@]}" | grep -v '^[^:]*/known_differences\.bats:')

for id in "${!used[@]}"; do
  [ "${used[$id]}" -gt 0 ] || problem "KNOWN_DIFFERENCES.md: entry '$id' is named by no test marker (stale entry?)"
done

# --- an oracle pass ---------------------------------------------------------------------------
if [ $# -gt 0 ]; then
  declare -A skips
  failed=0 passed=0 env_skips=0
  while IFS= read -r line; do
    case $line in
      "ok "[0-9]*" # skip codemode-only: "* | "ok "[0-9]*" # skip oracle-pending: "*)
        r=${line##*# skip }
        skips[$r]=$((${skips[$r]:-0} + 1))
        ;;
      "ok "[0-9]*" # skip"*)
        env_skips=$((env_skips + 1))
        echo "oracle check: environment skip: ${line#ok }"
        ;;
      "ok "[0-9]*) passed=$((passed + 1)) ;;
      "not ok "[0-9]*)
        failed=$((failed + 1))
        problem "unlisted difference (fails against the oracle, no marker): ${line#not ok }"
        ;;
    esac
  done < <(cat "$@")
  echo "oracle check: $passed passed against the oracle, $failed unlisted differences, $env_skips environment skips"
  for r in "${!skips[@]}"; do printf 'oracle check: %4d skipped, %s\n' "${skips[$r]}" "$r"; done | sort -k5
fi

n_int=0 n_pend=0
for id in "${!kind_of[@]}"; do
  if [ "${kind_of[$id]}" = pending ]; then n_pend=$((n_pend + 1)); else n_int=$((n_int + 1)); fi
done
if [ "$problems" -gt 0 ]; then
  echo "oracle check: $problems problem(s); $n_int intentional differences, $n_pend pending" >&2
  exit 1
fi
echo "oracle check: ok; $n_int intentional differences, $n_pend pending, every marker named and every entry used"
