# tests/egress/lab.bash — a small internet inside network namespaces the test makes itself, so no
# packet can leave the machine even if the code under test is wrong (sourced by the egress tests
# and tests/bench). Two namespaces and a veth between them:
#
#   LAB_NET    "the machine": codemode-run and its broker run here (ip netns exec), default
#              route into the hosts namespace; 198.51.100.1/24
#   LAB_HOSTS  "the internet": 198.51.100.2/24 and, on its lo, the test hosts' addresses:
#                203.0.113.10 api.allowed.test    203.0.113.11 other.allowed.test
#                203.0.113.20 evil.test           203.0.113.30 plain.allowed.test
#                10.20.0.5    private.allowed.test (a real server: a guard failure would show)
#                169.254.169.254 meta.allowed.test   loop.allowed.test → 127.0.0.1
#                rebind.allowed.test: first answer 203.0.113.10, then 10.20.0.5
#                self.allowed.test → 198.51.100.1 (LAB_NET's own address: the broker's machine),
#                mapped.allowed.test → ::ffff:198.51.100.1 (its IPv4-mapped form, AAAA only),
#                bcast.allowed.test → 198.51.100.255 (the subnet's broadcast)
#                203.0.113.40 registry.allowed.test (tests/ci/npm.bats runs its npm registry
#                mirror there, on port 4873)
#              dnsmasq on 203.0.113.53 answers these; servers.py serves HTTPS on 443/8443 and
#              HTTP on 80 on every address (tests/egress/servers.py).
#
# lab_up DIR  (needs root, ip, openssl, dnsmasq, python3) → LAB_DIR LAB_CA LAB_NET LAB_HOSTS
#             LAB_DNS (the resolver for --dns-upstream) LAB_TOKEN (the API token servers.py wants)
# lab_down    stops everything lab_up started and removes the namespaces
# in_net CMD… run CMD in LAB_NET

LAB_DNS=203.0.113.53
LAB_TOKEN=glpat-egress-test-secret-4242

lab_ca() {
  local d=$1
  openssl ecparam -name prime256v1 -genkey -noout -out "$d/ca.key" 2>/dev/null &&
    openssl req -x509 -new -key "$d/ca.key" -subj "/O=codemode tests/CN=egress test CA" -days 2 \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
      -out "$d/ca.pem" 2>/dev/null &&
    openssl ecparam -name prime256v1 -genkey -noout -out "$d/host.key" 2>/dev/null &&
    openssl req -new -key "$d/host.key" -subj "/CN=api.allowed.test" -out "$d/host.csr" 2>/dev/null &&
    printf '%s\n' "subjectAltName=DNS:api.allowed.test,DNS:other.allowed.test,DNS:evil.test,DNS:plain.allowed.test,DNS:private.allowed.test,DNS:meta.allowed.test,DNS:loop.allowed.test,DNS:rebind.allowed.test,IP:203.0.113.10,IP:203.0.113.20" \
      "basicConstraints=CA:FALSE" "extendedKeyUsage=serverAuth" >"$d/host.ext" &&
    openssl x509 -req -in "$d/host.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial -days 2 \
      -extfile "$d/host.ext" -out "$d/host.pem" 2>/dev/null
}

lab_up() {
  LAB_DIR=$1
  mkdir -p "$LAB_DIR"
  local tag=${CM_RUN_TAG:-x}$$
  LAB_NET=cm-eg-$tag-net LAB_HOSTS=cm-eg-$tag-hosts LAB_CA=$LAB_DIR/ca.pem
  export LAB_DIR LAB_NET LAB_HOSTS LAB_CA LAB_DNS LAB_TOKEN
  lab_ca "$LAB_DIR" || { echo "lab: making the test CA failed" >&2; return 1; }
  ip netns add "$LAB_NET" && ip netns add "$LAB_HOSTS" || return 1
  ip link add eg0-$tag type veth peer name eg1-$tag || return 1
  ip link set eg0-$tag netns "$LAB_NET" && ip link set eg1-$tag netns "$LAB_HOSTS" || return 1
  ip -n "$LAB_NET" link set lo up
  ip -n "$LAB_NET" link set eg0-$tag name eg0 && ip -n "$LAB_NET" addr add 198.51.100.1/24 dev eg0 &&
    ip -n "$LAB_NET" link set eg0 up && ip -n "$LAB_NET" route add default via 198.51.100.2 || return 1
  ip -n "$LAB_HOSTS" link set lo up
  ip -n "$LAB_HOSTS" link set eg1-$tag name eg1 && ip -n "$LAB_HOSTS" addr add 198.51.100.2/24 dev eg1 &&
    ip -n "$LAB_HOSTS" link set eg1 up || return 1
  local a
  for a in 203.0.113.10 203.0.113.11 203.0.113.20 203.0.113.30 203.0.113.40 203.0.113.53 203.0.113.54 10.20.0.5 169.254.169.254; do
    ip -n "$LAB_HOSTS" addr add $a/32 dev lo || return 1
  done
  : >"$LAB_DIR/requests.log"
  ip netns exec "$LAB_HOSTS" dnsmasq --keep-in-foreground --no-resolv --no-hosts --bind-interfaces \
    --listen-address=$LAB_DNS --port=53 --user=root --group=root --pid-file="$LAB_DIR/dnsmasq.pid" \
    --log-facility="$LAB_DIR/dnsmasq.log" \
    --address=/api.allowed.test/203.0.113.10 --address=/other.allowed.test/203.0.113.11 \
    --address=/evil.test/203.0.113.20 --address=/plain.allowed.test/203.0.113.30 --address=/registry.allowed.test/203.0.113.40 \
    --address=/private.allowed.test/10.20.0.5 --address=/meta.allowed.test/169.254.169.254 \
    --address=/loop.allowed.test/127.0.0.1 --address=/self.allowed.test/198.51.100.1 \
    --address=/mapped.allowed.test/::ffff:198.51.100.1 --address=/bcast.allowed.test/198.51.100.255 --server=/rebind.allowed.test/203.0.113.54 --local=/test/ --local-ttl=60 \
    </dev/null >>"$LAB_DIR/dnsmasq.log" 2>&1 &
  echo $! >"$LAB_DIR/dnsmasq.job"
  ip netns exec "$LAB_HOSTS" python3 "$(dirname "${BASH_SOURCE[0]}")/servers.py" "$LAB_DIR/host.pem" \
    "$LAB_DIR/host.key" "$LAB_DIR/requests.log" "$LAB_TOKEN" </dev/null >"$LAB_DIR/servers.out" 2>&1 &
  echo $! >"$LAB_DIR/servers.job"
  local i
  for i in $(seq 300); do
    grep -q ready "$LAB_DIR/servers.out" 2>/dev/null && break
    sleep 0.1
  done
  grep -q ready "$LAB_DIR/servers.out" || { echo "lab: servers.py did not start: $(cat "$LAB_DIR/servers.out")" >&2; return 1; }
}

lab_down() {
  local f p
  for f in "$LAB_DIR/servers.job" "$LAB_DIR/dnsmasq.job"; do
    [ -e "$f" ] || continue
    p=$(cat "$f")
    kill "$p" 2>/dev/null
    wait "$p" 2>/dev/null
    rm -f "$f"
  done
  # Whatever else still runs inside the namespaces was started by this lab.
  for f in "$LAB_NET" "$LAB_HOSTS"; do
    [ -n "$f" ] || continue
    for p in $(ip netns pids "$f" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    ip netns del "$f" 2>/dev/null
  done
}

# nsenter, not `ip netns exec`: that one remounts /sys, which hides the cgroup hierarchies.
in_net() { nsenter --net="/run/netns/$LAB_NET" "$@"; }

# live_brokers: the pids of codemode-brokers still running (a zombie has exited: this machine's
# pid 1 is slow to reap orphans) in this lab's network namespace, where codemode-run and the
# shim run them: another run's lab on the same machine has its own.
live_brokers() {
  local lab pid
  lab=$(stat -L -c %i "/run/netns/$LAB_NET" 2>/dev/null) || return 0
  for pid in $(ps -eo pid=,stat=,comm= | awk '$3 == "codemode-broker" && $2 !~ /^Z/ { print $1 }'); do
    [ "$(stat -L -c %i "/proc/$pid/ns/net" 2>/dev/null)" = "$lab" ] && echo "$pid"
  done
  return 0
}
