#!/usr/bin/env bats
# Bounded pulls: a registry's answers are an attacker's. A registry that sends more bytes than
# the manifest declares is cut off at the declared size; redirects (and token realms) are
# followed over https only, never to this machine's loopback, private or own addresses (unless
# that is the registry named), and only 5 deep. The registry here is tests/image/evil-registry.py
# on 198.18.0.5 (evil.test), an address of this suite's own network namespace (run.sh), so the
# registry itself is "on this machine": what it may reach is only itself.

load ../lib/helpers

IMG_DIR=$CM_REPO/tests/image
CODEMODE_IMAGE=$(dirname "$CODEMODE")/codemode-image
EVIL_ADDR=198.18.0.5

setup_file() {
  cm_setup_file
  export W=$BATS_FILE_TMPDIR
  # evil.test's address on this namespace's lo (run.sh maps the name in its hosts file).
  ip addr add "$EVIL_ADDR/32" dev lo 2>/dev/null || true
  export EVIL_PORT=$((20000 + $$ % 10000)) LOOP_PORT=$((30000 + $$ % 10000))
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=cm-evil-ca -keyout "$W/ca.key" -out "$W/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj /CN=evil.test -keyout "$W/srv.key" -out "$W/srv.csr" 2>/dev/null
  # 127.0.0.1 in the certificate too: a puller that followed the redirect there would succeed.
  printf 'subjectAltName=DNS:evil.test,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$W/ext"
  openssl x509 -req -in "$W/srv.csr" -CA "$W/ca.crt" -CAkey "$W/ca.key" -CAcreateserial -days 2 \
    -extfile "$W/ext" -out "$W/srv.crt" 2>/dev/null
  printf '%s' '{"images":[{"tag":"t","platforms":[{"arch":"amd64","layers":[[{"name":"f","size":2097152}]],"config":{"Cmd":["true"]}}]}]}' >"$W/spec.json"
  python3 "$IMG_DIR/mkimage.py" "$W/spec.json" "$W/layout" >/dev/null
  export EVIL_LOG=$W/evil.log
  python3 "$IMG_DIR/evil-registry.py" "$W/layout" "$W/srv.crt" "$W/srv.key" "$EVIL_ADDR" "$EVIL_PORT" "$LOOP_PORT" \
    "$EVIL_LOG" 2>"$W/evil.err" 3>&- &
  echo $! >"$W/evil.pid"
  local i
  for i in $(seq 100); do
    (exec 3<>"/dev/tcp/$EVIL_ADDR/$EVIL_PORT") 2>/dev/null && (exec 3<>"/dev/tcp/127.0.0.1/$LOOP_PORT") 2>/dev/null &&
      return 0
    sleep 0.1
  done
  cat "$W/evil.err" >&2
  return 1
}

teardown_file() {
  kill "$(cat "$W/evil.pid")" 2>/dev/null
  wait 2>/dev/null || true
  ip addr del "$EVIL_ADDR/32" dev lo 2>/dev/null || true
}

setup() {
  cm_setup
  STORE=$TEST_DIR/store
  export CODEMODE_REGISTRY_CA=$W/ca.crt DOCKER_CONFIG=$TEST_DIR/nocfg
  : >"$EVIL_LOG"
}
teardown() { cm_teardown; }

pull() { # pull MODE: $status, $stderr
  status=0
  timeout 120 "$CODEMODE_IMAGE" pull --store "$STORE" -q "evil.test:$EVIL_PORT/$1/app:t" >"$TEST_DIR/.o" 2>"$TEST_DIR/.e" ||
    status=$?
  stderr=$(cat "$TEST_DIR/.e")
}
layer_field() { jq -r ".layers[0].$1" "$W/layout/blobs/sha256/$(jq -r '.manifests[0].digest' "$W/layout/index.json" | cut -d: -f2)"; }
layer_digest() { layer_field digest; }
# Nothing of the refused image in the store: no name, no layer blob, no temp file, no rootfs.
store_clean() {
  local l
  l=$(layer_digest)
  [ -z "$(ls "$STORE/images")" ] && [ -z "$(ls "$STORE/tmp")" ] && [ -z "$(ls "$STORE/rootfs")" ] &&
    [ ! -e "$STORE/blobs/sha256/${l#sha256:}" ] || { find "$STORE" >&2; return 1; }
}
# How many bytes the registry got out before the puller hung up.
sent() { sed -n 's/^sent \([0-9]*\) of .*/\1/p' "$EVIL_LOG" | tail -n 1; }

@test "bounded pull: an honest registry on this machine (the one named) pulls, a redirect to itself too" {
  pull honest
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  rm -rf "$STORE"
  pull redirect-same
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  grep -q "GET /v2/honest/x/blobs/" "$EVIL_LOG"
}

@test "bounded pull: a blob sent past its declared size is cut off there, not read to its end" {
  pull oversize
  [ "$status" -ne 0 ]
  [[ $stderr == *"$(layer_digest)"*"sends more than the $(layer_field size) bytes the descriptor declares: cut off and refused"* ]] ||
    { echo "$stderr"; false; }
  # 256 MiB offered; what got out is the declared size plus what the sockets buffer.
  local n
  n=$(sent)
  [ -n "$n" ] && [ "$n" -lt $((32 << 20)) ] || { echo "sent: $n"; false; }
  store_clean
}

@test "bounded pull: a blob announced (Content-Length) larger than declared is refused before its bytes" {
  pull oversize-cl
  [ "$status" -ne 0 ]
  [[ $stderr == *"sends more than the $(layer_field size) bytes the descriptor declares"* ]] || { echo "$stderr"; false; }
  local n
  n=$(sent)
  [ -n "$n" ] && [ "$n" -lt $((32 << 20)) ] || { echo "sent: $n"; false; }
  store_clean
}

@test "bounded pull: a redirect to 127.0.0.1 is refused before connecting; the loopback service sees nothing" {
  pull redirect-loopback
  [ "$status" -ne 0 ]
  [[ $stderr == *"the redirect to https://127.0.0.1:$LOOP_PORT/"*"connects to 127.0.0.1, a loopback (127.0.0.0/8) address: refused"* ]] ||
    { echo "$stderr"; false; }
  ! grep -q "^loopback GET" "$EVIL_LOG"
  store_clean
}

@test "bounded pull: a token realm on 127.0.0.1 is refused the same way" {
  pull realm-loopback
  [ "$status" -ne 0 ]
  [[ $stderr == *"connects to 127.0.0.1, a loopback (127.0.0.0/8) address: refused"* ]] || { echo "$stderr"; false; }
  ! grep -q "^loopback GET" "$EVIL_LOG"
  [ -z "$(ls "$STORE/images")" ]
}

@test "bounded pull: a redirect to plain http is refused, naming it" {
  pull redirect-http
  [ "$status" -ne 0 ]
  [[ $stderr == *"the redirect to http://evil.test:$EVIL_PORT/"*"is refused: redirects are followed over https only"* ]] ||
    { echo "$stderr"; false; }
  store_clean
}

@test "bounded pull: a redirect chain longer than 5 is refused" {
  pull redirect-loop
  [ "$status" -ne 0 ]
  [[ $stderr == *"more than 5 redirects"*"refused"* ]] || { echo "$stderr"; false; }
  # The first request and 5 redirects followed, no more.
  [ "$(grep -c "GET /v2/redirect-loop/app/blobs/$(layer_digest)" "$EVIL_LOG")" -eq 6 ] || { cat "$EVIL_LOG"; false; }
  store_clean
}
