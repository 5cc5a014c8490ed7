#!/usr/bin/env bats
# Egress by host name as an unprivileged user (issue 16, "rootless too"): tests/rootless/run.sh
# (pass 4) brings up the egress suite's test internet (tests/egress/lab.bash: two network
# namespaces, HTTPS/HTTP servers for api.allowed.test, plain.allowed.test and evil.test, dnsmasq)
# and runs this file as its test user inside the lab's "machine" namespace, so codemode-run, its
# container and codemode-broker are all the user's and every packet stays in the lab.
#   LAB_DNS  the lab's resolver     LAB_CA  its CA     LAB_DIR  its files (requests.log)
#   LAB_TOKEN  the API token the lab's servers want
#   EG_WORK  tests/egress/.work with the MCP SDK and server-gitlab installed by root (optional)
# The bundle is made here, as the user: busybox (sh, wget) plus curl and its libraries, the lab's
# CA as the image's trust store.

load ../lib/helpers

setup_file() {
  [ "$(id -u)" -ne 0 ] || {
    echo "tests/rootless/egress.bats runs as an unprivileged user (tests/rootless/run.sh)" >&2
    return 1
  }
  if [ -z "${LAB_DNS:-}" ] || [ ! -r "${LAB_CA:-}" ]; then
    echo "tests/rootless/egress.bats needs the egress lab (tests/rootless/run.sh pass 4)" >&2
    return 1
  fi
  export CODEMODE_RUN=${CODEMODE_RUN:-$(dirname "$CODEMODE")/codemode-run}
  local repo b=$BATS_FILE_TMPDIR/bundle
  repo=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  "$repo/rootfs-tools/make-busybox-bundle.sh" "$b" >/dev/null
  "$repo/rootfs-tools/make-closure-bundle.sh" "$(command -v curl)" "$BATS_FILE_TMPDIR/curl" >/dev/null
  # busybox's rootfs has no /lib: curl's merged-/usr links and its /usr tree go in as they are.
  cp -a "$BATS_FILE_TMPDIR/curl/rootfs"/lib* "$b/rootfs/"
  cp -a "$BATS_FILE_TMPDIR/curl/rootfs/usr/." "$b/rootfs/usr/"
  mkdir -p "$b/rootfs/etc/ssl/certs"
  cp "$LAB_CA" "$b/rootfs/etc/ssl/certs/ca-certificates.crt"
  # shellcheck source=rootfs-tools/lib.sh
  . "$repo/rootfs-tools/lib.sh"
  bundle_set_terminal "$b" false
  export EG_BUNDLE=$b
}

# Brokers of this user still running (a zombie has exited: this machine's pid 1 reaps late).
my_brokers() { ps -u "$(id -u)" -o pid=,stat=,comm= | awk '$3 == "codemode-broker" && $2 !~ /^Z/ { print $1 }'; }

setup() {
  TEST_DIR=$BATS_TEST_TMPDIR
  ROOT=$TEST_DIR/state
  AUDIT=$TEST_DIR/audit.log
  CID=cm-test-$CM_RUN_TAG-rleg$BATS_TEST_NUMBER
}

teardown() {
  local d
  for d in "$ROOT"/*/; do [ -d "$d" ] && "$CODEMODE" --root "$ROOT" delete --force "$(basename "$d")" 2>/dev/null; done
  # Every broker went with its container. One left is reported, then ended: the user is this
  # run's own, so its brokers are ours.
  local left
  left=$(my_brokers)
  [ -z "$left" ] || {
    echo "codemode-broker left running: $left"
    # shellcheck disable=SC2086 # one pid a word
    kill -9 $left 2>/dev/null
    return 1
  }
}

# egress FLAGS… -- CMD…: codemode-run --profile mcp as the user, with the lab's resolver and this
# test's audit log. $status, $output (the container's stdout), $stderr.
egress() {
  local flags=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do flags+=("$1"); shift; done
  shift
  # Without rules codemode-run refuses --dns-upstream (no broker resolves).
  [ ${#flags[@]} -eq 0 ] || flags+=(--dns-upstream "$LAB_DNS")
  run --separate-stderr timeout --kill-after=5 60 "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --profile mcp \
    --audit-log "$AUDIT" "${flags[@]}" "$EG_BUNDLE" -- "$@" </dev/null
  echo "# $output" >&3
  # shellcheck disable=SC2154 # set by run --separate-stderr
  echo "# stderr: $stderr" >&3
}

audit_count() { jq -c "select($1)" "$AUDIT" | wc -l; }

@test "rootless egress: curl reaches the allowed host over HTTPS through the proxy, audited" {
  egress --allow-host api.allowed.test -- /usr/bin/curl -sS -m 20 https://api.allowed.test/hello
  [ "$status" -eq 0 ]
  [ "$output" = "hello from api.allowed.test" ]
  [ "$(stat -c %u "$AUDIT")" = "$(id -u)" ]
  [ "$(audit_count '.event == "connect" and .via == "proxy" and .decision == "allow" and .host == "api.allowed.test"
        and .sni == "api.allowed.test" and .rule == "allow-host api.allowed.test:443" and .addr == "203.0.113.10"
        and .bytes_down > 0')" -eq 1 ]
}

@test "rootless egress: HTTPS without proxy variables is captured transparently (the DNS stub answers)" {
  egress --allow-host api.allowed.test -- /usr/bin/curl -sS -m 20 --noproxy '*' https://api.allowed.test/hello
  [ "$status" -eq 0 ]
  [ "$output" = "hello from api.allowed.test" ]
  [ "$(audit_count '.event == "dns" and .decision == "allow" and .host == "api.allowed.test" and .answers == "203.0.113.10"')" -eq 1 ]
  [ "$(audit_count '.via == "transparent" and .decision == "allow" and .sni == "api.allowed.test"')" -eq 1 ]
}

@test "rootless egress: plain HTTP to host:80 by curl (proxy) and busybox wget (transparent)" {
  egress --allow-host plain.allowed.test:80 -- /usr/bin/curl -sS -m 20 http://plain.allowed.test/hello
  [ "$status" -eq 0 ]
  [ "$output" = "hello from plain.allowed.test" ]
  egress --allow-host plain.allowed.test:80 -- /bin/wget -q -Y off -O - http://plain.allowed.test/hello
  [ "$status" -eq 0 ]
  [ "$output" = "hello from plain.allowed.test" ]
  [ "$(audit_count '.event == "connect" and .decision == "allow" and .via == "proxy" and .http_host == "plain.allowed.test"')" -eq 1 ]
  [ "$(audit_count '.event == "connect" and .decision == "allow" and .via == "transparent" and .http_host == "plain.allowed.test"')" -eq 1 ]
}

@test "rootless egress: a second request on the same connection naming another host is refused (issue 25)" {
  # curl keeps the connection to plain.allowed.test:80 alive and sends its second request on it,
  # with another Host: the broker decides each request, not only the connection's first.
  egress --allow-host plain.allowed.test:80 -- /usr/bin/curl -sS -m 20 --noproxy '*' http://plain.allowed.test/hello \
    --next -sS -m 20 --noproxy '*' -H 'Host: evil.test' http://plain.allowed.test/hello
  [ "${lines[0]}" = "hello from plain.allowed.test" ]
  [[ "${lines[1]}" == "codemode egress: the Host header names evil.test, not this connection's host plain.allowed.test" ]]
  [ "$(audit_count '.event == "connect" and .decision == "deny" and .via == "transparent" and .http_host == "evil.test"')" -eq 1 ]
  [ "$(audit_count '.event == "connect" and .decision == "allow" and .http_host == "plain.allowed.test"')" -eq 1 ]
  ! grep -q '"host": "evil.test"' "$LAB_DIR/requests.log"
}

@test "rootless egress: another host is refused (proxy 403, NXDOMAIN, raw address reset), audited, nothing reaches it" {
  egress --allow-host api.allowed.test -- /usr/bin/curl -sS -m 20 https://evil.test/hello
  [ "$status" -eq 56 ]
  [[ "$stderr" == *"403"* ]]
  egress --allow-host api.allowed.test -- /usr/bin/curl -sS -m 20 --noproxy '*' https://evil.test/hello
  [ "$status" -eq 6 ]
  # Its address given, no DNS: the only way out is the broker, which resets it.
  egress --allow-host api.allowed.test -- /usr/bin/curl -sS -m 20 --noproxy '*' --resolve evil.test:443:203.0.113.20 https://evil.test/hello
  [ "$status" -eq 35 ] || [ "$status" -eq 56 ]
  # The allowed name pinned to evil.test's address.
  egress --allow-host api.allowed.test -- /usr/bin/curl -sS -m 20 --noproxy '*' --resolve api.allowed.test:443:203.0.113.20 https://api.allowed.test/hello
  [ "$status" -eq 35 ] || [ "$status" -eq 56 ]
  [ "$(audit_count '.event == "connect" and .decision == "deny" and .via == "proxy" and .host == "evil.test"
        and .reason == "no rule allows this host and port"')" -eq 1 ]
  [ "$(audit_count '.event == "dns" and .decision == "deny" and .host == "evil.test" and .qtype == "A"')" -ge 1 ]
  [ "$(audit_count '.event == "connect" and .decision == "deny" and .via == "transparent" and .addr == "203.0.113.20"')" -eq 2 ]
  ! grep -q '"host": "evil.test"' "$LAB_DIR/requests.log"
}

@test "rootless egress: a secret bound to the allowed host is put in by the broker (TLS interception); the server sees the placeholder" {
  printf '%s\n' "$LAB_TOKEN" >"$TEST_DIR/token"
  # The broker checks the real host against the caller's trust store: here the lab's CA.
  export SSL_CERT_FILE=$LAB_CA
  local seen_before
  seen_before=$(grep -c "Bearer $LAB_TOKEN" "$LAB_DIR/requests.log" || true)
  egress --allow-host api.allowed.test --allow-host other.allowed.test --secret "GL_TOKEN=@$TEST_DIR/token" \
    --secret-host GL_TOKEN=api.allowed.test -- /bin/sh -c 'echo "$GL_TOKEN";
      /usr/bin/curl -sS -m 20 -H "Authorization: Bearer $GL_TOKEN" https://api.allowed.test/api/v4/projects; echo;
      /usr/bin/curl -sS -m 20 -H "Authorization: Bearer $GL_TOKEN" https://other.allowed.test/headers'
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = CODEMODE_SECRET_GL_TOKEN ]
  [[ "${lines[1]}" == *"seen with the real token"* ]]
  [[ "${lines[2]}" == *"Bearer CODEMODE_SECRET_GL_TOKEN"* ]]
  [ "$(grep -c "Bearer $LAB_TOKEN" "$LAB_DIR/requests.log")" -eq $((seen_before + 1)) ]
  [ "$(audit_count '.decision == "allow" and .intercepted == true and .secret == "GL_TOKEN" and .host == "api.allowed.test"')" -eq 1 ]
  [[ "$output" != *"$LAB_TOKEN"* ]]
  # The per-run CA and the container's trust store went with the state dir.
  [ -z "$(ls -A "$ROOT")" ]
}

@test "rootless egress: a bound host that echoes the secret hands back the placeholder (headers and body, split across reads), and a virtual host gets none" {
  printf '%s\n' "$LAB_TOKEN" >"$TEST_DIR/token"
  export SSL_CERT_FILE=$LAB_CA
  local masked=CODEMODE_SECRET_GL_TOKEN_____ seen_before
  seen_before=$(grep -c "Bearer $LAB_TOKEN" "$LAB_DIR/requests.log" || true)
  egress --allow-host api.allowed.test --allow-host other.allowed.test --secret "GL_TOKEN=@$TEST_DIR/token" \
    --secret-host GL_TOKEN=api.allowed.test -- /bin/sh -c '
      /usr/bin/curl -sS -m 20 -D - -H "Authorization: Bearer $GL_TOKEN" https://api.allowed.test/echo-chunked;
      /usr/bin/curl -sS -m 20 -H "Host: other.allowed.test" -H "Authorization: Bearer $GL_TOKEN" https://api.allowed.test/echo'
  [ "$status" -eq 0 ]
  [[ "$output" != *"$LAB_TOKEN"* ]]
  [[ "$output" == *"X-Echo: Bearer $masked"* ]]
  [[ "$output" == *"Authorization: Bearer $masked"* ]]
  [ "${lines[${#lines[@]} - 1]}" = "Authorization: Bearer CODEMODE_SECRET_GL_TOKEN" ]
  # The bound host got the value once (the echo); the virtual host's request only the placeholder.
  [ "$(grep -c "Bearer $LAB_TOKEN" "$LAB_DIR/requests.log")" -eq $((seen_before + 1)) ]
  [ "$(audit_count '.event == "request" and .http_host == "other.allowed.test" and .reason == "the Host header is not the bound host: no secret substituted"')" -eq 1 ]
}

@test "rootless egress: the MCP SDK client drives server-gitlab through codemode-run --allow-host, its token a placeholder" {
  [ -e "${EG_WORK:-}/mcp-client.mjs" ] || skip "the egress suite's npm packages are not installed (tests/egress/npm-install.sh)"
  local repo nb=$BATS_FILE_TMPDIR/node-bundle
  repo=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  # The egress suite's bundle (node, curl, python3, the test CA), made as the user.
  "$repo/tests/egress/make-bundle.sh" "$nb" "$LAB_CA" "$EG_WORK/node_modules" >/dev/null
  local server=/app/node_modules/@modelcontextprotocol/server-gitlab/dist/index.js
  export GITLAB_API_URL=https://api.allowed.test/api/v4 GITLAB_PERSONAL_ACCESS_TOKEN=$LAB_TOKEN SSL_CERT_FILE=$LAB_CA
  local cmd=("$CODEMODE_RUN" --root "$ROOT" --id "$CID" --profile mcp --timeout 100 --dns-upstream "$LAB_DNS"
             --audit-log "$AUDIT" --allow-host api.allowed.test --env GITLAB_API_URL
             --secret GITLAB_PERSONAL_ACCESS_TOKEN --secret-host GITLAB_PERSONAL_ACCESS_TOKEN=api.allowed.test
             "$nb" -- /usr/bin/node "$server")
  run timeout 120 node "$EG_WORK/mcp-client.mjs" ALLOWED "${cmd[@]}"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"ok tools/call search_repositories reached the API with the real token"* ]]
  [ "$(audit_count '.decision == "allow" and .intercepted == true and .secret == "GITLAB_PERSONAL_ACCESS_TOKEN" and .host == "api.allowed.test"')" -ge 1 ]
  # The same server pointed at a host the allowlist does not have: refused, quickly, audited.
  export GITLAB_API_URL=https://evil.test/api/v4
  run timeout 120 node "$EG_WORK/mcp-client.mjs" REFUSED "${cmd[@]}"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"ok tools/call search_repositories refused"* ]]
  [ "$(audit_count '.decision == "deny" and .host == "evil.test"')" -ge 1 ]
  ! grep -q '"host": "evil.test"' "$LAB_DIR/requests.log"
}

@test "rootless egress: the container has only lo; the broker runs as the user, without capabilities, non-dumpable" {
  "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --profile mcp --dns-upstream "$LAB_DNS" --allow-host api.allowed.test \
    "$EG_BUNDLE" -- /bin/sh -c 'cat /proc/net/dev; readlink /proc/self/ns/net; sleep 30' </dev/null >"$TEST_DIR/out" 2>"$TEST_DIR/err" &
  local run_pid=$! i
  for i in $(seq 100); do [ -e "$ROOT/$CID/supervisor" ] && grep -q 'net:' "$TEST_DIR/out" && break; sleep 0.1; done
  cat "$TEST_DIR/out" "$TEST_DIR/err"
  [ -e "$ROOT/$CID/supervisor" ]
  local broker
  broker=$(cut -d' ' -f1 "$ROOT/$CID/supervisor")
  [ "$(awk '/^Uid:/ { print $2 $3 $4 $5 }' "/proc/$broker/status")" = "$(id -u)$(id -u)$(id -u)$(id -u)" ]
  grep -q '^CapEff:[[:space:]]*0000000000000000$' "/proc/$broker/status"
  grep -q '^NoNewPrivs:[[:space:]]*1$' "/proc/$broker/status"
  # Non-dumpable: even its own user cannot read its memory, environment or namespaces.
  run cat "/proc/$broker/environ"
  [ "$status" -ne 0 ]
  run readlink "/proc/$broker/ns/net"
  [ "$status" -ne 0 ]
  # The container is in its own network namespace, with lo only.
  grep -q 'net:\[' "$TEST_DIR/out"
  [ "$(grep 'net:\[' "$TEST_DIR/out")" != "$(readlink /proc/self/ns/net)" ]
  [ "$(grep -c ':' "$TEST_DIR/out")" -eq 2 ] # the header's "face |" has none; "lo:" and "net:[…]"
  grep -q '^ *lo:' "$TEST_DIR/out"
  # codemode-run SIGKILLed: its watcher deletes the container, and the broker goes with it.
  kill -9 "$run_pid"
  wait "$run_pid" || true
  for i in $(seq 100); do [ ! -e "$ROOT/$CID" ] && ! kill -0 "$broker" 2>/dev/null && break; sleep 0.1; done
  [ ! -e "$ROOT/$CID" ]
  ! kill -0 "$broker" 2>/dev/null
}

@test "rootless egress: codemode create killed at any step leaves no broker; delete stops a recorded one" {
  local b=$TEST_DIR/bundle point
  cp -a "$EG_BUNDLE" "$b"
  bundle_set_args "$b" /bin/sleep 60
  for point in state-dir cgroup fork ready state; do
    rm -f "$TEST_DIR/create.err"
    CODEMODE_TEST_PAUSE_AT=$point "$CODEMODE" --root "$ROOT" --profile mcp --allow-host api.allowed.test \
      --dns-upstream "$LAB_DNS" create --bundle "$b" "$CID-$point" </dev/null >/dev/null 2>"$TEST_DIR/create.err" &
    local pid=$! i
    for i in $(seq 100); do grep -q "paused at $point" "$TEST_DIR/create.err" 2>/dev/null && break; sleep 0.1; done
    cat "$TEST_DIR/create.err"
    grep -q "paused at $point" "$TEST_DIR/create.err"
    local broker=""
    [ -e "$ROOT/$CID-$point/supervisor" ] && broker=$(cut -d' ' -f1 "$ROOT/$CID-$point/supervisor")
    kill -9 "$pid"
    wait "$pid" || true
    for i in $(seq 50); do [ -z "$(my_brokers)" ] && break; sleep 0.1; done
    if [ "$point" = state ]; then
      # Recorded (state.json) with its broker: that one lives as long as the container.
      [ -n "$broker" ] && kill -0 "$broker"
    else
      # Killed before the container was recorded: its init and its broker die with create.
      [ -z "$(my_brokers)" ]
    fi
    "$CODEMODE" --root "$ROOT" delete --force "$CID-$point"
    [ -z "$(my_brokers)" ]
    [ ! -e "$ROOT/$CID-$point" ]
  done
}

@test "rootless egress: nothing is left behind (state in \$XDG_RUNTIME_DIR/codemode, no broker)" {
  [ -n "${XDG_RUNTIME_DIR:-}" ]
  run --separate-stderr timeout 60 "$CODEMODE_RUN" --profile mcp --dns-upstream "$LAB_DNS" --audit-log "$AUDIT" \
    --allow-host api.allowed.test "$EG_BUNDLE" -- /usr/bin/curl -sS -m 20 https://api.allowed.test/hello </dev/null
  echo "# $output" >&3
  echo "# stderr: $stderr" >&3
  [ "$status" -eq 0 ]
  [ "$output" = "hello from api.allowed.test" ]
  [ -z "$(ls -A "$XDG_RUNTIME_DIR/codemode")" ]
  [ -z "$(my_brokers)" ]
  [ -z "$(find /tmp "$TMPDIR" -maxdepth 1 -name 'codemode*' ! -name 'codemode-run-scratch.*' -user "$(id -u)")" ]
  [ "$(audit_count '.event == "connect" and .decision == "allow"')" -eq 1 ]
}

@test "rootless egress: without --allow-host the same requests go nowhere and no broker starts" {
  # The control: from where codemode-run runs (the lab's "machine"), the host is reachable.
  run curl -sS -m 10 --cacert "$LAB_CA" --noproxy '*' --resolve api.allowed.test:443:203.0.113.10 https://api.allowed.test/hello
  [ "$status" -eq 0 ]
  [ "$output" = "hello from api.allowed.test" ]
  egress -- /usr/bin/curl -sS -m 10 https://api.allowed.test/hello
  [ "$status" -ne 0 ] && [ "$status" -ne 28 ]
  egress -- /usr/bin/curl -sS -m 10 --noproxy '*' --resolve api.allowed.test:443:203.0.113.10 https://api.allowed.test/hello
  [ "$status" -ne 0 ] && [ "$status" -ne 28 ]
  [ "$(audit_count '.event == "connect" or .event == "dns"')" -eq 0 ]
}

@test "rootless egress: the same with codemode-run's own user namespace (--ephemeral; --host, where it comes before the broker)" {
  egress --ephemeral --allow-host api.allowed.test -- /usr/bin/curl -sS -m 20 https://api.allowed.test/hello
  [ "$status" -eq 0 ]
  [ "$output" = "hello from api.allowed.test" ]
  egress --ephemeral --allow-host api.allowed.test -- /usr/bin/curl -sS -m 20 --noproxy '*' https://api.allowed.test/hello
  [ "$status" -eq 0 ]
  [ "$output" = "hello from api.allowed.test" ]
  egress --ephemeral --allow-host api.allowed.test -- /usr/bin/curl -sS -m 10 https://evil.test/
  [ "$status" -ne 0 ]
  # --host: the host's own curl, the lab's CA given to it.
  run --separate-stderr timeout --kill-after=5 60 "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --profile mcp \
    --audit-log "$AUDIT" --allow-host api.allowed.test --dns-upstream "$LAB_DNS" --mount "$LAB_CA:/lab-ca.crt" \
    --host -- curl -sS -m 20 --cacert /lab-ca.crt https://api.allowed.test/hello </dev/null
  echo "# $output / $stderr" >&3
  [ "$status" -eq 0 ]
  [ "$output" = "hello from api.allowed.test" ]
  [ "$(audit_count '.decision == "allow" and .host == "api.allowed.test"')" -ge 3 ]
  [ -z "$(find /tmp -maxdepth 1 -name 'codemode-run.*' -user "$(id -u)")" ]
}
