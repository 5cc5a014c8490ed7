#!/usr/bin/env bats
# The egress allowlist through Docker (issue 16): a private dockerd running inside the lab's
# "machine" namespace (lab.bash, tests/docker/dockerd.bash), codemode registered as
# "codemode-args" with runtimeArgs ["--profile=mcp", "--allow-host=api.allowed.test", …]. The
# shim passes them to every codemode call; create starts the container's broker, which lives
# exactly as long as the container.

load ../lib/helpers
load lab

setup_file() {
  command -v dockerd >/dev/null && command -v containerd >/dev/null && command -v docker >/dev/null ||
    skip "dockerd/containerd/docker not installed (tests/docker/deps.sh installs them)"
  lab_up "$BATS_FILE_TMPDIR/lab"
  "$BATS_TEST_DIRNAME/npm-install.sh"
  local b=$BATS_FILE_TMPDIR/bundle
  "$BATS_TEST_DIRNAME/make-bundle.sh" "$b" "$LAB_CA" "$BATS_TEST_DIRNAME/.work/node_modules"
  cp "$BATS_TEST_DIRNAME/mcp-client.mjs" "$BATS_TEST_DIRNAME/.work/mcp-client.mjs"
  export DK_AUDIT=$BATS_FILE_TMPDIR/docker-audit.log
  export CM_REPO
  # A short path: containerd's sockets live under the exec root (108-byte limit).
  export DK_BASE
  DK_BASE=$(mktemp -d /tmp/cm-egdk.XXXXXX)
  # dockerd (and so containerd, the shims, codemode and its brokers) in the lab's namespace.
  DK_RUNTIME_ARGS=$(jq -nc --arg dns "$LAB_DNS" --arg audit "$DK_AUDIT" \
    '["--profile=mcp", "--allow-host=api.allowed.test", "--dns-upstream=" + $dns, "--audit-log=" + $audit]')
  export DK_RUNTIME_ARGS
  nsenter --net="/run/netns/$LAB_NET" bash -c '. "$CM_REPO/tests/docker/dockerd.bash" && dockerd_start "$DK_BASE/d"' >&2
  export DK_DIR=$DK_BASE/d DOCKER_HOST=unix://$DK_BASE/d/docker.sock DOCKER_CONFIG=$DK_BASE/d/config
  tar -C "$b/rootfs" -c . | docker import -c 'ENV PATH=/usr/bin:/bin' \
    -c 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
    -c 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' - cm-egress >/dev/null
}

teardown_file() {
  if [ -n "${DK_DIR:-}" ]; then
    . "$CM_REPO/tests/docker/dockerd.bash"
    dockerd_stop >&2
    rm -rf "$DK_BASE"
  fi
  lab_down
}

setup() {
  TEST_DIR=$BATS_TEST_TMPDIR
  NAME=cm-egdk-$$-$BATS_TEST_NUMBER
}

# Docker removes its containers (--rm, docker rm); what this file checks it checks in the tests
# (no broker left). Not helpers' cm_teardown: it looks for processes by a state root we do not
# have here, and would take another suite's dockerd for ours.
teardown() {
  docker rm -f "$NAME" "$NAME-2" >/dev/null 2>&1 || true
}

# drun CMD…: the command in a --rm container of the egress image under codemode-args.
drun() {
  run timeout 120 docker run --rm -i --runtime=codemode-args --network none --name "$NAME" \
    -e "CODEMODE_TEST_CONTAINER=$CM_TEST_TOKEN" cm-egress "$@"
  echo "# $output" >&3
}

audit_count() { jq -c "select($1)" "$DK_AUDIT" | wc -l; }

@test "docker: Node 20 fetch, https.get, curl (proxy and transparent) and urllib reach the allowed host" {
  drun /usr/bin/node /clients/fetch.mjs https://api.allowed.test/hello
  [ "$status" -eq 0 ]
  [ "$output" = "200 hello from api.allowed.test" ]
  drun /usr/bin/node /clients/https_get.cjs https://api.allowed.test/hello
  [ "$output" = "200 hello from api.allowed.test" ]
  drun /usr/bin/curl -sS -m 20 https://api.allowed.test/hello
  [ "$output" = "hello from api.allowed.test" ]
  drun /usr/bin/curl -sS -m 20 --noproxy '*' https://api.allowed.test/hello
  [ "$output" = "hello from api.allowed.test" ]
  drun /usr/bin/python3 /clients/urlopen.py https://api.allowed.test/hello
  [ "$output" = "200 hello from api.allowed.test" ]
}

@test "docker: another host, a raw IP and UDP are refused at once; DNS says NXDOMAIN" {
  drun /usr/bin/node /clients/fetch.mjs https://evil.test/hello
  [[ "$output" == "ERROR ENOTFOUND"* ]]
  drun /usr/bin/curl -sS -m 20 https://evil.test/hello
  [ "$status" -eq 56 ]
  drun /usr/bin/curl -sS -m 20 -k --noproxy '*' https://203.0.113.20/hello
  [ "$status" -eq 35 ] || [ "$status" -eq 56 ]
  drun /usr/bin/python3 /clients/udp.py 203.0.113.20 9999
  [ "$output" = "ERROR ECONNREFUSED" ]
  drun /usr/bin/python3 /clients/resolve.py evil.test
  [ "$output" = "RCODE 3" ]
  drun /usr/bin/python3 /clients/resolve.py private.allowed.test
  [ "$output" = "RCODE 3" ]
  ! grep -q '"host": "evil.test"' "$LAB_DIR/requests.log"
}

@test "docker: the runtimeArgs' audit log records each decision with the container's id" {
  docker run -d --runtime=codemode-args --network none --name "$NAME" -e "CODEMODE_TEST_CONTAINER=$CM_TEST_TOKEN" \
    cm-egress /usr/bin/node -e 'fetch("https://api.allowed.test/hello").then(() => fetch("https://evil.test/")).catch(() => {})'
  local id
  id=$(docker inspect -f '{{.Id}}' "$NAME")
  docker wait "$NAME"
  docker rm "$NAME"
  [ "$(audit_count ".id == \"$id\" and .event == \"connect\" and .decision == \"allow\" and .rule == \"allow-host api.allowed.test:443\"")" -eq 1 ]
  [ "$(audit_count ".id == \"$id\" and .event == \"dns\" and .decision == \"deny\" and .host == \"evil.test\"")" -ge 1 ]
}

@test "docker: the broker lives exactly as long as the container" {
  local before
  before=$(live_brokers | wc -l)
  docker run -d --runtime=codemode-args --network none --name "$NAME" -e "CODEMODE_TEST_CONTAINER=$CM_TEST_TOKEN" \
    cm-egress /usr/bin/node -e 'setTimeout(() => {}, 120000)'
  local i
  for i in $(seq 50); do [ "$(live_brokers | wc -l)" -gt "$before" ] && break; sleep 0.1; done
  [ "$(live_brokers | wc -l)" -eq $((before + 1)) ]
  # Its init's exit ends it (docker kill), and docker rm leaves nothing.
  docker kill "$NAME"
  for i in $(seq 50); do [ "$(live_brokers | wc -l)" -le "$before" ] && break; sleep 0.1; done
  [ "$(live_brokers | wc -l)" -le "$before" ]
  docker rm "$NAME"
  # Again, removed while running (delete --force stops it).
  docker run -d --runtime=codemode-args --network none --name "$NAME" -e "CODEMODE_TEST_CONTAINER=$CM_TEST_TOKEN" \
    cm-egress /usr/bin/node -e 'setTimeout(() => {}, 120000)'
  docker rm -f "$NAME"
  for i in $(seq 50); do [ "$(live_brokers | wc -l)" -le "$before" ] && break; sleep 0.1; done
  [ "$(live_brokers | wc -l)" -le "$before" ]
}

@test "docker: the MCP SDK client drives server-gitlab in docker run -i --rm --runtime=codemode-args" {
  local server=/app/node_modules/@modelcontextprotocol/server-gitlab/dist/index.js
  : >"$LAB_DIR/requests.log"
  run timeout 180 node "$BATS_TEST_DIRNAME/.work/mcp-client.mjs" ALLOWED docker -H "$DOCKER_HOST" run -i --rm \
    --runtime=codemode-args --network none --name "$NAME" -e "CODEMODE_TEST_CONTAINER=$CM_TEST_TOKEN" \
    -e GITLAB_API_URL=https://api.allowed.test/api/v4 -e "GITLAB_PERSONAL_ACCESS_TOKEN=$LAB_TOKEN" \
    cm-egress /usr/bin/node "$server"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"ok tools/call search_repositories reached the API with the real token"* ]]
  run timeout 180 node "$BATS_TEST_DIRNAME/.work/mcp-client.mjs" REFUSED docker -H "$DOCKER_HOST" run -i --rm \
    --runtime=codemode-args --network none --name "$NAME-2" -e "CODEMODE_TEST_CONTAINER=$CM_TEST_TOKEN" \
    -e GITLAB_API_URL=https://evil.test/api/v4 -e "GITLAB_PERSONAL_ACCESS_TOKEN=$LAB_TOKEN" \
    cm-egress /usr/bin/node "$server"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"ok tools/call search_repositories refused"* ]]
  ! grep -q '"host": "evil.test"' "$LAB_DIR/requests.log"
}
