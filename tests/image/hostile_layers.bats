#!/usr/bin/env bats
# Layer unpacking is a security boundary: a layer is an attacker's tar stream. Each case is an
# image whose layers try to reach the host ($HOST, a directory of this test with a secret in it,
# named by its absolute path as an attacker would) — refused with an error naming the entry, or
# contained inside the rootfs. The host directory is checked untouched after every case.

load ../lib/helpers

IMG_DIR=$CM_REPO/tests/image
CODEMODE_IMAGE=$(dirname "$CODEMODE")/codemode-image

setup() {
  cm_setup
  STORE=$TEST_DIR/store
  HOST=$TEST_DIR/host
  mkdir -p "$HOST"
  printf 'host-secret' >"$HOST/secret"
  HOST_STATE=$(host_state)
}
teardown() {
  [ "$(host_state)" = "$HOST_STATE" ] || { echo "the host directory changed: $(host_state)" >&2; return 1; }
  cm_teardown
}

# Names, link counts and contents of $HOST: any write, link or removal changes it.
host_state() { (cd "$HOST" && find . -printf '%p %n %s %m\n' | sort && cat secret); }

# layers JSON-LAYERS…: an OCI layout at $TEST_DIR/l whose layers are the given JSON arrays.
layers() {
  local all
  all=$(IFS=,; echo "$*")
  printf '{"images":[{"tag":"t","platforms":[{"arch":"amd64","layers":[%s],"config":{"Cmd":["true"]}}]}]}' "$all" \
    >"$TEST_DIR/spec.json"
  rm -rf "$TEST_DIR/l"
  python3 "$IMG_DIR/mkimage.py" "$TEST_DIR/spec.json" "$TEST_DIR/l" >/dev/null
}
unpack() { # unpack: pull + unpack $TEST_DIR/l; $status, $stderr; $R the rootfs on success
  local out=$TEST_DIR/.o err=$TEST_DIR/.e
  status=0
  timeout 120 "$CODEMODE_IMAGE" resolve --store "$STORE" -q "oci:$TEST_DIR/l:t" >"$out" 2>"$err" || status=$?
  stderr=$(cat "$err")
  R=$(jq -r '.rootfs // empty' "$out" 2>/dev/null)
}

@test "hostile layer: a name with .. is refused, naming the entry" {
  layers '[{"name":"../../../../'"${HOST#/}"'/pwned","data":"x"}]'
  unpack
  [ "$status" -ne 0 ]
  [[ $stderr == *"refused: a \"..\" component would leave the rootfs"* ]] || { echo "$stderr"; false; }
  [ -z "$(ls "$STORE/rootfs")" ]
}

@test "hostile layer: an absolute name lands inside the rootfs" {
  layers '[{"name":"'"$HOST"'/pwned","data":"x"}]'
  unpack
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(cat "$R$HOST/pwned")" = x ]
}

@test "hostile layer: a file through a symlink to the host, in the same layer and from an earlier one, stays inside" {
  layers '[{"name":"s","type":"symlink","target":"'"$HOST"'"},{"name":"s/pwned","data":"x"},
           {"name":"up","type":"symlink","target":"../../../../../../'"${HOST#/}"'"}]' \
         '[{"name":"up/pwned2","data":"y"},{"name":"s/secret","data":"overwritten"}]'
  unpack
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(cat "$R$HOST/pwned")" = x ] && [ "$(cat "$R$HOST/pwned2")" = y ]
  [ "$(cat "$R$HOST/secret")" = overwritten ]
}

@test "hostile layer: hard links to outside are refused" {
  layers '[{"name":"h","type":"hardlink","target":"../../../'"${HOST#/}"'/secret"}]'
  unpack
  [ "$status" -ne 0 ] && [[ $stderr == *'hard link "h"'*"refused"* ]] || { echo "$stderr"; false; }
  # An absolute target, and one through a symlink to the host: resolved inside the rootfs,
  # where nothing has that name.
  layers '[{"name":"h","type":"hardlink","target":"'"$HOST"'/secret"}]'
  unpack
  [ "$status" -ne 0 ] && [[ $stderr == *'hard link "h"'* ]] || { echo "$stderr"; false; }
  layers '[{"name":"s","type":"symlink","target":"'"$HOST"'"},{"name":"h","type":"hardlink","target":"s/secret"}]'
  unpack
  [ "$status" -ne 0 ] && [[ $stderr == *'hard link "h"'* ]] || { echo "$stderr"; false; }
}

@test "hostile layer: whiteouts and opaque markers through a symlink to the host remove nothing of the host" {
  layers '[{"name":"s","type":"symlink","target":"'"$HOST"'"}]' \
         '[{"name":"s/.wh.secret"},{"name":"s/.wh..wh..opq"}]'
  unpack
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  layers '[{"name":"a/.wh..","data":""}]'
  unpack
  [ "$status" -ne 0 ] && [[ $stderr == *"whiteout"*"refused"* ]] || { echo "$stderr"; false; }
}

@test "hostile layer: a symlink replacing a directory, then entries below it, stay inside" {
  layers '[{"name":"d","type":"dir"},{"name":"d/f","data":"old"}]' \
         '[{"name":"d","type":"symlink","target":"'"$HOST"'"}]' \
         '[{"name":"d/new","data":"x"}]'
  unpack
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ -L "$R/d" ] && [ "$(cat "$R$HOST/new")" = x ]
}

@test "hostile layer: a file written over a symlink to a host file replaces the symlink" {
  layers '[{"name":"f","type":"symlink","target":"'"$HOST"'/secret"}]' '[{"name":"f","data":"mine"}]'
  unpack
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ ! -L "$R/f" ] && [ "$(cat "$R/f")" = mine ]
}

@test "hostile layer: unpacked without privilege, no device nodes, no setuid/setgid bits, every file ours" {
  layers '[{"name":"dev/mem","type":"block","major":1,"minor":1},{"name":"suid","data":"x","mode":3565,"uid":0},
           {"name":"etc/x","data":"y","uid":1234,"gid":1234},{"name":"fifo","type":"fifo"}]'
  # nobody needs to reach the layout and its own store.
  local d
  for d in "$BATS_RUN_TMPDIR" "$BATS_RUN_TMPDIR/test" "$TEST_DIR"; do chmod o+x "$d"; done
  chmod -R o+rX "$TEST_DIR/l"
  mkdir -m 0777 "$TEST_DIR/nobody"
  run setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$TEST_DIR/nobody" \
    "$CODEMODE_IMAGE" resolve -q "oci:$TEST_DIR/l:t"
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  R=$(jq -r .rootfs <<<"$output")
  [[ $R == "$TEST_DIR/nobody/.local/share/codemode/rootfs/"* ]]
  [ ! -e "$R/dev/mem" ] && [ -p "$R/fifo" ]
  [ "$(stat -c %a "$R/suid")" = 755 ]
  [ "$(stat -c %u "$R/etc/x")" = 65534 ] && [ "$(stat -c %u "$R/suid")" = 65534 ]
  [ "$(stat -c %a "$TEST_DIR/nobody/.local/share/codemode")" = 700 ]
}

# The unpacking limits (codemode-image resolve --max-…). Nothing of a refused image stays in the
# store: no name, no blob, no rootfs, no temp dir.
store_empty() {
  [ -z "$(ls "$STORE/images")" ] && [ -z "$(ls "$STORE/rootfs")" ] && [ -z "$(ls "$STORE/tmp")" ] &&
    [ -z "$(ls "$STORE/blobs/sha256")" ] || { find "$STORE" >&2; return 1; }
}
layer_digest() { # layer_digest N: the digest of layer N (1-based) of $TEST_DIR/l
  jq -r ".layers[$(($1 - 1))].digest" "$TEST_DIR/l/blobs/sha256/$(jq -r '.manifests[0].digest' "$TEST_DIR/l/index.json" | cut -d: -f2)"
}
unpack_with() { # unpack_with FLAGS…: unpack, with limit flags
  local out=$TEST_DIR/.o err=$TEST_DIR/.e
  status=0
  timeout 120 "$CODEMODE_IMAGE" resolve --store "$STORE" -q "$@" "oci:$TEST_DIR/l:t" >"$out" 2>"$err" || status=$?
  stderr=$(cat "$err")
  R=$(jq -r '.rootfs // empty' "$out" 2>/dev/null)
}

@test "hostile layer: a decompression bomb (a 512 MiB file in a small gzip layer) is refused at its header" {
  layers '[{"name":"bomb","size":536870912,"zeros":true}]'
  local l
  l=$(layer_digest 1)
  [ "$(stat -c %s "$TEST_DIR/l/blobs/sha256/${l#sha256:}")" -lt $((2 << 20)) ]
  unpack
  [ "$status" -ne 0 ]
  [[ $stderr == *"layer 1 ($l): entry \"bomb\" (512 MiB) takes the layer past "*" unpacked, 100 times its "*"refused as a decompression bomb; raise the limit with --max-layer-ratio N"* ]] ||
    { echo "$stderr"; false; }
  store_empty
}

@test "hostile layer: the unpacking limits' flags raise (and lower) them" {
  # A 64 MiB bomb: refused by default, unpacked with a higher ratio (or none).
  layers '[{"name":"zeros","size":67108864,"zeros":true}]'
  unpack
  [ "$status" -ne 0 ] && [[ $stderr == *"--max-layer-ratio N"* ]] || { echo "$stderr"; false; }
  store_empty
  unpack_with --max-layer-ratio 5000
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(stat -c %s "$R/zeros")" = 67108864 ]
  rm -rf "$STORE"
  unpack_with --max-layer-ratio 0
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  rm -rf "$STORE"
  # A layer's size.
  layers '[{"name":"a","size":1048576},{"name":"b","size":1048576}]'
  unpack_with --max-layer-size 1M
  [ "$status" -ne 0 ] &&
    [[ $stderr == *"layer 1 ($(layer_digest 1)): entry \"b\" (1 MiB) takes the layer past 1 MiB unpacked: refused; raise the limit with --max-layer-size SIZE"* ]] ||
    { echo "$stderr"; false; }
  store_empty
  unpack_with --max-layer-size 2M
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  rm -rf "$STORE"
  # The image's size: each layer within its own limit, the two together past the image's.
  layers '[{"name":"a","size":1572864}]' '[{"name":"b","size":1572864}]'
  unpack_with --max-image-size 2M
  [ "$status" -ne 0 ] &&
    [[ $stderr == *"layer 2 ($(layer_digest 2)): entry \"b\" (1.5 MiB) takes the image past 2 MiB unpacked: refused; raise the limit with --max-image-size SIZE"* ]] ||
    { echo "$stderr"; false; }
  store_empty
  unpack_with --max-image-size 3M
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  rm -rf "$STORE"
  # Entries: 20 files; and one deep name whose 11 parent directories count too.
  layers "[$(for i in $(seq 20); do printf '{"name":"f%d","data":"x"},' "$i"; done | sed 's/,$//')]"
  unpack_with --max-inodes 10
  [ "$status" -ne 0 ] && [[ $stderr == *"the image has more than 10 entries"*"raise the limit with --max-inodes N"* ]] ||
    { echo "$stderr"; false; }
  store_empty
  unpack_with --max-inodes 20
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  rm -rf "$STORE"
  layers '[{"name":"a/b/c/d/e/f/g/h/i/j/k/file","data":"x"}]'
  unpack_with --max-inodes 5
  [ "$status" -ne 0 ] && [[ $stderr == *"more than 5 entries"* ]] || { echo "$stderr"; false; }
  store_empty
  # A value that is not one, and a limit on a command that does not unpack.
  unpack_with --max-layer-size 12Q
  [ "$status" -ne 0 ] && [[ $stderr == *'--max-layer-size: "12Q" is not a size'* ]] || { echo "$stderr"; false; }
  run "$CODEMODE_IMAGE" pull --store "$STORE" --max-inodes 5 "oci:$TEST_DIR/l:t"
  [ "$status" -ne 0 ] && [[ $output == *"--max-inodes goes with resolve"* ]] || { echo "$output"; false; }
}

@test "hostile layer: a decompression bomb unpacked without privilege is refused the same way; the user's store stays empty" {
  layers '[{"name":"bomb","size":536870912,"zeros":true}]'
  local d
  for d in "$BATS_RUN_TMPDIR" "$BATS_RUN_TMPDIR/test" "$TEST_DIR"; do chmod o+x "$d"; done
  chmod -R o+rX "$TEST_DIR/l"
  mkdir -m 0777 "$TEST_DIR/nobody"
  run setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$TEST_DIR/nobody" \
    "$CODEMODE_IMAGE" resolve -q "oci:$TEST_DIR/l:t"
  [ "$status" -ne 0 ] && [[ $output == *"layer 1 ($(layer_digest 1)): entry \"bomb\""*"refused as a decompression bomb"* ]] ||
    { echo "$output"; false; }
  STORE=$TEST_DIR/nobody/.local/share/codemode
  store_empty
}
