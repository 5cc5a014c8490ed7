#!/bin/bash
# tests/bench/run.sh — codemode, runc and crun side by side on the same bundle and config (issue 7).
#
# Measures, per runtime, with hyperfine: `run` of /bin/true; create + start + delete --force
# (youki's method); `exec` of /bin/true into a running container; `codemode-run` one-shot (codemode
# only: --profile default, and the mcp profile where its cgroup controllers exist); peak RSS of
# `run` (/usr/bin/time %M); `create` with 1, 10 and 100 containers already running; what Landlock
# adds to a start under the mcp profile (codemode only: `run` with the mcp profile's Landlock rules
# as an annotation, and the runtime's and init's shares timed step by step by
# BENCH_LANDLOCK_COST). Writes
# tests/bench/results/latest.md (also printed) and latest.png; the raw hyperfine JSON goes to
# tests/bench/results/raw/. Timings are reported, never judged: the exit status is non-zero only
# when something failed (a runtime could not run a container, codemode is not built, or the
# cleanup found something left behind).
#
# Environment:
#   BENCH_RUNS       timed runs per measurement (default 50; CI passes a small count)
#   BENCH_ROUNDS     the runs of run, create+start+delete, exec and codemode-run are taken in this
#                    many rounds, the runtimes in turn within each (default 5, at most BENCH_RUNS)
#   BENCH_WARMUP     warm-up runs, per round (default 3, at most BENCH_RUNS)
#   BENCH_RUNTIMES   which runtimes, in table order (default "crun runc codemode")
#   BENCH_SCALE      running-container counts for the create measurement (default "1 10 100")
#   CODEMODE         codemode binary (default build/codemode); CODEMODE_RUN: codemode-run binary
#   BENCH_LANDLOCK_COST  tests/bench/landlock_cost.c built (make bench builds it; unset: not measured)
#   BENCH_RESULTS    output directory (default tests/bench/results)
#   BENCH_TIMEOUT    seconds after which one runtime command counts as hung (default 20)
#
# Everything runs in a private mount namespace: on a hybrid cgroup host cgroup2 is mounted at
# /sys/fs/cgroup there (DESIGN.md §5), and the runtimes' state roots are on a tmpfs, as /run is
# on a normal system (bench_state_tmpfs in lib.sh says why). Every container,
# state dir, cgroup and temp dir it creates is removed on exit, also on failure or Ctrl-C.
set -euo pipefail

self=$(readlink -f "${BASH_SOURCE[0]}")
# shellcheck source=tests/bench/lib.sh
. "$(dirname "$self")/lib.sh"

if [ -z "${BENCH_IN_NS:-}" ]; then
  [ "$(id -u)" -eq 0 ] || bench_die "run as root (containers need it)"
  rt_ensure_packages hyperfine gnuplot-nox time jq busybox-static
fi
BENCH_WANT_HOLDER=1 bench_enter_cgroup2 "$self" "$@"

runs=${BENCH_RUNS:-50}
[[ $runs =~ ^[1-9][0-9]*$ ]] || bench_die "BENCH_RUNS=$runs: want a positive number"
warmup=${BENCH_WARMUP:-3}
[ "$warmup" -le "$runs" ] || warmup=$runs
rounds=${BENCH_ROUNDS:-5}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || bench_die "BENCH_ROUNDS=$rounds: want a positive number"
[ "$rounds" -le "$runs" ] || rounds=$runs
runtimes=${BENCH_RUNTIMES:-crun runc codemode}
scale=${BENCH_SCALE:-1 10 100}
export CODEMODE=${CODEMODE:-$bench_top/build/codemode}
codemode_run=${CODEMODE_RUN:-$(dirname "$CODEMODE")/codemode-run}
results=${BENCH_RESULTS:-$bench_here/results}
hf_style=${BENCH_STYLE:-basic}
limit=${BENCH_TIMEOUT:-20} # seconds one runtime command may take before it counts as hung

started=$(date +%s)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
work=$(mktemp -d /tmp/codemode-bench.XXXXXX)
prefix="cmbench$$-" # container ids and so cgroup names: ours alone, whatever else runs
tsv=$work/results.tsv
errlog=$work/errors.log # use_runtime points it at the current runtime's log
mkdir -p "$work/raw"
bench_state_tmpfs "$work/state"
: >"$tsv"

cleanup() {
  local rc=$? name left
  trap - EXIT INT TERM
  set +e # clean up as much as possible, whatever fails
  left=$(bench_kill_strays "$work")
  for name in $runtimes; do
    bench_cleanup_runtime "$name" "$work/state/$name"
  done
  bench_sweep_cgroups "$prefix"
  mcp_cleanup
  umount -l "$work/rlstate" 2>/dev/null
  left=$(printf '%s\n%s\n' "$left" "$(bench_leftovers "$prefix")" | sed '/^$/d')
  bench_state_tmpfs_release "$work/state"
  if [ -n "$left" ]; then
    bench_log "left behind after cleanup:"
    echo "$left" >&2
    rc=1
  fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

failures=0

# record KEY RUNTIME STATUS MEDIAN STDDEV MIN MAX NOTE — one result row (ms, or KB for rss).
declare -A recorded=()
record() {
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$tsv"
  recorded[$1-$2]=1
}

# fail KEY RUNTIME WHAT: record a failure with the runtime's last error line.
fail() {
  local msg
  # The runtime's own words when it said any; hyperfine's generic line otherwise.
  msg=$(grep -v -e '^\s*$' -e '^Error: Command terminated' "$errlog" 2>/dev/null | tail -1)
  [ -n "$msg" ] || msg=$(grep -v '^\s*$' "$errlog" 2>/dev/null | tail -1)
  msg=$(printf '%s' "$msg" | cut -c1-120 | tr '\t|' '  ')
  bench_log "$2: $3 failed: ${msg:-no error output}"
  record "$1" "$2" fail - - - - "$3 failed: ${msg:-?}"
  failures=$((failures + 1))
}

# q ARGS...: the arguments as one shell-quoted string (hyperfine parses commands like a shell).
q() { printf '%q ' "$@"; }

# hf KEY RUNTIME HYPERFINE-ARGS... COMMAND: time COMMAND. In a round of an interleaved metric
# ($round set, see the main loop) only this round's share of the runs, kept for pool(); else all
# of them, recorded at once (median/stddev/min/max in ms).
hf() {
  local key=$1 name=$2 n=$runs json=$work/raw/$1-$2.json
  shift 2
  if [ -n "${round:-}" ]; then
    n=$((runs / rounds))
    [ "$round" -gt 1 ] || n=$((n + runs % rounds))
    json=$work/raw/$key-$name.round$round.json
  fi
  # A hung runtime must not hang the bench: bound the whole hyperfine call.
  if ! timeout -k 5 $((limit * (n + warmup) + 30)) "${WRAP[@]}" hyperfine --runs "$n" --warmup "$warmup" --style "$hf_style" --export-json "$json" \
    --command-name "$name $key" "$@" 2>>"$errlog" 9>&-; then
    # hyperfine hides the command's stderr: run it once more so the table shows the cause.
    once sh -c "${!#}" || true
    fail "$key" "$name" "$key"
    return 1
  fi
  [ -n "${round:-}" ] && return 0
  # shellcheck disable=SC2046 # four numbers, split on purpose
  record "$key" "$name" ok $(jq -r '.results[0] | [.median, (.stddev // 0), .min, .max]
    | map(. * 1000 * 1000 | round / 1000) | @tsv' "$json") ""
}

# pool KEY RUNTIME: record the rounds' runs of KEY as one sample (and keep them as one JSON).
pool() {
  local key=$1 name=$2 json=$work/raw/$1-$2.json
  [ -z "${recorded[$key-$name]:-}" ] || return 0
  compgen -G "$work/raw/$key-$name.round*.json" >/dev/null || return 0
  jq -s '{results: [{command: .[0].results[0].command, times: [.[].results[0].times[]]}]}' \
    "$work"/raw/"$key-$name".round*.json >"$json"
  rm -f "$work"/raw/"$key-$name".round*.json
  # shellcheck disable=SC2046 # four numbers, split on purpose
  record "$key" "$name" ok $(jq -r '.results[0].times | sort | length as $n | (add / $n) as $mean
    | [(if $n % 2 == 1 then .[($n - 1) / 2] else (.[$n / 2 - 1] + .[$n / 2]) / 2 end),
       (if $n > 1 then (map((. - $mean) * (. - $mean)) | add / ($n - 1) | sqrt) else 0 end),
       .[0], .[-1]] | map(. * 1000 * 1000 | round / 1000) | @tsv' "$json") ""
}

# once COMMAND...: run COMMAND once, quietly, killed after $limit s; stderr to the error log.
# timeout(1) signals its whole process group, so a hung runtime's helpers go too.
once() {
  timeout -k 5 "$limit" "${WRAP[@]}" "$@" </dev/null >/dev/null 2>>"$errlog" 9>&-
}
# WRAP: what runs hyperfine (and once) for the current measurement: nothing, setpriv to the
# rootless user, or nsenter into the hybrid-cgroup namespace (measure_mcp). fd 9 (the holder's
# pipe) is closed for them: a container must not keep the holder alive.

WRAP=()

# Measure a snapshot of codemode: others may rebuild build/codemode while the bench runs.
mkdir -p "$work/bin"
if [ -x "$CODEMODE" ]; then
  cp "$CODEMODE" "$work/bin/codemode"
  export CODEMODE=$work/bin/codemode
fi
if [ -x "$codemode_run" ]; then
  cp "$codemode_run" "$work/bin/codemode-run"
  codemode_run=$work/bin/codemode-run
fi

bench_log "building the busybox bundle in $work"
bench_make_bundles "$work"
true_bundle=$work/true
sleep_bundle=$work/sleep
# The same bundle with the mcp profile's Landlock layer (derived for it) as its annotation: `run`
# then makes and enforces exactly that ruleset, without the profile's cgroup limits, which this
# host's cgroup2 view cannot delegate.
landlock_bundle=
landlock_cost=${BENCH_LANDLOCK_COST:-}
if [ -n "$landlock_cost" ] && [ -x "$landlock_cost" ]; then
  landlock_bundle=$work/true-landlock
  cp -a "$true_bundle" "$landlock_bundle"
  layer=$("$landlock_cost" "$true_bundle" print)
  bundle_jq "$landlock_bundle" '.annotations["run.codemode.landlock"] = $l' --arg l "$layer"
fi

measure_run() {
  local name=$1 id=${prefix}run
  once "${RT[@]}" run --bundle "$true_bundle" "$id" || { fail run "$name" run; return 1; }
  hf run "$name" -N "$(q "${RT[@]}" run --bundle "$true_bundle" "$id")" || true
}

# run with the mcp profile's Landlock layer (codemode only): compare with the run row.
measure_run_landlock() {
  local name=$1 id=${prefix}runll
  if [ "$name" != codemode ]; then
    record run_landlock "$name" na - - - - ""
    return
  fi
  if [ -z "$landlock_bundle" ]; then
    record run_landlock "$name" skip - - - - "BENCH_LANDLOCK_COST not given (make bench builds it)"
    return
  fi
  once "${RT[@]}" run --bundle "$landlock_bundle" "$id" || { fail run_landlock "$name" run; return; }
  hf run_landlock "$name" -N "$(q "${RT[@]}" run --bundle "$landlock_bundle" "$id")" || true
}

# The runtime's and init's shares of Landlock on an mcp start, step by step (medians of 200).
measure_landlock_steps() {
  local out
  [ -n "$landlock_bundle" ] || return 0
  if ! out=$("$landlock_cost" "$true_bundle" time 200 2>>"$errlog"); then
    fail landlock_init codemode "landlock_cost"
    return
  fi
  record landlock_runtime codemode ok "${out% *}" 0 "${out% *}" "${out% *}" ""
  record landlock_init codemode ok "${out#* }" 0 "${out#* }" "${out#* }" ""
}

measure_create_start_delete() {
  local name=$1 id=${prefix}csd r
  r=$(q "${RT[@]}")
  if ! once sh -c "$r create --bundle $(q "$true_bundle") $id && $r start $id && $r delete --force $id"; then
    fail csd "$name" "create+start+delete"
    once "${RT[@]}" delete --force "$id" || true
    return
  fi
  # youki's method: three runtime invocations per sample, through one sh.
  hf csd "$name" "$r create --bundle $(q "$true_bundle") $id && $r start $id && $r delete --force $id" || true
  once "${RT[@]}" delete --force "$id" || true
}

measure_exec() {
  local name=$1 id=${prefix}exec
  if [ "$name" = codemode ] && ! "${RT[@]}" exec --help >/dev/null 2>&1; then
    record exec "$name" skip - - - - "exec: not implemented yet"
    return
  fi
  once "${RT[@]}" run --detach --bundle "$sleep_bundle" "$id" || { fail exec "$name" "run --detach"; return; }
  if once "${RT[@]}" exec "$id" /bin/true; then
    hf exec "$name" -N "$(q "${RT[@]}" exec "$id" /bin/true)" || true
  else
    fail exec "$name" exec
  fi
  once "${RT[@]}" delete --force "$id" || true
}

# codemode-run BUNDLE, the one-shot launcher: with --profile default (the bundle's config as the
# others get it) and with its default hardening profile, mcp (which needs the memory and pids
# controllers: not delegated in the hybrid host's namespace, so there it is reported, not timed).
measure_oneshot() {
  local name=$1 key=$2 cmd
  if [ "$name" != codemode ]; then
    record "$key" "$name" na - - - - ""
    return
  fi
  if [ ! -x "$codemode_run" ]; then
    record "$key" "$name" skip - - - - "codemode-run: not built yet"
    return
  fi
  cmd=("$codemode_run" --root "$work/state/codemode" --id "${prefix}oneshot")
  [ "$key" = oneshot ] && cmd+=(--profile default)
  cmd+=("$true_bundle")
  if ! once "${cmd[@]}"; then
    if [ "$key" = oneshot_mcp ] && grep -q 'controller is not available' "$errlog"; then
      record "$key" "$name" skip - - - - "needs a controller not delegated here: $(tail -1 "$errlog" |
        grep -o 'the [a-z]* controller is not available' || true)"
      return
    fi
    fail "$key" "$name" codemode-run
    return
  fi
  hf "$key" "$name" -N "$(q "${cmd[@]}")" || true
}

# Peak RSS of one `run`: /usr/bin/time's %M is the largest resident set among the runtime and the
# processes it waited for (for runc, its Go `runc init` too). Median over min(runs, 20) samples.
measure_rss() {
  local name=$1 id=${prefix}rss i n=$runs samples=$work/rss-$1
  [ "$n" -le 20 ] || n=20
  : >"$samples"
  for ((i = 0; i < n; i++)); do
    if ! timeout -k 5 "$limit" /usr/bin/time -f %M -o "$work/rss.one" "${RT[@]}" run --bundle "$true_bundle" "$id" \
      </dev/null >/dev/null 2>>"$errlog"; then
      fail rss "$name" "run under /usr/bin/time"
      return
    fi
    tail -1 "$work/rss.one" >>"$samples"
  done
  # shellcheck disable=SC2046 # four numbers, split on purpose
  record rss "$name" ok $(sort -n "$samples" | awk '
    { v[NR] = $1; s += $1; ss += $1 * $1 }
    END {
      med = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
      m = s / NR; var = NR > 1 ? (ss - NR * m * m) / (NR - 1) : 0
      printf "%s\t%.1f\t%s\t%s", med, (var > 0 ? sqrt(var) : 0), v[1], v[NR]
    }') ""
}

# `create` latency with N containers already running (sleep 1000): how cost grows with N. Tops the
# runtime's running containers up to N, then times `create` of one more.
measure_create_at() {
  local name=$1 n=$2 probe=${prefix}probe r
  r=$(q "${RT[@]}")
  while [ "${running[$name]}" -lt "$n" ]; do
    if ! once "${RT[@]}" run --detach --bundle "$sleep_bundle" "${prefix}s${running[$name]}"; then
      fail "create$n" "$name" "starting container $((running[$name] + 1)) of $n"
      return 1
    fi
    running[$name]=$((running[$name] + 1))
  done
  # The created probe waits for `start`; the next sample's prepare step deletes it.
  if ! once "${RT[@]}" create --bundle "$sleep_bundle" "$probe"; then
    fail "create$n" "$name" create
    return 1
  fi
  hf "create$n" "$name" -N --prepare "sh -c '$r delete --force $probe >/dev/null 2>&1 || true'" \
    "$r create --bundle $(q "$sleep_bundle") $probe" || true
  once "${RT[@]}" delete --force "$probe" || true
}

# --- rootless (issue 15): run /bin/true as an unprivileged user --------------------------------
# The same bundle for every runtime, from `runc spec --rootless` (user namespace mapping only that
# user, no network namespace, the host's /sys bound); nobody (65534) runs it, from its own state
# dirs on a tmpfs. codemode finds no cgroup to use here and none is asked for (no warning).
rl_uid=65534
rootless_setup() {
  mkdir -p "$work/rl" "$work/rlstate"
  chmod 0755 "$work" "$work/rl"
  mount -t tmpfs -o mode=0755,size=16m bench-rlstate "$work/rlstate" || return 1
  # hyperfine itself runs as that user, and writes its results here.
  chmod 1777 "$work/raw"
  chown "$rl_uid" "$work/rl"
  (cd "$work/rl" && setpriv --reuid=$rl_uid --regid=$rl_uid --clear-groups runc spec --rootless) || return 1
  jq --arg root "$true_bundle/rootfs" '.ociVersion = "1.0.2" | .process.terminal = false | .process.args = ["/bin/true"]
    | .root.path = $root' "$work/rl/config.json" >"$work/rl/c" && mv "$work/rl/c" "$work/rl/config.json"
  chmod 0644 "$work/rl/config.json"
}
rootless_ready=
measure_rootless() {
  local name=$1 id=${prefix}rl bin st=$work/rlstate/$1
  if [ -z "$rootless_ready" ]; then
    rootless_setup 2>>"$errlog" && rootless_ready=1 || rootless_ready=no
  fi
  if [ "$rootless_ready" != 1 ] || ! command -v setpriv >/dev/null; then
    record rootless "$name" skip - - - - "no rootless setup (runc spec --rootless, setpriv)"
    return
  fi
  bin=${RT[0]}
  mkdir -p "$st"
  chown "$rl_uid" "$st"
  WRAP=(setpriv --reuid=$rl_uid --regid=$rl_uid --clear-groups env -i PATH=/usr/bin:/bin HOME=/nonexistent)
  if ! once "$bin" --root "$st" run --bundle "$work/rl" "$id"; then
    fail rootless "$name" "rootless run"
  else
    hf rootless "$name" -N "$(q "$bin" --root "$st" run --bundle "$work/rl" "$id")" || true
  fi
  WRAP=()
}

# --- the mcp profile's cost (issue 21): codemode --profile mcp run, against codemode run of the
# same bundle and crun/runc running the profile's resulting config -----------------------------
# The profile's limits need the memory, pids and cpu controllers, which on a hybrid host live in
# its cgroup v1 hierarchies, not in this namespace's cgroup2 view: these runs happen in a second
# private namespace made from the host's own (the holder), with its own tmpfs for the state.
# crun refuses a hybrid host outright, so it has no mcp row there. The resulting config, for
# runc and crun: the profile's changes (policy explain lists them) done in jq: new user (the first
# range codemode's pool would give: files are nobody's, /bin/true still runs), cgroup and network
# namespaces, no capabilities, no_new_privs, oomScoreAdj 1000, RLIMIT_NOFILE 1024/4096 and
# RLIMIT_CORE 0, read-only root, a 64 MiB /tmp, 512 MiB / 256 pids / 1 CPU (burst: one quota),
# deny-all devices, and
# seccomp-profiles/mcp.json as the one filter (codemode stacks it on the config's, which has none).
holder=
mcp_setup() {
  local conv
  conv='{defaultAction, defaultErrnoRet, architectures: ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
    syscalls: [.syscalls[] | select((.includes.caps // []) | length == 0)
      | select((.includes.arches // ["amd64"]) | index("amd64"))
      | {names, action} + (if .errnoRet then {errnoRet} else {} end) + (if .args then {args} else {} end)]}'
  mkdir -p "$work/mcpcfg" "$work/hstate"
  jq --slurpfile sc <(jq "$conv" "$bench_top/seccomp-profiles/mcp.json") --arg root "$true_bundle/rootfs" '
    .root = {path: $root, readonly: true}
    | .linux.namespaces = [{type: "pid"}, {type: "network"}, {type: "ipc"}, {type: "uts"}, {type: "mount"},
                           {type: "cgroup"}, {type: "user"}]
    | .linux.uidMappings = [{containerID: 0, hostID: 2147483648, size: 65536}]
    | .linux.gidMappings = [{containerID: 0, hostID: 2147483648, size: 65536}]
    | .process.capabilities = {bounding: [], effective: [], inheritable: [], permitted: [], ambient: []}
    | .process.noNewPrivileges = true | .process.oomScoreAdj = 1000
    | .process.rlimits = [{type: "RLIMIT_NOFILE", soft: 1024, hard: 4096}, {type: "RLIMIT_CORE", soft: 0, hard: 0}]
    | .mounts += [{destination: "/tmp", type: "tmpfs", source: "tmpfs", options: ["nosuid", "nodev", "mode=1777", "size=64m"]}]
    | .linux.resources = {devices: [{allow: false, access: "rwm"}], memory: {limit: 536870912, swap: 536870912},
                          pids: {limit: 256}, cpu: {quota: 100000, period: 100000, burst: 100000}}
    | .linux.seccomp = $sc[0]' "$true_bundle/config.json" >"$work/mcpcfg/config.json" || return 1
  # The holder: a private namespace made from the host's view before we entered ours
  # (bench_enter_cgroup2, BENCH_WANT_HOLDER).
  holder=${BENCH_HOLDER:-}
  [ -n "$holder" ] && [ -e "/proc/$holder/ns/mnt" ] || return 1
  nsenter -t "$holder" -m -- mount -t tmpfs -o mode=0700,size=64m bench-hstate "$work/hstate"
}
mcp_ready=
measure_mcp() {
  local key=$1 name=$2 id=${prefix}mcp bin=${RT[0]} st=$work/hstate/$2 args=()
  if [ -z "$mcp_ready" ]; then
    mcp_setup 2>>"$errlog" && mcp_ready=1 || mcp_ready=no
  fi
  if [ "$mcp_ready" != 1 ]; then
    record "$key" "$name" skip - - - - "no holder namespace for the hybrid cgroups"
    return
  fi
  if [ "$name" != codemode ] && [ "$key" = mcp_base ]; then
    record "$key" "$name" na - - - - ""
    return
  fi
  WRAP=(nsenter -t "$holder" -m --)
  if [ "$name" = crun ] && "${WRAP[@]}" sh -c '[ "$(stat -fc %T /sys/fs/cgroup)" != cgroup2fs ]'; then
    record "$key" "$name" skip - - - - "crun refuses hybrid cgroups (DESIGN.md §5)"
    WRAP=()
    return
  fi
  local bundle=$work/mcpcfg
  if [ "$name" = codemode ]; then
    bundle=$true_bundle
    [ "$key" = mcp ] && args=(--profile mcp)
  fi
  if ! once "$bin" --root "$st" "${args[@]}" run --bundle "$bundle" "$id"; then
    fail "$key" "$name" "run ($key)"
  else
    hf "$key" "$name" -N "$(q "$bin" --root "$st" "${args[@]}" run --bundle "$bundle" "$id")" || true
  fi
  WRAP=()
}
mcp_cleanup() {
  [ -n "$holder" ] || return 0
  local name cg
  for name in $runtimes; do
    bench_runtime_argv "$name" "$work/hstate/$name" 2>/dev/null || continue
    nsenter -t "$holder" -m -- "${RT[@]}" delete --force "${prefix}mcp" >/dev/null 2>&1 || true
  done
  for cg in $(nsenter -t "$holder" -m -- find /sys/fs/cgroup -maxdepth 4 -type d -name "${prefix}*" 2>/dev/null); do
    nsenter -t "$holder" -m -- rmdir "$cg" 2>/dev/null || bench_log "warning: could not remove $cg (hybrid view)"
  done
  nsenter -t "$holder" -m -- umount -l "$work/hstate" 2>/dev/null || true
  holder=
}

# use_runtime NAME: point RT and errlog at NAME's binary, state dir and (emptied) error log.
use_runtime() {
  errlog=$work/errors-$1.log
  : >"$errlog" # a failure's message must come from its own measurement
  bench_runtime_argv "$1" "$work/state/$1"
}

declare -A usable=() running=()
for name in $runtimes; do
  if ! use_runtime "$name"; then
    bench_log "$name: not installed / not built; skipped"
    for key in run run_landlock csd exec oneshot oneshot_mcp rootless mcp_base mcp rss; do record "$key" "$name" skip - - - - "$name: not available"; done
    for n in $scale; do record "create$n" "$name" skip - - - - "$name: not available"; done
    [ "$name" = codemode ] && failures=$((failures + 1))
    continue
  fi
  bench_log "$name: $("${RT[@]}" --version 2>/dev/null | head -1)"
  usable[$name]=1
  running[$name]=0
done

# Metric by metric, all runtimes back to back; the timed metrics in $rounds rounds, the runtimes
# in turn within each: this VM's speed drifts by 15% within minutes, and a runtime measured in one
# block would get its own share of it (the ratios moved by 0.1 between runs that way).
for key in run run_landlock csd exec oneshot oneshot_mcp rootless mcp_base mcp rss; do
  bench_log "measuring $key"
  n_rounds=$rounds
  [ "$key" != rss ] || n_rounds=1
  for ((r = 1; r <= n_rounds; r++)); do
  round=$r
  [ "$key" != rss ] || round=
  for name in $runtimes; do
    [ -n "${usable[$name]:-}" ] || continue
    [ -z "${recorded[$key-$name]:-}" ] || continue # failed, skipped or not applicable already
    use_runtime "$name"
    case $key in
      run)
        if ! measure_run "$name"; then
          # Everything else needs a working `run`; don't wait out a timeout per measurement.
          usable[$name]=
          for k in run_landlock csd exec oneshot oneshot_mcp rootless mcp_base mcp rss; do record "$k" "$name" skip - - - - "skipped: run fails"; done
          for n in $scale; do record "create$n" "$name" skip - - - - "skipped: run fails"; done
        fi
        ;;
      run_landlock) measure_run_landlock "$name" ;;
      csd) measure_create_start_delete "$name" ;;
      exec) measure_exec "$name" ;;
      oneshot | oneshot_mcp) measure_oneshot "$name" "$key" ;;
      rootless) measure_rootless "$name" ;;
      mcp_base | mcp) measure_mcp "$key" "$name" ;;
      rss) measure_rss "$name" ;;
    esac
  done
  done
  round=
  for name in $runtimes; do pool "$key" "$name"; done
done

if [ -n "${usable[codemode]:-}" ]; then
  bench_log "measuring Landlock's steps"
  use_runtime codemode
  measure_landlock_steps
fi

for n in $scale; do
  bench_log "measuring create with $n running"
  for name in $runtimes; do
    [ -n "${usable[$name]:-}" ] || continue
    use_runtime "$name"
    if ! measure_create_at "$name" "$n"; then
      usable[$name]=
      for m in $scale; do
        if [ "$m" -gt "$n" ]; then record "create$m" "$name" skip - - - - "skipped: create $n failed"; fi
      done
    fi
  done
done

for name in $runtimes; do
  use_runtime "$name" || continue
  for ((i = 0; i < ${running[$name]:-0}; i++)); do
    once "${RT[@]}" delete --force "${prefix}s$i" || bench_log "$name: delete ${prefix}s$i failed"
  done
  bench_cleanup_runtime "$name" "$work/state/$name"
done
mcp_cleanup

mkdir -p "$results/raw"
rm -f "$results"/raw/*.json
cp "$work"/raw/*.json "$results/raw/" 2>/dev/null || true
BENCH_RUNS=$runs BENCH_ROUNDS=$rounds BENCH_WARMUP=$warmup BENCH_RUNTIMES=$runtimes BENCH_SCALE=$scale \
  BENCH_ELAPSED=$(($(date +%s) - started)) BENCH_LOAD="$load_start → $(cut -d' ' -f1-3 /proc/loadavg)" \
  "$bench_here/report.sh" "$tsv" "$results/latest.md" "$results/latest.png"
cat "$results/latest.md"
[ "$failures" -eq 0 ] || bench_log "$failures measurement(s) failed; see the table"
[ "$failures" -eq 0 ]
