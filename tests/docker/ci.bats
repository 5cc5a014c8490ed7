#!/usr/bin/env bats
# Docker with codemode registered as runtimeArgs ["--profile=ci"] (issue 26): `docker run
# --runtime=codemode-ci`. Docker sends its own config (its default capabilities and seccomp
# filter, an overlay rootfs it mounted, its /etc/hosts, resolv.conf and hostname binds, a /dev/shm
# tmpfs); the profile gives the job its user namespace and capabilities, ci.json, a throwaway
# upper layer over idmapped layers. A private dockerd (dockerd.bash), its own for this file.

CM_REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
export CM_REPO
: "${CODEMODE:=$CM_REPO/build/codemode}"
export CODEMODE
DK_RUNTIME_ARGS='["--profile=ci"]'
. "$BATS_TEST_DIRNAME/dockerd.bash"

bats_require_minimum_version 1.5.0

IMG=cm-busybox

setup_file() { dockerd_setup_file cm-dkci; }

teardown_file() { dockerd_teardown_file; }

setup() { dockerd_case_setup; }

teardown() { dockerd_case_teardown; }

@test "docker --profile=ci: root in its own 1048576-id range with CAP_SYS_ADMIN; a writable throwaway root" {
  run dk run --rm --runtime=codemode-args --network none "$IMG" sh -c \
    'cat /proc/self/uid_map; grep CapEff /proc/self/status; echo x >/made && cat /made
     mkdir /tmp/m && mount -t tmpfs none /tmp/m && echo mounted
     unshare -m -p -f --mount-proc true && echo nested-ns-ok
     echo 1 >/proc/sys/kernel/core_pattern 2>&1 || echo core_pattern-refused
     echo x >/etc/hosts 2>&1 || echo hosts-read-only'
  echo "$output" >&3
  [ "$status" -eq 0 ]
  local u n
  read -r _ u n <<<"${lines[0]}"
  [ "$u" -ge 65536 ]
  [ "$n" = 1048576 ]
  [ "$(( 0x$(awk '{print $2}' <<<"${lines[1]}") >> 21 & 1 ))" = 1 ] # CAP_SYS_ADMIN
  [[ "$output" == *$'\nx\n'* ]]
  [[ "$output" == *mounted* ]]
  [[ "$output" == *nested-ns-ok* ]]
  [[ "$output" == *core_pattern-refused* ]]
  [[ "$output" == *hosts-read-only* ]]
}

@test "docker --profile=ci: a volume of host root's is refused; one of an unprivileged owner is written as it" {
  run dk run --rm --runtime=codemode-args --network none -v "$HOST_DIR:/data" "$IMG" true
  [ "$status" -ne 0 ]
  [[ "$output" == *"owned by host root"* ]]
  chown 65534:65534 "$HOST_DIR"
  run dk run --rm --runtime=codemode-args --network none -v "$HOST_DIR:/data" "$IMG" sh -c \
    'cp /bin/busybox /data/s && chmod 4755 /data/s && echo done'
  echo "$output" >&3
  [ "$status" -eq 0 ]
  [ "$(stat -c %u "$HOST_DIR/s")" = 65534 ]
}

# An image with podman in it: the host's podman, crun and conmon with their libraries and, of
# /etc/containers, only what Debian's containers-common ships there (policy.json): no
# containers.conf or storage.conf (tests/ci/make-podman-bundle.sh --no-config), so podman works
# from its defaults and the profile's containers.conf.d drop-in alone,
# imported with `docker import`, a busybox image as `docker save` writes it at /img.tar for the
# nested podman to load (no registry: the job has no network; one history entry for its one
# layer, which podman build counts) and a Containerfile with a RUN step in /src.
podman_image() {
  dk image inspect cm-podman-bare >/dev/null 2>&1 && return 0
  local b=$DK_DIR/podman-bundle bb=$DK_DIR/nested-bb
  rm -rf "$b" "$bb"
  "$CM_REPO/tests/ci/make-podman-bundle.sh" --no-config "$b" >/dev/null 2>&1
  [ -z "$(find "$b/rootfs" -name 'containers.conf*' -o -name storage.conf)" ] || return 1
  env -u CODEMODE "$CM_REPO/rootfs-tools/make-busybox-bundle.sh" "$bb" >/dev/null 2>&1
  jq -n --arg d "$bb/rootfs" '{format: "docker-archive", images: [{tag: "bb", platforms: [{arch: "amd64",
    layers: [[{from_dir: $d}]], config: {Cmd: ["sh"]},
    history: [{created: "2026-01-01T00:00:00Z", created_by: "busybox rootfs"}]}]}]}' >"$DK_DIR/nested-bb.json"
  python3 "$CM_REPO/tests/image/mkimage.py" "$DK_DIR/nested-bb.json" "$b/rootfs/img.tar"
  mkdir "$b/rootfs/src"
  printf 'FROM localhost/test/bb:latest\nRUN echo built-in-docker >/built\nCMD ["cat", "/built"]\n' \
    >"$b/rootfs/src/Containerfile"
  tar -C "$b/rootfs" -c . | dk import -c 'ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin' - cm-podman-bare >/dev/null
  rm -rf "$b" "$bb" "$DK_DIR/nested-bb.json"
}

@test "docker --profile=ci: podman inside an image with no containers.conf loads, runs and builds (a RUN step), without --privileged" {
  command -v podman >/dev/null && command -v crun >/dev/null && command -v conmon >/dev/null ||
    skip "no host podman, crun and conmon to put in the image (tests/ci/deps.sh)"
  podman_image
  run dk run --rm --runtime=codemode-args --network none cm-podman-bare sh -c \
    'cat /etc/containers/containers.conf.d/zz-codemode-ci.conf; ls /etc/containers;
     podman load -q -i /img.tar &&
     podman run --rm --network none localhost/test/bb:latest sh -c "cat /proc/self/uid_map; echo nested-ok" &&
     podman build -q -t localhost/built -f /src/Containerfile /src >/dev/null &&
     podman run --rm --network none localhost/built'
  echo "$output" >&3
  [ "$status" -eq 0 ]
  [[ "$output" == *nested-ok* ]]
  [[ "$output" == *built-in-docker* ]]
  # The drop-in the profile wrote, in the job's throwaway layer: cgroups only where the job's
  # cgroup is delegated (a cgroup v2 host).
  local want=disabled
  [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ] && want=enabled
  [[ "$output" == *"cgroups = \"$want\""* ]]
  [[ "$output" != *"containers.conf"$'\n'* ]] # `ls /etc/containers`: the drop-in dir and policy.json only
  # The nested container's root is the job's root: a host id of the job's range, never host root.
  local u
  read -r _ u _ < <(grep -E '^ +0 ' <<<"$output")
  [ "$u" -ge 65536 ]
}
