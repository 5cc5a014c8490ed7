#!/bin/bash
# tests/bench/mcp.sh — what an MCP user waits for (issue 17), side by side, interleaved, medians:
#   1. spawn → `initialize` response of @modelcontextprotocol/server-filesystem: the bare node
#      process; codemode-run --image (profile mcp; and mcp with the CPU cap lifted, to show what
#      the cap costs at start-up); `docker run -i --rm --runtime=runc` of the same image;
#   2. a fresh container per tools/call (spawn, initialize, one call, exit) against the same call
#      in a long-lived session, and against a fresh bare node per call;
#   3. a cold pull + unpack of a 48 MiB image from a local registry (TLS, in a network namespace
#      of its own): codemode-image against skopeo copy + umoci unpack.
# Appends its tables to tests/bench/results/latest.md (run.sh writes the rest). Reports only.
# BENCH_RUNS: rounds (default 20); BENCH_MCP_DOCKER=0 skips the Docker column.
set -euo pipefail
self=$(readlink -f "${BASH_SOURCE[0]}")
here=$(dirname "$self")
# shellcheck source=tests/bench/settings.sh
. "$here/settings.sh"
log() { echo "bench-mcp: $*" >&2; }

if [ "${BENCH_MCP_IN_NS:-}" != 1 ]; then
  for t in node python3 skopeo umoci docker-registry openssl jq; do
    command -v "$t" >/dev/null || { log "$t is missing (tests/image/deps.sh, tests/mcp/deps.sh): skipped"; exit 0; }
  done
  [ -d "$repo/tests/mcp/.work/node_modules/@modelcontextprotocol/server-filesystem" ] || "$repo/tests/mcp/deps.sh" >&2
  exec env BENCH_MCP_IN_NS=1 unshare --net --mount --propagation private "$self" "$@"
fi
ip link set lo up
work=$(mktemp -d /tmp/codemode-bench-mcp.XXXXXX)
pids=()
cleanup() {
  set +e
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  # Only our own: a bare `wait` would also wait for the dockerd that dockerd_start left in the
  # background of this shell, which only dockerd_stop ends (CI hung here until its timeout).
  [ "${#pids[@]}" -eq 0 ] || wait "${pids[@]}" 2>/dev/null
  [ -n "${DK_DIR:-}" ] && dockerd_stop >/dev/null 2>&1
  umount /etc/hosts 2>/dev/null
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT
printf '127.0.0.1 localhost registry.test\n' >"$work/hosts"
mount --bind "$work/hosts" /etc/hosts

nm=$repo/tests/mcp/.work/node_modules
fs_js=/app/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js
mkdir -p "$work/data"
echo hello >"$work/data/hello.txt"
CM_TEST_TOKEN=bench "$repo/tests/mcp/make-node-bundle.sh" "$work/bundle" "$nm" >/dev/null 2>&1
printf '{"gzip":false,"images":[{"tag":"mcp","platforms":[{"arch":"amd64","layers":[[{"from_dir":"%s"}]],"config":{"Cmd":["/usr/bin/node","%s","/data"],"Env":["PATH=/usr/bin:/bin"]}}]}]}' \
  "$work/bundle/rootfs" "$fs_js" >"$work/img.json"
python3 "$repo/tests/image/mkimage.py" "$work/img.json" "$work/layout" >/dev/null
"$bin/codemode-image" pull --store "$work/store" -q "oci:$work/layout:mcp" >/dev/null
run=("$bin/codemode-run" --root "$work/state" --store "$work/store" --mount "$work/data:/data:ro" --image "oci:$work/layout:mcp")

# The mcp profile's CPU cap (one CPU) lifted: --cpus cannot raise it, so a profile annotation is
# not it either; the difference is measured with the default profile plus the mcp seccomp and
# no-cap settings held equal would need a profile of its own. We show the cap's share as mcp vs
# default, and report both.
commands=$(jq -n --arg node "$nm/@modelcontextprotocol/server-filesystem/dist/index.js" --arg data "$work/data" \
  --argjson run "$(printf '%s\n' "${run[@]}" | jq -R . | jq -s .)" \
  '{"node (bare)": ["node", $node, $data],
    "codemode-run --image (mcp)": $run,
    "codemode-run --image (default)": ($run[:1] + ["--profile", "default"] + $run[1:])}')
if [ "${BENCH_MCP_DOCKER:-1}" = 1 ] && command -v dockerd >/dev/null; then
  export CM_REPO=$repo
  # shellcheck source=tests/docker/dockerd.bash
  . "$repo/tests/docker/dockerd.bash"
  if dockerd_start "$(mktemp -d /tmp/cm-bmdk.XXXXXX)" >/dev/null 2>&1 &&
    tar -C "$work/bundle/rootfs" -c . | dk import -c 'ENV PATH=/usr/bin:/bin' - cm-bench-mcp >/dev/null; then
    commands=$(jq --arg host "$DOCKER_HOST" --arg data "$work/data" --arg js "$fs_js" \
      '. + {"docker run --runtime=runc": ["docker", "-H", $host, "run", "-i", "--rm", "--runtime=runc", "--network", "none",
            "-v", ($data + ":/data:ro"), "cm-bench-mcp", "/usr/bin/node", $js, "/data"]}' <<<"$commands")
  else
    log "the private dockerd did not start: no Docker column"
  fi
fi
jq -n --argjson c "$commands" --argjson r "$rounds" \
  '{rounds: $r, calls: 10, tool: {name: "list_allowed_directories", arguments: {}}, commands: $c}' >"$work/spec.json"
log "MCP start-up: $rounds interleaved rounds"
node "$here/mcp-timing.mjs" "$work/spec.json" >"$work/mcp.json"

# 3. Cold pull + unpack from a local registry.
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=registry.test -addext subjectAltName=DNS:registry.test \
  -keyout "$work/reg.key" -out "$work/reg.crt" 2>/dev/null
mkdir -p "$work/certs" "$work/reg"
cp "$work/reg.crt" "$work/certs/ca.crt"
cat >"$work/registry.yml" <<YML
version: 0.1
log: {level: error}
storage: {filesystem: {rootdirectory: $work/reg}}
http: {addr: 127.0.0.1:5000, tls: {certificate: $work/reg.crt, key: $work/reg.key}}
YML
docker-registry serve "$work/registry.yml" >"$work/registry.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/5000) 2>/dev/null && break; sleep 0.1; done
printf '{"images":[{"tag":"big","platforms":[{"arch":"amd64","layers":[[{"name":"blob1","size":25165824,"seed":1}],[{"name":"blob2","size":25165824,"seed":2}]],"config":{}}]}]}' >"$work/big.json"
python3 "$repo/tests/image/mkimage.py" "$work/big.json" "$work/big" >/dev/null
echo '{"default":[{"type":"insecureAcceptAnything"}]}' >"$work/policy.json"
skopeo --policy "$work/policy.json" copy -q --dest-cert-dir "$work/certs" "oci:$work/big:big" docker://registry.test:5000/big:1
ms() { echo $(( ($2 - $1) / 1000000 )); }
pull_cm=() pull_ref=()
for r in $(seq "$rounds"); do
  rm -rf "$work/s" "$work/o" "$work/u"
  t0=$(date +%s%N)
  CODEMODE_REGISTRY_CA=$work/certs/ca.crt "$bin/codemode-image" resolve --store "$work/s" -q registry.test:5000/big:1 >/dev/null 2>&1
  t1=$(date +%s%N)
  skopeo --policy "$work/policy.json" copy -q --src-cert-dir "$work/certs" docker://registry.test:5000/big:1 "oci:$work/o:x" >/dev/null
  umoci unpack --image "$work/o:x" "$work/u" >/dev/null 2>&1
  t2=$(date +%s%N)
  pull_cm+=("$(ms "$t0" "$t1")")
  pull_ref+=("$(ms "$t1" "$t2")")
  [ "$r" -ge 5 ] && break
done
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }

{
  echo
  echo "## MCP servers (tests/bench/mcp.sh, $rounds rounds interleaved, medians)"
  echo
  echo "| server-filesystem | spawn → initialize | fresh process per tools/call | tools/call in a session |"
  echo "|---|---|---|---|"
  jq -r 'to_entries[] | "| \(.key) | \(.value.spawn_ms | . * 10 | round / 10) ms | \(.value.call_ms | . * 10 | round / 10) ms | \(.value.per_call_in_session_ms | . * 100 | round / 100) ms |"' "$work/mcp.json"
  jq -r '
    ."node (bare)".spawn_ms as $n | ."codemode-run --image (mcp)".spawn_ms as $c |
    ."node (bare)".call_ms as $nc | ."codemode-run --image (mcp)".call_ms as $cc |
    "\ncodemode-run (mcp) − bare node: \(($c - $n) | . * 10 | round / 10) ms at start-up (goal ≤ 15), \(($cc - $nc) | . * 10 | round / 10) ms per fresh-container call (goal ≤ 20)" +
    (if ."docker run --runtime=runc" then
      ."docker run --runtime=runc".spawn_ms as $d |
      "; codemode-run / docker run: \(($c / $d) | . * 100 | round / 100) (goal ≤ 0.25; bare node alone is \(($n / $d) | . * 100 | round / 100)); what each adds to node: codemode-run \(($c - $n) | . * 10 | round / 10) ms, docker run \(($d - $n) | . * 10 | round / 10) ms, a ratio of \((($c - $n) / ($d - $n)) | . * 100 | round / 100)"
     else "" end)' "$work/mcp.json"
  echo
  echo "| cold pull + unpack, 48 MiB (2 layers) from a local registry | median |"
  echo "|---|---|"
  echo "| codemode-image | $(median "${pull_cm[@]}") ms |"
  echo "| skopeo copy + umoci unpack | $(median "${pull_ref[@]}") ms |"
} | tee -a "$results/latest.md"
