#!/usr/bin/env bats
# rootfs-tools: bundles from a host binary's shared-library closure, from an OCI image layout
# (built here by hand with tar, gzip, sha256sum and jq: layers, whiteouts, config, nested index,
# refs, corrupt and hostile blobs) and from Docker's `save` / `export` tarballs (also built by
# hand, so no dockerd is needed). Every bundle is run with codemode.

load ../lib/helpers

TOOLS=$CM_REPO/rootfs-tools

teardown() {
  if [ -n "${DK_DIR:-}" ]; then dockerd_stop >/dev/null 2>&1; fi
  cm_teardown
}

setup() {
  cm_setup
  export CODEMODE
  W=$TEST_DIR/work
  mkdir -p "$W"
}

# blob FILE LAYOUT: move FILE into LAYOUT's blob store; prints "sha256:HEX SIZE".
blob() {
  local hex size
  hex=$(sha256sum <"$1" | cut -d' ' -f1)
  size=$(stat -c %s "$1")
  mkdir -p "$2/blobs/sha256"
  mv "$1" "$2/blobs/sha256/$hex"
  echo "sha256:$hex $size"
}

# layer_from DIR OUT [gzip]: a layer tarball of DIR's contents.
layer_from() {
  tar -C "$1" --numeric-owner -cf "$2.tar" .
  if [ "${3:-}" = gzip ]; then gzip -n "$2.tar" && mv "$2.tar.gz" "$2"; else mv "$2.tar" "$2"; fi
}

# make_image LAYOUT CONFIG-JSON LAYER-FILE:MEDIA…: write config, manifest and the layout's
# index.json (one manifest, ref.name "test:latest"); prints the manifest's descriptor.
make_manifest() {
  local layout=$1 config=$2 layers='[]' spec d s
  shift 2
  mkdir -p "$layout"
  echo '{"imageLayoutVersion": "1.0.0"}' >"$layout/oci-layout"
  printf '%s' "$config" >"$W/config.json"
  read -r d s < <(blob "$W/config.json" "$layout")
  local cfg_desc
  cfg_desc=$(jq -cn --arg d "$d" --argjson s "$s" '{mediaType: "application/vnd.oci.image.config.v1+json", digest: $d, size: $s}')
  for spec in "$@"; do
    read -r d s < <(blob "${spec%%:*}" "$layout")
    layers=$(jq -c --arg d "$d" --argjson s "$s" --arg m "${spec#*:}" '. + [{mediaType: $m, digest: $d, size: $s}]' <<<"$layers")
  done
  jq -cn --argjson c "$cfg_desc" --argjson l "$layers" \
    '{schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json", config: $c, layers: $l}' >"$W/manifest.json"
  read -r d s < <(blob "$W/manifest.json" "$layout")
  jq -cn --arg d "$d" --argjson s "$s" \
    '{mediaType: "application/vnd.oci.image.manifest.v1+json", digest: $d, size: $s,
      platform: {os: "linux", architecture: "amd64"}}'
}

write_index() {
  local layout=$1
  shift
  jq -n '{schemaVersion: 2, mediaType: "application/vnd.oci.image.index.v1+json", manifests: $ARGS.positional}' \
    --jsonargs "$@" >"$layout/index.json"
}

# The standard test image: busybox (layer 1, gzip), whiteouts and new files (layer 2, gzip), a
# plain tar layer 3; a config with Env, Entrypoint, Cmd, WorkingDir and User.
TEST_CONFIG='{"architecture": "amd64", "os": "linux",
  "config": {"Env": ["PATH=/bin", "GREETING=hello-from-oci"], "Entrypoint": ["/bin/sh", "-c"],
             "Cmd": ["echo $GREETING; id -u; id -g; pwd; cat /new.txt /opq/c; ls /opq | tr \"\\n\" \" \"; echo; ls /etc/old.txt /gone 2>&1 | wc -l; cat /hello.txt"],
             "WorkingDir": "/work", "User": "user"},
  "rootfs": {"type": "layers", "diff_ids": []}}'

make_test_layout() {
  local layout=$1 l1=$W/l1 l2=$W/l2 l3=$W/l3
  env -u CODEMODE "$TOOLS/make-busybox-bundle.sh" "$W/bb" >/dev/null 2>&1
  mv "$W/bb/rootfs" "$l1"
  echo old >"$l1/etc/old.txt"
  mkdir -p "$l1/opq" "$l1/gone" "$l1/work"
  echo a >"$l1/opq/a"
  echo b >"$l1/opq/b"
  echo x >"$l1/gone/x"
  mkdir -p "$l2/etc" "$l2/opq"
  : >"$l2/etc/.wh.old.txt"
  : >"$l2/.wh.gone"
  : >"$l2/opq/.wh..wh..opq"
  echo c >"$l2/opq/c"
  echo new >"$l2/new.txt"
  mkdir -p "$l3"
  echo hello-layer-3 >"$l3/hello.txt"
  layer_from "$l1" "$W/layer1" gzip
  layer_from "$l2" "$W/layer2" gzip
  layer_from "$l3" "$W/layer3"
  local desc
  desc=$(make_manifest "$layout" "$TEST_CONFIG" \
    "$W/layer1:application/vnd.oci.image.layer.v1.tar+gzip" \
    "$W/layer2:application/vnd.oci.image.layer.v1.tar+gzip" \
    "$W/layer3:application/vnd.oci.image.layer.v1.tar")
  desc=$(jq -c '.annotations = {"org.opencontainers.image.ref.name": "test:latest"}' <<<"$desc")
  write_index "$layout" "$desc"
  rm -rf "$l1" "$l2" "$l3" "$W/bb"
}

# The output TEST_CONFIG's command prints when every layer and whiteout was applied.
expect_test_image_output() {
  [ "${lines[0]}" = hello-from-oci ]
  [ "${lines[1]}" = 1000 ]
  [ "${lines[2]}" = 1000 ]
  [ "${lines[3]}" = /work ]
  [ "${lines[4]}" = new ]
  [ "${lines[5]}" = c ]
  [ "${lines[6]}" = "c " ]  # opaque: a and b of layer 1 are gone
  [ "${lines[7]}" = 2 ]     # two "No such file" lines: /etc/old.txt and /gone whited out
  [ "${lines[8]}" = hello-layer-3 ]
}

# --- closure -----------------------------------------------------------------------------------

@test "closure: a dynamic host binary runs from its library closure, with --add and ARGS" {
  echo "added by --add" >"$W/extra.txt"
  run "$TOOLS/make-closure-bundle.sh" --add "$W/extra.txt:/opt/extra.txt" ls "$W/b" -- /opt
  [ "$status" -eq 0 ]
  [ -x "$W/b/rootfs/usr/bin/ls" ]
  [ "$(jq -c .process.args "$W/b/config.json")" = '["/usr/bin/ls","/opt"]' ]
  [ "$(jq .process.terminal "$W/b/config.json")" = false ]
  # Every library ldd lists is in the rootfs.
  local lib
  for lib in $(ldd "$(readlink -f "$(command -v ls)")" | awk '/=> \// { print $3 }'); do
    [ -e "$W/b/rootfs$lib" ]
  done
  run_cm run -b "$W/b" "$CID"
  [ "$status" -eq 0 ]
  [ "$stdout" = extra.txt ]
}

@test "closure: the rootfs holds nothing but the closure (no shell)" {
  run "$TOOLS/make-closure-bundle.sh" cat "$W/b" -- /etc/passwd
  [ "$status" -eq 0 ]
  [ ! -e "$W/b/rootfs/bin/sh" ] && [ ! -e "$W/b/rootfs/usr/bin/sh" ]
  run_cm run -b "$W/b" "$CID"
  [ "$status" -eq 0 ]
  [[ "$stdout" == root:x:0:0:* ]]
}

@test "closure: errors (unknown binary, bad --add, existing rootfs)" {
  run "$TOOLS/make-closure-bundle.sh" no-such-binary-here "$W/b"
  [ "$status" -ne 0 ]
  [[ "$output" == *"not found"* ]]
  run "$TOOLS/make-closure-bundle.sh" --add "$W/missing:/x" ls "$W/b2"
  [ "$status" -ne 0 ]
  [[ "$output" == *"no such file"* ]]
  run "$TOOLS/make-closure-bundle.sh" --add "$W:relative" ls "$W/b3"
  [ "$status" -ne 0 ]
  [[ "$output" == *"absolute"* ]]
  mkdir -p "$W/b4/rootfs"
  run "$TOOLS/make-closure-bundle.sh" ls "$W/b4"
  [ "$status" -ne 0 ]
  [[ "$output" == *"already exists"* ]]
}

# --- OCI image layout --------------------------------------------------------------------------

@test "oci layout: layers in order, whiteouts, opaque dirs, Env/Entrypoint/Cmd/WorkingDir/User" {
  make_test_layout "$W/layout"
  run "$TOOLS/make-oci-layout-bundle.sh" "$W/layout" "$W/b"
  [ "$status" -eq 0 ]
  [ ! -e "$W/b/rootfs/etc/old.txt" ] && [ ! -e "$W/b/rootfs/gone" ] && [ ! -e "$W/b/rootfs/opq/a" ]
  [ ! -e "$W/b/rootfs/etc/.wh.old.txt" ] && [ ! -e "$W/b/rootfs/opq/.wh..wh..opq" ]
  [ "$(jq -c .process.user "$W/b/config.json")" = '{"uid":1000,"gid":1000}' ]
  run_cm run -b "$W/b" "$CID"
  [ "$status" -eq 0 ] || { echo "run: status $status: $output" >&2; false; }
  expect_test_image_output
}

@test "oci layout: --ref picks one of several manifests; without it the choice is refused" {
  make_test_layout "$W/layout"
  local first second
  first=$(jq -c '.manifests[0]' "$W/layout/index.json")
  second=$(make_manifest "$W/layout" '{"config": {"Cmd": ["echo", "second"], "Env": ["PATH=/bin"]}}' \
    "$(cp "$W/layout/blobs/sha256/$(jq -r '.layers[0].digest' "$W/layout/blobs/sha256/$(jq -r .digest <<<"$first" | cut -d: -f2)" | cut -d: -f2)" "$W/l1copy" && echo "$W/l1copy"):application/vnd.oci.image.layer.v1.tar+gzip")
  second=$(jq -c '.annotations = {"org.opencontainers.image.ref.name": "second"}' <<<"$second")
  write_index "$W/layout" "$first" "$second"
  run "$TOOLS/make-oci-layout-bundle.sh" "$W/layout" "$W/b0"
  [ "$status" -ne 0 ]
  [[ "$output" == *"--ref"* ]]
  run "$TOOLS/make-oci-layout-bundle.sh" --ref second "$W/layout" "$W/b"
  [ "$status" -eq 0 ]
  run_cm run -b "$W/b" "$CID"
  [ "$status" -eq 0 ]
  [ "$stdout" = second ]
  run "$TOOLS/make-oci-layout-bundle.sh" --ref nope "$W/layout" "$W/b2"
  [ "$status" -ne 0 ]
}

@test "oci layout: a nested image index (multi-platform) is followed to this platform" {
  make_test_layout "$W/layout"
  local amd64 other nested d s
  amd64=$(jq -c '.manifests[0] | del(.annotations)' "$W/layout/index.json")
  other=$(jq -c '.platform.architecture = "s390x" | .digest = "sha256:" + ("0" * 64)' <<<"$amd64")
  jq -n '{schemaVersion: 2, mediaType: "application/vnd.oci.image.index.v1+json", manifests: $ARGS.positional}' \
    --jsonargs "$other" "$amd64" >"$W/nested.json"
  read -r d s < <(blob "$W/nested.json" "$W/layout")
  nested=$(jq -cn --arg d "$d" --argjson s "$s" '{mediaType: "application/vnd.oci.image.index.v1+json", digest: $d, size: $s}')
  write_index "$W/layout" "$nested"
  run "$TOOLS/make-oci-layout-bundle.sh" "$W/layout" "$W/b"
  [ "$status" -eq 0 ]
  run_cm run -b "$W/b" "$CID"
  [ "$status" -eq 0 ] || { echo "run: status $status: $output" >&2; false; }
  expect_test_image_output
}

@test "oci layout: a corrupt blob is refused" {
  make_test_layout "$W/layout"
  local layer
  layer=$(ls -S "$W/layout/blobs/sha256" | head -1) # the busybox layer is the largest
  printf 'x' >>"$W/layout/blobs/sha256/$layer"
  run "$TOOLS/make-oci-layout-bundle.sh" "$W/layout" "$W/b"
  [ "$status" -ne 0 ]
  [[ "$output" == *corrupt* ]]
  run "$TOOLS/make-oci-layout-bundle.sh" "$W/nothing-here" "$W/b2"
  [ "$status" -ne 0 ]
  [[ "$output" == *"not an OCI image layout"* ]]
}

@test "oci layout: a layer writing through an earlier layer's symlink out of the rootfs is refused" {
  local outside=$W/outside l1=$W/evil1 l2=$W/evil2
  mkdir -p "$outside" "$l1" "$l2/escape"
  ln -s "$outside" "$l1/escape"        # absolute: means something else on the host
  ln -s ../../../../../../.. "$l1/up"  # climbs out
  echo pwned >"$l2/escape/pwned"
  layer_from "$l1" "$W/layer1"
  layer_from "$l2" "$W/layer2"
  write_index "$W/layout" "$(make_manifest "$W/layout" '{"config": {}}' \
    "$W/layer1:application/vnd.oci.image.layer.v1.tar" "$W/layer2:application/vnd.oci.image.layer.v1.tar")"
  run "$TOOLS/make-oci-layout-bundle.sh" "$W/layout" "$W/b"
  [ "$status" -ne 0 ]
  [[ "$output" == *"symlink"* ]]
  [ ! -e "$outside/pwned" ]
  # A whiteout through the link deletes nothing outside either.
  echo keep >"$outside/keep-me"
  rm -rf "$l2" "$W/layout" && mkdir -p "$l2/escape"
  : >"$l2/escape/.wh.keep-me"
  layer_from "$l1" "$W/layer1"
  layer_from "$l2" "$W/layer2"
  write_index "$W/layout" "$(make_manifest "$W/layout" '{"config": {}}' \
    "$W/layer1:application/vnd.oci.image.layer.v1.tar" "$W/layer2:application/vnd.oci.image.layer.v1.tar")"
  run "$TOOLS/make-oci-layout-bundle.sh" "$W/layout" "$W/b2"
  [ "$status" -ne 0 ]
  [ -e "$outside/keep-me" ]
}

@test "oci layout: absolute and '..' entries are refused" {
  python3 - "$W/evil.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    data = b"pwned\n"
    info = tarfile.TarInfo("../../escaped.txt")
    info.size = len(data)
    t.addfile(info, io.BytesIO(data))
PY
  write_index "$W/layout" "$(make_manifest "$W/layout" '{"config": {}}' "$W/evil.tar:application/vnd.oci.image.layer.v1.tar")"
  run "$TOOLS/make-oci-layout-bundle.sh" "$W/layout" "$W/b"
  [ "$status" -ne 0 ]
  [[ "$output" == *"'..'"* ]]
  [ ! -e "$TEST_DIR/escaped.txt" ] && [ ! -e "$W/escaped.txt" ]
}

# --- Docker tarballs (`docker save` / `docker export` formats, built by hand) -------------------

@test "docker save tarball: manifest.json, layers with whiteouts, image config" {
  make_test_layout "$W/layout"
  # Re-pack the layout's blobs the way `docker save` (20.10) lays them out.
  local m s=$W/save
  m=$W/layout/blobs/sha256/$(jq -r '.manifests[0].digest' "$W/layout/index.json" | cut -d: -f2)
  mkdir -p "$s"
  cp "$W/layout/blobs/sha256/$(jq -r .config.digest "$m" | cut -d: -f2)" "$s/config.json"
  local i=0 layers=() d
  for d in $(jq -r '.layers[].digest' "$m"); do
    i=$((i + 1))
    mkdir -p "$s/l$i"
    cp "$W/layout/blobs/sha256/${d#sha256:}" "$s/l$i/layer.tar"
    layers+=("l$i/layer.tar")
  done
  jq -n '[{Config: "config.json", RepoTags: ["test:latest"], Layers: $ARGS.positional}]' --args "${layers[@]}" >"$s/manifest.json"
  tar -C "$s" -cf "$W/saved.tar" .
  run "$TOOLS/make-docker-export-bundle.sh" "$W/saved.tar" "$W/b"
  [ "$status" -eq 0 ] || { echo "make-docker-export-bundle.sh: $output" >&2; false; }
  run_cm run -b "$W/b" "$CID"
  [ "$status" -eq 0 ] || { echo "run: status $status: $output" >&2; false; }
  expect_test_image_output
}

@test "docker export tarball (flattened filesystem, also from stdin)" {
  env -u CODEMODE "$TOOLS/make-busybox-bundle.sh" "$W/bb" >/dev/null 2>&1
  echo exported >"$W/bb/rootfs/marker"
  tar -C "$W/bb/rootfs" -cf "$W/export.tar" .
  run "$TOOLS/make-docker-export-bundle.sh" - "$W/b" <"$W/export.tar"
  [ "$status" -eq 0 ]
  bundle_set_args "$W/b" cat /marker
  run_cm run -b "$W/b" "$CID"
  [ "$status" -eq 0 ]
  [ "$stdout" = exported ]
}

@test "docker: --image (docker save) and --container (docker export + inspect) against a private dockerd" {
  [ "$(id -u)" -eq 0 ] || skip "a private dockerd needs root (tests/rootless runs the other makers as a user)"
  command -v dockerd >/dev/null && command -v containerd >/dev/null && command -v docker >/dev/null ||
    skip "dockerd/containerd/docker not installed (tests/docker/deps.sh installs them)"
  export CM_REPO
  # shellcheck source=tests/docker/dockerd.bash
  . "$CM_REPO/tests/docker/dockerd.bash"
  # A short path: containerd's sockets live under the exec root (108-byte limit).
  dockerd_start "$(mktemp -d /tmp/cm-rtdk.XXXXXX)" >/dev/null
  local img=cm-busybox c
  # An image with a config of its own, built on the harness's imported busybox.
  printf 'FROM %s\nRUN mkdir -p /srv && echo from-docker >/srv/msg && rm /bin/vi\nWORKDIR /srv\nENV WHO=docker\nCMD ["sh", "-c", "cat msg; echo $WHO; pwd; ls /bin/vi 2>&1 | wc -l"]\n' "$img" >"$W/Dockerfile"
  if ! DOCKER_BUILDKIT=0 dk build -q -t cm-rt-test "$W" >/dev/null 2>"$W/build.err"; then
    skip "docker build does not work here: $(tail -1 "$W/build.err")"
  fi
  run "$TOOLS/make-docker-export-bundle.sh" --image cm-rt-test "$W/bi"
  echo "$output" # shown when the test fails
  [ "$status" -eq 0 ]
  run_cm run -b "$W/bi" "$CID-i"
  [ "$status" -eq 0 ]
  [ "$stdout" = $'from-docker\ndocker\n/srv\n1' ]  # /bin/vi whited out by the RUN layer
  c=$(dk create cm-rt-test)
  run "$TOOLS/make-docker-export-bundle.sh" --container "$c" "$W/bc"
  dk rm "$c" >/dev/null
  echo "$output" # shown when the test fails
  [ "$status" -eq 0 ]
  run_cm run -b "$W/bc" "$CID-c"
  [ "$status" -eq 0 ]
  [ "$stdout" = $'from-docker\ndocker\n/srv\n1' ]
}
