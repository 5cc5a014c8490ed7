#!/usr/bin/env bats
# What the default config isolates: pid, hostname, network, /proc, /dev, the root, caps.

load ../lib/helpers

@test "the process is pid 1 in its own pid namespace" {
  set_args sh -c 'echo $$; ls -d /proc/[0-9]* | wc -l'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = 1 ]
  # sh, ls and wc (and maybe the pipeline's subshell): nothing from the host.
  [ "${lines[1]}" -le 4 ]
}

@test "the hostname is the configured one and the host's is untouched" {
  local before
  before=$(hostname)
  set_cfg '.hostname = "bats-host"'
  set_args hostname
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = bats-host ]
  [ "$(hostname)" = "$before" ]
}

@test "domainname is set when configured" {
  codemode_only runc11-unsupported
  set_cfg '.domainname = "bats.example"'
  set_args cat /proc/sys/kernel/domainname
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = bats.example ]
}

@test "the network namespace has only lo, and lo is up" {
  set_args sh -c 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "; ls /sys/class/net; cat /sys/class/net/lo/operstate /sys/class/net/lo/flags'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = lo ]
  [ "${lines[1]}" = lo ]
  [ "${#lines[@]}" -eq 4 ]
  # IFF_UP is bit 0 of the flags.
  [ $((lines[3] & 1)) -eq 1 ]
}

@test "/proc is the container's own procfs" {
  set_args sh -c 'cat /proc/1/cmdline | tr "\0" " "; echo; grep " /proc " /proc/self/mounts'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" == "sh -c "* ]]
  [[ "${lines[1]}" == "proc /proc proc "* ]]
}

@test "/dev is a fresh tmpfs with only the standard devices" {
  set_args sh -c 'grep " /dev " /proc/self/mounts; ls /dev | sort | tr "\n" " "'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" == *" /dev tmpfs "* ]]
  local d
  for d in null zero full random urandom tty; do
    [[ " ${lines[1]} " == *" $d "* ]]
  done
  # Nothing from the host's /dev.
  for d in $(ls /dev); do
    case $d in null | zero | full | random | urandom | tty | console | pts | shm | mqueue | ptmx | fd | stdin | stdout | stderr | core) continue ;; esac
    [[ " ${lines[1]} " != *" $d "* ]] || { echo "host device $d visible"; false; }
  done
}

@test "/dev/null, /dev/zero are the real character devices and work" {
  set_args sh -c 'stat -c "%F %t:%T" /dev/null /dev/zero; echo x >/dev/null && head -c 3 /dev/zero | wc -c'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "character special file 1:3" ]
  [ "${lines[1]}" = "character special file 1:5" ]
  [ "${lines[2]}" = 3 ]
}

@test "/dev/fd, /dev/stdin, /dev/stdout, /dev/stderr and /dev/ptmx exist" {
  set_args sh -c 'for l in fd stdin stdout stderr; do readlink /dev/$l; done; test -e /dev/ptmx && echo ptmx'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = /proc/self/fd ]
  [ "${lines[1]}" = /proc/self/fd/0 ]
  [ "${lines[4]}" = ptmx ]
}

@test "the root is the bundle's rootfs" {
  echo "$CID" >"$BUNDLE/rootfs/marker"
  set_args sh -c 'cat /marker; test -e /etc/debian_version && echo host-visible; ls /'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "$CID" ]
  [[ "$output" != *host-visible* ]]
}

@test "the host root is not reachable through .. or /proc/1/root" {
  set_args sh -c 'cd /; cd ..; cd ..; test -e etc/debian_version && echo escaped; test -e /proc/1/root/etc/debian_version && echo escaped-proc; echo end'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = end ]
}

@test "a relative root.path resolves against the bundle, an absolute one is used as is" {
  mv "$BUNDLE/rootfs" "$TEST_DIR/elsewhere"
  echo abs >"$TEST_DIR/elsewhere/marker"
  set_cfg '.root.path = $p' --arg p "$TEST_DIR/elsewhere"
  set_args cat /marker
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = abs ]
}

@test "root.readonly makes / read-only" {
  set_cfg '.root.readonly = true'
  set_args sh -c 'touch /newfile 2>&1; echo rc=$?'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [[ "$output" == *"Read-only file system"* ]]
  [ ! -e "$BUNDLE/rootfs/newfile" ]
}

@test "root.readonly false lets the container write its root" {
  set_cfg '.root.readonly = false'
  set_args sh -c 'echo written >/newfile'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$(cat "$BUNDLE/rootfs/newfile")" = written ]
}

@test "the default capabilities are exactly the configured three, none inheritable" {
  set_args grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  # CAP_KILL (5), CAP_NET_BIND_SERVICE (10), CAP_AUDIT_WRITE (29).
  [[ "$output" == *$'CapInh:\t0000000000000000'* ]]
  [[ "$output" == *$'CapPrm:\t0000000020000420'* ]]
  [[ "$output" == *$'CapEff:\t0000000020000420'* ]]
  [[ "$output" == *$'CapBnd:\t0000000020000420'* ]]
  # Ambient needs inheritable: runc's default lists ambient caps but no inheritable ones, so
  # neither runc nor codemode can raise them.
  [[ "$output" == *$'CapAmb:\t0000000000000000'* ]]
}

@test "noNewPrivileges sets NoNewPrivs" {
  set_cfg '.process.noNewPrivileges = true'
  set_args grep NoNewPrivs /proc/self/status
  run cm run -b "$BUNDLE" "$CID"
  [ "$output" = $'NoNewPrivs:\t1' ]
}

@test "maskedPaths hide and readonlyPaths protect" {
  # /proc/kcore does not exist on every kernel; /proc/timer_list and /proc/sched_debug are masked
  # files too. Whichever exists must read as empty.
  set_args sh -c 'for f in /proc/kcore /proc/timer_list /proc/sched_debug /proc/keys; do [ -e $f ] && wc -c <$f; done; { echo 1 >/proc/sys/kernel/domainname; } 2>/dev/null && echo wrote || echo ro'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "${#lines[@]}" -ge 2 ]
  for l in "${lines[@]:0:${#lines[@]}-1}"; do [ "$l" = 0 ]; done
  [ "${lines[-1]}" = ro ]
}

@test "without a uts namespace in the config the hostname is not changed" {
  bundle_remove_namespace "$BUNDLE" uts
  set_cfg 'del(.hostname)'
  set_args hostname
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = "$(hostname)" ]
}

@test "a hostname without a uts namespace is refused" {
  bundle_remove_namespace "$BUNDLE" uts
  set_cfg '.hostname = "x"'
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *hostname* ]]
}

@test "the container has its own ipc namespace" {
  set_args readlink /proc/self/ns/ipc
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" != "$(readlink /proc/self/ns/ipc)" ]
}

@test "linux.mountLabel is applied with SELinux and refused clearly without it" {
  set_cfg '.linux.mountLabel = "system_u:object_r:container_file_t:s0:c1,c2"'
  run_cm run -b "$BUNDLE" "$CID"
  if [ "$(stat -f -c %T /sys/fs/selinux 2>/dev/null)" = selinuxfs ]; then
    [ "$status" -eq 0 ]
  else
    [ "$status" -eq 1 ]
    if codemode_part error-wording; then
      [[ "$stderr" == *".linux.mountLabel"*"SELinux is not enabled"* ]]
    fi
    [ -z "$(ls -A "$ROOT" 2>/dev/null)" ]
  fi
}
