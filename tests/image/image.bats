#!/usr/bin/env bats
# Images without Docker: codemode-image (pull, images, rmi, resolve) and codemode-run --image,
# against a real registry with TLS and token auth. Run by tests/image/run.sh inside its own
# network and mount namespaces (registry.test is 127.0.0.1 there only).

load ../lib/helpers

IMG_DIR=$CM_REPO/tests/image
CODEMODE_IMAGE=$(dirname "$CODEMODE")/codemode-image
CODEMODE_RUN=$(dirname "$CODEMODE")/codemode-run
REG=registry.test:5000

wait_port() {
  local i
  for i in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing listens on $1" >&2
  return 1
}

# mkimg SPEC-JSON OUT: an image from a description (tests/image/mkimage.py).
mkimg() {
  printf '%s' "$1" >"$BATS_FILE_TMPDIR/spec.$$.json"
  python3 "$IMG_DIR/mkimage.py" "$BATS_FILE_TMPDIR/spec.$$.json" "$2" >/dev/null
}

push() { # push LAYOUT:TAG NAME:TAG [--all]
  skopeo --policy "$W/policy.json" copy -q ${3:-} --dest-cert-dir "$W/certs" --dest-creds tester:s3cret \
    "oci:$1" "docker://$REG/$2"
}

setup_file() {
  cm_setup_file
  export W=$BATS_FILE_TMPDIR
  mkdir -p "$W/certs" "$W/reg" "$W/dockercfg"
  # The test's own CA, a certificate for registry.test, and the token service's signing key.
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=cm-test-ca -keyout "$W/ca.key" -out "$W/certs/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj /CN=registry.test -keyout "$W/reg.key" -out "$W/reg.csr" 2>/dev/null
  printf 'subjectAltName=DNS:registry.test\nextendedKeyUsage=serverAuth\n' >"$W/ext"
  openssl x509 -req -in "$W/reg.csr" -CA "$W/certs/ca.crt" -CAkey "$W/ca.key" -CAcreateserial -days 2 \
    -extfile "$W/ext" -out "$W/reg.crt" 2>/dev/null
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=cm-test-token -keyout "$W/sign.key" -out "$W/sign.crt" 2>/dev/null
  cat >"$W/registry.yml" <<YML
version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: $W/reg
  delete:
    enabled: true
http:
  addr: 127.0.0.1:5000
  tls:
    certificate: $W/reg.crt
    key: $W/reg.key
auth:
  token:
    realm: https://registry.test:5001/token
    service: registry.test
    issuer: cm-test-issuer
    rootcertbundle: $W/sign.crt
YML
  echo '{"default":[{"type":"insecureAcceptAnything"}]}' >"$W/policy.json"
  # Credentials as `docker login` stores them.
  printf '{"auths":{"registry.test:5000":{"auth":"%s"}}}' "$(printf tester:s3cret | base64)" >"$W/dockercfg/config.json"
  export TOKEN_LOG=$W/token.log
  node "$IMG_DIR/token-server.mjs" 5001 "$W/reg.crt" "$W/reg.key" "$W/sign.key" "$W/sign.crt" tester:s3cret \
    2>"$W/token.err" 3>&- &
  echo $! >"$W/token.pid"
  docker-registry serve "$W/registry.yml" >"$W/registry.log" 2>&1 3>&- &
  echo $! >"$W/registry.pid"
  wait_port 5001
  wait_port 5000

  # The images: busybox as the base layer.
  env -u CODEMODE "$CM_REPO/rootfs-tools/make-busybox-bundle.sh" "$W/bb" >/dev/null 2>&1
  mkimg '{"images":[{"tag":"t","platforms":[{"arch":"amd64","layers":[[{"from_dir":"'"$W"'/bb/rootfs"}],
    [{"name":"etc/motd","data":"hello\n"},{"name":"bin/.wh.ls"},
     {"name":"etc/passwd","data":"root:x:0:0::/root:/bin/sh\napp:x:1000:1000::/home/app:/bin/sh\n"},
     {"name":"etc/group","data":"root:x:0:\napp:x:1000:\n"},
     {"name":"dev/null0","type":"char","major":1,"minor":3,"mode":438},
     {"name":"usr/sbin/su2","data":"x","mode":3565},{"name":"x.lnk","type":"symlink","target":"/etc/motd"},
     {"name":"hl","type":"hardlink","target":"etc/motd"},
     {"name":"xa","data":"x","xattrs":{"user.test":"v1","trusted.overlay.opaque":"y"}}],
    [{"name":"etc/.wh..wh..opq"},{"name":"etc/passwd","data":"root:x:0:0::/root:/bin/sh\napp:x:1000:1000::/home/app:/bin/sh\n"},
     {"name":"etc/group","data":"root:x:0:\napp:x:1000:\n"},{"name":"etc/motd","data":"layer 3\n"}]],
    "config":{"Entrypoint":["/bin/sh","-c"],"Cmd":["echo from-cmd $(id -u):$(id -g) $(pwd) $FOO"],
              "Env":["FOO=bar","PATH=/bin:/usr/bin"],"WorkingDir":"/etc","User":"app"}}]}]}' "$W/app"
  mkimg '{"images":[{"tag":"multi","platforms":[
    {"arch":"arm64","layers":[[{"from_dir":"'"$W"'/bb/rootfs"}],[{"name":"arch","data":"arm64\n"}]],"config":{"Cmd":["cat","/arch"]}},
    {"arch":"amd64","layers":[[{"from_dir":"'"$W"'/bb/rootfs"}],[{"name":"arch","data":"amd64\n"}]],"config":{"Cmd":["cat","/arch"]}}]}]}' "$W/multi"
  # 48 MiB of random bytes: big enough to interrupt a pull in the middle.
  mkimg '{"gzip":false,"images":[{"tag":"big","platforms":[{"arch":"amd64","layers":[[{"name":"blob","size":50331648}]],"config":{}}]}]}' "$W/big"
  push "$W/app:t" private/app:1
  push "$W/app:t" public/app:1
  push "$W/multi:multi" private/multi:1 --all
  push "$W/big:big" private/big:1
}

teardown_file() {
  kill "$(cat "$W/registry.pid")" "$(cat "$W/token.pid")" 2>/dev/null
  wait 2>/dev/null || true
}

setup() {
  cm_setup
  STORE=$TEST_DIR/store
  export DOCKER_CONFIG=$W/dockercfg CODEMODE_REGISTRY_CA=$W/certs/ca.crt
}
teardown() { cm_teardown; }

img() { timeout 300 "$CODEMODE_IMAGE" "$@"; }
run_img() {
  run_cm_cmd img "$@"
}
# Like run_cm, for any command: $status, $stdout, $stderr, $output.
run_cm_cmd() {
  local out=$TEST_DIR/.o err=$TEST_DIR/.e
  status=0
  "$@" </dev/null >"$out" 2>"$err" || status=$?
  stdout=$(cat "$out")
  stderr=$(cat "$err")
  output=$(cat "$out" "$err")
}
rootfs_of() { # rootfs_of REF → the unpacked rootfs in $STORE
  img resolve --store "$STORE" --pull never -q "$1" | jq -r .rootfs
}
umoci_tree() { # umoci_tree REF DIR: skopeo copy + umoci unpack of the same image
  skopeo --policy "$W/policy.json" copy -q --src-cert-dir "$W/certs" --src-creds tester:s3cret \
    "docker://$REG/$1" "oci:$TEST_DIR/ref-layout:x" >/dev/null
  umoci unpack --image "$TEST_DIR/ref-layout:x" "$2" >/dev/null 2>&1
}

@test "registry: pull with token auth from ~/.docker/config.json; the rootfs equals umoci's unpack of the same image" {
  run_img pull --store "$STORE" "$REG/private/app:1"
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  grep -q "authed=true scope=repository:private/app:pull" "$W/token.log"
  umoci_tree private/app:1 "$TEST_DIR/umoci"
  run python3 "$IMG_DIR/treecmp.py" "$(rootfs_of "$REG/private/app:1")" "$TEST_DIR/umoci/rootfs"
  echo "$output"
  [ "$status" -eq 0 ]
  # What the layers said: whiteouts applied (bin/ls gone, etc/ opaque), the device node, setuid
  # and setgid bits, the hard link, only user.* xattrs.
  local r
  r=$(rootfs_of "$REG/private/app:1")
  [ ! -e "$r/bin/ls" ] && [ -e "$r/bin/sh" ]
  [ "$(cat "$r/etc/motd")" = "layer 3" ] && [ ! -e "$r/etc/hostname" ]
  [ -c "$r/dev/null0" ] && [ "$(stat -c %a "$r/usr/sbin/su2")" = 6755 ]
  [ "$(stat -c %i "$r/hl")" != "$(stat -c %i "$r/etc/motd")" ] # motd was replaced by layer 3
  python3 -c "import os,sys; x=os.listxattr(sys.argv[1]); assert x==['user.test'], x" "$r/xa"
}

@test "registry: without credentials a private repository is refused with the fix; a public one pulls anonymously" {
  export DOCKER_CONFIG=$TEST_DIR/nocfg
  run_img pull --store "$STORE" "$REG/private/app:1"
  [ "$status" -ne 0 ]
  [[ $stderr == *"codemode: "*"private/app"*"access denied"* ]] || { echo "$stderr"; false; }
  run_img images --store "$STORE" -q
  [ -z "$stdout" ]
  run_img pull --store "$STORE" -q "$REG/public/app:1"
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  grep -q "authed=false scope=repository:public/app:pull" "$W/token.log"
}

@test "registry: a multi-arch index gives this machine's platform" {
  run_cm_cmd "$CODEMODE_RUN" --root "$ROOT" --store "$STORE" --image "$REG/private/multi:1"
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  [ "$stdout" = amd64 ]
}

@test "registry: digest pinning: the pinned index pulls, a digest the registry does not have fails and records nothing" {
  local d
  d=$(skopeo --policy "$W/policy.json" inspect --raw --cert-dir "$W/certs" --creds tester:s3cret "docker://$REG/private/multi:1" | sha256sum | cut -d' ' -f1)
  run_img pull --store "$STORE" "$REG/private/multi@sha256:$d"
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  run_img pull --store "$STORE" "$REG/private/multi:1@sha256:$(printf x | sha256sum | cut -d' ' -f1)"
  [ "$status" -ne 0 ]
  [[ $stderr == *"not found"* ]] || { echo "$stderr"; false; }
  run_img images --store "$STORE" -q
  [ "$stdout" = "$REG/private/multi@sha256:$d" ]
  run_img pull --store "$STORE" "$REG/private/multi@sha256:nothex"
  [ "$status" -ne 0 ] && [[ $stderr == *"is not a sha256 digest"* ]]
}

@test "registry: a corrupted blob is refused: no name, no blob, no rootfs in the store" {
  # A layer of its own in the registry, then its bytes changed on the registry's disk.
  mkimg '{"images":[{"tag":"c","platforms":[{"arch":"amd64","layers":[[{"name":"f","data":"the right bytes"}]],"config":{}}]}]}' "$TEST_DIR/c"
  push "$TEST_DIR/c:c" private/corrupt:1
  local layer data
  layer=$(jq -r '.layers[0].digest' "$TEST_DIR/c/blobs/sha256/$(jq -r '.manifests[0].digest' "$TEST_DIR/c/index.json" | cut -d: -f2)")
  data=$W/reg/docker/registry/v2/blobs/sha256/${layer:7:2}/${layer#sha256:}/data
  [ -f "$data" ]
  cp "$data" "$TEST_DIR/saved"
  printf 'tampered' | dd of="$data" bs=1 seek=40 conv=notrunc 2>/dev/null
  run_img pull --store "$STORE" "$REG/private/corrupt:1"
  cp "$TEST_DIR/saved" "$data"
  [ "$status" -ne 0 ]
  [[ $stderr == *"$layer"*"refused"* ]] || { echo "$stderr"; false; }
  [ ! -e "$STORE/blobs/sha256/${layer#sha256:}" ]
  [ -z "$(ls "$STORE/images")" ] && [ -z "$(ls "$STORE/rootfs")" ]
}

@test "registry: a pull killed in the middle leaves nothing a run trusts; the next pull completes" {
  timeout 300 "$CODEMODE_IMAGE" pull --store "$STORE" "$REG/private/big:1" 2>/dev/null &
  local pid=$! i
  for i in $(seq 200); do
    [ -n "$(find "$STORE/tmp" -name 'blob-*' -size +1M 2>/dev/null)" ] && break
    sleep 0.05
  done
  kill -9 "$pid"
  wait "$pid" || true
  [ -z "$(ls "$STORE/images")" ]
  run_img resolve --store "$STORE" --pull never "$REG/private/big:1"
  [ "$status" -ne 0 ] && [[ $stderr == *"not in the store"* ]]
  run_img pull --store "$STORE" -q "$REG/private/big:1"
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  [ "$(stat -c %s "$(rootfs_of "$REG/private/big:1")/blob")" = 50331648 ]
}

@test "registry: two concurrent pulls of one image both succeed and leave one good copy" {
  img pull --store "$STORE" -q "$REG/private/app:1" >"$TEST_DIR/p1" 2>&1 &
  local a=$!
  img pull --store "$STORE" -q "$REG/private/app:1" >"$TEST_DIR/p2" 2>&1 &
  local b=$!
  wait "$a"
  wait "$b"
  img resolve --store "$STORE" -q "$REG/private/app:1" >/dev/null &
  a=$!
  img resolve --store "$STORE" -q "$REG/private/app:1" >/dev/null
  wait "$a"
  [ "$(ls "$STORE/rootfs" | wc -l)" -eq 1 ]
  umoci_tree private/app:1 "$TEST_DIR/umoci"
  python3 "$IMG_DIR/treecmp.py" "$(rootfs_of "$REG/private/app:1")" "$TEST_DIR/umoci/rootfs"
}

@test "oci: layout and docker-archive: sources; the image's Entrypoint, Cmd, Env, WorkingDir and User are the process" {
  run_cm_cmd "$CODEMODE_RUN" --root "$ROOT" --store "$STORE" --image "oci:$W/app:t"
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  [ "$stdout" = "from-cmd 1000:1000 /etc bar" ]
  run_cm_cmd "$CODEMODE_RUN" --root "$ROOT" --store "$STORE" --image "oci:$W/app:t" -- 'echo replaced-cmd'
  [ "$stdout" = replaced-cmd ]
  run_cm_cmd "$CODEMODE_RUN" --root "$ROOT" --store "$STORE" --image "oci:$W/app:t" --entrypoint /bin/echo
  [ "$status" -eq 0 ] && [ -z "$stdout" ]
  run_cm_cmd "$CODEMODE_RUN" --root "$ROOT" --store "$STORE" --image "oci:$W/app:t" --env FOO=flag --cwd /
  [ "$stdout" = "from-cmd 1000:1000 / flag" ]
  # docker-archive: the same image as `docker save` writes it (uncompressed layer tars).
  mkimg '{"format":"docker-archive","images":[{"tag":"t","platforms":[{"arch":"amd64","layers":[[{"from_dir":"'"$W"'/bb/rootfs"}],[{"name":"hello","data":"from the archive\n"}]],"config":{"Cmd":["cat","/hello"]}}]}]}' "$TEST_DIR/save.tar"
  run_cm_cmd "$CODEMODE_RUN" --root "$ROOT" --store "$STORE" --image "docker-archive:$TEST_DIR/save.tar"
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  [ "$stdout" = "from the archive" ]
  # The store's rootfs is never written: the root is read-only as the config and profile say;
  # with --ephemeral it is writable, and the run's writes go to its throwaway upper layer.
  run_cm_cmd "$CODEMODE_RUN" --root "$ROOT" --store "$STORE" --image "docker-archive:$TEST_DIR/save.tar" -- sh -c 'echo x >/hello'
  [ "$status" -ne 0 ]
  run_cm_cmd "$CODEMODE_RUN" --ephemeral --root "$ROOT" --store "$STORE" --image "docker-archive:$TEST_DIR/save.tar" -- sh -c 'echo x >/hello && cat /hello'
  [ "$stdout" = x ]
  [ "$(cat "$(rootfs_of "docker-archive:$TEST_DIR/save.tar")/hello")" = "from the archive" ]
}

@test "oci: an ambiguous layout, a missing tag and a broken reference say what to write" {
  mkimg '{"images":[{"tag":"a","platforms":[{"arch":"amd64","layers":[],"config":{"Cmd":["true"]}}]},{"tag":"b","platforms":[{"arch":"amd64","layers":[],"config":{}}]}]}' "$TEST_DIR/two"
  run_img pull --store "$STORE" "oci:$TEST_DIR/two"
  [ "$status" -ne 0 ] && [[ $stderr == *"lists 2 images: name one as oci:$TEST_DIR/two:TAG (tags: a, b)"* ]]
  run_img pull --store "$STORE" "oci:$TEST_DIR/two:c"
  [ "$status" -ne 0 ] && [[ $stderr == *'no image tagged "c"'* ]]
  run_img pull --store "$STORE" "Upper/Case:1"
  [ "$status" -ne 0 ] && [[ $stderr == *'"Upper" is not a valid repository name component'* ]]
  run_cm_cmd "$CODEMODE_RUN" --root "$ROOT" --store "$STORE" --image "oci:$TEST_DIR/two:b"
  [ "$status" -eq 125 ] && [[ $stderr == *"no Entrypoint or Cmd: give the command after --"* ]]
  [ -z "$(ls "$ROOT" 2>/dev/null)" ]
}

@test "images, rmi and prune; a rootfs a running container holds survives prune" {
  "$CODEMODE" pull --store "$STORE" -q "oci:$W/app:t" >/dev/null
  img pull --store "$STORE" -q "oci:$W/multi:multi" >/dev/null
  run_img images --store "$STORE" --format json
  [ "$(jq -r '.[].name' <<<"$stdout" | sort | tr '\n' ' ')" = "oci:$W/app:t oci:$W/multi:multi " ]
  [ "$(jq -r '.[0].size > 1000000' <<<"$stdout")" = true ]
  local held
  held=$(rootfs_of "oci:$W/app:t")
  rootfs_of "oci:$W/multi:multi" >/dev/null
  exec 7<"$held"
  flock -s 7
  run "$CODEMODE" rmi --store "$STORE" "oci:$W/app:t"
  [ "$status" -eq 0 ] && [[ $output == *"untagged: oci:$W/app:t"* ]]
  [ -d "$held" ] # held: kept
  exec 7<&-
  run_img images --store "$STORE" --prune
  [ "$status" -eq 0 ]
  [ ! -e "$held" ]
  [ "$(ls "$STORE/rootfs" | wc -l)" -eq 1 ]
  run_img rmi --store "$STORE" "oci:$W/app:t"
  [ "$status" -ne 0 ] && [[ $stderr == *"not in the store"* ]]
}

@test "an image in the store starts from the store's memo, without codemode-image; a changed layout, --pull always and rmi go back to it" {
  local layout=$TEST_DIR/layout
  cp -a "$W/app" "$layout"
  run_cm_cmd "$CODEMODE_RUN" --root "$ROOT" --store "$STORE" --image "oci:$layout:t"
  [ "$status" -eq 0 ] && [ "$stdout" = "from-cmd 1000:1000 /etc bar" ] || { echo "$output"; false; }
  [ "$(ls "$STORE/resolved" | wc -l)" -eq 1 ]
  # codemode-image replaced by a program that fails: the memo alone starts the image.
  run_cm_cmd env CODEMODE_IMAGE=/bin/false "$CODEMODE_RUN" --root "$ROOT" --store "$STORE" --image "oci:$layout:t"
  [ "$status" -eq 0 ] && [ "$stdout" = "from-cmd 1000:1000 /etc bar" ] || { echo "$output"; false; }
  # --pull always never takes it.
  run_cm_cmd env CODEMODE_IMAGE=/bin/false "$CODEMODE_RUN" --root "$ROOT" --store "$STORE" --pull always --image "oci:$layout:t"
  [ "$status" -eq 125 ]
  # The tag moved to another image (index.json rewritten): the memo is stale, codemode-image
  # resolves it again and the new image runs.
  mkimg '{"images":[{"tag":"t","platforms":[{"arch":"amd64","layers":[[{"from_dir":"'"$W"'/bb/rootfs"}],[{"name":"v2","data":"second image\n"}]],"config":{"Cmd":["cat","/v2"]}}]}]}' "$TEST_DIR/other"
  cp -a "$TEST_DIR/other/blobs/." "$layout/blobs/"
  cp "$TEST_DIR/other/index.json" "$layout/index.json"
  run_cm_cmd env CODEMODE_IMAGE=/bin/false "$CODEMODE_RUN" --root "$ROOT" --store "$STORE" --image "oci:$layout:t"
  [ "$status" -eq 125 ]
  run_cm_cmd "$CODEMODE_RUN" --root "$ROOT" --store "$STORE" --image "oci:$layout:t"
  [ "$status" -eq 0 ] && [ "$stdout" = "second image" ] || { echo "$output"; false; }
  # Its rootfs removed behind the store's back: the run falls back to codemode-image, which
  # unpacks it again.
  rm -rf "$STORE/rootfs/"*
  run_cm_cmd "$CODEMODE_RUN" --root "$ROOT" --store "$STORE" --image "oci:$layout:t"
  [ "$status" -eq 0 ] && [ "$stdout" = "second image" ] || { echo "$output"; false; }
  # rmi: the name is gone, so is the memo's standing (and prune removes memos with the rest).
  img rmi --store "$STORE" "oci:$layout:t" >/dev/null
  run_cm_cmd env CODEMODE_IMAGE=/bin/false "$CODEMODE_RUN" --root "$ROOT" --store "$STORE" --image "oci:$layout:t"
  [ "$status" -eq 125 ]
  img images --store "$STORE" --prune >/dev/null
  [ -z "$(ls "$STORE/resolved")" ]
  [ -z "$(ls "$STORE/rootfs")" ]
  # A registry image pulled before: --pull missing runs it from the memo, offline.
  run_cm_cmd "$CODEMODE_RUN" --root "$ROOT" --store "$STORE" --image "$REG/public/app:1"
  [ "$status" -eq 0 ] && [ "$stdout" = "from-cmd 1000:1000 /etc bar" ] || { echo "$output"; false; }
  run_cm_cmd env CODEMODE_IMAGE=/bin/false "$CODEMODE_RUN" --root "$ROOT" --store "$STORE" --image "$REG/public/app:1"
  [ "$status" -eq 0 ] && [ "$stdout" = "from-cmd 1000:1000 /etc bar" ]
  [ -z "$(ls "$ROOT" 2>/dev/null)" ]
}

@test "rootless: a user pulls from the registry into its own store, every file its own, and runs the image" {
  # uid 65534 (no /etc/subuid range: only its own id is mapped), in this suite's network
  # namespace; its home, runtime dir and copies of the CA and credentials in a directory of its own.
  local u uid=65534
  u=$(mktemp -d /tmp/cm-image-user.XXXXXX)
  mkdir -p "$u/home" "$u/xdg" "$u/dockercfg"
  cp "$W/certs/ca.crt" "$u/ca.crt"
  cp "$W/dockercfg/config.json" "$u/dockercfg/config.json"
  chmod 0755 "$u"
  chmod 0700 "$u/xdg"
  chown -R "$uid:$uid" "$u"
  as_user() {
    setpriv --reuid=$uid --regid=$uid --clear-groups env -i HOME="$u/home" XDG_RUNTIME_DIR="$u/xdg" \
      PATH=/usr/bin:/bin CODEMODE_REGISTRY_CA="$u/ca.crt" DOCKER_CONFIG="$u/dockercfg" "$@"
  }
  local store=$u/home/.local/share/codemode
  run_cm_cmd as_user "$CODEMODE_IMAGE" pull -q "$REG/private/multi:1"
  [ "$status" -eq 0 ] || { echo "$output"; rm -rf "$u"; false; }
  [ -d "$store/rootfs" ]
  [ -z "$(find "$store" ! -user "$uid" | head -n 3)" ]
  # The image has no User: it runs as the container's root, which is uid 65534 on the host.
  run_cm_cmd as_user "$CODEMODE_RUN" --image "$REG/private/multi:1"
  [ "$status" -eq 0 ] && [ "$stdout" = amd64 ] || { echo "$output"; rm -rf "$u"; false; }
  run_cm_cmd as_user "$CODEMODE_RUN" --ephemeral --image "$REG/private/multi:1" -- sh -c 'echo x >/arch && cat /arch && id -u'
  [ "$status" -eq 0 ] && [ "$stdout" = $'x\n0' ] || { echo "$output"; rm -rf "$u"; false; }
  [ -z "$(find /tmp -maxdepth 1 -name 'codemode-run.*' -user "$uid")" ]
  [ -z "$(ls -A "$u/xdg/codemode" 2>/dev/null)" ]
  rm -rf "$u"
}
