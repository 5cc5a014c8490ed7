#!/usr/bin/env bats
# Escape attempts under `codemode-run --profile mcp`: a hostile "MCP server"
# (mcp_escape/payload.c, static) tries one escape or abuse per test; each must be contained and
# the host left unchanged. The payload refuses to run unless it finds the marker file only its
# test bundle has. Every attempt is bounded in time and iterations.

load ../lib/helpers
load mcp_escape/escape
codemode_only_file mcp-profile

setup_file() { escape_setup_file; }
setup() { escape_setup cm-mcp-host; }
teardown() { escape_teardown; }

# esc [codemode-run options…] -- ATTEMPT [ARG]: run the payload under the mcp profile.
esc() { escape_run 60 "${PROFILE:-mcp}" "$@"; }

@test "payload: refuses to run outside its test bundle" {
  run "$PAYLOAD" ptrace
  [ "$status" -eq 2 ]
  [[ "$output" == *refusing* ]]
}

@test "mcp escape: ptrace" { contained -- ptrace; }
@test "mcp escape: process_vm_readv" { contained -- process_vm; }
@test "mcp escape: mount" { contained -- mount; }
@test "mcp escape: new mount API (fsopen)" { contained -- fsopen; }
@test "mcp escape: unshare" { contained -- unshare; }
@test "mcp escape: setns" { contained -- setns; }
@test "mcp escape: clone with CLONE_NEWUSER" { contained -- clone_newuser; }
@test "mcp escape: clone3 answers ENOSYS" { contained -- clone3; }
@test "mcp escape: AF_PACKET socket" { contained -- packet; }
@test "mcp escape: raw INET socket" { contained -- raw; }
@test "mcp escape: AF_VSOCK socket" { contained -- vsock; }
@test "mcp escape: AF_ALG socket" { contained -- alg; }
@test "mcp escape: netlink other than NETLINK_ROUTE" { contained -- netlink_audit; }
@test "mcp escape: keyctl / add_key" { contained -- keyctl; }
@test "mcp escape: bpf" { contained -- bpf; }
@test "mcp escape: perf_event_open" { contained -- perf; }
@test "mcp escape: io_uring" { contained -- io_uring; }
@test "mcp escape: userfaultfd" { contained -- userfaultfd; }
@test "mcp escape: module loading" { contained -- module; }
@test "mcp escape: chroot" { contained -- chroot; }
@test "mcp escape: mknod a block device" { contained -- mknod; }
@test "mcp escape: capabilities, no_new_privs (setuid binaries gain nothing)" { contained -- caps; }
@test "mcp escape: TIOCSTI (also with high bits set) is refused by seccomp" {
  contained -- tiocsti
  # mcp.json answers ENOTTY for TIOCSTI, TIOCLINUX and TIOCSETD whatever the high bits (EPERM,
  # the default action, would make libseccomp drop the rules); with a terminal on stdin,
  # hostile_caller.bats shows the filter, not the kernel, refusing.
  [[ "$output" == *"Inappropriate ioctl for device"* ]]
}
@test "mcp escape: 32-bit syscalls (int 0x80) are killed" {
  escape_need_ia32
  contained -- 32bit
}
@test "mcp escape: modify_ldt, execveat, memfd_secret, vmsplice, name_to_handle_at" { contained -- misc; }
@test "mcp escape: /proc/self/exe cannot be opened for writing" { contained -- self_exe; }
@test "mcp escape: core dumps are off and cannot be turned on" { contained -- core; }

@test "mcp escape: the root filesystem is read-only" {
  contained -- write_root
  [ ! -e "$BUNDLE/rootfs/escape-was-here" ]
}

@test "mcp escape: a read-only bind mount stays read-only" {
  mkdir -p "$HOST_DIR/data"
  echo original >"$HOST_DIR/data/file"
  contained --mount "$HOST_DIR/data:/data:ro" -- write /data/file
  [ "$(cat "$HOST_DIR/data/file")" = original ]
}

@test "mcp escape: /proc/sys and /sys are read-only" {
  contained -- write /proc/sys/kernel/hostname
  contained -- write /sys/kernel/mm/transparent_hugepage/enabled
}

@test "mcp escape: fork bomb stops at the pids limit" { contained -- forkbomb; }
@test "mcp escape: fd exhaustion stops at RLIMIT_NOFILE" { contained -- fds; }
@test "mcp escape: filling /tmp stops at its size limit" { contained -- filltmp; }

@test "mcp escape: memory hog is OOM-killed inside its cgroup (rootless without one: stopped by RLIMIT_AS)" {
  esc --memory 64m -- memhog
  if [ "$(id -u)" -ne 0 ] && [[ "$output" == *"limits are not enforced"* ]]; then
    # tests/rootless: no cgroup to OOM-kill in, so the profile's RLIMIT_AS fallback refuses the
    # allocations instead (runtime/rootless.h).
    [ "$status" -eq 0 ]
    [[ "$output" == *"contained: memory hog"* ]]
  else
    [ "$status" -eq 137 ]
  fi
  [[ "$output" != *ESCAPED* ]]
}

@test "mcp escape: network egress to a host listener is unreachable; loopback works" {
  local ip port=$((20000 + RANDOM % 20000))
  ip=$(ip -4 route get 1.1.1.1 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "src") print $(i + 1)}')
  [ -n "$ip" ] || ip=$(hostname -I | awk '{print $1}')
  # A host listener on every address: anything that connects makes it print CONNECTED.
  timeout 30 busybox nc -l -p "$port" -e /bin/echo CONNECTED >"$TEST_DIR/listener" 2>&1 </dev/null &
  bg_track $!
  sleep 0.3
  contained -- connect "$ip:$port"
  contained -- connect "1.1.1.1:53"
  esc -- loopback
  [ "$status" -eq 0 ]
  [[ "$output" == *"loopback works"* ]]
  ! grep -q CONNECTED "$TEST_DIR/listener"
}

@test "mcp escape: outliving --timeout (SIGTERM ignored) ends in SIGKILL, exit 124" {
  local start=$SECONDS
  esc --timeout 1 --grace 1 -- ignore_term
  [ "$status" -eq 124 ]
  [ $((SECONDS - start)) -lt 20 ]
  [ -z "$(ls -A "$ROOT")" ]
}

@test "mcp escape: a double-forked daemon does not survive the container" {
  esc -- double_fork
  [ "$status" -eq 0 ]
  sleep 0.5
  [ -z "$(test_processes "$CM_TEST_TOKEN:$CID")" ]
  [ -z "$(ls -A "$ROOT")" ]
}

@test "mcp: bind mounts of sensitive host paths are refused" {
  esc --mount /etc:/hostetc -- caps
  [ "$status" -eq 125 ]
  [[ "$output" == *refused* ]]
  mkdir -p "$HOST_DIR/home/.ssh"
  esc --mount "$HOST_DIR/home:/home" -- caps
  [ "$status" -eq 125 ]
  [[ "$output" == *credentials* ]]
  ln -s /root "$HOST_DIR/innocent"
  esc --mount "$HOST_DIR/innocent:/x" -- caps
  [ "$status" -eq 125 ]
  [[ "$output" == *refused* ]]
  esc --mount /:/host -- caps
  [ "$status" -eq 125 ]
  [ -z "$(ls -A "$ROOT")" ]
}

@test "mcp: joining the host network namespace is refused, naming the profile" {
  set_args /escape caps
  set_cfg '.linux.namespaces |= map(if .type == "network" then .path = "/proc/'"$$"'/ns/net" else . end)'
  run_cm --profile mcp run -b "$BUNDLE" "$CID"
  [ "$status" -ne 0 ]
  [[ "$output" == *"profile mcp"* ]]
  [[ "$output" == *network* ]]
  esc --net host -- caps
  [ "$status" -eq 125 ]
  [[ "$output" == *"profile mcp"* ]]
}

@test "mcp: the annotation can tighten but never loosen" {
  set_args /escape caps
  set_cfg '.annotations["run.codemode.profile"] = "default" | .process.noNewPrivileges = false'
  esc -- caps
  [ "$status" -eq 0 ]
  set_cfg '.annotations["run.codemode.profile"] = "mcp"'
  run_cm --profile default run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [[ "$output" == *"contained: capabilities"* ]]
}

@test "mcp: the profile's filter is stacked on the caller's, which cannot weaken it" {
  # A caller filter that allows everything: ptrace must still be refused by mcp.json.
  set_cfg '.linux.seccomp = {"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["getpgrp"], "action": "SCMP_ACT_ERRNO"}]}'
  contained -- ptrace
  set_args sh -c 'grep Seccomp_filters /proc/self/status'
  run_cm --profile mcp run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [[ "$output" == *"Seccomp_filters:"*2* ]]
}

@test "mcp: codemode policy explain and codemode-run --explain show the changes" {
  set_cfg '.linux.sysctl = {"net.ipv4.ip_forward": "1"} | .process.capabilities.bounding += ["CAP_SYS_ADMIN"]'
  run_cm --profile mcp policy explain -b "$BUNDLE"
  [ "$status" -eq 0 ]
  [[ "$output" == *"profile: mcp"* ]]
  [[ "$output" == *"CAP_SYS_ADMIN"* ]]
  [[ "$output" == *"net.ipv4.ip_forward=1 removed"* ]]
  [[ "$output" == *"seccomp: mcp.json stacked"* ]]
  run "$CODEMODE_RUN" --explain "$BUNDLE"
  [ "$status" -eq 0 ]
  [[ "$output" == *"pids.limit"* ]]
}

@test "codemode-run: exit status and signal propagation" {
  run "$CODEMODE_RUN" --root "$ROOT" --id "$CID" "$BUNDLE" -- sh -c 'exit 7'
  [ "$status" -eq 7 ]
  # SIGTERM to codemode-run reaches the container's handler.
  "$CODEMODE_RUN" --root "$ROOT" --id "$CID" "$BUNDLE" -- sh -c 'trap "exit 42" TERM; sleep 30 & wait' \
    </dev/null >/dev/null 2>&1 3>&- &
  local pid=$!
  bg_track $pid
  wait_file "$ROOT/$CID/state.json" 20
  sleep 1
  kill -TERM $pid
  status=0
  wait $pid || status=$?
  [ "$status" -eq 42 ]
  # A server without a handler is not pid 1 (codemode-run's init is): SIGTERM ends it at once,
  # 128+15, long before the grace period.
  "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --grace 20 "$BUNDLE" -- sleep 30 </dev/null >/dev/null 2>&1 3>&- &
  pid=$!
  bg_track $pid
  wait_file "$ROOT/$CID/state.json" 20
  sleep 0.5
  kill -TERM $pid
  status=0
  wait $pid || status=$?
  [ "$status" -eq 143 ] # not 137: the SIGKILL after the grace period never came
  # With --no-init the server is pid 1 and ignores SIGTERM: SIGKILL follows the grace period (128+9).
  "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --no-init --grace 1 "$BUNDLE" -- sleep 30 </dev/null >/dev/null 2>&1 3>&- &
  pid=$!
  bg_track $pid
  wait_file "$ROOT/$CID/state.json" 20
  sleep 0.5
  kill -TERM $pid
  status=0
  wait $pid || status=$?
  [ "$status" -eq 137 ]
  [ -z "$(ls -A "$ROOT")" ]
}

@test "codemode-run: stdio passes through untouched" {
  run bash -c "printf 'abc\n' | '$CODEMODE_RUN' --root '$ROOT' --id '$CID' '$BUNDLE' -- cat 2>/dev/null"
  [ "$status" -eq 0 ]
  [ "$output" = abc ]
}

@test "codemode-run --host: the host's binds are read-only, nosuid, nodev and idmapped, none recursive; no /etc secret" {
  run timeout --kill-after=5 60 "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --host -- /bin/sh -c \
    'cat /proc/self/mountinfo; [ -e /etc/shadow ] && echo SHADOW; mount -o remount,rw /usr 2>/dev/null && echo REMOUNTED
     # The host'"'"'s TLS keys: ssl and pki are bound in parts (trust store, openssl.cnf), never private/.
     for d in /etc/ssl/private /etc/pki/tls/private /etc/pki/CA/private; do [ -e $d ] && echo "KEYS $d"; done; true' </dev/null
  echo "$output" >&3
  [ "$status" -eq 0 ]
  [[ "$output" != *SHADOW* ]] && [[ "$output" != *REMOUNTED* ]] && [[ "$output" != *KEYS* ]]
  # Mount point (field 5) and per-mount options (field 6) of each bind of the host's /usr and /etc.
  local binds
  binds=$(awk '$5 == "/usr" || $5 ~ /^\/etc\// {print $5, $6}' <<<"$output")
  grep -q '^/usr ' <<<"$binds"
  # /etc's directories are binds; its small files are copies (the next test).
  [ ! -d /etc/ssl/certs ] || grep -q '^/etc/ssl/certs ' <<<"$binds"
  # Idmapped as root (the container's range); as a user its namespace nests in codemode-run's,
  # which maps the ids as they are.
  local want_idmap=0
  [ "$(id -u)" -eq 0 ] && want_idmap=1
  ! awk -v want_idmap=$want_idmap '{n = split($2, o, ","); ro = ns = nd = id = 0
          for (i = 1; i <= n; i++) { ro += o[i] == "ro"; ns += o[i] == "nosuid"; nd += o[i] == "nodev"; id += o[i] == "idmapped" }
          if (!(ro && ns && nd && (id || !want_idmap))) print "not ro,nosuid,nodev(,idmapped):", $0}' <<<"$binds" | grep .
  # Not recursive: nothing the host mounts below /usr or /etc/… comes along.
  ! awk '$5 ~ /^\/usr\// {print}' <<<"$output" | grep .
}

@test "codemode-run --host: /etc's small files are copies in the read-only root (the host's bytes and mode), not mounts" {
  # A bind per file cost ~35 us of a start (issue 27): the small regular files of the allow-list
  # are copied into the root's tmpfs instead, which is read-only as the binds were. A umask of
  # 077 must not narrow their modes (passwd unreadable to a server's own user would break it).
  local f
  for f in passwd group hosts; do [ -f "/etc/$f" ] || skip "no /etc/$f here"; done
  local script='for f in passwd group hosts; do printf "%s %s %s\n" $f $(stat -c %a /etc/$f) $(md5sum </etc/$f | cut -c1-32); done
    grep -c " /etc/passwd " /proc/self/mountinfo
    echo x >>/etc/passwd 2>/dev/null && echo WRITTEN; true'
  with_umask_077() { umask 077; "$@"; }
  run with_umask_077 timeout --kill-after=5 60 "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --host -- /bin/sh -c "$script" </dev/null
  echo "$output" >&3
  [ "$status" -eq 0 ]
  for f in passwd group hosts; do
    grep -qx "$f $(stat -c %a "/etc/$f") $(md5sum <"/etc/$f" | cut -c1-32)" <<<"$output"
  done
  grep -qx 0 <<<"$output" # no mount at /etc/passwd
  [[ "$output" != *WRITTEN* ]]
}

@test "codemode-run --host: an /etc symlink into /usr is the same symlink (localtime: ICU names its zone without reading all of zoneinfo)" {
  # Where the host's entry is a symlink into /usr, the container has the symlink (resolved in the
  # host's /usr, bound read-only); a bind of the resolved file lost the zone's name, and node's
  # ICU then opened every file of /usr/share/zoneinfo to find it (issue 27).
  local f want='' got
  for f in localtime os-release; do
    [ -L "/etc/$f" ] && case $(readlink "/etc/$f") in /usr/* | ../usr/*) want+="$f $(readlink "/etc/$f");" ;; esac
  done
  [ -n "$want" ] || skip "neither /etc/localtime nor /etc/os-release is a symlink into /usr here"
  for mode in --host "--host --ephemeral"; do
    # shellcheck disable=SC2086 # two words for the second mode
    run timeout --kill-after=5 60 "$CODEMODE_RUN" --root "$ROOT" --id "$CID" $mode -- /bin/sh -c \
      'for f in localtime os-release; do [ -L /etc/$f ] && printf "%s %s;" $f "$(readlink /etc/$f)"; done; echo; cat /etc/os-release >/dev/null && echo readable' </dev/null
    echo "# $mode: $output" >&3
    [ "$status" -eq 0 ]
    got=$(grep ';' <<<"$output" || true)
    for f in localtime os-release; do
      case $want in *"$f "*) [[ $got == *"$(grep -o "$f [^;]*;" <<<"$want")"* ]] ;; esac
    done
    [[ $output == *readable* ]]
  done
}

@test "codemode-run --host --ephemeral: the host's programs under a writable throwaway root, their binds still read-only" {
  # An overlay root shows its lower directory's files, never what is mounted on them: the binds
  # must be the root's mounts, not mounts under its lower layer (they once vanished: sh not found).
  run timeout --kill-after=5 60 "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --host --ephemeral -- /bin/sh -c \
    'touch /made-here && echo root-writable; [ -e /etc/passwd ] && echo etc-ok
     touch /usr/cm-escape-probe 2>/dev/null && echo USR-WRITTEN; true' </dev/null
  echo "$output" >&3
  [ "$status" -eq 0 ]
  [[ "$output" == *root-writable* ]] && [[ "$output" == *etc-ok* ]]
  [[ "$output" != *USR-WRITTEN* ]]
  [ ! -e /usr/cm-escape-probe ] && [ ! -e /made-here ]
}

@test "codemode-run --host as a user whose scratch mount point another user made first: not used, left as it was" {
  [ "$(id -u)" -eq 0 ] || skip "needs root (it runs codemode-run as another uid)"
  local uid=64999 point=/tmp/codemode-run-scratch.64999
  if [ -e "$point" ] && [ "$(stat -c %u "$point")" = "$uid" ]; then skip "$point is uid $uid's own already"; fi
  rm -rf --one-file-system "$point"
  mkdir -m 0700 "$point" # root's: not the user's
  local ustate
  ustate=$(mktemp -d /tmp/cm-ustate.XXXXXX) # the user's state: outside TEST_DIR, which is root's
  chown "$uid" "$ustate"
  run setpriv --reuid=$uid --regid=$uid --clear-groups timeout --kill-after=5 60 "$CODEMODE_RUN" \
    --debug --root "$ustate" --id "$CID" --host -- /bin/sh -c 'echo inside-ok' </dev/null
  echo "$output" >&3
  local owner entries
  owner=$(stat -c %u:%a "$point")
  entries=$(ls -A "$point")
  rmdir "$point"
  rm -rf --one-file-system "$ustate"
  [ "$status" -eq 0 ]
  [[ "$output" == *inside-ok* ]]
  # Another user's directory there could be removed under a running server (its scratch
  # mounts would go with it): a fresh one was used instead.
  [[ "$output" == *"$point is not a directory of ours"* ]]
  [ "$owner" = 0:700 ] && [ -z "$entries" ]
  [ -z "$(find /tmp -maxdepth 1 -name 'codemode-run.*' -user "$uid")" ]
}
