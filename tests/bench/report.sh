#!/bin/bash
# tests/bench/report.sh RESULTS.tsv OUT.md OUT.png — the Markdown table and gnuplot chart of a
# bench run. Called by run.sh; rerun it by hand to restyle a report without measuring again.
#
# RESULTS.tsv rows: key runtime status median stddev min max note (ms; KB for key "rss"),
# status ok | skip | fail | na. Environment (from run.sh): BENCH_RUNS, BENCH_WARMUP,
# BENCH_RUNTIMES, BENCH_SCALE, BENCH_ELAPSED, BENCH_LOAD, CODEMODE.
set -euo pipefail

[ $# -eq 3 ] || {
  echo "usage: ${0##*/} RESULTS.tsv OUT.md OUT.png" >&2
  exit 2
}
tsv=$1 md=$2 png=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
runtimes=${BENCH_RUNTIMES:-crun runc codemode}
scale=${BENCH_SCALE:-1 10 100}
codemode=${CODEMODE:-$top/build/codemode}

has_codemode=0
case " $runtimes " in *" codemode "*) has_codemode=1 ;; esac
keys="run"
[ "$has_codemode" = 1 ] && keys+=" run_landlock"
keys+=" csd exec"
[ "$has_codemode" = 1 ] && keys+=" oneshot oneshot_mcp"
keys+=" rootless"
[ "$has_codemode" = 1 ] && keys+=" mcp_base mcp"
keys+=" rss"
for n in $scale; do keys+=" create$n"; done

label() {
  case $1 in
    run) echo 'run /bin/true' ;;
    run_landlock) echo 'run /bin/true, with the mcp profile'"'"'s Landlock layer' ;;
    csd) echo 'create + start + delete -f' ;;
    exec) echo 'exec /bin/true (container running)' ;;
    oneshot) echo 'codemode-run --profile default (others: their `run`)' ;;
    oneshot_mcp) echo 'codemode-run, profile mcp (others: their `run`)' ;;
    rootless) echo 'rootless run /bin/true (as uid 65534, `runc spec --rootless`)' ;;
    mcp_base) echo 'run /bin/true, hybrid cgroups (the mcp row'"'"'s base)' ;;
    mcp) echo 'run --profile mcp (others: its resulting config)' ;;
    rss) echo 'peak RSS of `run`' ;;
    create*) echo "create, ${1#create} running" ;;
  esac
}

# field KEY RUNTIME COLUMN: one value of a result row (empty when absent).
field() {
  awk -F'\t' -v k="$1" -v r="$2" -v c="$3" '$1 == k && $2 == r { v = $c } END { print v }' "$tsv"
}

version() {
  local v
  case $1 in
    codemode)
      v=$("$codemode" --version 2>/dev/null | head -1 | awk '{print $3}')
      local rev
      rev=$(git -C "$top" rev-parse --short HEAD 2>/dev/null || true)
      echo "codemode ${v:-?}${rev:+ ($rev)}"
      ;;
    *) echo "$1 $("$1" --version 2>/dev/null | head -1 | awk '{print $NF}')" ;;
  esac
}

# cell KEY RUNTIME: "median ±stddev (min–max)" with the metric's unit, or the skip/fail note.
cell() {
  local key=$1 rt=$2 status
  status=$(field "$key" "$rt" 3)
  case $status in
    ok)
      awk -F'\t' -v k="$key" -v r="$rt" '$1 == k && $2 == r {
        if (k == "rss") printf "%.2f MB ±%.2f (%.2f–%.2f)", $4 / 1024, $5 / 1024, $6 / 1024, $7 / 1024
        else printf "%.2f ms ±%.2f (%.2f–%.2f)", $4, $5, $6, $7
      }' "$tsv"
      ;;
    na) case $key in oneshot* | mcp_base) echo 'see run' ;; *) echo '—' ;; esac ;;
    skip | fail) field "$key" "$rt" 8 ;;
    *) echo 'not measured' ;;
  esac
}

# median KEY RUNTIME: the median when measured (for oneshot, crun/runc fall back to their run).
median() {
  local key=$1 rt=$2
  case $key in oneshot*) [ "$rt" != codemode ] && key=run ;; mcp_base) [ "$rt" != codemode ] && return 0 ;; esac
  if [ "$(field "$key" "$rt" 3)" = ok ]; then field "$key" "$rt" 4; fi
}

ratio() {
  local a b
  a=$(median "$1" codemode) b=$(median "$1" "$2")
  if [ -n "$a" ] && [ -n "$b" ]; then awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", a / b }'; else echo '—'; fi
}

{
  echo "## codemode vs crun vs runc — $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
  echo "Machine: $(nproc) CPUs (${cpu:-unknown CPU}), kernel $(uname -r), $(awk '/MemTotal/ { printf "%.1f GB RAM", $2 / 1048576 }' /proc/meminfo)."
  if [ "${BENCH_HOST_CGROUPS:-}" = hybrid ]; then
    echo "cgroups: hybrid host; all runtimes in a private mount namespace with cgroup2 at /sys/fs/cgroup."
  else
    echo "cgroups: cgroup v2 host; all runtimes in a private mount namespace."
  fi
  echo "State roots (--root): a tmpfs, as /run is on a normal system (this host's /tmp and /run are ext4)."
  echo "Method: hyperfine, ${BENCH_RUNS:-?} runs; run, create+start+delete, exec and codemode-run in ${BENCH_ROUNDS:-1} rounds"
  echo "with the runtimes in turn, ${BENCH_WARMUP:-?} warm-up runs each round; same busybox bundle and config.json"
  echo "for all (terminal false, no devices cgroup rules). Cells: median ±stddev (min–max). Peak RSS:"
  echo "/usr/bin/time %M over the runtime and the processes it waits for. Total time: ${BENCH_ELAPSED:-?} s;"
  echo "load average (1/5/15 min) at start → end: ${BENCH_LOAD:-?} (other work on the machine skews timings)."
  echo
  header="| |"
  rule="|---|"
  for rt in $runtimes; do
    header+=" $(version "$rt") |"
    rule+="---|"
  done
  if [ "$has_codemode" = 1 ]; then
    for rt in $runtimes; do
      [ "$rt" = codemode ] && continue
      header+=" codemode/$rt |"
      rule+="---|"
    done
  fi
  echo "$header"
  echo "$rule"
  for key in $keys; do
    row="| $(label "$key") |"
    for rt in $runtimes; do row+=" $(cell "$key" "$rt") |"; done
    if [ "$has_codemode" = 1 ]; then
      for rt in $runtimes; do
        [ "$rt" = codemode ] && continue
        row+=" $(ratio "$key" "$rt") |"
      done
    fi
    echo "$row"
  done
  # Landlock on an mcp start (issue 18, goal: at most 0.3 ms added to run).
  a=$(median run codemode) b=$(median run_landlock codemode)
  ll_rt=$(median landlock_runtime codemode) ll_init=$(median landlock_init codemode)
  if [ -n "$ll_init" ]; then
    echo
    printf 'Landlock on an mcp start (medians of 200 steps, tests/bench/landlock_cost.c): init opens the rule\n'
    printf 'paths, makes and enforces the ruleset in %.3f ms; the runtime derives, checks and keeps it in %.3f ms,\n' \
      "$ll_init" "$ll_rt"
    printf 'mostly (landlock.json) while init sets up'
    if [ -n "$a" ] && [ -n "$b" ]; then
      awk -v a="$a" -v b="$b" 'BEGIN { printf ". `run` with the layer minus without: %+.2f ms (the rows above; noisier).\n", b - a }'
    else
      echo "."
    fi
  fi
  # Issue 21's goal: what the mcp profile adds to codemode's own run (same bundle, same namespace).
  base=$(field mcp_base codemode 4) prof=$(field mcp codemode 4)
  if [ "$(field mcp_base codemode 3)" = ok ] && [ "$(field mcp codemode 3)" = ok ]; then
    echo
    awk -v a="$prof" -v b="$base" 'BEGIN { printf "The mcp profile adds %.2f ms to codemode'"'"'s run (%.2f → %.2f ms median; goal: at most 1 ms).\n", a - b, b, a }'
  fi
} >"$md"

# The chart: medians per metric, one bar per runtime; latencies and RSS in two panels.
dat=$(mktemp /tmp/codemode-bench-plot.XXXXXX)
trap 'rm -f "$dat" "$dat.rss"' EXIT
for key in $keys; do
  [ "$key" = rss ] && continue
  any=
  line="\"$(label "$key" | sed 's/ (.*//; s/`//g')\""
  for rt in $runtimes; do
    v=$(median "$key" "$rt")
    case $key in oneshot*) [ "$rt" != codemode ] && v= ;; esac
    line+=" ${v:-?}"
    [ -n "$v" ] && any=1
  done
  # An all-empty group (e.g. codemode-run not built yet) would only take room.
  if [ -n "$any" ]; then echo "$line"; fi
done >"$dat"
{
  line='"peak RSS of run"'
  for rt in $runtimes; do
    v=$(median rss "$rt")
    [ -n "$v" ] && v=$(awk -v v="$v" 'BEGIN { printf "%.2f", v / 1024 }')
    line+=" ${v:-?}"
  done
  echo "$line"
} >"$dat.rss"

plots=
rss_plots=
i=2
for rt in $runtimes; do
  plots+="${plots:+, }'$dat' using $i:xtic(1) title '$rt'"
  rss_plots+="${rss_plots:+, }'$dat.rss' using $i:xtic(1) title '$rt'"
  i=$((i + 1))
done
if ! grep -q '[0-9]' <(cut -d'"' -f3 "$dat" "$dat.rss"); then
  echo "report: nothing measured, no chart" >&2
  rm -f "$png"
  exit 0
fi
gnuplot <<EOF
set terminal pngcairo size 1200,520 font 'sans,10'
set output '$png'
set datafile missing '?'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set key top right box opaque
set grid ytics
set multiplot layout 1,2 title 'codemode vs crun vs runc (median; $(date -u +%Y-%m-%d), $(nproc) CPUs, $(uname -r))'
set size 0.78,0.95
set origin 0,0
set ylabel 'ms'
set xtics rotate by -25
set yrange [0:*]
plot $plots
set size 0.22,0.95
set origin 0.78,0
set ylabel 'MB'
set xtics norotate
unset key
plot $rss_plots
unset multiplot
EOF
