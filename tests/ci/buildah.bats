#!/usr/bin/env bats
# buildah nested in a ci job (issue 26, point 2): Debian's buildah from the host's /usr through
# `codemode-run --profile ci --host`, as the job's root, with the /etc/containers the job gets
# (cgroups disabled, overlay storage on the job's /var/lib/containers tmpfs): the working-container
# path (from, run, commit) and a Containerfile with a RUN step (bud), then the job's end leaving
# nothing.

load ../lib/helpers
# ci_test_image: the nested-container image
load test_image

setup_file() {
  command -v buildah >/dev/null || skip "buildah is not installed (tests/ci/deps.sh)"
  cm_setup_file
  export CODEMODE_RUN=${CODEMODE_RUN:-$(dirname "$CODEMODE")/codemode-run}
  # The base image, as `docker save` writes it: the template's busybox rootfs as one layer.
  export IMG=$BATS_FILE_TMPDIR/img.tar
  ci_test_image "$IMG"
}

setup() {
  cm_setup
  # The job's workspace, owned by an unprivileged user (the profile refuses a writable bind of
  # host root's).
  WS=$(mktemp -d /tmp/cm-ci-bh.XXXXXX)
  cp "$IMG" "$WS/img.tar"
  printf 'FROM docker-archive:/ws/img.tar\nRUN echo bud-in-job >/built && id -u >>/built\nCMD ["cat", "/built"]\n' >"$WS/Containerfile"
  chown -R 65534:65534 "$WS"
}

teardown() {
  rm -rf --one-file-system "$WS"
  cm_teardown
}

# job CMD…: a ci job from the host's /usr, the workspace at /ws; sets $status and $output.
job() {
  status=0
  timeout --kill-after=10 600 "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --profile ci --host \
    --mount "$WS:/ws:rw" --cwd /ws --env "CODEMODE_TEST_CONTAINER=$CM_TEST_TOKEN:$CID" -- "$@" \
    </dev/null >"$TEST_DIR/out" 2>&1 3>&- || status=$?
  output=$(cat "$TEST_DIR/out")
  echo "# job status $status: $output" >&3
}

# nothing_left: no state directory, no range registration naming the job, no nested storage
# mount on the host, no process carrying the job's token.
nothing_left() {
  for _ in $(seq 1 40); do
    [ -z "$(ls -A "$ROOT")" ] && [ -z "$(test_processes "$CM_TEST_TOKEN:$CID")" ] && break
    sleep 0.5
  done
  [ -z "$(ls -A "$ROOT")" ]
  ! grep -rqs "$ROOT" /run/codemode-userns
  ! grep -q "containers/storage" /proc/self/mountinfo
  [ -z "$(test_processes "$CM_TEST_TOKEN:$CID")" ]
}

@test "ci buildah: from, run (a RUN of the job's root), commit, and the committed image runs" {
  job sh -c 'set -e
    c=$(buildah from docker-archive:img.tar)
    buildah run --network none "$c" -- sh -c "echo made-by-buildah-run >/made; id -u >>/made"
    buildah commit -q "$c" localhost/made >/dev/null
    buildah rm "$c" >/dev/null
    buildah images --format "{{.Name}}"
    d=$(buildah from localhost/made)
    buildah run --network none "$d" -- cat /made
    buildah rm "$d" >/dev/null'
  [ "$status" -eq 0 ]
  [[ "$output" == *localhost/made* ]]
  [[ "$output" == *$'made-by-buildah-run\n0'* ]]
  nothing_left
}

@test "ci buildah: bud of a Containerfile with a RUN step, the image then run by buildah" {
  job sh -c 'set -e
    buildah bud -q --network none -t localhost/built -f Containerfile . >/dev/null
    d=$(buildah from localhost/built)
    buildah run --network none "$d" -- cat /built'
  [ "$status" -eq 0 ]
  [[ "$output" == *$'bud-in-job\n0'* ]]
  nothing_left
}
