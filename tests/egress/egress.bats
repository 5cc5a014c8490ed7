#!/usr/bin/env bats
# The egress allowlist through codemode-run (issue 16), against a test internet inside network
# namespaces this file makes (lab.bash): HTTPS for api.allowed.test, other.allowed.test and
# evil.test, plain HTTP, a DNS server, a private and a metadata address with real servers behind
# them, a rebinding DNS server. Clients: curl with and without the proxy variables, Node 20's
# fetch (no proxy support: transparent capture) and https.get, Python's urllib (proxy).

load ../lib/helpers
load lab
load suite

@test "curl with the proxy variables reaches the allowed host through the HTTP proxy" {
  egress --allow-host api.allowed.test -- /usr/bin/curl -sS -m 20 https://api.allowed.test/hello
  [ "$status" -eq 0 ]
  [ "$output" = "hello from api.allowed.test" ]
  [ "$(audit_count '.event == "connect" and .via == "proxy" and .decision == "allow" and .host == "api.allowed.test"
        and .sni == "api.allowed.test" and .rule == "allow-host api.allowed.test:443" and .addr == "203.0.113.10"
        and .bytes_down > 0 and .bytes_up > 0 and .duration_ms >= 0')" -eq 1 ]
}

@test "curl without proxy variables is captured transparently" {
  egress --allow-host api.allowed.test -- /usr/bin/curl -sS -m 20 --noproxy '*' https://api.allowed.test/hello
  [ "$status" -eq 0 ]
  [ "$output" = "hello from api.allowed.test" ]
  [ "$(audit_count '.via == "dns" and .host == "api.allowed.test" and .qtype == "A" and .answers == "203.0.113.10"')" -eq 1 ]
  [ "$(audit_count '.via == "transparent" and .decision == "allow" and .sni == "api.allowed.test" and .rule == "allow-host api.allowed.test:443"')" -eq 1 ]
}

@test "Node 20 fetch (no proxy support) and https.get reach the allowed host" {
  egress --allow-host api.allowed.test -- /usr/bin/node /clients/fetch.mjs https://api.allowed.test/hello
  [ "$status" -eq 0 ]
  [ "$output" = "200 hello from api.allowed.test" ]
  egress --allow-host api.allowed.test -- /usr/bin/node /clients/https_get.cjs https://api.allowed.test/hello
  [ "$status" -eq 0 ]
  [ "$output" = "200 hello from api.allowed.test" ]
  [ "$(audit_count '.via == "transparent" and .decision == "allow"')" -eq 2 ]
}

@test "Python urllib reaches the allowed host (through the proxy, as HTTPS_PROXY says)" {
  egress --allow-host api.allowed.test -- /usr/bin/python3 /clients/urlopen.py https://api.allowed.test/hello
  [ "$status" -eq 0 ]
  [ "$output" = "200 hello from api.allowed.test" ]
  [ "$(audit_count '.via == "proxy" and .decision == "allow" and .host == "api.allowed.test"')" -eq 1 ]
}

@test "plain HTTP to an allowed host:80, through the proxy and transparently" {
  egress --allow-host plain.allowed.test:80 -- /usr/bin/curl -sS -m 20 http://plain.allowed.test/hello
  [ "$status" -eq 0 ]
  [ "$output" = "hello from plain.allowed.test" ]
  egress --allow-host plain.allowed.test:80 -- /usr/bin/node /clients/fetch.mjs http://plain.allowed.test/hello
  [ "$status" -eq 0 ]
  [ "$output" = "200 hello from plain.allowed.test" ]
  [ "$(audit_count '.event == "connect" and .decision == "allow" and .http_host == "plain.allowed.test"')" -eq 2 ]
  # Port 443 of the same host is not allowed.
  egress --allow-host plain.allowed.test:80 -- /usr/bin/curl -sS -m 20 https://plain.allowed.test/hello
  [ "$status" -eq 56 ] # CONNECT refused with 403
}

@test "another host is refused at once by every client (never a timeout)" {
  # curl through the proxy: 403 from the broker.
  egress --allow-host api.allowed.test -- /usr/bin/curl -sS -m 20 https://evil.test/hello
  [ "$status" -eq 56 ]
  [[ "$stderr" == *"403"* ]]
  # curl without proxy: the stub says NXDOMAIN.
  egress --allow-host api.allowed.test -- /usr/bin/curl -sS -m 20 --noproxy '*' https://evil.test/hello
  [ "$status" -eq 6 ]
  # ... and with the address given (no DNS at all): the connection is reset.
  egress --allow-host api.allowed.test -- /usr/bin/curl -sS -m 20 --noproxy '*' --resolve evil.test:443:203.0.113.20 https://evil.test/hello
  [ "$status" -eq 35 ] || [ "$status" -eq 56 ]
  egress --allow-host api.allowed.test -- /usr/bin/node /clients/fetch.mjs https://evil.test/hello
  [ "$status" -eq 1 ]
  [[ "$output" == "ERROR ENOTFOUND"* ]]
  egress --allow-host api.allowed.test -- /usr/bin/node /clients/https_get.cjs https://evil.test/hello
  [[ "$output" == "ERROR ENOTFOUND"* ]]
  egress --allow-host api.allowed.test -- /usr/bin/python3 /clients/urlopen.py https://evil.test/hello
  [ "$status" -eq 1 ]
  [[ "$output" == *"403 Forbidden"* ]]
  [ "$(audit_count '.event == "connect" and .decision == "deny" and .host == "evil.test" and .reason == "no rule allows this host and port"')" -eq 3 ]
  [ "$(audit_count '.event == "dns" and .decision == "deny" and .host == "evil.test" and .qtype == "A"')" -ge 3 ]
  # Nothing reached evil.test.
  ! grep -q '"host": "evil.test"' "$LAB_DIR/requests.log"
}

@test "a raw-IP connect is refused, and so is an allowed name pinned to another address" {
  # No name at all (an IP URL: no SNI), transparent and through the proxy.
  egress --allow-host api.allowed.test -- /usr/bin/curl -sS -m 20 -k --noproxy '*' https://203.0.113.10/hello
  [ "$status" -eq 35 ] || [ "$status" -eq 56 ]
  egress --allow-host api.allowed.test -- /usr/bin/curl -sS -m 20 -k https://203.0.113.10/hello
  [ "$status" -ne 0 ] && [ "$status" -ne 28 ]
  egress --allow-host api.allowed.test -- /usr/bin/node /clients/fetch.mjs https://203.0.113.20/hello
  [ "$status" -eq 1 ]
  [[ "$output" != *TIMEOUT* && "$output" != *Timeout* ]]
  [ "$(audit_count '.decision == "deny" and (.reason | startswith("a raw address"))')" -eq 3 ]
  # The allowed name, but at evil.test's address (its SNI is allowed, the address is not one the
  # stub gave out for it): domain fronting / pinning refused.
  egress --allow-host api.allowed.test -- /usr/bin/curl -sS -m 20 --noproxy '*' --resolve api.allowed.test:443:203.0.113.20 https://api.allowed.test/hello
  [ "$status" -eq 35 ] || [ "$status" -eq 56 ]
  [ "$(audit_count '.decision == "deny" and .sni == "api.allowed.test" and .addr == "203.0.113.20"
        and (.reason | contains("not an address the DNS stub gave out"))')" -eq 1 ]
  # A TLS SNI for another host inside an allowed CONNECT tunnel.
  egress --allow-host api.allowed.test -- /usr/bin/curl -sS -m 20 -p -x http://127.0.0.1:3128 --connect-to evil.test:443:api.allowed.test:443 https://evil.test/hello
  [ "$status" -ne 0 ] && [ "$status" -ne 28 ]
}

@test "UDP other than DNS goes nowhere; DNS to any server is answered by the stub" {
  egress --allow-host api.allowed.test -- /usr/bin/python3 /clients/udp.py 203.0.113.20 9999
  [ "$output" = "ERROR ECONNREFUSED" ]
  egress --allow-host api.allowed.test -- /usr/bin/python3 /clients/udp.py 8.8.8.8 123
  [ "$output" = "ERROR ECONNREFUSED" ]
  # The lab's real resolver would answer evil.test with 203.0.113.20: the question never
  # reaches it, the stub answers instead.
  egress --allow-host api.allowed.test -- /usr/bin/python3 /clients/resolve.py evil.test 203.0.113.53
  [ "$output" = "RCODE 3" ]
  egress --allow-host api.allowed.test -- /usr/bin/python3 /clients/resolve.py api.allowed.test 203.0.113.53
  [ "$output" = "RCODE 0 203.0.113.10" ]
}

@test "DNS: NXDOMAIN for a name no rule allows, the answer for an allowed one" {
  egress --allow-host api.allowed.test -- /usr/bin/python3 /clients/resolve.py evil.test
  [ "$output" = "RCODE 3" ]
  egress --allow-host '*.allowed.test' -- /usr/bin/python3 /clients/resolve.py other.allowed.test
  [ "$output" = "RCODE 0 203.0.113.11" ]
  # A wildcard covers subdomains, not the apex.
  egress --allow-host '*.allowed.test' -- /usr/bin/python3 /clients/resolve.py allowed.test
  [ "$output" = "RCODE 3" ]
  [ "$(audit_count '.event == "dns" and .decision == "deny" and .host == "evil.test" and .reason == "no rule allows this name"')" -eq 1 ]
  [ "$(audit_count '.event == "dns" and .decision == "allow" and .host == "other.allowed.test" and .rule == "allow-host *.allowed.test:443"')" -eq 1 ]
}

@test "names resolving to private, metadata or loopback addresses are refused (SSRF guard)" {
  local name
  for name in private.allowed.test meta.allowed.test loop.allowed.test; do
    egress --allow-host '*.allowed.test' -- /usr/bin/python3 /clients/resolve.py "$name"
    [ "$output" = "RCODE 0" ] # allowed name, no address it may have
    egress --allow-host '*.allowed.test' -- /usr/bin/curl -sS -m 20 "https://$name/hello"
    [ "$status" -eq 56 ] # 403 from the proxy
  done
  [ "$(audit_count '.event == "connect" and .decision == "deny" and .host == "private.allowed.test" and (.reason | contains("10.20.0.5: private"))')" -eq 1 ]
  [ "$(audit_count '.event == "connect" and .decision == "deny" and .host == "meta.allowed.test" and (.reason | contains("cloud metadata"))')" -eq 1 ]
  [ "$(audit_count '.event == "connect" and .decision == "deny" and .host == "loop.allowed.test" and (.reason | contains("loopback"))')" -eq 1 ]
  [ "$(audit_count '.event == "dns" and .decision == "deny" and .host == "meta.allowed.test" and (.reason | contains("169.254.169.254"))')" -eq 1 ]
  # The private server is real: a CIDR rule naming it lets the same request through.
  egress --allow-host '*.allowed.test' --allow-cidr 10.20.0.5/32:443 -- /usr/bin/curl -sS -m 20 https://private.allowed.test/hello
  [ "$status" -eq 0 ]
  [ "$output" = "hello from private.allowed.test" ]
  [ "$(audit_count '.decision == "allow" and .host == "private.allowed.test" and .addr == "10.20.0.5"')" -eq 1 ]
}

@test "names resolving to the broker machine's own addresses, their IPv4-mapped form or its broadcast are refused" {
  # A service of "the machine" (LAB_NET, where codemode-run and its broker run) on its
  # interface's address, as a host service bound to 0.0.0.0 would be.
  machine_server
  # Through the proxy (the broker resolves), the name and its IPv4-mapped form (the broker
  # reads ::ffff:198.51.100.1 as the IPv4 address it carries).
  egress --allow-host self.allowed.test:8081 -- /usr/bin/curl -sS -m 20 http://self.allowed.test:8081/secret.txt
  local proxied=$output
  egress --allow-host mapped.allowed.test:8081 -- /usr/bin/curl -sS -m 20 http://mapped.allowed.test:8081/secret.txt
  local mapped=$output
  # Transparently: the stub never answers with it.
  egress --allow-host self.allowed.test:8081 -- /usr/bin/curl -sS -m 20 --noproxy '*' http://self.allowed.test:8081/secret.txt
  local direct=$output
  egress --allow-host bcast.allowed.test:8081 -- /usr/bin/python3 /clients/resolve.py bcast.allowed.test
  local bcast=$output
  [[ "$proxied" != *inside* && "$mapped" != *inside* && "$direct" != *inside* ]]
  [ "$bcast" = "RCODE 0" ]
  [ "$(audit_count '.event == "connect" and .decision == "deny" and .host == "self.allowed.test" and (.reason | contains("198.51.100.1: an address of this machine"))')" -eq 1 ]
  [ "$(audit_count '.event == "connect" and .decision == "deny" and .host == "mapped.allowed.test" and (.reason | contains("198.51.100.1: an address of this machine"))')" -eq 1 ]
  [ "$(audit_count '.event == "dns" and .host == "self.allowed.test" and (.reason | contains("198.51.100.1: an address of this machine"))')" -ge 1 ]
  [ "$(audit_count '.event == "dns" and .host == "bcast.allowed.test" and (.reason | contains("198.51.100.255: an address of this machine"))')" -eq 1 ]
  # A CIDR rule naming the address is the user's word: then it is reached.
  egress --allow-host self.allowed.test:8081 --allow-cidr 198.51.100.1/32:8081 -- /usr/bin/curl -sS -m 20 http://self.allowed.test:8081/secret.txt
  [ "$output" = "inside the machine" ]
}

@test "DNS rebinding: a public first answer, then a private one, is refused" {
  egress --allow-host rebind.allowed.test -- /usr/bin/python3 /clients/resolve.py rebind.allowed.test - 2
  [ "${lines[0]}" = "RCODE 0 203.0.113.10" ]
  [ "${lines[1]}" = "RCODE 0" ]
  [ "$(audit_count '.event == "dns" and .host == "rebind.allowed.test" and (.reason | contains("10.20.0.5: private"))')" -eq 1 ]
  # Through the proxy the broker resolves again at connect time: now private, refused.
  egress --allow-host rebind.allowed.test -- /usr/bin/curl -sS -m 20 https://rebind.allowed.test/hello
  [ "$status" -eq 56 ]
  [ "$(audit_count '.event == "connect" and .decision == "deny" and .host == "rebind.allowed.test" and (.reason | contains("10.20.0.5"))')" -eq 1 ]
  # And the private address itself, reached directly, is a raw address.
  egress --allow-host rebind.allowed.test -- /usr/bin/curl -sS -m 20 -k --noproxy '*' https://10.20.0.5/hello
  [ "$status" -eq 35 ] || [ "$status" -eq 56 ]
}

@test "non-HTTP services: by CIDR rule only (a server-first protocol); by name they are refused" {
  egress --allow-cidr 10.20.0.5/32:2222 -- /usr/bin/python3 /clients/banner.py 10.20.0.5 2222
  [ "$output" = "SSH-2.0-egress-test" ]
  [ "$(audit_count '.decision == "allow" and .port == 2222 and .rule == "allow-cidr 10.20.0.5/32:2222"')" -eq 1 ]
  # A host rule needs the name in the first bytes (SNI, Host): a client that sends none is
  # closed at the deadline, never relayed (issue 25: no timing window).
  egress --allow-host plain.allowed.test:2222 -- /usr/bin/python3 /clients/banner.py plain.allowed.test 2222
  [ "$output" != "SSH-2.0-egress-test" ]
  [ "$(audit_count '.event == "connect" and .decision == "deny" and .port == 2222 and (.reason | startswith("no TLS ClientHello or HTTP request head"))')" -eq 1 ]
  # Another address on the same port: refused (a reset, no banner).
  egress --allow-host plain.allowed.test:2222 -- /usr/bin/python3 /clients/banner.py 203.0.113.20 2222
  [ "$output" != "SSH-2.0-egress-test" ]
  # A port no rule names: refused by the kernel at once. Under the mcp profile, with Landlock
  # ABI >= 4, connect(2) itself is refused (EACCES: only the broker's ports); without the
  # profile's layer nothing listens there (ECONNREFUSED).
  egress --allow-host plain.allowed.test:2222 -- /usr/bin/python3 /clients/banner.py plain.allowed.test 2223
  [[ "$output" == "ERROR PermissionError"* ]]
  egress --profile default --allow-host plain.allowed.test:2222 -- /usr/bin/python3 /clients/banner.py plain.allowed.test 2223
  [[ "$output" == "ERROR ConnectionRefusedError"* ]]
}

@test "deny rules win over allow rules" {
  egress --allow-host '*.allowed.test' --deny-host other.allowed.test -- /usr/bin/curl -sS -m 20 https://other.allowed.test/hello
  [ "$status" -eq 56 ]
  [ "$(audit_count '.decision == "deny" and .rule == "deny-host other.allowed.test" and .reason == "denied by rule"')" -eq 1 ]
  egress --allow-host '*.allowed.test' --deny-host other.allowed.test -- /usr/bin/curl -sS -m 20 https://api.allowed.test/hello
  [ "$status" -eq 0 ]
}

@test "the audit log has one record per decision, each with its rule" {
  export CID
  egress --allow-host api.allowed.test --allow-host other.allowed.test:8443 -- /usr/bin/node -e '
    const go = (u) => fetch(u).then((r) => r.text()).catch((e) => "refused");
    (async () => { for (const u of ["https://api.allowed.test/hello", "https://evil.test/x", "https://other.allowed.test:8443/hello"]) console.log(await go(u)); })();'
  [ "$status" -eq 0 ]
  # Two allowed connections, one refused name (A and AAAA questions for each name asked).
  [ "$(audit_count '.event == "connect" and .decision == "allow"')" -eq 2 ]
  [ "$(audit_count '.event == "connect" and .decision == "allow" and .rule == "allow-host api.allowed.test:443"')" -eq 1 ]
  [ "$(audit_count '.event == "connect" and .decision == "allow" and .port == 8443 and .rule == "allow-host other.allowed.test:8443"')" -eq 1 ]
  [ "$(audit_count '.event == "dns" and .decision == "deny" and .host == "evil.test" and .rule == null')" -ge 1 ]
  # Every record: schema version, time, container id, event, decision.
  [ "$(jq -c 'select(.v != 1 or (.time | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$") | not) or .id != env.CID or .event == null or .decision == null)' "$AUDIT" | wc -l)" -eq 0 ]
}

@test "secrets: the value reaches the server's env but not ps, cmdline, the state dir or the kept config" {
  local secret=sekret-$RANDOM-$RANDOM
  printf '%s\n' "$secret" >"$TEST_DIR/token"
  export FROM_ENV_SECRET=envsekret-$RANDOM
  # nsenter execs codemode-run: $! is its pid.
  nsenter --net="/run/netns/$LAB_NET" "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --dns-upstream "$LAB_DNS" --allow-host api.allowed.test \
    --secret API_TOKEN=@"$TEST_DIR/token" --secret FROM_ENV_SECRET "$EG_BUNDLE" -- \
    /usr/bin/node -e 'console.log(process.env.API_TOKEN, process.env.FROM_ENV_SECRET); setTimeout(() => {}, 60000)' \
    >"$TEST_DIR/out" 2>"$TEST_DIR/err" &
  local run_pid=$!
  local i
  for i in $(seq 100); do [ -s "$TEST_DIR/out" ] && break; sleep 0.1; done
  [ "$(cat "$TEST_DIR/out")" = "$secret $FROM_ENV_SECRET" ]
  # codemode-run's own command line and environment, the broker's, ps.
  ! tr '\0' '\n' <"/proc/$run_pid/cmdline" | grep -qF "$secret"
  ! tr '\0' '\n' <"/proc/$run_pid/environ" | grep -qF "$FROM_ENV_SECRET"
  ! ps -eo args | grep -F "$secret" | grep -v grep
  local b
  for b in $(pgrep -x codemode-broker); do
    ! tr '\0' '\n' <"/proc/$b/cmdline" | grep -qF "$secret"
    ! tr '\0' '\n' <"/proc/$b/environ" | grep -qF "$FROM_ENV_SECRET"
  done
  # The state directory, the kept config.json among it.
  [ -e "$ROOT/$CID/config.json" ]
  ! grep -rqF -e "$secret" -e "$FROM_ENV_SECRET" "$ROOT"
  kill "$run_pid"
  wait "$run_pid" || true
  # A value on the command line is refused, naming the safe forms.
  egress --allow-host api.allowed.test --secret "API_TOKEN=$secret" -- /usr/bin/true
  [ "$status" -eq 125 ]
  [[ "$stderr" == *"--secret API_TOKEN=@FILE"* ]]
  [[ "$stderr" != *"$secret"* ]]
}

@test "secrets follow the request: every request of a keep-alive connection decided on its Host; what comes back is scrubbed" {
  printf '%s\n' "$LAB_TOKEN" >"$TEST_DIR/token"
  local flags=(--allow-host api.allowed.test --allow-host other.allowed.test --secret "GL_TOKEN=@$TEST_DIR/token"
               --secret-host GL_TOKEN=api.allowed.test)
  export SSL_CERT_FILE=$LAB_CA
  # The secret's stand-in in a response: the placeholder at the value's length.
  local masked=CODEMODE_SECRET_GL_TOKEN_____
  [ ${#masked} -eq ${#LAB_TOKEN} ]
  : >"$LAB_DIR/requests.log"
  # One connection to the bound host: its own echo, a virtual host's, its chunked echo.
  egress "${flags[@]}" -- /usr/bin/python3 /clients/keepalive.py api.allowed.test /echo=api.allowed.test \
    /echo=other.allowed.test /echo-chunked=api.allowed.test
  [ "$status" -eq 0 ]
  [[ "$output" != *"$LAB_TOKEN"* ]]
  [ "${lines[0]}" = "200 Bearer $masked Authorization: Bearer $masked" ]
  [ "${lines[1]}" = "200 Bearer CODEMODE_SECRET_GL_TOKEN Authorization: Bearer CODEMODE_SECRET_GL_TOKEN" ]
  [ "${lines[2]}" = "200 Bearer $masked Authorization: Bearer $masked" ]
  [ "${lines[3]}" = "connections 1" ]
  # The bound host got the secret twice; the virtual host never.
  [ "$(grep '"host": "api.allowed.test"' "$LAB_DIR/requests.log" | grep -c "Bearer $LAB_TOKEN")" -eq 2 ]
  [ "$(grep '"host": "other.allowed.test"' "$LAB_DIR/requests.log" | grep -c "Bearer CODEMODE_SECRET_GL_TOKEN")" -eq 1 ]
  [ "$(grep -c "$LAB_TOKEN" "$LAB_DIR/requests.log")" -eq 2 ]
  [ "$(audit_count '.event == "request" and .http_host == "other.allowed.test" and .reason == "the Host header is not the bound host: no secret substituted"')" -eq 1 ]
  [ "$(audit_count '.event == "connect" and .intercepted == true and .secret == "GL_TOKEN"')" -eq 1 ]
  # curl through the proxy: the echo in the headers and the body, split across reads.
  egress "${flags[@]}" -- /usr/bin/curl -sS -m 20 -D - -H 'Authorization: Bearer CODEMODE_SECRET_GL_TOKEN' https://api.allowed.test/echo
  [ "$status" -eq 0 ]
  [[ "$output" != *"$LAB_TOKEN"* ]]
  [[ "$output" == *"X-Echo: Bearer $masked"* && "$output" == *"Authorization: Bearer $masked"* ]]
  # A tunnel to the bound host whose TLS names another (allowed) host, whatever its Host header
  # says: refused before a byte is relayed (the SNI must be the tunnel's name, requests.bats), so
  # never intercepted and never given the secret.
  : >"$LAB_DIR/requests.log"
  egress "${flags[@]}" -- /usr/bin/curl -sS -m 20 --connect-to other.allowed.test:443:api.allowed.test:443 \
    -H 'Host: api.allowed.test' -H 'Authorization: Bearer CODEMODE_SECRET_GL_TOKEN' https://other.allowed.test/echo
  [ "$status" -ne 0 ]
  [ "$(grep -c "$LAB_TOKEN" "$LAB_DIR/requests.log")" -eq 0 ]
  [ "$(audit_count '.event == "connect" and .decision == "deny" and .host == "api.allowed.test" and .sni == "other.allowed.test" and .intercepted != true')" -eq 1 ]
  # A virtual host no rule allows, and two Host headers: refused, audited, no request made.
  : >"$LAB_DIR/requests.log"
  egress "${flags[@]}" -- /usr/bin/python3 /clients/keepalive.py api.allowed.test /echo=evil.test
  [ "${lines[0]}" = "403 None codemode egress: the Host header names a host no rule allows" ]
  egress "${flags[@]}" -- /usr/bin/python3 /clients/keepalive.py api.allowed.test /echo=2
  [ "${lines[0]}" = "400 None codemode egress: a malformed or ambiguous HTTP request: more than one Host header" ]
  # ... also when the second one's name is cut across two TLS records.
  egress "${flags[@]}" -- /usr/bin/python3 /clients/keepalive.py api.allowed.test /echo=split
  [ "${lines[0]}" = "400 None codemode egress: a malformed or ambiguous HTTP request: more than one Host header" ]
  # An absolute URI whose authority is not the Host's (either way round).
  egress "${flags[@]}" -- /usr/bin/python3 /clients/keepalive.py api.allowed.test https://other.allowed.test/echo=api.allowed.test
  [ "${lines[0]}" = "400 None codemode egress: the request URI's authority and its Host header disagree" ]
  egress "${flags[@]}" -- /usr/bin/python3 /clients/keepalive.py api.allowed.test https://evil.test/echo=other.allowed.test
  [ "${lines[0]}" = "400 None codemode egress: the request URI's authority and its Host header disagree" ]
  [ ! -s "$LAB_DIR/requests.log" ]
  [ "$(audit_count '.event == "request" and .decision == "deny" and .http_host == "evil.test" and .reason == "the Host header names a host no rule allows"')" -eq 1 ]
  [ "$(audit_count '.event == "request" and .decision == "deny" and .reason == "a malformed or ambiguous HTTP request: more than one Host header"')" -eq 2 ]
  [ "$(audit_count '.event == "request" and .decision == "deny" and .reason == "the request URI'"'"'s authority and its Host header disagree"')" -eq 2 ]
}

@test "a bounded broker: 400 stalled handshakes from one container; one thread, bounded memory, in the container's cgroup; another container's egress goes on" {
  printf '%s\n' "$LAB_TOKEN" >"$TEST_DIR/token"
  export SSL_CERT_FILE=$LAB_CA
  local flags=(--allow-host api.allowed.test --secret "GL_TOKEN=@$TEST_DIR/token" --secret-host GL_TOKEN=api.allowed.test)
  # 150 whole ClientHellos (intercepted: the broker is their TLS server) and 250 halves, all
  # stalled for 25 s.
  in_net timeout --kill-after=5 90 "$CODEMODE_RUN" --root "$ROOT" --id "$CID-flood" --dns-upstream "$LAB_DNS" \
    --audit-log "$AUDIT" "${flags[@]}" "$EG_BUNDLE" -- /usr/bin/python3 /clients/flood.py api.allowed.test 150 250 25 \
    >"$TEST_DIR/flood.out" 2>"$TEST_DIR/flood.err" </dev/null 3>&- &
  local flood=$! i
  for i in $(seq 600); do grep -q held "$TEST_DIR/flood.out" 2>/dev/null && break; sleep 0.1; done
  cat "$TEST_DIR/flood.out" "$TEST_DIR/flood.err" >&3
  grep -q held "$TEST_DIR/flood.out"
  local broker init
  broker=$(cut -d' ' -f1 "$ROOT/$CID-flood/supervisor")
  init=$("$CODEMODE" --root "$ROOT" state "$CID-flood" | jq -r .pid)
  local threads rss
  threads=$(awk '/^Threads:/ { print $2 }' "/proc/$broker/status")
  rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$broker/status")
  echo "# broker $broker: threads $threads, VmRSS $rss kB; fds $(ls "/proc/$broker/fd" | wc -l)" >&3
  # Meanwhile another container reaches the same host, secret and all.
  egress "${flags[@]}" -- /usr/bin/curl -sS -m 20 -H 'Authorization: Bearer CODEMODE_SECRET_GL_TOKEN' https://api.allowed.test/api/v4/projects
  local other_status=$status other=$output
  # The broker is charged to the flooding container: the same memory and pids cgroups as its init.
  local bcg icg
  bcg=$(grep -E ':(memory|pids):|^0::' "/proc/$broker/cgroup" | sort)
  icg=$(grep -E ':(memory|pids):|^0::' "/proc/$init/cgroup" | sort)
  echo "# broker cgroups: $bcg / init: $icg" >&3
  wait "$flood" || true
  cat "$TEST_DIR/flood.out" >&3
  [ "$other_status" -eq 0 ]
  [[ "$other" == *"seen with the real token"* ]]
  [ "$threads" -eq 1 ]
  [ "$rss" -lt 65536 ]
  [ -n "$bcg" ] && [ "$bcg" = "$icg" ]
  # Past the bounds: refused at once, audited with the reason.
  [ "$(audit_count '.decision == "deny" and .reason == "too many intercepted connections (at most 64 at once)"')" -ge 1 ]
  [ "$(audit_count '.decision == "deny" and .reason == "too many connections (at most 256 at once)"')" -ge 1 ]
  [ "$(audit_count '.intercepted == true and .reason == "the TLS handshakes did not finish within 10 s"')" -ge 1 ]
}

@test "secret placeholders: substituted by the broker for the bound host only; the server sees only the placeholder" {
  printf '%s\n' "$LAB_TOKEN" >"$TEST_DIR/token"
  local flags=(--allow-host api.allowed.test --allow-host other.allowed.test --secret "GL_TOKEN=@$TEST_DIR/token"
               --secret-host GL_TOKEN=api.allowed.test)
  # The broker checks the real host's certificate against the host's trust store: here the test CA.
  export SSL_CERT_FILE=$LAB_CA
  : >"$LAB_DIR/requests.log"
  # The server's own view: the placeholder.
  egress "${flags[@]}" -- /usr/bin/node -e 'console.log(process.env.GL_TOKEN)'
  [ "$output" = "CODEMODE_SECRET_GL_TOKEN" ]
  # Node fetch (transparent), Python urllib and curl (CONNECT) all trust the per-run CA.
  egress "${flags[@]}" -- /usr/bin/node /clients/fetch.mjs https://api.allowed.test/api/v4/projects "Authorization:Bearer CODEMODE_SECRET_GL_TOKEN"
  [ "$status" -eq 0 ]
  [[ "$output" == "200 "*"seen with the real token"* ]]
  egress "${flags[@]}" -- /usr/bin/curl -sS -m 20 -H 'Authorization: Bearer CODEMODE_SECRET_GL_TOKEN' https://api.allowed.test/api/v4/projects
  [ "$status" -eq 0 ]
  [[ "$output" == *"seen with the real token"* ]]
  egress "${flags[@]}" -- /usr/bin/python3 -c '
import os, urllib.request
r = urllib.request.Request("https://api.allowed.test/api/v4/projects", headers={"Authorization": "Bearer " + os.environ["GL_TOKEN"]})
print(urllib.request.urlopen(r, timeout=15).status)'
  [ "$output" = 200 ]
  [ "$(grep -c "Bearer $LAB_TOKEN" "$LAB_DIR/requests.log")" -eq 3 ]
  [ "$(audit_count '.decision == "allow" and .intercepted == true and .secret == "GL_TOKEN" and .host == "api.allowed.test"')" -eq 3 ]
  # The same header to another allowed host: the placeholder, never the value.
  egress "${flags[@]}" -- /usr/bin/node /clients/fetch.mjs https://other.allowed.test/headers "Authorization:Bearer CODEMODE_SECRET_GL_TOKEN"
  [ "$status" -eq 0 ]
  [[ "$output" == *"Bearer CODEMODE_SECRET_GL_TOKEN"* ]]
  [ "$(grep '"host": "other.allowed.test"' "$LAB_DIR/requests.log" | grep -c "$LAB_TOKEN")" -eq 0 ]
  # The container's trust store has the per-run CA; nothing of the secret is in the state dir.
  ! grep -rqF "$LAB_TOKEN" "$ROOT" 2>/dev/null
  # A host the secret is bound to must be allowed.
  egress --allow-host other.allowed.test --secret "GL_TOKEN=@$TEST_DIR/token" --secret-host GL_TOKEN=api.allowed.test -- /usr/bin/true
  [ "$status" -eq 125 ]
  [[ "$stderr" == *"--secret-host GL_TOKEN=api.allowed.test: the host is not allowed"* ]]
}

@test "ci: secret placeholders under --profile ci: the real token only to the bound host, the placeholder elsewhere and in every environment of the job" {
  printf '%s\n' "$LAB_TOKEN" >"$TEST_DIR/token"
  local flags=(--profile ci --allow-host api.allowed.test --allow-host other.allowed.test
               --secret "GL_TOKEN=@$TEST_DIR/token" --secret-host GL_TOKEN=api.allowed.test)
  export SSL_CERT_FILE=$LAB_CA
  : >"$LAB_DIR/requests.log"
  # The job's root (CAP_SYS_PTRACE in its namespaces) reads every environment of the job: the
  # placeholder only, in its own and in its init's.
  egress "${flags[@]}" -- /usr/bin/python3 -c '
import glob, os
print(os.environ["GL_TOKEN"])
envs = [open(f, "rb").read() for f in glob.glob("/proc/[0-9]*/environ")]
print(sum(e.split(b"\0").count(b"GL_TOKEN=CODEMODE_SECRET_GL_TOKEN") for e in envs), len(envs))
print(os.getuid())'
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = CODEMODE_SECRET_GL_TOKEN ]
  # Both the job's process and its init (codemode-init) hold the placeholder.
  [ "${lines[1]}" = "2 2" ]
  [ "${lines[2]}" = 0 ]
  [[ "$output" != *"$LAB_TOKEN"* ]]
  # Node fetch (transparent capture) and curl (the proxy): the bound host gets the real token.
  egress "${flags[@]}" -- /usr/bin/node /clients/fetch.mjs https://api.allowed.test/api/v4/projects "Authorization:Bearer CODEMODE_SECRET_GL_TOKEN"
  [ "$status" -eq 0 ]
  [[ "$output" == "200 "*"seen with the real token"* ]]
  egress "${flags[@]}" -- /usr/bin/curl -sS -m 20 -H 'Authorization: Bearer CODEMODE_SECRET_GL_TOKEN' https://api.allowed.test/api/v4/projects
  [ "$status" -eq 0 ]
  [[ "$output" == *"seen with the real token"* ]]
  [ "$(grep -c "Bearer $LAB_TOKEN" "$LAB_DIR/requests.log")" -eq 2 ]
  [ "$(audit_count '.decision == "allow" and .intercepted == true and .secret == "GL_TOKEN" and .host == "api.allowed.test"')" -eq 2 ]
  # The same header to another allowed host: the placeholder, never the value.
  egress "${flags[@]}" -- /usr/bin/curl -sS -m 20 -H 'Authorization: Bearer CODEMODE_SECRET_GL_TOKEN' https://other.allowed.test/headers
  [ "$status" -eq 0 ]
  [[ "$output" == *"Bearer CODEMODE_SECRET_GL_TOKEN"* ]]
  [ "$(grep '"host": "other.allowed.test"' "$LAB_DIR/requests.log" | grep -c "$LAB_TOKEN")" -eq 0 ]
  # A --host job (the runner's usual form): the host's curl through the host's trust store, which
  # the per-run CA joins (the intercepted host); the lab's own CA, which the host's store lacks,
  # given for the host that is not intercepted.
  : >"$LAB_DIR/requests.log"
  run --separate-stderr in_net timeout --kill-after=5 60 "$CODEMODE_RUN" --root "$ROOT" --id "$CID" \
    --dns-upstream "$LAB_DNS" --audit-log "$AUDIT" "${flags[@]}" --mount "$LAB_CA:/lab-ca.pem:ro" --host -- /bin/sh -c \
    'echo "$GL_TOKEN"; curl -sS -m 20 -H "Authorization: Bearer $GL_TOKEN" https://api.allowed.test/api/v4/projects;
     echo; curl -sS -m 20 --cacert /lab-ca.pem -H "Authorization: Bearer $GL_TOKEN" https://other.allowed.test/headers'
  echo "# $output" >&3
  echo "# stderr: $stderr" >&3
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = CODEMODE_SECRET_GL_TOKEN ]
  [[ "$output" == *"seen with the real token"* ]]
  [[ "$output" == *"Bearer CODEMODE_SECRET_GL_TOKEN"* ]]
  [[ "$output" != *"$LAB_TOKEN"* ]]
  [ "$(grep '"host": "api.allowed.test"' "$LAB_DIR/requests.log" | grep -c "Bearer $LAB_TOKEN")" -eq 1 ]
  [ "$(grep -c "$LAB_TOKEN" "$LAB_DIR/requests.log")" -eq 1 ]
  # Nothing of the secret in the state directory.
  ! grep -rqF "$LAB_TOKEN" "$ROOT" 2>/dev/null
}

@test "--env NAME passes the caller's variable through (an mcpServers env block)" {
  export PASSED_THROUGH=from-the-client UNSET_ONE=
  unset UNSET_ONE
  egress --allow-host api.allowed.test --env PASSED_THROUGH --env UNSET_ONE -- /usr/bin/node -e \
    'console.log(process.env.PASSED_THROUGH, "UNSET_ONE" in process.env)'
  [ "$status" -eq 0 ]
  [ "$output" = "from-the-client false" ]
}

@test "--explain and policy explain print the effective allowlist" {
  run "$CODEMODE_RUN" --explain --allow-host api.allowed.test --allow-cidr 10.1.0.0/16:5432 --deny-host bad.allowed.test "$EG_BUNDLE"
  [ "$status" -eq 0 ]
  [[ "$output" == *"egress: allow-host api.allowed.test:443 (--allow-host)"* ]]
  [[ "$output" == *"egress: allow-cidr 10.1.0.0/16:5432 (--allow-cidr)"* ]]
  [[ "$output" == *"egress: deny-host bad.allowed.test (--deny-host)"* ]]
  [[ "$output" == *"ports 80, 443, 5432 (transparent)"* ]]
  [[ "$output" == *"landlock: TCP connect only to 5 broker ports"* ]]
  run "$CODEMODE_RUN" --explain "$EG_BUNDLE"
  [[ "$output" == *"egress: loopback only"* ]]
  # codemode's global flags (runtimeArgs), and the annotation narrowing them under mcp.
  local b=$TEST_DIR/bundle
  cp -a "$EG_BUNDLE" "$b"
  run "$CODEMODE" --profile mcp --allow-host '*.allowed.test' policy explain -b "$b"
  [ "$status" -eq 0 ]
  [[ "$output" == *"egress: allow-host *.allowed.test:443 (--allow-host)"* ]]
  bundle_jq "$b" '.annotations["run.codemode.net.allow"] = "[\"api.allowed.test\", \"!x.allowed.test\"]"'
  run "$CODEMODE" --profile mcp --allow-host '*.allowed.test' policy explain -b "$b"
  [[ "$output" == *"egress: allow-host api.allowed.test:443 (annotation)"* ]]
  [[ "$output" == *"egress: deny-host x.allowed.test (annotation)"* ]]
  [[ "$output" != *"(--allow-host)"* ]]
}

@test "nothing allowed is loopback only, as before: no broker, no proxy variables" {
  run --separate-stderr in_net "$CODEMODE_RUN" --root "$ROOT" --id "$CID" "$EG_BUNDLE" -- /usr/bin/node -e 'console.log(process.env.HTTPS_PROXY === undefined)'
  [ "$status" -eq 0 ]
  [ "$output" = true ]
  run in_net "$CODEMODE_RUN" --root "$ROOT" --id "$CID" "$EG_BUNDLE" -- /usr/bin/curl -sS -m 20 --noproxy '*' https://203.0.113.10/hello
  [ "$status" -eq 7 ] # no route: refused at once
  # Without an allowlist, the egress-only flags are refused rather than silently ignored.
  egress -- /usr/bin/true
  [ "$status" -eq 125 ]
  [[ "$stderr" == *"--dns-upstream: nothing is allowed"* ]]
}

@test "bad egress flags are refused naming what was written, leaving nothing behind" {
  egress --allow-host 203.0.113.10 -- /usr/bin/true
  [ "$status" -eq 125 ]
  [[ "$stderr" == *"--allow-host 203.0.113.10: an address, not a host name (use --allow-cidr"* ]]
  egress --allow-cidr 10.0.0.0/8 -- /usr/bin/true
  [[ "$stderr" == *"--allow-cidr 10.0.0.0/8: the port is missing"* ]]
  egress --allow-host '*' -- /usr/bin/true
  [ "$status" -eq 125 ]
  egress --net host --allow-host api.allowed.test --profile default -- /usr/bin/true
  [ "$status" -eq 125 ]
  [[ "$stderr" == *"needs its own"* ]]
  # An existing file that is not an audit log is never appended to.
  echo "precious" >"$AUDIT"
  egress --allow-host api.allowed.test -- /usr/bin/true
  [ "$status" -eq 125 ]
  [[ "$stderr" == *"is not a codemode audit log"* ]]
  [ "$(cat "$AUDIT")" = precious ]
  [ ! -e "$ROOT/$CID" ]
}

@test "codemode-run SIGKILLed: the watcher deletes the container and its broker goes too" {
  nsenter --net="/run/netns/$LAB_NET" "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --dns-upstream "$LAB_DNS" --allow-host api.allowed.test \
    "$EG_BUNDLE" -- /usr/bin/node -e 'setTimeout(() => {}, 60000)' </dev/null >/dev/null 2>&1 &
  local run_pid=$! i
  for i in $(seq 100); do [ -e "$ROOT/$CID/supervisor" ] && [ -e "$ROOT/$CID/state.json" ] && break; sleep 0.1; done
  [ -e "$ROOT/$CID/supervisor" ]
  local broker
  broker=$(cut -d' ' -f1 "$ROOT/$CID/supervisor")
  kill -0 "$broker"
  kill -9 "$run_pid"
  wait "$run_pid" || true
  for i in $(seq 100); do [ ! -e "$ROOT/$CID" ] && ! kill -0 "$broker" 2>/dev/null && break; sleep 0.1; done
  [ ! -e "$ROOT/$CID" ]
  ! kill -0 "$broker" 2>/dev/null
}

@test "MCP: the SDK client drives server-gitlab through codemode-run --allow-host, its token a placeholder" {
  local server=/app/node_modules/@modelcontextprotocol/server-gitlab/dist/index.js
  # The mcpServers entry's env block: the API URL passed through (--env), the token a secret
  # the server never sees (--secret from that env, bound to the API host).
  export GITLAB_API_URL=https://api.allowed.test/api/v4 GITLAB_PERSONAL_ACCESS_TOKEN=$LAB_TOKEN SSL_CERT_FILE=$LAB_CA
  local cmd=("$CODEMODE_RUN" --root "$ROOT" --id "$CID" --profile mcp --timeout 100 --dns-upstream "$LAB_DNS"
             --audit-log "$AUDIT" --allow-host api.allowed.test --env GITLAB_API_URL
             --secret GITLAB_PERSONAL_ACCESS_TOKEN --secret-host GITLAB_PERSONAL_ACCESS_TOKEN=api.allowed.test
             "$EG_BUNDLE" -- /usr/bin/node "$server")
  : >"$LAB_DIR/requests.log"
  run in_net timeout 120 node "$BATS_TEST_DIRNAME/.work/mcp-client.mjs" ALLOWED "${cmd[@]}"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"ok tools/call search_repositories reached the API with the real token"* ]]
  grep -q "Bearer $LAB_TOKEN" "$LAB_DIR/requests.log"
  [ "$(audit_count '.decision == "allow" and .intercepted == true and .secret == "GITLAB_PERSONAL_ACCESS_TOKEN" and .host == "api.allowed.test"')" -ge 1 ]
  # The same server pointed at a host the allowlist does not have: refused, quickly.
  export GITLAB_API_URL=https://evil.test/api/v4
  run in_net timeout 120 node "$BATS_TEST_DIRNAME/.work/mcp-client.mjs" REFUSED "${cmd[@]}"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"ok tools/call search_repositories refused"* ]]
  ! grep -q '"host": "evil.test"' "$LAB_DIR/requests.log"
}

@test "create killed at any step leaves no broker; delete stops a recorded one" {
  local b=$TEST_DIR/bundle point
  cp -a "$EG_BUNDLE" "$b"
  bundle_set_args "$b" /usr/bin/node -e 'setTimeout(() => {}, 60000)'
  for point in state-dir cgroup fork ready state; do
    rm -f "$TEST_DIR/create.err"
    CODEMODE_TEST_PAUSE_AT=$point nsenter --net="/run/netns/$LAB_NET" "$CODEMODE" --root "$ROOT" --profile mcp \
      --allow-host api.allowed.test --dns-upstream "$LAB_DNS" create --bundle "$b" "$CID-$point" \
      </dev/null >/dev/null 2>"$TEST_DIR/create.err" &
    local pid=$! i
    for i in $(seq 100); do grep -q "paused at $point" "$TEST_DIR/create.err" 2>/dev/null && break; sleep 0.1; done
    grep -q "paused at $point" "$TEST_DIR/create.err"
    local broker=""
    [ -e "$ROOT/$CID-$point/supervisor" ] && broker=$(cut -d' ' -f1 "$ROOT/$CID-$point/supervisor")
    kill -9 "$pid"
    wait "$pid" || true
    # Killed before the container was recorded: its init and its broker die with create.
    for i in $(seq 50); do [ "$(live_brokers | wc -l)" -le "$brokers_before" ] && break; sleep 0.1; done
    if [ "$point" = state ]; then
      # Recorded (state.json) with its broker: that one lives as long as the container.
      [ -n "$broker" ] && kill -0 "$broker"
    else
      [ "$(live_brokers | wc -l)" -le "$brokers_before" ]
    fi
    "$CODEMODE" --root "$ROOT" delete --force "$CID-$point"
    [ -z "$broker" ] || ! kill -0 "$broker" 2>/dev/null
    [ "$(live_brokers | wc -l)" -le "$brokers_before" ]
  done
}

@test "the annotation narrows the runtime's allowlist under mcp, and cannot widen it" {
  local b=$TEST_DIR/bundle
  cp -a "$EG_BUNDLE" "$b"
  bundle_set_args "$b" /usr/bin/node /clients/fetch.mjs https://other.allowed.test/hello
  bundle_jq "$b" '.annotations["run.codemode.net.allow"] = "[\"api.allowed.test\"]"'
  run in_net "$CODEMODE" --root "$ROOT" --profile mcp --allow-host '*.allowed.test' --dns-upstream "$LAB_DNS" \
    run --bundle "$b" "$CID"
  [ "$status" -eq 1 ]
  [[ "$output" == "ERROR ENOTFOUND"* ]]
  bundle_jq "$b" '.annotations["run.codemode.net.allow"] = "[\"evil.test\"]"'
  run in_net "$CODEMODE" --root "$ROOT" --profile mcp --allow-host '*.allowed.test' run --bundle "$b" "$CID"
  [ "$status" -eq 1 ]
  [[ "$output" == *'"evil.test"'*"not allowed by the runtime's own rules"* || "$output" == *"allow-host evil.test:443"*"not allowed"* ]]
  [ ! -e "$ROOT/$CID" ]
  # Under the default profile the config is trusted: the annotation alone allows.
  bundle_jq "$b" '.annotations["run.codemode.net.allow"] = "[\"other.allowed.test\"]"'
  run in_net "$CODEMODE" --root "$ROOT" --dns-upstream "$LAB_DNS" run --bundle "$b" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = "200 hello from other.allowed.test" ]
}

@test "learn: the hosts a learning run reached become its policy's allowlist; under it another host is refused, audited, and the summary names the rule that would allow it" {
  pol=$TEST_DIR/policy.json
  egress --allow-host api.allowed.test --allow-host other.allowed.test --learn "$pol" -- \
    /usr/bin/curl -sS -m 20 https://api.allowed.test/hello
  [ "$status" -eq 0 ]
  [ "$output" = "hello from api.allowed.test" ]
  jq -e '.egress.allow[] | select(.rule == "allow-host api.allowed.test:443") | .comment | test("^seen 1 time, first ")' "$pol"
  [ "$(jq '.egress.allow | length' "$pol")" -eq 1 ] # other.allowed.test was allowed, never reached
  # The policy alone (no --allow-host) reaches the host it learned...
  egress --policy "$pol" -- /usr/bin/curl -sS -m 20 https://api.allowed.test/hello
  [ "$status" -eq 0 ]
  [ "$output" = "hello from api.allowed.test" ]
  # ...and nothing else: the broker refuses, records it, and the summary says which line allows it.
  egress --policy "$pol" --audit-summary -- /usr/bin/curl -sS -m 20 https://other.allowed.test/hello
  [ "$status" -ne 0 ]
  [ "$(audit_count '.event == "connect" and .decision == "deny" and .host == "other.allowed.test"')" -ge 1 ]
  [[ "$stderr" == *"host other.allowed.test:443: refused by the egress broker"* ]]
  [[ "$stderr" == *'"egress": {"allow": [{"rule": "allow-host other.allowed.test:443"}]}'* ]]
}
