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
