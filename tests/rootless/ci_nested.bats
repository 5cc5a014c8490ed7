#!/usr/bin/env bats
# Rootless ci, the heavier jobs (issue 26, point 5: "each job as root and as a normal user"):
# nested podman (load, run --network none, build with a RUN step) from the host's /usr, and
# apt-get install in a Debian 12 image, as a normal user with its subordinate ranges.
# tests/rootless/run.sh runs this file as its test user in pass 2 (/etc/subuid gives the user
# 100000:65536, the job's ids 1-65536); the Debian rootfs is a copy root made for the user
# ($CM_ROOTLESS_DEBIAN: tests/ci/.work/debian with its ids shifted the way the user's own
# unpack would have written them: root's files the user's, uid N's 100000+N-1).

load ../lib/helpers
# ci_test_image: the nested-container image
load ../ci/test_image

setup_file() {
  [ "$(id -u)" -ne 0 ] || {
    echo "tests/rootless/ci_nested.bats runs as an unprivileged user (tests/rootless/run.sh)" >&2
    return 1
  }
  cm_setup_file
  export CODEMODE_RUN=${CODEMODE_RUN:-$(dirname "$CODEMODE")/codemode-run}
  # The test image as `docker save` writes it (as tests/ci/ci.bats makes it).
  export IMG=$BATS_FILE_TMPDIR/img.tar
  ci_test_image "$IMG"
}

setup() {
  [ "${CM_ROOTLESS_SUBUID:-0}" = 1 ] || skip "needs the subordinate ranges of pass 2"
  cm_setup
  WS=$TEST_DIR/ws
  mkdir -p "$WS"
  cp "$IMG" "$WS/img.tar"
  printf 'FROM localhost/test/bb:latest\nRUN echo built-in-job >/built\nCMD ["cat", "/built"]\n' >"$WS/Containerfile"
}

# ci_job [codemode-run options…] -- CMD…: a ci job as this (unprivileged) user.
ci_job() {
  local opts=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  status=0
  timeout --kill-after=10 600 "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --profile ci \
    --env "CODEMODE_TEST_CONTAINER=$CM_TEST_TOKEN:$CID" "${opts[@]}" -- "$@" \
    </dev/null >"$TEST_DIR/out" 2>&1 3>&- || status=$?
  output=$(cat "$TEST_DIR/out")
  echo "# job status $status: $output" >&3
}

# nothing_left: no state directory, no process with the job's token, none of the user's
# subordinate ids running, no nested storage mount.
nothing_left() {
  local i sub
  for i in $(seq 1 40); do
    sub=$(ps -e -o uid= | awk '$1 >= 100000 && $1 < 165536' | head -n 1)
    [ -z "$(test_processes "$CM_TEST_TOKEN:$CID")" ] && [ -z "$(ls -A "$ROOT")" ] && [ -z "$sub" ] && break
    sleep 0.5
  done
  [ -z "$(test_processes "$CM_TEST_TOKEN:$CID")" ]
  [ -z "$(ls -A "$ROOT")" ]
  [ -z "$sub" ]
  ! grep -q "containers/storage" /proc/self/mountinfo
}

@test "rootless ci nested: podman in a --host job as a normal user: load, run --network none, build with a RUN step" {
  command -v podman >/dev/null || skip "podman is not installed (tests/ci/deps.sh)"
  ci_job --host --mount "$WS:/ws:rw" --cwd /ws -- sh -c '
    set -e
    podman load -i img.tar
    podman run --rm --network none localhost/test/bb:latest sh -c "echo nested-ok; id -u"
    podman build -t localhost/built -f Containerfile . && podman run --rm --network none localhost/built'
  [ "$status" -eq 0 ]
  [[ "$output" == *"Loaded image: localhost/test/bb:latest"* ]]
  [[ "$output" == *$'nested-ok\n0'* ]]
  [[ "$output" == *built-in-job* ]]
  nothing_left
}

@test "rootless ci nested: apt-get install in a Debian 12 image as a normal user, then sudo and su" {
  local deb=${CM_ROOTLESS_DEBIAN:-} repo=$CM_REPO/tests/ci/.work/repo
  [ -n "$deb" ] && [ -x "$deb/usr/bin/apt-get" ] && [ -s "$repo/Packages" ] ||
    skip "no Debian rootfs for the user (tests/rootless/run.sh makes it from tests/ci/.work)"
  ci_job --rootfs "$deb" --mount "$repo:/repo:ro" -- /bin/sh -c '
    set -e
    echo "deb [trusted=yes] file:/repo ./" >/etc/apt/sources.list
    rm -f /etc/apt/sources.list.d/*
    apt-get -qq update && DEBIAN_FRONTEND=noninteractive apt-get -qq install -y sudo >/dev/null
    stat -c "%a %U" /usr/bin/sudo
    useradd -m builder && echo "builder ALL=(ALL) NOPASSWD: ALL" >/etc/sudoers.d/builder
    su builder -c "id -un; sudo -n id -u 2>/dev/null"'
  [ "$status" -eq 0 ]
  [[ "$output" == *"4755 root"* ]]
  [[ "$output" == *$'builder\n0'* ]]
  # The rootfs is never written: the job's changes were in its throwaway upper layer.
  [ ! -e "$deb/usr/bin/sudo" ]
  nothing_left
}
