#!/bin/bash
# tests/bench/paths.sh — each hardened path beside its base, in one table (issue 27):
#
#   mcp         `codemode --profile mcp run` of the busybox bundle, against `codemode run` of the
#               config the profile makes of it (done in jq, as tests/bench/run.sh does for runc
#               and crun: user namespace and range, cgroup namespace, no capabilities, limits,
#               mcp.json as the config's own filter); as root in the host's cgroups (hybrid here:
#               the limits go to the v1 hierarchies) and in the cgroup2 view, and as a user
#   allow-host  `codemode-run --profile default BUNDLE` with `--allow-host` against without
#               (the broker's spawn, sockets and READY; in a network namespace made here)
#   host        `codemode-run --host -- /bin/true` against `codemode-run BUNDLE -- /bin/true`
#               (profile mcp, codemode-run's default, for both)
#   npx         spawn → MCP `initialize` answered, of `npx -y @modelcontextprotocol/server-memory`
#               from a warm npm cache: under `codemode-run --host --mount CACHE:/root/.npm:cow`
#               against the same npx bare (both npm_config_offline=true: tests/mcp/deps.sh)
#
# Wall time: hyperfine, both commands in each of BENCH_ROUNDS rounds (runs alternated; this VM's
# speed drifts), medians. CPU time: `perf stat -e task-clock` over the same commands (every
# process of the start counted, waits not), medians; on a loaded machine the CPU ratio is the
# one to read (the wall one counts every wake-up that waited for a CPU). Timings are reported,
# never judged: the exit status is non-zero only when a command failed.
# Writes tests/bench/results/paths.md (also printed).
#
# Environment: BENCH_RUNS (runs per command, default 50; npx: at most 10 rounds), BENCH_ROUNDS
# (5), CODEMODE, CODEMODE_RUN, BENCH_RESULTS, BENCH_PATHS (which rows, default
# "mcp allow-host host npx").
set -euo pipefail

self=$(readlink -f "${BASH_SOURCE[0]}")
# shellcheck source=tests/bench/lib.sh
. "$(dirname "$self")/lib.sh"

if [ -z "${BENCH_IN_NS:-}" ]; then
  [ "$(id -u)" -eq 0 ] || bench_die "run as root (containers need it)"
  rt_ensure_packages hyperfine jq busybox-static
fi
BENCH_WANT_HOLDER=1 bench_enter_cgroup2 "$self" "$@"

runs=${BENCH_RUNS:-50}
[[ $runs =~ ^[1-9][0-9]*$ ]] || bench_die "BENCH_RUNS=$runs: want a positive number"
rounds=${BENCH_ROUNDS:-5}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || bench_die "BENCH_ROUNDS=$rounds: want a positive number"
[ "$rounds" -le "$runs" ] || rounds=$runs
per=$((runs / rounds))
rows=${BENCH_PATHS:-mcp allow-host host npx}
export CODEMODE=${CODEMODE:-$bench_top/build/codemode}
codemode_run=${CODEMODE_RUN:-$(dirname "$CODEMODE")/codemode-run}
results=${BENCH_RESULTS:-$bench_here/results}
holder=${BENCH_HOLDER:-}
rl_uid=65534
prefix="cmpath$$-"

work=$(mktemp -d /tmp/codemode-bench-paths.XXXXXX)
chmod 0755 "$work"
cleanup() {
  local rc=$? st id
  trap - EXIT INT TERM
  set +e
  bench_kill_strays "$work" >&2
  for st in "$work"/state "$work"/rlstate; do
    for id in "$st"/*/; do [ -d "$id" ] && "$CODEMODE" --root "$st" delete --force "$(basename "$id")" >/dev/null 2>&1; done
  done
  if [ -n "$holder" ] && [ -e "/proc/$holder/ns/mnt" ]; then
    for id in "$work"/hstate/*/; do
      [ -d "$id" ] && nsenter -t "$holder" -m -- "$CODEMODE" --root "$work/hstate" delete --force "$(basename "$id")" >/dev/null 2>&1
    done
    nsenter -t "$holder" -m -- umount -l "$work/hstate" 2>/dev/null
  fi
  bench_sweep_cgroups "$prefix"
  bench_state_tmpfs_release "$work/state"
  bench_state_tmpfs_release "$work/rlstate"
  rm -rf --one-file-system "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A snapshot of the binaries: others may rebuild build/ while this runs.
mkdir -p "$work/bin"
for b in codemode codemode-run codemode-broker codemode-broker-tls.so codemode-image; do
  [ -e "$(dirname "$CODEMODE")/$b" ] && cp "$(dirname "$CODEMODE")/$b" "$work/bin/"
done
cm=$work/bin/codemode
cmr=$work/bin/codemode-run
[ -x "$cm" ] || bench_die "$CODEMODE: not built"
[ -x "$cmr" ] || codemode_run= # rows that need it say so

bench_make_bundles "$work"
chmod 0755 "$work/true" "$work/sleep"
chmod 0644 "$work/true/config.json" "$work/sleep/config.json"
bench_state_tmpfs "$work/state"
mkdir -p "$work/rlstate" "$work/hstate" "$work/raw"
# The user's state dir a tmpfs too (the user's /run/user/UID is one on a normal system): on this
# host's ext4 /tmp a file created after many deletions costs ~1 ms (lib.sh), which the paths that
# write more state files (--allow-host: resolv.conf, the broker's record) paid once more each.
mount -t tmpfs -o mode=0700,uid=$rl_uid,gid=$rl_uid,size=64m bench-rlstate "$work/rlstate" || bench_die "could not mount a tmpfs at $work/rlstate"
chmod 1777 "$work/raw"

# What the mcp profile makes of a bundle's config (policy explain lists it), for `codemode run`
# as its base: the user namespace as the profile's range maps it (as root: the first range of
# codemode's pool; as a user: the bundle's own), cgroup and network namespaces, no capabilities,
# no_new_privs, oomScoreAdj 1000, RLIMIT_CORE 0, a 64 MiB /tmp, 512 MiB / 256 pids / 1 CPU (burst: one quota) and
# deny-all devices, and mcp.json as the config's one filter (codemode stacks it on the config's,
# which has none). As root the root is read-only.
sc_conv='{defaultAction, defaultErrnoRet, architectures: ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
  syscalls: [.syscalls[] | select((.includes.caps // []) | length == 0)
    | select((.includes.arches // ["amd64"]) | index("amd64"))
    | {names, action} + (if .errnoRet then {errnoRet} else {} end) + (if .args then {args} else {} end)]}'
jq "$sc_conv" "$bench_top/seccomp-profiles/mcp.json" >"$work/mcp-seccomp.json"
mcp_resulting() { # SRC-BUNDLE DST-BUNDLE ROOT(1|0)
  mkdir -p "$2"
  jq --slurpfile sc "$work/mcp-seccomp.json" --argjson root "$3" --arg rootfs "$work/true/rootfs" '
    .root.path = $rootfs
    | (if $root == 1 then
       .root.readonly = true
       | .linux.namespaces = [{type: "pid"}, {type: "network"}, {type: "ipc"}, {type: "uts"}, {type: "mount"},
                              {type: "cgroup"}, {type: "user"}]
       | .linux.uidMappings = [{containerID: 0, hostID: 2147483648, size: 65536}]
       | .linux.gidMappings = [{containerID: 0, hostID: 2147483648, size: 65536}]
     elif any(.linux.namespaces[]; .type == "cgroup") then . else .linux.namespaces += [{type: "cgroup"}] end)
    | .process.capabilities = {bounding: [], effective: [], inheritable: [], permitted: [], ambient: []}
    | .process.noNewPrivileges = true | .process.oomScoreAdj = 1000
    | .process.rlimits = [{type: "RLIMIT_NOFILE", soft: 1024, hard: 4096}, {type: "RLIMIT_CORE", soft: 0, hard: 0}]
    | .mounts += [{destination: "/tmp", type: "tmpfs", source: "tmpfs", options: ["nosuid", "nodev", "mode=1777", "size=64m"]}]
    | .linux.resources = {devices: [{allow: false, access: "rwm"}], memory: {limit: 536870912, swap: 536870912},
                          pids: {limit: 256}, cpu: {quota: 100000, period: 100000, burst: 100000}}
    | .linux.seccomp = $sc[0]' "$1/config.json" >"$2/config.json"
  chmod 0755 "$2"
  chmod 0644 "$2/config.json"
}
mcp_resulting "$work/true" "$work/mcpcfg" 1

# The rootless bundle (`codemode spec --rootless` as the user, the same rootfs) with a network
# namespace of its own, which the mcp profile requires.
mkdir -p "$work/rl"
chown "$rl_uid" "$work/rl"
setpriv --reuid=$rl_uid --regid=$rl_uid --clear-groups "$cm" --root "$work/rlstate" spec --rootless -b "$work/rl" ||
  bench_die "codemode spec --rootless failed"
jq --arg root "$work/true/rootfs" '.ociVersion = "1.0.2" | .process.terminal = false | .process.args = ["/bin/true"]
  | .root.path = $root
  | if any(.linux.namespaces[]; .type == "network") then . else .linux.namespaces += [{type: "network"}] end' \
  "$work/rl/config.json" >"$work/rl/c"
mv "$work/rl/c" "$work/rl/config.json"
chmod 0755 "$work/rl"
chmod 0644 "$work/rl/config.json"
mcp_resulting "$work/rl" "$work/rlmcpcfg" 0

if [ -n "$holder" ] && [ -e "/proc/$holder/ns/mnt" ]; then
  nsenter -t "$holder" -m -- mount -t tmpfs -o mode=0755,size=64m bench-hstate "$work/hstate"
else
  holder=
fi
view_of_holder=$(if [ -n "$holder" ]; then nsenter -t "$holder" -m -- stat -fc %T /sys/fs/cgroup; fi)
case $view_of_holder in cgroup2fs) view_of_holder=cgroup2 ;; "") ;; *) view_of_holder=hybrid ;; esac

# The user's session as a login gives it: XDG_RUNTIME_DIR is where codemode keeps a user's
# compiled seccomp programs (without it every start compiles them: linux/seccomp.h).
mkdir -m 0700 "$work/xdg"
chown "$rl_uid" "$work/xdg"
as_user=(setpriv --reuid=$rl_uid --regid=$rl_uid --clear-groups env -i PATH=/usr/bin:/bin HOME=/nonexistent
  XDG_RUNTIME_DIR="$work/xdg")
perf_ok=
command -v perf >/dev/null && perf stat -x, -e task-clock -o /dev/null true 2>/dev/null && perf_ok=1

failures=0 pairs=0
: >"$work/rows.tsv"
# row LABEL BASE-LABEL BASE-MS PATH-MS BASE-CPU PATH-CPU NOTE
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$work/rows.tsv"; }
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) printf "%.2f", v[(NR + 1) / 2]; else printf "%.2f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# pair LABEL BASE-LABEL WRAP-KIND BASE-CMD PATH-CMD: time both (strings hyperfine runs with -N).
# WRAP-KIND: root (this namespace, cgroup2 view), hybrid (the holder's: the host's cgroups),
# user (as uid 65534), net / net-user (a network namespace of its own with lo up).
pair() {
  local label=$1 base_label=$2 kind=$3 base=$4 path=$5 r json wrap=() n=$per
  pairs=$((pairs + 1))
  case $kind in
    root) ;;
    hybrid) wrap=(nsenter -t "$holder" -m --) ;;
    user) wrap=("${as_user[@]}") ;;
    net) wrap=(unshare -n sh -c 'ip link set lo up && exec "$@"' sh) ;;
    net-user) wrap=(unshare -n sh -c 'ip link set lo up && exec "$@"' sh "${as_user[@]}") ;;
  esac
  for c in "$base" "$path"; do
    # shellcheck disable=SC2086 # the command line is split as hyperfine would split it
    if ! timeout -k 5 60 "${wrap[@]}" $c </dev/null >/dev/null 2>"$work/err"; then
      bench_log "$label: failed: $c: $(grep -v '^codemode-run: profile' "$work/err" | tail -1)"
      row "$label" "$base_label" - - - - "failed: $(grep -v '^codemode-run: profile' "$work/err" | tail -1 | cut -c1-100 | tr '\t|' '  ')"
      failures=$((failures + 1))
      return
    fi
  done
  : >"$work/times.tsv"
  for ((r = 1; r <= rounds; r++)); do
    json=$work/raw/pair$pairs.$r.json # a file of its own: a user may not replace root's in raw/
    [ "$r" -gt 1 ] || n=$((per + runs % rounds))
    timeout -k 5 $((60 * (n + 2) * 2 + 30)) "${wrap[@]}" hyperfine -N --runs "$n" --warmup 2 --style none \
      --export-json "$json" --command-name base "$base" --command-name path "$path" >/dev/null 2>"$work/err" || {
      bench_log "$label: hyperfine failed: $(tail -2 "$work/err")"
      row "$label" "$base_label" - - - - "hyperfine failed"
      failures=$((failures + 1))
      return
    }
    jq -r '.results[] | .command as $c | .times[] | [$c, . * 1000] | @tsv' "$json" >>"$work/times.tsv"
    n=$per
  done
  local bm pm bc=- pc=-
  bm=$(awk -F'\t' '$1 == "base" { print $2 }' "$work/times.tsv" | median)
  pm=$(awk -F'\t' '$1 == "path" { print $2 }' "$work/times.tsv" | median)
  if [ -n "$perf_ok" ]; then
    local k=$runs i
    [ "$k" -le 20 ] || k=20
    : >"$work/cpu.tsv"
    for ((i = 0; i < k; i++)); do
      for w in base path; do
        c=$base
        [ $w = path ] && c=$path
        # shellcheck disable=SC2086
        "${wrap[@]}" perf stat -x, -e task-clock -o "$work/raw/perf.$pairs.$w" -- $c </dev/null >/dev/null 2>&1 &&
          printf '%s\t%s\n' $w "$(awk -F, '/task-clock/ { print $1 }' "$work/raw/perf.$pairs.$w")" >>"$work/cpu.tsv"
        rm -f "$work/raw/perf.$pairs.$w" 2>/dev/null || true
      done
    done
    bc=$(awk -F'\t' '$1 == "base" { print $2 }' "$work/cpu.tsv" | median)
    pc=$(awk -F'\t' '$1 == "path" { print $2 }' "$work/cpu.tsv" | median)
  fi
  row "$label" "$base_label" "$bm" "$pm" "$bc" "$pc" ""
}

q() { printf '%q ' "$@"; }

for what in $rows; do
  case $what in
    mcp)
      bench_log "mcp profile vs its resulting config"
      if [ -n "$holder" ]; then
        pair "root, host cgroups ($view_of_holder): codemode --profile mcp run" "codemode run, resulting config" hybrid \
          "$(q "$cm" --root "$work/hstate" run --bundle "$work/mcpcfg" "${prefix}a")" \
          "$(q "$cm" --root "$work/hstate" --profile mcp run --bundle "$work/true" "${prefix}b")"
      else
        row "root, host cgroups: codemode --profile mcp run" "codemode run, resulting config" - - - - "no holder namespace"
      fi
      if [ "${BENCH_HOST_CGROUPS:-}" = v2 ] || [ "$view_of_holder" = cgroup2 ]; then
        row "root, cgroup2 view: codemode --profile mcp run" "" - - - - "the host's own cgroups are cgroup2: the row above"
      else
        # The cgroup2 mount of a hybrid host has none of the controllers the limits need.
        row "root, cgroup2 view: codemode --profile mcp run" "codemode run, resulting config" - - - - \
          "skipped: memory, pids and cpu are bound to this host's v1 hierarchies, not its cgroup2 mount"
      fi
      pair "user $rl_uid: codemode --profile mcp run" "codemode run, resulting config" user \
        "$(q "$cm" --root "$work/rlstate" run --bundle "$work/rlmcpcfg" "${prefix}c")" \
        "$(q "$cm" --root "$work/rlstate" --profile mcp run --bundle "$work/rl" "${prefix}d")"
      ;;
    allow-host)
      bench_log "--allow-host vs without"
      if [ -z "$codemode_run" ] || [ ! -x "$work/bin/codemode-broker" ]; then
        row "codemode-run --allow-host" "without" - - - - "codemode-run or codemode-broker not built"
        continue
      fi
      for who in root user; do
        st=$work/state k=net
        [ $who = user ] && st=$work/rlstate k=net-user
        pair "$who: codemode-run --allow-host H BUNDLE" "without --allow-host" $k \
          "$(q "$cmr" --root "$st" --profile default --id "${prefix}e" "$work/true")" \
          "$(q "$cmr" --root "$st" --profile default --id "${prefix}e" --allow-host api.allowed.test --dns-upstream 127.0.0.1 "$work/true")"
      done
      ;;
    host)
      bench_log "--host vs a bundle"
      [ -n "$codemode_run" ] || { row "codemode-run --host" "BUNDLE" - - - - "codemode-run not built"; continue; }
      if [ -n "$holder" ]; then
        pair "root, host cgroups ($view_of_holder): codemode-run --host" "codemode-run BUNDLE" hybrid \
          "$(q "$cmr" --root "$work/hstate" --id "${prefix}f" "$work/true" -- /bin/true)" \
          "$(q "$cmr" --root "$work/hstate" --id "${prefix}f" --host -- /bin/true)"
      fi
      pair "user $rl_uid: codemode-run --host" "codemode-run BUNDLE" user \
        "$(q "$cmr" --root "$work/rlstate" --id "${prefix}g" "$work/true" -- /bin/true)" \
        "$(q "$cmr" --root "$work/rlstate" --id "${prefix}g" --host -- /bin/true)"
      ;;
    npx)
      bench_log "npx server-memory under --host + :cow vs bare"
      npx_home=$bench_top/tests/mcp/.work/npx-home
      if [ -z "$codemode_run" ] || ! command -v node >/dev/null || ! command -v npx >/dev/null; then
        row "npx server-memory, --host + :cow" "bare npx" - - - - "skipped: needs node, npx and codemode-run"
        continue
      fi
      [ -d "$npx_home/.npm/_npx" ] || "$bench_top/tests/mcp/deps.sh" >&2 || true
      if [ ! -d "$npx_home/.npm/_npx" ]; then
        row "npx server-memory, --host + :cow" "bare npx" - - - - "no warm npm cache (tests/mcp/deps.sh failed)"
        failures=$((failures + 1))
        continue
      fi
      # A copy each user owns: :cow leaves it unchanged, npx bare may not.
      for who in root user; do
        home=$work/npx-$who
        cp -a "$npx_home" "$home"
        [ $who = user ] && chown -R "$rl_uid:$rl_uid" "$home"
        st=$work/hstate
        [ $who = user ] && st=$work/rlstate
        npm_env=(npm_config_offline=true npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false)
        bare=(env HOME="$home" "${npm_env[@]}" MEMORY_FILE_PATH="$home/memory.json" npx -y @modelcontextprotocol/server-memory)
        wrapped=("$cmr" --root "$st" --id "${prefix}h$who" --host --mount "$home/.npm:/root/.npm:cow")
        for e in "${npm_env[@]}" MEMORY_FILE_PATH=/tmp/memory.json; do wrapped+=(--env "$e"); done
        wrapped+=(-- npx -y @modelcontextprotocol/server-memory)
        if [ $who = user ]; then
          bare=("${as_user[@]}" "${bare[@]}")
          wrapped=("${as_user[@]}" "${wrapped[@]}")
        elif [ -n "$holder" ]; then
          wrapped=(nsenter -t "$holder" -m -- "${wrapped[@]}")
        fi
        n=$runs
        [ "$n" -le 10 ] || n=10
        jq -n --argjson n "$n" --argjson bare "$(printf '%s\n' "${bare[@]}" | jq -R . | jq -s .)" \
          --argjson wrapped "$(printf '%s\n' "${wrapped[@]}" | jq -R . | jq -s .)" \
          '{rounds: $n, calls: 0, commands: {bare: $bare, wrapped: $wrapped},
            tool: {name: "read_graph", arguments: {}}}' >"$work/npx-$who.json"
        label="$who: npx -y server-memory, --host + :cow (spawn → initialize)"
        [ $who = root ] && [ -n "$holder" ] && label="root, host cgroups ($view_of_holder): npx -y server-memory, --host + :cow (spawn → initialize)"
        if out=$(cd "$work" && timeout -k 5 $((n * 120 + 60)) node "$bench_here/mcp-timing.mjs" "$work/npx-$who.json" 2>"$work/err"); then
          row "$label" "bare npx" "$(jq -r '.bare.spawn_ms | . * 100 | round / 100' <<<"$out")" \
            "$(jq -r '.wrapped.spawn_ms | . * 100 | round / 100' <<<"$out")" - - ""
        else
          bench_log "npx ($who): $(tail -2 "$work/err")"
          row "$label" "bare npx" - - - - "failed: $(tail -1 "$work/err" | cut -c1-100 | tr '\t|' '  ')"
          failures=$((failures + 1))
        fi
      done
      ;;
    *) bench_die "BENCH_PATHS: unknown row $what (mcp, allow-host, host, npx)" ;;
  esac
done

mkdir -p "$results"
{
  echo "# Each path beside its base (issue 27)"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%MZ), commit $(git -C "$bench_top" rev-parse --short HEAD 2>/dev/null || echo ?)," \
    "$(nproc) CPUs, kernel $(uname -r), host cgroups ${BENCH_HOST_CGROUPS:-?}, load $(cut -d' ' -f1-3 /proc/loadavg);" \
    "$runs runs in $rounds rounds, medians. CPU: task-clock of every process of the start (perf stat), medians."
  echo
  echo "| path | base | base ms | path ms | × (wall) | + ms | base CPU ms | path CPU ms | × (CPU) | note |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  awk -F'\t' '
    function ratio(a, b) { return (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && a > 0) ? sprintf("%.2f", b / a) : "—" }
    function plus(a, b) { return (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/) ? sprintf("%+.2f", b - a) : "—" }
    function v(x) { return x == "-" ? "—" : x }
    { printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, v($2), v($3), v($4), ratio($3, $4), plus($3, $4),
        v($5), v($6), ratio($5, $6), $7 }' "$work/rows.tsv"
} >"$results/paths.md"
cat "$results/paths.md"
[ "$failures" -eq 0 ]
