#!/usr/bin/env bats
# Real CI jobs under `codemode-run --profile ci --host` as root: the host's podman (Debian's
# 4.3.1 with crun) nested in the job, the job's end leaving nothing (exit, --timeout,
# codemode-run SIGKILLed), two jobs at once kept apart, a --state cache jobs in different ranges
# share (and one of host root's refused with its fix), and a real C build (codemode's own) as
# the job's root and as a normal user of the job.

load ../lib/helpers
# ci_test_image: the nested-container image
load test_image
# range_processes, nothing_left, range_start: the leak checks after a job
load jobs

setup_file() {
  cm_setup_file
  export CODEMODE_RUN=${CODEMODE_RUN:-$(dirname "$CODEMODE")/codemode-run}
  # The test image, as `docker save` writes it: the template's busybox rootfs, one layer with
  # its history entry (podman build counts them).
  export IMG=$BATS_FILE_TMPDIR/img.tar
  ci_test_image "$IMG"
}

setup() {
  cm_setup
  # The job's workspace: owned by an unprivileged user (the profile refuses a writable bind of
  # host root's, whose setuid files would be root's), under /tmp (binds from /dev are refused).
  WS=$(mktemp -d /tmp/cm-ci-ws.XXXXXX)
  cp "$IMG" "$WS/img.tar"
  printf 'FROM localhost/test/bb:latest\nRUN echo built-in-job >/built\nCMD ["cat", "/built"]\n' >"$WS/Containerfile"
  chown -R 65534:65534 "$WS"
}

teardown() {
  rm -rf --one-file-system "$WS"
  cm_teardown
}

# job [codemode-run options…] -- CMD…: a ci job from the host's /usr, the workspace at /ws.
job() {
  local opts=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  status=0
  timeout --kill-after=10 "${CM_CI_JOB_TIMEOUT:-600}" "$CODEMODE_RUN" --root "$ROOT" --id "${JOB_ID:-$CID}" --profile ci \
    --host --mount "$WS:/ws:rw" --cwd /ws --env "CODEMODE_TEST_CONTAINER=$CM_TEST_TOKEN:$CID" "${opts[@]}" -- "$@" \
    </dev/null >"$TEST_DIR/out" 2>&1 3>&- || status=$?
  output=$(cat "$TEST_DIR/out")
  echo "# job status $status: $output" >&3
}


@test "ci: nested podman in the job: load, run --network none, build with a RUN step" {
  job -- sh -c 'cat /proc/self/uid_map >uid_map
    podman load -i img.tar && podman images
    podman run --rm --network none localhost/test/bb:latest echo nested-ok
    podman build -t localhost/built -f Containerfile . && podman run --rm --network none localhost/built'
  [ "$status" -eq 0 ]
  [[ "$output" == *"Loaded image: localhost/test/bb:latest"* ]]
  [[ "$output" == *nested-ok* ]]
  [[ "$output" == *built-in-job* ]]
  nothing_left "$(range_start)"
}

@test "ci: a nested container left running is gone when the job exits" {
  job -- sh -c 'cat /proc/self/uid_map >uid_map
    podman load -q -i img.tar >/dev/null
    podman run -d --network none localhost/test/bb:latest sleep 1000
    podman ps --format "{{.Status}}" | grep -q Up && echo nested-running'
  [ "$status" -eq 0 ]
  [[ "$output" == *nested-running* ]]
  nothing_left "$(range_start)"
}

@test "ci: --timeout ends the job and its nested containers (124), nothing left" {
  job --timeout 20 --grace 1 -- sh -c 'cat /proc/self/uid_map >uid_map
    podman load -q -i img.tar >/dev/null
    podman run -d --network none localhost/test/bb:latest sleep 1000 >/dev/null && echo nested-running
    trap "" TERM; sleep 1000'
  [ "$status" -eq 124 ]
  [[ "$output" == *nested-running* ]]
  nothing_left "$(range_start)"
}

@test "ci: codemode-run SIGKILLed mid-job: its watcher removes the job and its nested containers" {
  "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --profile ci --host --mount "$WS:/ws:rw" --cwd /ws \
    --env "CODEMODE_TEST_CONTAINER=$CM_TEST_TOKEN:$CID" -- sh -c 'cat /proc/self/uid_map >uid_map
      podman load -q -i img.tar >/dev/null
      podman run -d --network none localhost/test/bb:latest sleep 1000 >/dev/null && touch ready
      sleep 1000' </dev/null >"$TEST_DIR/out" 2>&1 3>&- &
  local pid=$!
  bg_track $pid
  wait_file "$WS/ready" 120
  [ -n "$(range_processes "$(range_start)")" ]
  kill -KILL $pid
  nothing_left "$(range_start)"
}

@test "ci: two concurrent jobs: different host ranges, and neither can see or signal the other" {
  local token=cm-ci-a-$$-$RANDOM
  JOB_ID=$CID-a job -- sh -c "cat /proc/self/uid_map >a.map; sh -c 'sleep 8; echo alive >a.done; : $token'" &
  local a=$!
  bg_track $a
  wait_file "$WS/a.map" 60
  # B kills everything it can signal (kill -1: every process but itself), then looks for A
  # (the token from a file: in B's own command line it would find itself).
  echo "$token" >"$WS/token"
  JOB_ID=$CID-b job -- sh -c "cat /proc/self/uid_map >b.map; kill -KILL -1; grep -l -f token /proc/[0-9]*/cmdline && echo SEEN-A; true"
  [ "$status" -eq 0 ]
  [[ "$output" != *SEEN-A* ]]
  wait $a
  [ "$(cat "$WS/a.done")" = alive ]
  local sa sb
  sa=$(awk '{print $2}' "$WS/a.map")
  sb=$(awk '{print $2}' "$WS/b.map")
  [ "$sa" -ne "$sb" ]
  # 1048576 ids each, no overlap.
  [ $((sa > sb ? sa - sb : sb - sa)) -ge 1048576 ]
}

@test "ci: a --state cache shared by jobs in sequence: made for them (uid and gid 2147483647, 0700); each job's root reads and writes what the last left, nothing of host root's" {
  local cache=$TEST_DIR/cache
  [ ! -e "$cache" ]
  # Job A writes the cache, a setuid program among it, then keeps its range (it waits for B) so
  # that B, which starts once A's files are written, gets another one.
  JOB_ID=$CID-a job --state "$cache:/cache" -- sh -c 'set -e; cat /proc/self/uid_map >/cache/a.map
    echo from-a >/cache/data; mkdir /cache/dir; cp /bin/true /cache/dir/suid; chmod 4755 /cache/dir/suid
    touch /cache/a.done; i=0; while [ ! -e /cache/b.done ] && [ $i -lt 600 ]; do sleep 0.2; i=$((i + 1)); done' &
  local a=$!
  bg_track $a
  wait_file "$cache/a.done" 60
  JOB_ID=$CID-b job --state "$cache:/cache" -- sh -c 'set -e; cat /proc/self/uid_map >/cache/b.map
    cat /cache/data; echo from-b >>/cache/data; stat -c "%u %g %a" /cache/dir/suid; id -u; touch /cache/b.done'
  [ "$status" -eq 0 ]
  # B's root sees A's files as its own root's, and writes to them (the job's own lines, without
  # codemode-run's notes of the limits).
  [ "$(grep -v '^codemode-run: ' <<<"$output")" = $'from-a\n0 0 4755\n0' ]
  wait $a
  local sa sb
  sa=$(awk '{print $2}' "$cache/a.map")
  sb=$(awk '{print $2}' "$cache/b.map")
  [ "$sa" -ne "$sb" ]
  # On the host: the directory codemode-run made and everything the jobs left is the shared
  # owner's, never host root's nor a job range's; the setuid program is that id's.
  [ "$(stat -c '%u:%g %a' "$cache")" = "2147483647:2147483647 700" ]
  [ -z "$(find "$cache" ! -uid 2147483647 -o ! -gid 2147483647)" ]
  [ "$(stat -c '%u %a' "$cache/dir/suid")" = "2147483647 4755" ]
  # A third job, after both ended (it may hold A's range again): both writes are there, and it
  # may remove what they left.
  job --state "$cache:/cache" -- sh -c 'cat /proc/self/uid_map >uid_map; cat /cache/data; rm -r /cache/dir && echo removed'
  [ "$status" -eq 0 ]
  [ "$(grep -v '^codemode-run: ' <<<"$output")" = $'from-a\nfrom-b\nremoved' ]
  [ ! -e "$cache/dir" ]
  nothing_left "$(range_start)"
}

@test "ci: an existing --state directory of host root's is refused at start, naming the flag, the path and the fix; nothing left" {
  local cache=$TEST_DIR/rootcache
  mkdir -m 0700 "$cache"
  echo old >"$cache/kept"
  job --state "$cache:/cache" -- sh -c 'echo RAN; touch /cache/x'
  [ "$status" -eq 125 ]
  [[ "$output" != *RAN* ]]
  [[ "$output" == *"--state $cache:/cache: $cache is host root's (uid 0, gid 0)"* ]]
  [[ "$output" == *"fix: chown -R 2147483647:2147483647 $cache && chmod 0700 $cache"* ]]
  [ "$(stat -c %u:%g "$cache")" = 0:0 ]
  [ "$(ls -A "$cache")" = kept ]
  [ -z "$(ls -A "$ROOT" 2>/dev/null)" ]
  [ -z "$(test_processes "$CM_TEST_TOKEN:$CID")" ]
  # The fix it names works.
  chown -R 2147483647:2147483647 "$cache" && chmod 0700 "$cache"
  job --state "$cache:/cache" -- sh -c 'cat /cache/kept; touch /cache/x && echo wrote'
  [ "$status" -eq 0 ]
  [[ "$output" == *$'old\nwrote'* ]]
  [ "$(stat -c %u "$cache/x")" = 2147483647 ]
}

@test "ci: a real build: codemode's own make, as the job's root and as a normal user of the job" {
  CM_CI_JOB_TIMEOUT=900 job --mount "$CM_REPO:/src:ro" -- sh /src/tests/ci/build-job.sh
  [ "$status" -eq 0 ]
  [ "$(grep -c "^codemode version" <<<"$output")" -eq 2 ]
  [[ "$output" == *"codemode-run version"* ]]
  [ "$(tail -1 <<<"$output")" = 1000 ]
}

@test "ci: an image job (--image): its root writable and thrown away, the image in the store unchanged" {
  local store
  store=$(mktemp -d /tmp/cm-ci-store.XXXXXX)
  status=0
  timeout 300 "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --profile ci --store "$store" --image "docker-archive:$IMG" \
    --env "CODEMODE_TEST_CONTAINER=$CM_TEST_TOKEN:$CID" -- sh -c 'echo job >/etc/made && cat /etc/made && id -u' \
    </dev/null >"$TEST_DIR/out" 2>&1 3>&- || status=$?
  output=$(cat "$TEST_DIR/out")
  echo "# $output" >&3
  [ "$status" -eq 0 ]
  [[ "$output" == *$'job\n0'* ]]
  ! grep -rqs "^job$" "$store" --include=made
  [ -z "$(find "$store" -name made)" ]
  rm -rf --one-file-system "$store"
  [ -z "$(ls -A "$ROOT")" ]
}

@test "ci: podman inside an image (the host's podman, crun and conmon as a bundle with its own /etc/containers)" {
  "$CM_REPO/tests/ci/make-podman-bundle.sh" "$TEST_DIR/podman-image"
  chmod 0755 "$TEST_DIR"
  status=0
  timeout 300 "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --profile ci --mount "$WS:/ws:rw" --cwd /ws \
    --env "CODEMODE_TEST_CONTAINER=$CM_TEST_TOKEN:$CID" "$TEST_DIR/podman-image" -- /bin/sh -c \
    'cat /proc/self/uid_map >uid_map; podman load -q -i img.tar && podman run --rm --network none localhost/test/bb:latest echo nested-from-image' \
    </dev/null >"$TEST_DIR/out" 2>&1 3>&- || status=$?
  output=$(cat "$TEST_DIR/out")
  echo "# $output" >&3
  [ "$status" -eq 0 ]
  [[ "$output" == *nested-from-image* ]]
  nothing_left "$(range_start)"
}

# What the profile's containers.conf.d drop-in (src/runtime/containers_dropin.c) must say here:
# cgroups only where the runtime delegates the job's cgroup (a cgroup v2 host, as root).
dropin_cgroups() { [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ] && echo enabled || echo disabled; }

@test "ci: podman inside an image with no containers.conf or storage.conf of its own: the profile's drop-in is enough" {
  "$CM_REPO/tests/ci/make-podman-bundle.sh" --no-config "$TEST_DIR/podman-bare"
  chmod 0755 "$TEST_DIR"
  [ ! -e "$TEST_DIR/podman-bare/rootfs/etc/containers/containers.conf" ]
  [ -z "$(find "$TEST_DIR/podman-bare/rootfs" -name 'containers.conf*' -o -name storage.conf)" ]
  status=0
  timeout 300 "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --profile ci --mount "$WS:/ws:rw" --cwd /ws \
    --env "CODEMODE_TEST_CONTAINER=$CM_TEST_TOKEN:$CID" "$TEST_DIR/podman-bare" -- /bin/sh -c \
    'cat /proc/self/uid_map >uid_map; cat /etc/containers/containers.conf.d/zz-codemode-ci.conf
     podman load -q -i img.tar && podman run --rm --network none localhost/test/bb:latest echo nested-no-config' \
    </dev/null >"$TEST_DIR/out" 2>&1 3>&- || status=$?
  output=$(cat "$TEST_DIR/out")
  echo "# $output" >&3
  [ "$status" -eq 0 ]
  [[ "$output" == *nested-no-config* ]]
  [[ "$output" == *"cgroups = \"$(dropin_cgroups)\""* ]]
  [[ "$output" == *'cgroup_manager = "cgroupfs"'* ]]
  # Written in the job's throwaway layer: the image is as it was.
  [ ! -e "$TEST_DIR/podman-bare/rootfs/etc/containers/containers.conf.d" ]
  nothing_left "$(range_start)"
}

@test "ci: an image's own containers.conf is kept; the drop-in changes only its keys" {
  "$CM_REPO/tests/ci/make-podman-bundle.sh" "$TEST_DIR/podman-own"
  chmod 0755 "$TEST_DIR"
  # Keys the job cannot use (no systemd, no journald in it), which the drop-in overrides, and one
  # it leaves alone.
  printf '[engine]\ncgroup_manager = "systemd"\nevents_logger = "journald"\nruntime = "crun"\nvolume_path = "/var/lib/containers/image-volumes"\n' \
    >"$TEST_DIR/podman-own/rootfs/etc/containers/containers.conf"
  status=0
  timeout 300 "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --profile ci --mount "$WS:/ws:rw" --cwd /ws \
    --env "CODEMODE_TEST_CONTAINER=$CM_TEST_TOKEN:$CID" "$TEST_DIR/podman-own" -- /bin/sh -c \
    'cat /proc/self/uid_map >uid_map; cat /etc/containers/containers.conf
     podman info --format "volumes={{.Store.VolumePath}} manager={{.Host.CgroupManager}} events={{.Host.EventLogger}}"' \
    </dev/null >"$TEST_DIR/out" 2>&1 3>&- || status=$?
  output=$(cat "$TEST_DIR/out")
  echo "# $output" >&3
  [ "$status" -eq 0 ]
  [[ "$output" == *'cgroup_manager = "systemd"'* ]]
  # The image's volume_path, and the drop-in's manager and logger over the image's.
  [[ "$output" == *"volumes=/var/lib/containers/image-volumes manager=cgroupfs events=file"* ]]
  nothing_left "$(range_start)"
}

@test "ci: apt-get install in a Debian 12 image (sudo, from a local repository), then sudo and su to a normal user" {
  local work=$CM_REPO/tests/ci/.work
  [ -x "$work/debian/usr/bin/apt-get" ] && [ -s "$work/repo/Packages" ] || "$CM_REPO/tests/ci/deps.sh" >&2
  status=0
  timeout 600 "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --profile ci --rootfs "$work/debian" \
    --mount "$work/repo:/repo:ro" --env "CODEMODE_TEST_CONTAINER=$CM_TEST_TOKEN:$CID" -- /bin/sh -c '
      set -e
      echo "deb [trusted=yes] file:/repo ./" >/etc/apt/sources.list
      rm -f /etc/apt/sources.list.d/*
      apt-get -qq update && DEBIAN_FRONTEND=noninteractive apt-get -qq install -y sudo >/dev/null
      stat -c "%a %U" /usr/bin/sudo
      useradd -m builder && echo "builder ALL=(ALL) NOPASSWD: ALL" >/etc/sudoers.d/builder
      su builder -c "id -un; sudo -n id -u 2>/dev/null"' </dev/null >"$TEST_DIR/out" 2>&1 3>&- || status=$?
  output=$(cat "$TEST_DIR/out")
  echo "# $output" >&3
  [ "$status" -eq 0 ]
  [[ "$output" == *"4755 root"* ]] # dpkg set the setuid bit, in the job's throwaway root
  [[ "$output" == *$'builder\n0'* ]] # su to the user, sudo back to the job's root
  # The cached rootfs is never written: the job's changes were in its throwaway upper layer.
  [ ! -e "$work/debian/usr/bin/sudo" ]
  [ -z "$(ls -A "$ROOT")" ]
}
