#!/usr/bin/env bats
# The egress broker against a hostile client inside the container (issue 25, points 1, 2 and 6):
# every request on every connection decided on its own Host, no timing window before the name is
# known, early data after CONNECT, smuggling shapes, SNI against the tunnel's name, and learning
# only what the broker verified. The client is tests/egress/clients/hostile.py (raw sockets, the
# ssl module) in the suite's bundle; the hosts are the lab's (lab.bash).

load ../lib/helpers
load lab
load suite

GET_PLAIN='GET /hello HTTP/1.1\r\nHost: plain.allowed.test\r\n\r\n'
GET_EVIL='GET /hello HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n'

@test "timing: a tunnel or a transparent connection silent for 1 s, then a ClientHello for another host, is refused" {
  # A name no rule allows, then a name a --deny-host rule refuses.
  EG_FLAGS=(--allow-host api.allowed.test)
  hostile tls-tunnel api.allowed.test:443 evil.test 1.2
  [[ "$output" != *"hello from"* ]]
  hostile tls-direct api.allowed.test 443 evil.test 1.2
  [[ "$output" != *"hello from"* ]]
  EG_FLAGS=(--allow-host '*.allowed.test' --deny-host other.allowed.test)
  hostile tls-tunnel api.allowed.test:443 other.allowed.test 1.2
  [[ "$output" != *"hello from"* ]]
  hostile tls-direct api.allowed.test 443 other.allowed.test 1.2
  [[ "$output" != *"hello from"* ]]
  [ "$(reached evil.test)" -eq 0 ] && [ "$(reached other.allowed.test)" -eq 0 ]
  [ "$(audit_count '.event == "connect" and .decision == "deny" and .sni == "evil.test"')" -eq 2 ]
  [ "$(audit_count '.event == "connect" and .decision == "deny" and .sni == "other.allowed.test" and .rule == "deny-host other.allowed.test"')" -eq 2 ]
  [ "$(audit_count '.event == "connect" and .decision == "allow"')" -eq 0 ]
  # An honest client as slow is served: the wait is for the name, not a guess.
  EG_FLAGS=(--allow-host api.allowed.test)
  hostile tls-tunnel api.allowed.test:443 api.allowed.test 1.2
  [ "$output" = $'HTTP 1.1 200 OK\nhello from api.allowed.test' ]
  hostile tls-direct api.allowed.test 443 api.allowed.test 1.2
  [ "$output" = $'HTTP 1.1 200 OK\nhello from api.allowed.test' ]
}

@test "TLS: the SNI must be the tunnel's name, and a ClientHello without SNI meets no name-only rule" {
  EG_FLAGS=(--allow-host api.allowed.test --allow-host other.allowed.test)
  # Both names allowed, but the tunnel was opened to api's address: the SNI names another host.
  egress "${EG_FLAGS[@]}" -- /usr/bin/curl -sS -m 20 -p -x http://127.0.0.1:3128 \
    --connect-to other.allowed.test:443:api.allowed.test:443 https://other.allowed.test/hello
  [ "$status" -ne 0 ] && [ "$status" -ne 28 ]
  [ "$(audit_count '.decision == "deny" and .host == "api.allowed.test" and .sni == "other.allowed.test" and (.reason | contains("SNI"))')" -eq 1 ]
  hostile tls-tunnel api.allowed.test:443 - 0
  [[ "$output" != *"hello from"* ]]
  hostile tls-direct api.allowed.test 443 - 0
  [[ "$output" != *"hello from"* ]]
  [ "$(audit_count '.decision == "deny" and (.reason | contains("without SNI"))')" -eq 2 ]
  [ "$(reached other.allowed.test)" -eq 0 ] && [ "$(reached api.allowed.test)" -eq 0 ]
}

@test "early data: a request in the CONNECT write is the tunnel's first bytes, checked complete or cut mid-header" {
  EG_FLAGS=(--allow-host plain.allowed.test:80)
  hostile http-tunnel plain.allowed.test:80 1 0 "$GET_EVIL"
  [[ "$output" != *"hello from evil.test"* ]]
  hostile http-tunnel plain.allowed.test:80 1 30 "$GET_EVIL" # "GET /hello HTTP/1.1\r\nHost: ev"
  [[ "$output" != *"hello from evil.test"* ]]
  [ "$(reached evil.test)" -eq 0 ]
  [ "$(audit_count '.decision == "deny" and .host == "plain.allowed.test" and .http_host == "evil.test"')" -eq 2 ]
  # The same shapes with the tunnel's own Host go through.
  hostile http-tunnel plain.allowed.test:80 1 30 'GET /hello HTTP/1.1\r\nHost: plain.allowed.test\r\nConnection: close\r\n\r\n'
  [ "$output" = $'HTTP 1.1 200 OK\nhello from plain.allowed.test' ]
}

@test "keep-alive and pipelining: a second request naming another host is refused (tunnel, proxy, transparent :80)" {
  EG_FLAGS=(--allow-host plain.allowed.test:80)
  # Pipelined in a CONNECT tunnel.
  hostile http-tunnel plain.allowed.test:80 0 0 "$GET_PLAIN$GET_EVIL"
  [[ "$output" == "HTTP 1.1 200 OK"$'\n'"hello from plain.allowed.test"$'\n'"HTTP 1.1 403 Forbidden"* ]]
  # Transparent on port 80: pipelined, and one after the other on a kept-alive connection.
  hostile http-direct plain.allowed.test 80 "$GET_PLAIN$GET_EVIL"
  [[ "$output" == "HTTP 1.1 200 OK"$'\n'"hello from plain.allowed.test"$'\n'"HTTP 1.1 403 Forbidden"* ]]
  hostile http-seq plain.allowed.test 80 "$GET_PLAIN" "$GET_EVIL"
  [[ "$output" == "HTTP 1.1 200 OK"$'\n'"hello from plain.allowed.test"$'\n'"HTTP 1.1 403 Forbidden"* ]]
  # Through the proxy: a second absolute-URI request for another host, and a URL whose Host
  # header names another (allowed) host.
  hostile http-proxy 'GET http://plain.allowed.test/hello HTTP/1.1\r\nHost: plain.allowed.test\r\n\r\nGET http://evil.test/hello HTTP/1.1\r\nHost: evil.test\r\n\r\n'
  [[ "$output" == "HTTP 1.1 200 OK"$'\n'"hello from plain.allowed.test"$'\n'"HTTP 1.1 403 Forbidden"* ]]
  EG_FLAGS=(--allow-host plain.allowed.test:80 --allow-host other.allowed.test:80)
  hostile http-proxy 'GET http://plain.allowed.test/hello HTTP/1.1\r\nHost: other.allowed.test\r\nConnection: close\r\n\r\n'
  [[ "$output" == "HTTP 1.1 400 Bad Request"* ]]
  [ "$(reached evil.test)" -eq 0 ] && [ "$(reached other.allowed.test)" -eq 0 ]
  [ "$(reached plain.allowed.test)" -eq 4 ]
  [ "$(audit_count '.decision == "deny" and .http_host == "evil.test"')" -eq 4 ]
  [ "$(audit_count '.decision == "deny" and .http_host == "other.allowed.test" and (.reason | contains("URL"))')" -eq 1 ]
}

@test "two Host headers and the smuggling shapes are refused with 400 before a byte goes upstream" {
  EG_FLAGS=(--allow-host plain.allowed.test:80)
  local shape
  for shape in \
    'GET /hello HTTP/1.1\r\nHost: plain.allowed.test\r\nHost: evil.test\r\nConnection: close\r\n\r\n' \
    'POST /hello HTTP/1.1\r\nHost: plain.allowed.test\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n' \
    'GET /hello HTTP/1.1\r\nHost: plain.allowed.test\r\nX-Folded: a\r\n b\r\nConnection: close\r\n\r\n' \
    'GET /hello HTTP/1.1\nHost: plain.allowed.test\nConnection: close\n\n' \
    'GET /hello HTTP/1.1\r\nHost: plain.allowed.test\rX-Bare: cr\r\nConnection: close\r\n\r\n' \
    'GET /hello HTTP/1.1\r\nHost: plain.allowed.test\r\nContent-Length: 0\r\nContent-Length: 7\r\nConnection: close\r\n\r\n'; do
    hostile http-direct plain.allowed.test 80 "$shape"
    [[ "$output" == "HTTP 1.1 400 Bad Request"$'\n'"codemode egress: "* ]]
  done
  # Through the proxy and inside a tunnel too.
  hostile http-proxy 'GET http://plain.allowed.test/hello HTTP/1.1\r\nHost: plain.allowed.test\r\nHost: evil.test\r\nConnection: close\r\n\r\n'
  [[ "$output" == "HTTP 1.1 400 Bad Request"* ]]
  hostile http-tunnel plain.allowed.test:80 0 0 'GET /hello HTTP/1.1\r\nHost: plain.allowed.test\r\nHost: evil.test\r\nConnection: close\r\n\r\n'
  [[ "$output" == *"HTTP 1.1 400 Bad Request"* ]]
  # An absolute-form target inside a tunnel names its own authority: it must agree with the Host.
  hostile http-tunnel plain.allowed.test:80 0 0 'GET http://evil.test/hello HTTP/1.1\r\nHost: plain.allowed.test\r\nConnection: close\r\n\r\n'
  [[ "$output" == *"HTTP 1.1 400 Bad Request"* ]]
  [ "$(reached plain.allowed.test)" -eq 0 ] && [ "$(reached evil.test)" -eq 0 ]
  [ "$(audit_count '.event == "connect" and .decision == "deny" and (.reason | startswith("a malformed or ambiguous HTTP request"))')" -eq 9 ]
}

@test "bytes that are neither TLS nor HTTP go only where a CIDR rule allows the address and port" {
  EG_FLAGS=(--allow-host plain.allowed.test:2222)
  hostile http-direct plain.allowed.test 2222 'PING raw protocol\r\n'
  [[ "$output" != *"SSH-2.0"* ]]
  [ "$(audit_count '.decision == "deny" and .port == 2222 and (.reason | contains("neither TLS nor HTTP"))')" -eq 1 ]
  EG_FLAGS=(--allow-cidr 203.0.113.30/32:2222)
  hostile http-direct 203.0.113.30 2222 'PING raw protocol\r\n'
  [[ "$output" == *"SSH-2.0-egress-test"* ]]
}

@test "learn: a connection to an allowed CIDR whose SNI names another host is a denial, never a rule; replay refuses that host" {
  local pol=$TEST_DIR/policy.json
  EG_FLAGS=(--allow-cidr 10.20.0.5/32:443 --learn "$pol")
  hostile tls-direct 10.20.0.5 443 evil.test 0
  [[ "$output" != *"hello from evil.test"* ]]
  [ "$(audit_count '.decision == "deny" and .sni == "evil.test" and .addr == "10.20.0.5"')" -eq 1 ]
  [ "$(audit_count '.decision == "allow" and .host == "evil.test"')" -eq 0 ]
  [ -s "$pol" ]
  ! jq -e '.egress.allow[]? | select(.rule | contains("evil.test"))' "$pol"
  # Replayed under what was learned: evil.test is refused.
  egress --policy "$pol" -- /usr/bin/curl -sS -m 20 https://evil.test/hello
  [ "$status" -ne 0 ]
  [ "$(reached evil.test)" -eq 0 ]
}

@test "inside an intercepted TLS session (a secret bound to the host) the smuggling shapes are refused with 400 in the same words" {
  printf '%s\n' "$LAB_TOKEN" >"$TEST_DIR/token"
  EG_FLAGS=(--allow-host api.allowed.test --secret "GL_TOKEN=@$TEST_DIR/token" --secret-host GL_TOKEN=api.allowed.test)
  export SSL_CERT_FILE=$LAB_CA # the broker's trust for the lab's servers
  local auth='Authorization: Bearer CODEMODE_SECRET_GL_TOKEN' shape bad=()
  for shape in \
    "GET /hello HTTP/1.1\r\nHost: api.allowed.test\r\nHost: evil.test\r\n$auth\r\nConnection: close\r\n\r\n" \
    "POST /hello HTTP/1.1\r\nHost: api.allowed.test\r\n$auth\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n" \
    "POST /hello HTTP/1.1\r\nHost: api.allowed.test\r\n$auth\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n0\r\n\r\n" \
    "GET /hello HTTP/1.1\r\nHost: api.allowed.test\r\n$auth\r\nContent-Length: 0\r\nContent-Length: 7\r\nConnection: close\r\n\r\n" \
    "GET /hello HTTP/1.1\r\nHost: api.allowed.test\r\n$auth\r\nX-Folded: a\r\n b\r\nConnection: close\r\n\r\n" \
    "GET /hello HTTP/1.1\nHost: api.allowed.test\n$auth\nConnection: close\n\n" \
    "GET /hello HTTP/1.1\r\nHost: api.allowed.test\rX-Bare: cr\r\n$auth\r\nConnection: close\r\n\r\n" \
    "GET /hello HTTP/1.1\r\nHost: api.allowed.test\r\n$auth\r\nX-Ctl: a\x01b\r\nConnection: close\r\n\r\n" \
    "GET /hello HTTP/1.1\r\nHost: api.allowed.test\r\n$auth\r\nX-Space : a\r\nConnection: close\r\n\r\n" \
    "GET /hello HTTP/1.1\r\nHost: api.allowed.test\r\n$auth\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"; do
    hostile tls-raw api.allowed.test 443 api.allowed.test "$shape"
    [[ "$output" == "HTTP 1.1 400 Bad Request"$'\n'"codemode egress: a malformed or ambiguous HTTP request: "* ]] || bad+=("$shape")
  done
  printf '# accepted: %s\n' "${bad[@]}" >&3
  [ ${#bad[@]} -eq 0 ]
  [ "$(reached api.allowed.test)" -eq 0 ]
  [ "$(audit_count '.event == "request" and .decision == "deny" and .intercepted == true and (.reason | startswith("a malformed or ambiguous HTTP request: "))')" -eq 10 ]
  [ "$(audit_count '.event == "connect" and .intercepted == true and .host == "api.allowed.test"')" -eq 10 ]
  # The refusal's body is exactly its Content-Length.
  hostile framed:tls-raw api.allowed.test 443 api.allowed.test "GET /hello HTTP/1.1\nHost: api.allowed.test\n\n"
  [[ "$output" =~ ^"framed Content-Length="([0-9]+)" body="([0-9]+)$'\n' ]] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ]
  # The same session, honest, is served.
  hostile tls-raw api.allowed.test 443 api.allowed.test "GET /hello HTTP/1.1\r\nHost: api.allowed.test\r\nConnection: close\r\n\r\n"
  [ "$output" = $'HTTP 1.1 200 OK\nhello from api.allowed.test' ]
  # A body (chunked, then counted) is framed by the same parser: the request after it is
  # decided in its turn, its Host another no rule allows.
  hostile tls-raw api.allowed.test 443 api.allowed.test "POST /hello HTTP/1.1\r\nHost: api.allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nGET /\r\n0\r\n\r\nPOST /hello HTTP/1.1\r\nHost: api.allowed.test\r\nContent-Length: 4\r\n\r\nGET GET /hello HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n"
  [[ "$output" == *"HTTP 1.1 403 Forbidden"$'\n'"codemode egress: the Host header names a host no rule allows"* ]]
  [ "$(reached evil.test)" -eq 0 ]
}

@test "the broker's own refusals: the body is exactly its Content-Length (transparent 400, proxy 403)" {
  EG_FLAGS=(--allow-host plain.allowed.test:80)
  hostile framed:http-direct plain.allowed.test 80 'GET /hello HTTP/1.1\r\nHost: plain.allowed.test\r\nHost: evil.test\r\n\r\n'
  [[ "$output" =~ ^"framed Content-Length="([0-9]+)" body="([0-9]+)$'\n'"HTTP 1.1 400 Bad Request" ]]
  [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ]
  hostile framed:http-proxy 'GET http://evil.test/hello HTTP/1.1\r\nHost: evil.test\r\n\r\n'
  [[ "$output" =~ ^"framed Content-Length="([0-9]+)" body="([0-9]+)$'\n'"HTTP 1.1 403 Forbidden" ]]
  [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ]
}
