#!/usr/bin/env bats
# containerd drives codemode through containerd-shim-runc-v2: `ctr run --runc-binary` with an
# imported image and with --rootfs, task exec/kill/pause/resume/ps; every case compared with
# runc. A private containerd (tests/containerd/containerd.bash); podman when it works here.

CM_REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
export CM_REPO
: "${CODEMODE:=$CM_REPO/build/codemode}"
export CODEMODE
# shellcheck source=tests/containerd/containerd.bash
. "$BATS_TEST_DIRNAME/containerd.bash"

bats_require_minimum_version 1.5.0

setup_file() {
  [ "$(id -u)" -eq 0 ] || skip "needs root"
  [ -x "$CODEMODE" ] || skip "no codemode binary at $CODEMODE"
  ctrd_install || skip "containerd cannot be installed here"
  CTR_DIR=$(mktemp -d /tmp/cm-ctr.XXXXXX)
  ctrd_start "$CTR_DIR"
  export CTR_DIR CTR_SOCK CTR_BUNDLE
}

teardown_file() {
  local left=
  if [ -n "${CTR_DIR:-}" ]; then
    left=$(cctr containers ls -q 2>/dev/null)
    ctrd_stop
  fi
  [ -z "$left" ] || {
    echo "containers left behind: $left" >&2
    return 1
  }
}

setup() {
  CASE_TAG=cm$(printf '%s' "$BATS_TEST_NAME" | md5sum | cut -c1-8)
}

# podman_cleanup: the podman case's store, whatever state the case stopped in.
podman_cleanup() {
  [ -n "${PODMAN_DIR:-}" ] || return 0
  podman --root "$PODMAN_DIR/root" --runroot "$PODMAN_DIR/run" --tmpdir "$PODMAN_DIR/tmp" \
    --cgroup-manager cgroupfs --events-backend none --storage-driver vfs --runtime "$CODEMODE" rm -f -t 0 cm-podman-exec >/dev/null 2>&1 || true
  podman --root "$PODMAN_DIR/root" --runroot "$PODMAN_DIR/run" --tmpdir "$PODMAN_DIR/tmp" \
    --cgroup-manager cgroupfs --events-backend none --storage-driver vfs system reset -f >/dev/null 2>&1 || true
  local m
  for m in $(awk -v d="$PODMAN_DIR/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r); do
    umount -l "$m" || true
  done
  rm -rf "$PODMAN_DIR"
  PODMAN_DIR=
  # podman's cgroup parent with cgroupfs; rmdir only succeeds when nothing uses it.
  rmdir /sys/fs/cgroup/*/libpod_parent/conmon /sys/fs/cgroup/*/libpod_parent /sys/fs/cgroup/libpod_parent/conmon \
    /sys/fs/cgroup/libpod_parent 2>/dev/null || true
}

teardown() {
  podman_cleanup
  local id
  for id in $(cctr containers ls -q 2>/dev/null | grep "^$CASE_TAG" || true); do
    cctr tasks kill -s KILL "$id" >/dev/null 2>&1 || true
    cctr tasks delete -f "$id" >/dev/null 2>&1 || true
    cctr containers delete "$id" >/dev/null 2>&1 || true
  done
}

binary_of() { # runc | codemode
  if [ "$1" = codemode ]; then echo "$CODEMODE"; else command -v runc; fi
}

same_as_runc() {
  local fn=$1 ref out
  ref=$(set +e; "$fn" runc 2>&1)
  out=$(set +e; "$fn" codemode 2>&1)
  if [ "$out" != "$ref" ]; then
    printf -- '--- runc\n%s\n--- codemode\n%s\n' "$ref" "$out" >&2
    return 1
  fi
  echo "$ref"
}

case_run_image() {
  local b
  b=$(binary_of "$1")
  # stdout and stderr come through two fifos: their interleaving is a race, so print them apart.
  local st=0
  cctr run --rm --runc-binary "$b" "$CTR_IMAGE" "$CASE_TAG-$1" sh -c 'echo out; echo err >&2; id; hostname; exit 3' \
    2>"$CTR_DIR/stderr.$1" || st=$?
  echo "exit=$st"
  cat "$CTR_DIR/stderr.$1"
}
@test "ctr run --runc-binary with an imported image: output, exit status" {
  same_as_runc case_run_image
}

case_run_rootfs() {
  local b
  b=$(binary_of "$1")
  # No image config, so no PATH in the env: runc then finds no "sh" (codemode falls back to a
  # default PATH); an absolute path works with both.
  cctr run --rm --runc-binary "$b" --rootfs "$CTR_BUNDLE/rootfs" "$CASE_TAG-$1" /bin/sh -c 'ls /; cat /proc/1/comm; exit 4'
  echo "exit=$?"
}
@test "ctr run --runc-binary --rootfs" {
  same_as_runc case_run_rootfs
}

case_task_ops() {
  local b id
  b=$(binary_of "$1")
  id=$CASE_TAG-$1
  cctr run -d --runc-binary "$b" "$CTR_IMAGE" "$id" sh -c 'trap "echo got-usr1" USR1; while :; do sleep 0.1; done' >/dev/null
  sleep 0.5
  cctr tasks exec --exec-id e1 "$id" sh -c 'echo in-exec; cat /proc/1/comm; exit 6'
  echo "exec-exit=$?"
  cctr tasks exec --exec-id e2 --user 1000 --cwd /tmp "$id" sh -c 'id -u; pwd'
  cctr tasks pause "$id"
  cctr tasks ls | awk -v id="$id" '$1 == id {print $3}'
  cctr tasks resume "$id"
  cctr tasks ls | awk -v id="$id" '$1 == id {print $3}'
  cctr tasks ps "$id" | tail -n +2 | wc -l
  cctr tasks kill -s KILL "$id"
  sleep 0.5
  cctr tasks ls | awk -v id="$id" '$1 == id {print $3}'
  cctr tasks delete "$id" >/dev/null 2>&1
  cctr containers delete "$id"
}
@test "ctr tasks exec, pause, resume, ps, kill" {
  same_as_runc case_task_ops
}

case_tty() {
  local b
  b=$(binary_of "$1")
  script -qec "ctr -a $CTR_SOCK -n $CTR_NS run --rm -t --runc-binary $b $CTR_IMAGE $CASE_TAG-$1 sh -c 'tty; exit 2'" /dev/null </dev/null |
    tr -d '\r\0' | sed 's/\^@//g'
  echo "exit=${PIPESTATUS[0]}"
}
@test "ctr run -t: the pty master over the shim's console socket" {
  same_as_runc case_tty
}

# --- podman ---------------------------------------------------------------------------------

@test "podman --runtime codemode" {
  command -v podman >/dev/null || skip "podman is not installed (apt-get install podman)"
  local out ref
  PODMAN_DIR=$(mktemp -d /tmp/cm-podman.XXXXXX)
  local pdir=$PODMAN_DIR
  local p=(podman --root "$pdir/root" --runroot "$pdir/run" --tmpdir "$pdir/tmp" --cgroup-manager cgroupfs
    --events-backend none --storage-driver vfs)
  # podman asks for nofile/nproc 1048576; without CAP_SYS_RESOURCE (this machine) no runtime can
  # raise a hard limit that far, runc included: ask for less.
  local u=(--ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
  if ! tar -C "$CTR_BUNDLE/rootfs" -c . | "${p[@]}" import - cm-busybox >/dev/null 2>"$pdir/err"; then
    cat "$pdir/err" >&2
    skip "podman cannot import an image here"
  fi
  ref=$("${p[@]}" --runtime "$(command -v runc)" run --rm "${u[@]}" --network none cm-busybox sh -c 'echo hi; id; exit 3' 2>&1; echo "exit=$?")
  out=$("${p[@]}" --runtime "$CODEMODE" run --rm "${u[@]}" --network none cm-busybox sh -c 'echo hi; id; exit 3' 2>&1; echo "exit=$?")
  "${p[@]}" --runtime "$CODEMODE" run -d "${u[@]}" --name cm-podman-exec --network none cm-busybox sleep 1000 >/dev/null
  local ex
  ex=$("${p[@]}" --runtime "$CODEMODE" exec cm-podman-exec sh -c 'echo from-exec; exit 5' 2>&1; echo "exit=$?")
  echo "runc: $ref / codemode: $out / exec: $ex" >&2
  [ "$out" = "$ref" ]
  [ "$ex" = "from-exec
exit=5" ]
}
