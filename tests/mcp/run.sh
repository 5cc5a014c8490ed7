#!/bin/bash
# tests/mcp/run.sh — a real MCP client (@modelcontextprotocol/sdk) talking over stdio to a real
# MCP server (@modelcontextprotocol/server-filesystem) that runs under `codemode-run --profile
# mcp`, with node from this machine in a bundle of its shared-library closure. TAP on stdout;
# exit 77 (with the reason as the last stderr line) when node/npm are missing.
#   1 initialize, tools/list, read from a read-only mount, a write fails, clean shutdown
#   2 the MCP client is SIGKILLed: codemode-run (PR_SET_PDEATHSIG) stops and deletes the container
#   3 codemode-run itself is SIGKILLed: its watcher deletes the container
#   4 `codemode-run --explain` shows what the profile changed
#   5 the same conversation with the server under `docker run -i --rm --runtime=codemode-mcp` (a
#     private dockerd, tests/docker/dockerd.bash, with codemode registered with runtimeArgs
#     ["--profile=mcp"]); nothing left in `docker ps -a` afterwards
#   6 `docker exec --privileged` into that server gets no more than its init: no capabilities,
#     no_new_privs, the same seccomp filters
#   7 the Docker client is SIGKILLed: the container goes (stdin EOF → server exits → --rm)
# Cases 5-7 are skipped (TAP "# skip") when dockerd/containerd are not installed.
#   8 the filesystem server from an OCI image the test builds (codemode-run --image oci:…)
#   9 @modelcontextprotocol/server-memory from that image without --state: its first write fails
#     (read-only root) and codemode-run says which path and which flag fixes it
#  10 the same with --state DIR + MEMORY_FILE_PATH: what one session stores, the next one reads
#  11 --host: the filesystem server as an mcpServers entry has it, `npx -y …`, offline from a warm
#     npm cache (tests/mcp/deps.sh fills it) given as --mount CACHE:/root/.npm:cow
#  12 --host: server-memory through npx with --state
#  13 Ctrl-C (SIGINT to codemode-run) stops a node server at once: its init forwards it (130,
#     never the 137 of the SIGKILL after a 60 s grace period)
#  14 learn mode (issue 19): codemode-run --learn over a session that lists, reads and writes
#     (/data/a rw, /data/b ro and never touched); the policy has the calls, files and comments
#  15 the same session under the learned policy passes, with no denial in the audit summary
#  16 tool calls the learning session never made are denied by the kernel, each with an audit
#     record naming it: a read in /data/b (Landlock, EACCES), move_file (rename(2), EPERM)
#  17 a second learning session with other tools (create_directory, move_file); merged, both
#     sessions pass under the merged policy (and the second alone fails under the first policy)
#  18 the learned seccomp profile allows fewer syscalls than Docker's default (both counted)
#  then `codemode mcp wrap`/`unwrap` for each client's config shape (tests/mcp/wrap.bash), before
#  the learn cases
# CM_MCP_NO_DOCKER=1 runs all but the Docker cases 5-7 (tests/rootless/run.sh, as an unprivileged
# user: the README's three mcpServers entries, image, --host and bundle, as a normal user).
# npm packages are cached in tests/mcp/.work (node_modules + npm cache), installed on first use.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
: "${CODEMODE:=$repo/build/codemode}"
CODEMODE_RUN=${CODEMODE_RUN:-$(dirname "$CODEMODE")/codemode-run}
: "${CM_TEST_TOKEN:=cm-mcp-$$}"
export CODEMODE CM_TEST_TOKEN

for tool in node npm jq; do
  command -v $tool >/dev/null || { echo "tests/mcp: $tool is not installed" >&2; exit 77; }
done
[ -x "$CODEMODE_RUN" ] || { echo "tests/mcp: $CODEMODE_RUN is not built (run make)" >&2; exit 1; }

cache=$here/.work
# The npm packages and the warm npx cache of the --host cases, on first use (deps.sh, which
# .ci/run calls beforehand): a plain `make check` from a fresh clone needs them too.
"$here/deps.sh" >&2 || {
  echo "tests/mcp: npm install failed (is the npm registry reachable?)" >&2
  exit 77
}

# Under /tmp, not the suite's TMPDIR: that may be on /dev/shm, and the mcp profile refuses every
# bind mount from /dev (a host system tree), the test's /data among them.
work=$(mktemp -d /tmp/cm-mcp.XXXXXX)
state=$work/state
data=$work/data
id=cm-test-mcp-$$
cleanup() {
  local d
  if [ -n "${DK_DIR:-}" ]; then dockerd_stop >&2; fi
  for d in "$state"/*/; do [ -d "$d" ] && "$CODEMODE" --root "$state" delete --force "$(basename "$d")" 2>/dev/null; done
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT

# shellcheck source=tests/lib/tap.sh
. "$repo/tests/lib/tap.sh"

# shellcheck source=tests/mcp/wrap.bash
. "$here/wrap.bash"
if [ -n "${CM_MCP_NO_DOCKER:-}" ]; then echo "1..$((15 + $(wrap_count)))"; else echo "1..$((18 + $(wrap_count)))"; fi
mkdir -p "$data"
echo "hello from the host" >"$data/hello.txt"
"$here/make-node-bundle.sh" "$work/bundle" "$cache/node_modules" >&2 || { echo "Bail out! bundle build failed"; exit 1; }
# The client resolves the SDK from the test's node_modules.
export NODE_PATH=$cache/node_modules
ln -sfn "$cache/node_modules" "$work/node_modules"
cp "$here/client.mjs" "$work/client.mjs"
server_cmd=("$CODEMODE_RUN" --root "$state" --profile mcp --timeout 120 --mount "$data:/data:ro")

# Nothing of the container may survive: no state dir, no process carrying the token, no cgroup.
nothing_left() {
  local cid=$1 tries=50 p
  while [ $tries -gt 0 ]; do
    local left=""
    [ -e "$state/$cid" ] && left="state dir $state/$cid"
    for p in /proc/[0-9]*; do
      if tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -qx "CODEMODE_TEST_CONTAINER=$CM_TEST_TOKEN"; then
        left="$left process ${p#/proc/}"
      fi
    done
    if find /sys/fs/cgroup -maxdepth 4 -type d -name "$cid" 2>/dev/null | grep -q .; then left="$left cgroup"; fi
    [ -z "$left" ] && return 0
    sleep 0.2
    tries=$((tries - 1))
  done
  echo "$left"
  return 1
}

# 1: the whole conversation.
out=$(cd "$work" && timeout 180 node client.mjs CHECKS "${server_cmd[@]}" --id "$id-1" "$work/bundle" 2>&1)
rc=$?
if [ $rc -eq 0 ] && left=$(nothing_left "$id-1"); then
  pass "MCP client <-> filesystem server in codemode-run --profile mcp (initialize, tools/list, read, refused write, shutdown)"
else
  fail "MCP client <-> server conversation (rc=$rc)" "${out//$'\n'/ | }" "${left:-}"
fi

# 2: the client dies without a word.
log=$work/hang.log
(cd "$work" && exec timeout 120 node client.mjs HANG "${server_cmd[@]}" --id "$id-2" "$work/bundle") >"$log" 2>&1 &
client=$!
for _ in $(seq 100); do grep -q READY "$log" && break; sleep 0.2; done
if grep -q READY "$log" && [ -e "$state/$id-2" ]; then
  # timeout(1) is the client's parent; the node process is its child.
  node_pid=$(pgrep -P "$client" node || true)
  kill -9 "${node_pid:-$client}" 2>/dev/null
  wait "$client" 2>/dev/null
  if left=$(nothing_left "$id-2"); then
    pass "client SIGKILLed: container and its processes are gone"
  else
    fail "client SIGKILLed: leftovers" "$left"
  fi
else
  kill -9 "$client" 2>/dev/null
  fail "client SIGKILLed: the server never came up" "$(tr '\n' '|' <"$log")"
fi

# 3: codemode-run itself is SIGKILLed (its watcher cleans up). Its stdin is a fifo that we hold
# open for writing: with EOF on stdin the server would exit on its own within a fraction of a
# second, before the kill.
mkfifo "$work/stdin.fifo"
exec 7<>"$work/stdin.fifo"
("${server_cmd[@]}" --id "$id-3" "$work/bundle" <"$work/stdin.fifo" >/dev/null 2>&1 7>&- & echo $! >"$work/run.pid"; wait) 7>&- &
for _ in $(seq 100); do [ -e "$state/$id-3/state.json" ] && break; sleep 0.2; done
if [ -e "$state/$id-3/state.json" ]; then
  kill -9 "$(cat "$work/run.pid")"
  if left=$(nothing_left "$id-3"); then
    pass "codemode-run SIGKILLed: the watcher deleted the container"
  else
    fail "codemode-run SIGKILLed: leftovers" "$left"
  fi
else
  fail "codemode-run SIGKILLed: the container never came up"
fi
exec 7>&-
wait

# 4: the profile's effect is visible.
out=$("$CODEMODE_RUN" --explain --mount "$data:/data:ro" "$work/bundle" 2>&1)
if grep -q "^profile: mcp" <<<"$out" && grep -q "seccomp: mcp.json stacked" <<<"$out" &&
  grep -q "pids.limit" <<<"$out"; then
  pass "codemode-run --explain lists the profile's changes"
else
  fail "codemode-run --explain" "${out//$'\n'/ | }"
fi
# 5-7: Docker. codemode is registered as "codemode-args" with runtimeArgs ["--profile=mcp"]: the
# shim passes them to every codemode call (create, start, exec, delete…).
docker_cases() {
  local why=$1 i
  for i in 5 6 7; do n=$((n + 1)); echo "ok $n # skip Docker case $i: $why"; done
}
# The server's image: the same node closure + node_modules rootfs, imported.
image=cm-mcp-node
server_js=/app/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js
if [ -n "${CM_MCP_NO_DOCKER:-}" ]; then
  :
elif ! command -v dockerd >/dev/null || ! command -v containerd >/dev/null || ! command -v docker >/dev/null; then
  docker_cases "dockerd/containerd/docker not installed (tests/docker/deps.sh installs them)"
else
  export CM_REPO=$repo
  # shellcheck source=tests/docker/dockerd.bash
  . "$repo/tests/docker/dockerd.bash"
  # shellcheck disable=SC2034 # read by dockerd_start
  DK_RUNTIME_ARGS='["--profile=mcp"]'
  # A short path: containerd's sockets live under the exec root (108-byte limit).
  if ! dockerd_start "$(mktemp -d /tmp/cm-mcpdk.XXXXXX)" >&2; then
    docker_cases "the private dockerd did not start"
  elif ! tar -C "$work/bundle/rootfs" -c . | dk import -c 'ENV PATH=/usr/bin:/bin' - "$image" >/dev/null; then
    docker_cases "docker import of the node bundle failed"
  else
    # The MCP client's server command, as an mcpServers entry would have it. -H: the SDK passes
    # only a default environment (no DOCKER_HOST) to the server command.
    docker_cmd() {
      echo docker -H "$DOCKER_HOST" run -i --rm --runtime=codemode-args --network none --name "$1" \
        -e "CODEMODE_TEST_CONTAINER=$CM_TEST_TOKEN" -v "$data:/data:ro" "$image" /usr/bin/node "$server_js" /data
    }
    # docker_gone NAME: no container by that name, no `docker run` client for it, no process with
    # the token (waits up to 30 s: --rm happens after the container exits).
    docker_gone() {
      local tries=150 left p
      while [ $tries -gt 0 ]; do
        left=""
        [ -n "$(docker ps -aq --filter "name=$1" 2>/dev/null)" ] && left="container $1 (docker ps -a)"
        pgrep -f -- "--name $1 " >/dev/null && left="$left docker-run-client"
        for p in /proc/[0-9]*; do
          if tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -qx "CODEMODE_TEST_CONTAINER=$CM_TEST_TOKEN"; then
            left="$left process ${p#/proc/}"
          fi
        done
        [ -z "$left" ] && return 0
        sleep 0.2
        tries=$((tries - 1))
      done
      echo "$left"
      return 1
    }

    # 5: the conversation.
    name=cm-mcp-$$-5
    # shellcheck disable=SC2046
    out=$(cd "$work" && timeout 180 node client.mjs CHECKS $(docker_cmd "$name") 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && left=$(docker_gone "$name"); then
      pass "MCP client <-> filesystem server in docker run -i --rm --runtime=codemode (runtimeArgs --profile=mcp)"
    else
      fail "Docker: MCP client <-> server conversation (rc=$rc)" "${out//$'\n'/ | }" "${left:-}"
    fi

    # 6 and 7: a client that hangs after initialize; exec into its server, then kill the client.
    name=cm-mcp-$$-7
    log=$work/docker-hang.log
    # shellcheck disable=SC2046
    (cd "$work" && exec timeout 120 node client.mjs HANG $(docker_cmd "$name")) >"$log" 2>&1 &
    client=$!
    for _ in $(seq 150); do grep -q READY "$log" && break; sleep 0.2; done
    status_js='const s = require("fs").readFileSync(process.argv[1], "utf8");
      console.log(s.split("\n").filter((l) => /^(CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs|Seccomp_filters):/.test(l)).join(" ").replace(/:\s+/g, ": "));'
    if grep -q READY "$log"; then
      init=$(dk exec "$name" /usr/bin/node -e "$status_js" /proc/1/status 2>&1)
      execd=$(dk exec --privileged "$name" /usr/bin/node -e "$status_js" /proc/self/status 2>&1)
      if [[ "$execd" == *"CapEff: 0000000000000000"* && "$execd" == *"CapBnd: 0000000000000000"* &&
        "$execd" == *"NoNewPrivs: 1"* && "$execd" == "$init" ]]; then
        pass "Docker: exec --privileged into the mcp server gets no more than its init ($execd)"
      else
        fail "Docker: exec --privileged into the mcp server" "init:  $init" "exec:  $execd"
      fi
      node_pid=$(pgrep -P "$client" node || true)
      kill -9 "${node_pid:-$client}" 2>/dev/null
      wait "$client" 2>/dev/null
      if left=$(docker_gone "$name"); then
        pass "Docker: client SIGKILLed: no container left (docker ps -a empty), no docker run client"
      else
        fail "Docker: client SIGKILLed: leftovers" "$left" "$(docker ps -a 2>&1 | tr '\n' '|')"
      fi
    else
      kill -9 "$client" 2>/dev/null
      wait "$client" 2>/dev/null
      fail "Docker: exec into the server: the server never came up" "$(tr '\n' '|' <"$log")"
      fail "Docker: client SIGKILLed: the server never came up"
    fi
  fi
fi

# 14-18: learn mode and learned policies (issue 19); as root and, with CM_MCP_NO_DOCKER, as the
# unprivileged user of tests/rootless/run.sh. Rootless, the kernel's seccomp records cannot be
# read (no CAP_AUDIT_READ): seccomp still denies, and the audit must say it cannot show those.
learn_cases() {
  # As root the kernel's seccomp records name the denied syscall; rootless the audit says, in
  # one record and in the summary, that it cannot show them (the client still sees EPERM).
  local no_denial="audit: no denial in this run" syscall_seen
  syscall_seen='map(select(.event == "syscall" and (.syscall | test("^rename")) and .comm == "node" and (.allow_with | test("SCMP_ACT_ALLOW")))) | length >= 1'
  if [ "$(id -u)" -ne 0 ]; then
    no_denial="audit: no file or host denial in this run"
    syscall_seen='map(select(.event == "audit" and .decision == "incomplete" and .by == "seccomp" and (.reason | test("CAP_AUDIT_READ")))) | length == 1'
  fi
  learn_a=$work/learn-a learn_b=$work/learn-b
  mkdir -p "$learn_a" "$learn_b"
  echo "hello from the host" >"$learn_a/hello.txt"
  echo "never read while learning" >"$learn_b/secret.txt"
  learn_cmd=("$CODEMODE_RUN" --root "$state" --timeout 120 --mount "$learn_a:/data/a:rw" --mount "$learn_b:/data/b:ro")
  pol_a=$work/policy-a.json pol_b=$work/policy-b.json pol_ab=$work/policy-ab.json audit=$work/audit.log
  out=$(cd "$work" && timeout 180 node client.mjs STEPS:list,read,write "${learn_cmd[@]}" --learn "$pol_a" "$work/bundle" 2>&1)
  rc=$?
  if [ $rc -eq 0 ] && jq -e '.seccomp.syscalls[] | select(.names == ["openat"]) | .comment | test("^seen")' "$pol_a" >/dev/null &&
    jq -e '.landlock.pathBeneath[] | select(.parent == ["/data/a"]) | .allowedAccess | (index("write_file") and index("make_reg") and index("read_dir"))' "$pol_a" >/dev/null &&
    jq -e '.landlock.pathBeneath[] | select(.parent == ["/usr/bin/node"]) | .allowedAccess == ["execute"]' "$pol_a" >/dev/null &&
    ! jq -e '.landlock.pathBeneath[] | select(.parent[0] | startswith("/data/b"))' "$pol_a" >/dev/null &&
    ! jq -e '.seccomp.syscalls[] | select(.names == ["rename"] or .names == ["renameat"] or .names == ["renameat2"])' "$pol_a" >/dev/null; then
    pass "learn: server-filesystem over list/read/write: $(jq '.seccomp.syscalls | length' "$pol_a") seccomp rules, $(jq '.landlock.pathBeneath | length' "$pol_a") Landlock rules, $(jq '.runs[0].notifications' "$pol_a") calls seen"
  else
    fail "learn: server-filesystem session (rc=$rc)" "${out//$'\n'/ | }" "$(head -c 3000 "$pol_a" 2>&1)"
  fi
  out=$(cd "$work" && timeout 180 node client.mjs STEPS:list,read,write "${learn_cmd[@]}" --policy "$pol_a" --audit-summary "$work/bundle" 2>&1)
  rc=$?
  if [ $rc -eq 0 ] && grep -q "$no_denial" <<<"$out"; then
    pass "learn: the same session under the learned policy passes, no denial"
  else
    fail "learn: replay under the learned policy (rc=$rc)" "${out//$'\n'/ | }"
  fi
  rm -f "$audit"
  out=$(cd "$work" && timeout 180 node client.mjs STEPS:deny-other,deny-move "${learn_cmd[@]}" --policy "$pol_a" --audit-log "$audit" --audit-summary "$work/bundle" 2>&1)
  rc=$?
  if [ $rc -eq 0 ] &&
    jq -se 'map(select(.event == "file" and .path == "/data/b/secret.txt" and .layer == "learned policy" and .errno == 13)) | length == 1' "$audit" >/dev/null &&
    jq -se "$syscall_seen" "$audit" >/dev/null &&
    grep -q 'allowed by this policy line: "landlock": {"pathBeneath": \[{"allowedAccess": \["read_file"\], "parent": \["/data/b"\]}\]}' <<<"$out"; then
    pass "learn: calls the learning session never made are denied, each with an audit record (/data/b/secret.txt, $(jq -rs 'map(select(.event == "syscall"))[0].syscall // "seccomp: enforced, cannot be shown without CAP_AUDIT_READ"' "$audit"))"
  else
    fail "learn: new path and syscall denied and audited (rc=$rc)" "${out//$'\n'/ | }" "$(cat "$audit" 2>&1)"
  fi
  out=$(cd "$work" && timeout 180 node client.mjs STEPS:mkdir-move "${learn_cmd[@]}" --learn "$pol_b" "$work/bundle" 2>&1) &&
    alone=$(cd "$work" && timeout 180 node client.mjs STEPS:mkdir-move "${learn_cmd[@]}" --policy "$pol_a" "$work/bundle" 2>&1)
  alone_rc=$?
  "$CODEMODE" learn --merge "$pol_a" "$pol_b" -o "$pol_ab" &&
    out_a=$(cd "$work" && timeout 180 node client.mjs STEPS:list,read,write "${learn_cmd[@]}" --policy "$pol_ab" "$work/bundle" 2>&1) &&
    out_b=$(cd "$work" && timeout 180 node client.mjs STEPS:mkdir-move "${learn_cmd[@]}" --policy "$pol_ab" "$work/bundle" 2>&1)
  rc=$?
  diffs=$("$CODEMODE" policy diff "$pol_a" "$pol_ab")
  if [ $rc -eq 0 ] && [ $alone_rc -ne 0 ] && [ "$(jq '.runs | length' "$pol_ab")" = 2 ] && grep -q '^seccomp: + rename' <<<"$diffs"; then
    pass "learn: two sessions covering different tools, merged: both pass (the second alone fails under the first's policy; diff: $(wc -l <<<"$diffs") lines)"
  else
    fail "learn: merge (rc=$rc, second alone rc=$alone_rc)" "${out//$'\n'/ | }" "${alone:-}" "${out_a:-}" "${out_b:-}" "$diffs"
  fi
  line=$("$CODEMODE_RUN" --explain --policy "$pol_ab" "$work/bundle" 2>&1 | grep '^policy: .*seccomp: allows')
  learned=$(sed -E 's/.*allows ([0-9]+) syscalls.*/\1/' <<<"$line")
  docker_n=$(sed -E "s/.*Docker's default profile: ([0-9]+).*/\1/" <<<"$line")
  if [ -n "$learned" ] && [ "$learned" -lt "$docker_n" ]; then
    pass "learn: the learned seccomp profile allows $learned syscalls, Docker's default $docker_n"
  else
    fail "learn: learned profile size" "$line"
  fi
}

# 8-13: images, state and --host (issue 17); as root and as the rootless user.
: "${CODEMODE_IMAGE:=$(dirname "$CODEMODE")/codemode-image}"
store=$work/store
fs_js=/app/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js
mem_js=/app/node_modules/@modelcontextprotocol/server-memory/dist/index.js
# The image: the node bundle's rootfs as one layer, the filesystem server as its command.
printf '{"gzip":false,"images":[{"tag":"mcp","platforms":[{"arch":"amd64","layers":[[{"from_dir":"%s"}]],"config":{"Cmd":["/usr/bin/node","%s","/data"],"Env":["PATH=/usr/bin:/bin","CODEMODE_TEST_CONTAINER=%s"]}}]}]}' \
  "$work/bundle/rootfs" "$fs_js" "$CM_TEST_TOKEN" >"$work/image.json"
python3 "$repo/tests/image/mkimage.py" "$work/image.json" "$work/layout" >/dev/null
img_cmd=("$CODEMODE_RUN" --root "$state" --store "$store" --timeout 120 --mount "$data:/data:ro" --image "oci:$work/layout:mcp")
out=$(cd "$work" && timeout 180 node client.mjs CHECKS "${img_cmd[@]}" 2>&1)
rc=$?
if [ $rc -eq 0 ]; then
  pass "image: the filesystem server from an OCI image (codemode-run --image, profile mcp)"
else
  fail "image: filesystem server (rc=$rc)" "${out//$'\n'/ | }"
fi
out=$(cd "$work" && timeout 180 node client.mjs MEMORY-WRITE "${img_cmd[@]}" -- /usr/bin/node "$mem_js" 2>&1)
if [ $? -ne 0 ] && grep -q "codemode-run: the server could not write /app/node_modules/@modelcontextprotocol/server-memory/dist/memory.json" <<<"$out" &&
  grep -q -- "--state DIR:/app/node_modules/@modelcontextprotocol/server-memory/dist" <<<"$out"; then
  pass "image: server-memory without --state: its write fails and codemode-run names the path and --state"
else
  fail "image: server-memory EROFS explained" "${out//$'\n'/ | }"
fi
mem_state=$work/memory-state
mem_cmd=("${img_cmd[@]}" --state "$mem_state:/state" --env MEMORY_FILE_PATH=/state/memory.json -- /usr/bin/node "$mem_js")
out=$(cd "$work" && timeout 180 node client.mjs MEMORY-WRITE "${mem_cmd[@]}" 2>&1) &&
  out2=$(cd "$work" && timeout 180 node client.mjs MEMORY-READ "${mem_cmd[@]}" 2>&1)
rc=$?
if [ $rc -eq 0 ] && grep -q codemode-test-entity "$mem_state/memory.json"; then
  pass "image: server-memory with --state: a second session reads what the first stored ($mem_state/memory.json)"
else
  fail "image: server-memory with --state (rc=$rc)" "${out//$'\n'/ | }" "${out2:-}"
fi
npx_cache=$cache/npx-home/.npm
if [ "$(id -u)" -ne 0 ] && [ -d "$npx_cache/_npx" ]; then
  # A user's own ~/.npm, as the README's entry has it: root's cache (deps.sh) copied, so that
  # its files are the user's (an overlay can copy up only files whose owner is mapped).
  cp -a "$npx_cache" "$work/npm-cache" && npx_cache=$work/npm-cache
fi
if [ ! -d "$npx_cache/_npx" ]; then
  fail "--host npx: no warm npm cache at $npx_cache (tests/mcp/deps.sh makes it)"
  fail "--host npx: server-memory (no warm cache)"
else
  host_cmd=("$CODEMODE_RUN" --root "$state" --timeout 120 --host --mount "$npx_cache:/root/.npm:cow"
    --env npm_config_offline=true --env npm_config_update_notifier=false
    --env "CODEMODE_TEST_CONTAINER=$CM_TEST_TOKEN")
  before=$(find "$npx_cache" | wc -l)
  out=$(cd "$work" && timeout 180 node client.mjs CHECKS "${host_cmd[@]}" --mount "$data:/data:ro" -- \
    npx -y @modelcontextprotocol/server-filesystem /data 2>&1)
  rc=$?
  if [ $rc -eq 0 ] && [ "$(find "$npx_cache" | wc -l)" = "$before" ]; then
    pass "--host: npx -y @modelcontextprotocol/server-filesystem from a warm cache (:cow, the cache unchanged)"
  else
    fail "--host npx filesystem server (rc=$rc)" "${out//$'\n'/ | }"
  fi
  host_state=$work/host-memory
  out=$(cd "$work" && MEMORY_ENTITY=via-npx timeout 180 node client.mjs MEMORY-WRITE "${host_cmd[@]}" \
    --state "$host_state:/state" --env MEMORY_FILE_PATH=/state/memory.json -- npx -y @modelcontextprotocol/server-memory 2>&1)
  rc=$?
  if [ $rc -eq 0 ] && grep -q via-npx "$host_state/memory.json"; then
    pass "--host: npx -y @modelcontextprotocol/server-memory with --state"
  else
    fail "--host npx server-memory (rc=$rc)" "${out//$'\n'/ | }"
  fi
fi
# 13: Ctrl-C. The server is node (no SIGINT handler of its own beyond the default), pid 2 under
# codemode-run's init.
"${img_cmd[@]}" --grace 60 --id "$id-13" <"$work/stdin.fifo" >/dev/null 2>"$work/ctrlc.err" 7>&- &
runpid=$!
exec 7<>"$work/stdin.fifo"
for _ in $(seq 100); do [ -e "$state/$id-13/state.json" ] && break; sleep 0.2; done
sleep 1
kill -INT "$runpid"
rc=0
wait "$runpid" || rc=$?
exec 7>&-
if [ "$rc" -eq 130 ] && left=$(nothing_left "$id-13"); then
  pass "Ctrl-C stops the node server at once: exit 130, no SIGKILL after the grace period"
else
  fail "Ctrl-C (rc=$rc, expected 130)" "$(tr '\n' '|' <"$work/ctrlc.err")" "${left:-}"
fi

wrap_cases
learn_cases
[ $failed -eq 0 ]
