#!/usr/bin/env bats
# codemode and codemode-run as an unprivileged user (tests/rootless/run.sh runs this file as its
# test user, without and with /etc/subuid ranges, and under a delegated cgroup v2 subtree).
#   CM_ROOTLESS_SUBUID=1   /etc/subuid and /etc/subgid give the user 100000:65536
#   CM_ROOTLESS_DELEGATED  the delegated cgroup v2 directory our cgroup sits in (pass 3)

load ../lib/helpers

MARKER=.codemode-rootless-test-marker

setup_file() {
  [ "$(id -u)" -ne 0 ] || {
    echo "tests/rootless/rootless.bats runs as an unprivileged user (tests/rootless/run.sh)" >&2
    return 1
  }
  cm_setup_file
  export CODEMODE_RUN=${CODEMODE_RUN:-$(dirname "$CODEMODE")/codemode-run}
}

setup() {
  cm_setup
  : >"$BUNDLE/rootfs/$MARKER"
}

# run_user_cmd: codemode-run under the default (mcp) profile with this test's state dir.
cmrun() {
  timeout --kill-after=5 "$CM_TIMEOUT" "$CODEMODE_RUN" --root "$ROOT" --id "$CID" "$@"
}

map_of() { # map_of uid|gid: the container's /proc/self/{uid,gid}_map, one line per mapping
  set_args cat "/proc/self/$1_map"
  run_cm run -b "$BUNDLE" "$CID"
}

@test "rootless run: the caller's uid and gid are the container's root" {
  set_args sh -c 'id -u; id -g; cat /proc/self/uid_map /proc/self/gid_map'
  run_cm run -b "$BUNDLE" "$CID"
  echo "$output" >&3
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = 0 ]
  [ "${lines[1]}" = 0 ]
  [[ "$stdout" =~ 0[[:space:]]+$(id -u)[[:space:]]+1 ]]
  [[ "$stdout" =~ 0[[:space:]]+$(id -g)[[:space:]]+1 ]]
  if [ "${CM_ROOTLESS_SUBUID:-0}" = 1 ]; then
    # newuidmap/newgidmap mapped the subordinate range as ids 1-65536.
    [[ "$stdout" =~ 1[[:space:]]+100000[[:space:]]+65536 ]]
  else
    [ "$(grep -c . <<<"$stdout")" -eq 4 ]
  fi
}

@test "rootless: a process as container uid 1000 runs as the mapped host id, with its groups" {
  [ "${CM_ROOTLESS_SUBUID:-0}" = 1 ] || skip "needs /etc/subuid ranges (pass 2)"
  set_cfg '.process.user = {uid: 1000, gid: 1000, additionalGids: [5]}'
  set_args sh -c 'id -u; id -g; id -G; sleep 5'
  cm run --detach -b "$BUNDLE" "$CID" </dev/null >/dev/null 2>&1
  local pid
  pid=$(state_field "$CID" pid)
  # On the host the process is subordinate id 100000 + 999.
  [ "$(awk '/^Uid:/ { print $2 }' "/proc/$pid/status")" = 100999 ]
  [ "$(awk '/^Gid:/ { print $2 }' "/proc/$pid/status")" = 100999 ]
  # setgroups is allowed with newgidmap: the supplementary group is there.
  grep -q '^Groups:.*100004' "/proc/$pid/status"
  cm kill "$CID" KILL
}

@test "rootless: additionalGids without a subordinate range is refused with the reason" {
  [ "${CM_ROOTLESS_SUBUID:-0}" = 0 ] || skip "without /etc/subuid ranges only (pass 1)"
  set_cfg '.process.user.additionalGids = [0]'
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"setgroups is denied"* ]]
}

@test "rootless: state goes to \$XDG_RUNTIME_DIR/codemode, 0700, when --root is not given" {
  [ -n "${XDG_RUNTIME_DIR:-}" ]
  set_args true
  run timeout 30 "$CODEMODE" run -b "$BUNDLE" "$CID" </dev/null
  [ "$status" -eq 0 ]
  [ -d "$XDG_RUNTIME_DIR/codemode" ]
  [ "$(stat -c %a "$XDG_RUNTIME_DIR/codemode")" = 700 ]
  # Deleted by run: nothing of it is left.
  [ -z "$(ls -A "$XDG_RUNTIME_DIR/codemode")" ]
}

@test "rootless: compiled seccomp filters are cached in \$XDG_RUNTIME_DIR/codemode-seccomp, the user's alone; one others can write is not used" {
  export XDG_RUNTIME_DIR=$BATS_TEST_TMPDIR/xdg
  mkdir -m 0700 "$XDG_RUNTIME_DIR"
  cache=$XDG_RUNTIME_DIR/codemode-seccomp
  set_args sh -c 'grep -E "^(Seccomp|Seccomp_filters):" /proc/self/status; unshare -U true 2>&1 | grep -q "not permitted" && echo DENIED'
  run_cm --profile mcp run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$(stat -c '%a %u' "$cache")" = "700 $(id -u)" ]
  entries=("$cache"/*.bpf)
  [ -f "${entries[0]}" ]
  [ "$(stat -c '%a %u' "${entries[0]}")" = "600 $(id -u)" ]
  # The second start loads the cached program: the same filter, the same denials.
  before=$(stat -c %Y.%i "${entries[0]}")
  run_cm --profile mcp run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [[ "$output" == *"Seccomp:	2"* ]]
  [[ "$output" == *DENIED* ]]
  [ "$(stat -c %Y.%i "${entries[0]}")" = "$before" ]
  # Writable by the group: not trusted, nothing read or written there; the start compiles.
  rm -f "$cache"/*.bpf
  chmod 0770 "$cache"
  run_cm --profile mcp run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [[ "$output" == *DENIED* ]]
  [ -z "$(ls -A "$cache")" ]
}

@test "rootless lifecycle: create, start, exec, ps, kill, delete, state, list as the same user" {
  set_args sleep 60
  run_cm create -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$(state_field "$CID" status)" = created ]
  # An exec before start is refused clearly: init is still closed to us (CVE-2019-5736).
  run_cm exec "$CID" true
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"start the container first"* ]]
  cm start "$CID"
  wait_status "$CID" running
  run_cm exec "$CID" sh -c 'cat /proc/self/uid_map; echo $$'
  [ "$status" -eq 0 ]
  [[ "$stdout" =~ 0[[:space:]]+$(id -u)[[:space:]]+1 ]]
  run_cm exec --detach "$CID" sleep 50
  [ "$status" -eq 0 ]
  run_cm ps --format json "$CID"
  [ "$status" -eq 0 ]
  # Without a cgroup ps lists the container's pid namespace: init and the detached exec.
  [ "$(jq length <<<"$stdout")" -ge 2 ]
  jq -e --argjson p "$(state_field "$CID" pid)" 'index($p) != null' <<<"$stdout"
  run_cm list
  [[ "$stdout" == *"$CID"* ]]
  run_cm kill --all "$CID" KILL
  [ "$status" -eq 0 ]
  wait_status "$CID" stopped
  run_cm delete "$CID"
  [ "$status" -eq 0 ]
  [ ! -e "$ROOT/$CID" ]
}

@test "rootless: pause without a cgroup is a clear error naming the fix" {
  [ -z "${CM_ROOTLESS_DELEGATED:-}" ] || skip "pass 3 has a cgroup"
  set_args sleep 30
  cm run --detach -b "$BUNDLE" "$CID" </dev/null >/dev/null 2>&1
  run_cm pause "$CID"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"has no cgroup, which pause"* ]]
  [[ "$stderr" == *"delegated"* ]]
  cm kill "$CID" KILL
}

@test "rootless: \`codemode spec --rootless\` writes a config that runs, also under codemode-run's mcp profile" {
  rm "$BUNDLE/config.json"
  cm spec --rootless -b "$BUNDLE"
  bundle_set_terminal "$BUNDLE" false
  set_args sh -c 'cat /proc/self/uid_map; grep " /sys " /proc/self/mounts'
  run_cm run -b "$BUNDLE" "$CID"
  echo "$output" >&3
  [ "$status" -eq 0 ]
  [[ "$stdout" == *" /sys "* ]]
  for profile in default mcp-audit mcp; do
    run cmrun --profile "$profile" "$BUNDLE" </dev/null
    echo "# $profile: $output" >&3
    [ "$status" -eq 0 ]
  done
  # Under mcp the host /sys bind becomes the container's own read-only sysfs.
  run cmrun --profile mcp --explain "$BUNDLE"
  [[ "$output" == *"/sys: the bind of the host's /sys becomes a fresh read-only sysfs"* ]]
}

@test "rootless codemode-run --profile mcp: no caps, no_new_privs, seccomp, only lo, read-only root" {
  set_args sh -c 'grep -E "^(CapEff|CapPrm|CapBnd|NoNewPrivs|Seccomp|Seccomp_filters):" /proc/self/status;
    ls /sys/class/net; touch /x 2>&1 || echo RO'
  run cmrun "$BUNDLE" </dev/null
  echo "$output" >&3
  [ "$status" -eq 0 ]
  [[ "$output" == *"CapEff:	0000000000000000"* ]]
  [[ "$output" == *"CapPrm:	0000000000000000"* ]]
  [[ "$output" == *"CapBnd:	0000000000000000"* ]]
  [[ "$output" == *"NoNewPrivs:	1"* ]]
  [[ "$output" == *"Seccomp:	2"* ]]
  [ "$(awk '/^Seccomp_filters:/ { print $2 }' <<<"$output")" -ge 1 ]
  [ "$(grep -cx lo <<<"$output")" -eq 1 ]
  [ "$(grep -c -E '^(eth|ens|enp|wl|docker|br-)' <<<"$output")" -eq 0 ]
  [[ "$output" == *"Read-only file system"* ]]
}

@test "rootless without a cgroup: one warning naming what is not enforced, and rlimits stop a fork bomb" {
  [ -z "${CM_ROOTLESS_DELEGATED:-}" ] || skip "pass 3 has a cgroup"
  # The payload refuses to run outside its test bundle (the marker).
  cat >"$BUNDLE/rootfs/forkbomb" <<EOF
#!/bin/sh
[ -e /$MARKER ] || { echo refusing: not the test bundle; exit 2; }
# A failed fork ends a non-interactive shell: the bomb runs in a subshell, and the count after it
# needs no fork (a glob).
( i=0; while [ \$i -lt 600 ]; do sleep 20 & i=\$((i + 1)); done ) 2>/dev/null
set -- /proc/[0-9]*
echo "running: \$#"
EOF
  chmod 755 "$BUNDLE/rootfs/forkbomb"
  run cmrun --timeout 60 "$BUNDLE" -- /forkbomb </dev/null
  echo "# status $status: $output" >&3
  [ "$status" -eq 0 ]
  # The warning: once, naming the limits that are not enforced and the fallback.
  [ "$(grep -c 'warning' <<<"$output")" -eq 1 ]
  [[ "$output" == *"memory, pids and cpu limits are not enforced"* ]]
  [[ "$output" == *"RLIMIT_NPROC 256"* ]]
  # RLIMIT_NPROC (counted in the container's own user namespace) stopped it at 256 processes.
  local running
  running=$(sed -n 's/^running: //p' <<<"$output")
  [ -n "$running" ]
  [ "$running" -le 256 ]
  [ "$running" -ge 100 ]
  # policy explain says the same.
  run cmrun --explain "$BUNDLE" -- /forkbomb
  [[ "$output" == *"cgroups: none"* ]]
  [[ "$output" == *"RLIMIT_NPROC 256"* ]]
}

@test "rootless cgroup: under a delegated cgroup v2 subtree the container gets its own cgroup there" {
  [ -n "${CM_ROOTLESS_DELEGATED:-}" ] || skip "pass 3 only (a delegated cgroup v2 subtree)"
  set_args sleep 30
  run_cm run --detach -b "$BUNDLE" "$CID"
  echo "$output" >&3
  [ "$status" -eq 0 ]
  [[ "$stderr" != *warning* ]]
  local pid dir
  pid=$(state_field "$CID" pid)
  dir=$CM_ROOTLESS_DELEGATED/codemode-$CID
  [ -d "$dir" ]
  grep -qx "$pid" "$dir/cgroup.procs"
  [ "$(sed -n 's/^0:://p' "/proc/$pid/cgroup")" = "${dir#/sys/fs/cgroup}" ]
  # pause works: the v2 freezer of our own cgroup.
  cm pause "$CID"
  [ "$(state_field "$CID" status)" = paused ]
  cm resume "$CID"
  cm delete --force "$CID"
  [ ! -d "$dir" ]
}

@test "rootless cgroup: policy explain names the delegated cgroup" {
  [ -n "${CM_ROOTLESS_DELEGATED:-}" ] || skip "pass 3 only (a delegated cgroup v2 subtree)"
  run cm policy explain -b "$BUNDLE"
  echo "$output" >&3
  [[ "$output" == *"cgroups: $CM_ROOTLESS_DELEGATED"* || "$output" == *"cgroups: ${CM_ROOTLESS_DELEGATED#/sys/fs/cgroup}"* ]]
}

@test "rootless CVE-2019-5736: an entrypoint '#!/proc/self/exe' runs the sealed trampoline, not the user's own runtime binary" {
  # The runtime under test is a copy this user owns (writable, as a rootless install is): were
  # /proc/self/exe the runtime at the entrypoint's execve, the container (whose root is this
  # user) could rewrite it. The trampoline refuses the interpreter's argument as its own usage
  # (where the runtime would have parsed it as its --log option), as in tests/security's form.
  cp "$CODEMODE" "$TEST_DIR/codemode-copy"
  local sum
  sum=$(sha256sum <"$TEST_DIR/codemode-copy")
  printf '#!/proc/self/exe --log=/logfifo\n' >"$BUNDLE/rootfs/evil"
  chmod 755 "$BUNDLE/rootfs/evil"
  set_args /evil
  run timeout 30 "$TEST_DIR/codemode-copy" --root "$ROOT" run -b "$BUNDLE" "$CID" </dev/null
  echo "$output" >&3
  [ "$status" -eq 127 ]
  # /proc/self/exe was the trampoline: it refused the interpreter's arguments as its own usage,
  # where the runtime binary would have parsed them as its --log option (as in
  # tests/security/cve-2019-5736.bats since the last steps moved into the trampoline).
  [[ "$output" == *"codemode: exec trampoline: usage: FD:OFFSET PATH ARGV0..."* ]]
  [ "$(sha256sum <"$TEST_DIR/codemode-copy")" = "$sum" ]
}

@test "rootless CVE-2019-5736: the runtime's processes are non-dumpable (their /proc/PID/exe is closed)" {
  set_args sleep 30
  run_cm create -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  local pid
  pid=$(state_field "$CID" pid)
  # Init still runs the runtime binary, waiting for start, as this very user: yet even we may
  # not open its exe link, so neither may anything in the container.
  run readlink "/proc/$pid/exe"
  [ "$status" -ne 0 ]
  grep -q '^Uid:' "/proc/$pid/status"
  cm delete --force "$CID"
}

@test "rootless: a create that fails leaves nothing behind in the state dir" {
  local before
  # A missing program, a bind of a missing source, a mapping the user does not own.
  set_args /no/such/program
  run_cm create -b "$BUNDLE" "$CID"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"/no/such/program"* ]]
  [ -z "$(ls -A "$ROOT")" ]
  set_args true
  set_cfg '.mounts += [{destination: "/data", type: "bind", source: "/no/such/dir", options: ["rbind"]}]'
  run_cm create -b "$BUNDLE" "$CID"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"/no/such/dir"* ]]
  [ -z "$(ls -A "$ROOT")" ]
  set_cfg '.mounts |= map(select(.destination != "/data")) | .linux.namespaces += [{type: "user"}] |
    .linux.uidMappings = [{containerID: 0, hostID: 0, size: 1}] | .linux.gidMappings = [{containerID: 0, hostID: 0, size: 1}]'
  run_cm create -b "$BUNDLE" "$CID"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"newuidmap"* || "$stderr" == *"uid_map"* ]]
  [ -z "$(ls -A "$ROOT")" ]
  # And no process of it survives.
  [ -z "$(test_processes "$CM_TEST_TOKEN:$CID")" ]
}

@test "rootless: idmapped mounts are refused clearly (they need host root)" {
  set_cfg '.mounts += [{destination: "/data", type: "bind", source: "/tmp", options: ["rbind", "idmap"]}]'
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"idmapped mount needs codemode to run as root"* ]]
  [ -z "$(ls -A "$ROOT")" ]
}

@test "rootless: a bundle made by root runs, its files owned by nobody inside" {
  [ -n "${CM_ROOTLESS_ROOT_BUNDLE:-}" ] || skip "tests/rootless/run.sh makes the root-made bundle"
  # The root-made rootfs with this test's config (root.path absolute, our args).
  jq --arg r "$CM_ROOTLESS_ROOT_BUNDLE/rootfs" '.root.path = $r' "$BUNDLE/config.json" >"$TEST_DIR/rootmade.json"
  cp "$TEST_DIR/rootmade.json" "$BUNDLE/config.json"
  set_args sh -c 'stat -c %u /bin/busybox; ls /root >/dev/null 2>&1 || echo root-dir-closed; echo ran'
  run_cm run -b "$BUNDLE" "$CID"
  echo "$output" >&3
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = 65534 ]
  [ "${lines[1]}" = root-dir-closed ]
  [ "${lines[2]}" = ran ]
}

# --- codemode-run's scratch space as the user: --ephemeral, :cow, --host, --image (issue 17) ---
# Their throwaway layers are a tmpfs and overlays in a mount namespace of codemode-run's own,
# which it makes, as a user, inside a user namespace of its own (supervisor/scratch.c).

# scratch_left: codemode-run's scratch directories of ours still on the host (there must be none).
scratch_left() {
  find /tmp -maxdepth 1 -name 'codemode-run.*' -user "$(id -u)" 2>/dev/null
}

@test "rootless codemode-run --ephemeral: a writable root over the bundle, the bundle unchanged, nothing left" {
  set_args sh -c 'echo written >/etc/new-file && cat /etc/new-file; rm /bin/true && echo removed; id -u'
  run cmrun --ephemeral "$BUNDLE" </dev/null
  echo "$output" >&3
  [ "$status" -eq 0 ]
  [[ "$output" == *written* ]]
  [[ "$output" == *removed* ]]
  [ ! -e "$BUNDLE/rootfs/etc/new-file" ]
  [ -e "$BUNDLE/rootfs/bin/true" ]
  [ -z "$(scratch_left)" ]
  [ -z "$(ls -A "$ROOT")" ]
}

@test "rootless codemode-run --ephemeral: the container's ids are on the host what they are without it" {
  # What container root and (with subordinate ids) container uid 1000 write to a rw mount is owned
  # on the host by the ids the rootless runtime maps them to: the nested namespace changes nothing.
  local out=$TEST_DIR/out
  mkdir -m 0777 "$out"
  set_args sh -c 'touch /out/as-root'
  run cmrun --ephemeral --mount "$out:/out:rw" "$BUNDLE" </dev/null
  echo "$output" >&3
  [ "$status" -eq 0 ]
  [ "$(stat -c %u:%g "$out/as-root")" = "$(id -u):$(id -g)" ]
  if [ "${CM_ROOTLESS_SUBUID:-0}" = 1 ]; then
    set_cfg '.process.user = {uid: 1000, gid: 1000}'
    set_args sh -c 'touch /out/as-1000'
    run cmrun --ephemeral --mount "$out:/out:rw" "$BUNDLE" </dev/null
    echo "$output" >&3
    [ "$status" -eq 0 ]
    [ "$(stat -c %u:%g "$out/as-1000")" = "100999:100999" ]
  fi
}

@test "rootless codemode-run --mount SRC:DST:cow: writable inside (a directory removed and made again), SRC unchanged" {
  local src=$TEST_DIR/cache
  mkdir -p "$src/sub"
  echo original >"$src/sub/file"
  set_args sh -c 'echo changed >/c/sub/file && cat /c/sub/file; rm -r /c/sub && mkdir /c/sub && ls -A /c/sub | wc -l'
  run cmrun --ephemeral --mount "$src:/c:cow" "$BUNDLE" </dev/null
  echo "$output" >&3
  [ "$status" -eq 0 ]
  [ "${lines[-2]}" = changed ]
  [ "${lines[-1]}" = 0 ]
  [ "$(cat "$src/sub/file")" = original ]
  [ -z "$(scratch_left)" ]
}

@test "rootless codemode-run --host: the host's programs, read-only, an empty home, no secrets of /etc" {
  run timeout --kill-after=5 "$CM_TIMEOUT" "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --host \
    --env "CODEMODE_TEST_CONTAINER=$CM_TEST_TOKEN:$CID" -- /bin/sh -c \
    'id -u; ls -A /root | wc -l; [ -e /etc/shadow ] && echo SHADOW; touch /usr/x 2>/dev/null || echo usr-ro; echo t >/tmp/t && cat /tmp/t' </dev/null
  echo "$output" >&3
  [ "$status" -eq 0 ]
  [[ "$output" != *SHADOW* ]]
  [[ "$output" == *usr-ro* ]]
  [ "$(tail -n 1 <<<"$output")" = t ]
  [ -z "$(scratch_left)" ]
  [ -z "$(ls -A "$ROOT")" ]
}

@test "rootless codemode-run --image: an OCI layout pulled into the user's store and run; codemode images lists it" {
  command -v python3 >/dev/null || skip "python3 (tests/image/mkimage.py) is not installed"
  local repo
  repo=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  local cmimage=${CODEMODE_IMAGE:-$(dirname "$CODEMODE")/codemode-image}
  printf '{"gzip":true,"images":[{"tag":"t","platforms":[{"arch":"amd64","layers":[[{"from_dir":"%s"}]],"config":{"Cmd":["/bin/sh","-c","id -u; cat /etc/image-marker"],"Env":["PATH=/bin","CODEMODE_TEST_CONTAINER=%s"]}}]}]}' \
    "$BUNDLE/rootfs" "$CM_TEST_TOKEN:$CID" >"$TEST_DIR/image.json"
  echo from-the-image >"$BUNDLE/rootfs/etc/image-marker"
  python3 "$repo/tests/image/mkimage.py" "$TEST_DIR/image.json" "$TEST_DIR/layout" >/dev/null
  # The default store: the user's ($XDG_DATA_HOME/codemode, else ~/.local/share/codemode).
  local store=${XDG_DATA_HOME:-$HOME/.local/share}/codemode
  run timeout --kill-after=5 "$CM_TIMEOUT" "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --image "oci:$TEST_DIR/layout:t" </dev/null
  echo "$output" >&3
  [ "$status" -eq 0 ]
  [ "${lines[-2]}" = 0 ]
  [ "${lines[-1]}" = from-the-image ]
  [ -d "$store/rootfs" ]
  [ "$(stat -c %u "$store")" = "$(id -u)" ]
  run "$cmimage" images
  echo "$output" >&3
  [ "$status" -eq 0 ]
  [[ "$output" == *"$TEST_DIR/layout"* || "$output" == *":t"* ]]
  [ -z "$(scratch_left)" ]
  [ -z "$(ls -A "$ROOT")" ]
}

@test "rootless codemode-run --image: a decompression bomb layer is refused, naming the limit's flag; nothing stays in the store" {
  command -v python3 >/dev/null || skip "python3 (tests/image/mkimage.py) is not installed"
  local repo store=$TEST_DIR/store
  repo=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  # A 512 MiB file of zeros: a gzip layer of about 510 KiB.
  printf '{"images":[{"tag":"t","platforms":[{"arch":"amd64","layers":[[{"name":"bomb","size":536870912,"zeros":true}]],"config":{"Cmd":["/bin/true"]}}]}]}' \
    >"$TEST_DIR/bomb.json"
  python3 "$repo/tests/image/mkimage.py" "$TEST_DIR/bomb.json" "$TEST_DIR/bomb" >/dev/null
  run timeout --kill-after=5 "$CM_TIMEOUT" "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --store "$store" \
    --image "oci:$TEST_DIR/bomb:t" </dev/null
  echo "$output" >&3
  [ "$status" -ne 0 ]
  [[ $output == *'entry "bomb" (512 MiB) takes the layer past'*"refused as a decompression bomb; raise the limit with --max-layer-ratio N"* ]]
  [ -z "$(ls "$store/images")" ] && [ -z "$(ls "$store/rootfs")" ] && [ -z "$(ls "$store/tmp")" ]
  [ -z "$(ls "$store/blobs/sha256")" ]
  [ -z "$(scratch_left)" ]
  [ -z "$(ls -A "$ROOT")" ]
}

@test "rootless codemode-run --ephemeral: SIGKILLed, its watcher removes the container and the scratch space goes with it" {
  set_args sleep 60
  "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --ephemeral "$BUNDLE" </dev/null >/dev/null 2>&1 &
  local runpid=$! i
  for i in $(seq 100); do [ -e "$ROOT/$CID/state.json" ] && break; sleep 0.1; done
  [ -e "$ROOT/$CID/state.json" ]
  kill -KILL "$runpid"
  wait "$runpid" || true
  for i in $(seq 50); do [ -z "$(ls -A "$ROOT")" ] && [ -z "$(scratch_left)" ] && break; sleep 0.2; done
  [ -z "$(ls -A "$ROOT")" ]
  [ -z "$(scratch_left)" ]
  [ -z "$(test_processes "$CM_TEST_TOKEN:$CID")" ]
}
