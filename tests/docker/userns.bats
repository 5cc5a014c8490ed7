#!/usr/bin/env bats
# Docker with codemode registered as runtimeArgs ["--profile=mcp"] (issue 21 §2): Docker sends
# a config without a user namespace and an overlay rootfs it mounted; the profile adds the user
# namespace (a host range of the container's own) and re-assembles that overlay from idmapped
# layers. A private dockerd (dockerd.bash), its own for this file.

CM_REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
export CM_REPO
: "${CODEMODE:=$CM_REPO/build/codemode}"
export CODEMODE
DK_RUNTIME_ARGS='["--profile=mcp"]'
. "$BATS_TEST_DIRNAME/dockerd.bash"

bats_require_minimum_version 1.5.0

IMG=cm-busybox

setup_file() { dockerd_setup_file cm-dku; }

teardown_file() { dockerd_teardown_file; }

setup() { dockerd_case_setup; }

teardown() { dockerd_case_teardown; }

@test "docker --profile=mcp: container root is an unprivileged host uid; the overlay rootfs is idmapped and read-only" {
  run dk run --rm --runtime=codemode-args --network none "$IMG" sh -c \
    'cat /proc/self/uid_map; stat -c %u:%g /bin/busybox /etc/hostname
     awk '\''$5 == "/" { i = 7; while ($i != "-") i++; print substr($6, 1, 2), $(i + 1) }'\'' /proc/self/mountinfo
     touch /x 2>&1 || true'
  echo "$output" >&3
  [ "$status" -eq 0 ]
  local u
  read -r _ u _ <<<"${lines[0]}"
  [ "$u" -ge 65536 ]
  [ "${lines[1]}" = 0:0 ] # image files (host uid 0) are the container root's
  [ "${lines[2]}" = 0:0 ] # Docker's own (writable) bind of /etc/hostname, idmapped too
  [[ "${lines[3]}" == "ro overlay" ]]
  [[ "$output" == *"Read-only file system"* ]]
}

@test "docker --profile=mcp: a rw volume is written as host root, as without the namespace, and never setuid" {
  run dk run --rm --runtime=codemode-args --network none -v "$HOST_DIR:/data" "$IMG" sh -c \
    'touch /data/made && echo made; chmod u+s /data/made; echo "setuid $?"'
  echo "$output" >&3
  [ "$status" -eq 0 ]
  [[ "$output" == *made* ]]
  [[ "$output" == *"setuid 1"* ]]
  [ "$(stat -c %u "$HOST_DIR/made")" = 0 ]
  [ "$(($(stat -c '0%a' "$HOST_DIR/made") & 06000))" -eq 0 ]
}

@test "docker --profile=mcp: exec joins the container's user namespace; two containers get two ranges" {
  dk run -d --runtime=codemode-args --network none --name cm-ua "$IMG" sleep 60 >/dev/null
  dk run -d --runtime=codemode-args --network none --name cm-ub "$IMG" sleep 60 >/dev/null
  local a b e
  a=$(dk exec cm-ua cat /proc/self/uid_map | awk '{ print $2 }')
  b=$(dk exec cm-ub cat /proc/self/uid_map | awk '{ print $2 }')
  e=$(dk exec cm-ua id -u)
  echo "# ranges $a $b, exec uid $e" >&3
  [ "$a" -ge 65536 ] && [ "$b" -ge 65536 ] && [ "$a" != "$b" ]
  [ "$e" = 0 ]
  # On the host, the container's init runs as its range's first uid.
  local pid
  pid=$(docker inspect -f '{{.State.Pid}}' cm-ua)
  [ "$(awk '/^Uid:/ { print $2 }' "/proc/$pid/status")" = "$a" ]
  dk rm -f cm-ua cm-ub >/dev/null
}
