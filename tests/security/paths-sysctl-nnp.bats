#!/usr/bin/env bats
# maskedPaths, readonlyPaths, sysctl validation and no_new_privileges, as the container sees
# them.

load lib

# (This kernel has no /proc/kcore or /proc/sysrq-trigger: the masked and read-only checks use
# entries of the default lists that exist everywhere.)
@test "masked paths: /proc/keys and /proc/timer_list are /dev/null, /proc/acpi an empty read-only dir" {
  set_args sh -c 'stat -c "%F %t:%T" /proc/keys; stat -c "%F %t:%T" /proc/timer_list; wc -c </proc/keys; ls -A /proc/acpi | wc -l; touch /proc/acpi/x 2>&1 || echo acpi-ro'
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "character special file 1:3" ]
  [ "${lines[1]}" = "character special file 1:3" ]
  [ "${lines[2]}" = 0 ]
  [ "${lines[3]}" = 0 ]
  [[ $output == *acpi-ro* ]]
  assert_host_untouched
}

@test "readonly paths: /proc/sys, /proc/bus, /proc/fs, /proc/irq are read-only" {
  set_args sh -c 'awk '\''$5 ~ "^/proc/(sys|bus|fs|irq)$" { split($6, o, ","); print $5, o[1] }'\'' /proc/self/mountinfo; echo 0 >/proc/sys/kernel/domainname 2>&1 || echo write-refused'
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  local p
  for p in sys bus fs irq; do [[ $output == *"/proc/$p ro"* ]]; done
  [[ $output == *write-refused* ]]
}

@test "sysctl: net.* is applied inside the network namespace, the host's value untouched" {
  local host_before
  host_before=$(cat /proc/sys/net/ipv4/ip_forward)
  local want=1
  [ "$host_before" = 1 ] && want=0
  set_cfg '.linux.sysctl = {"net.ipv4.ip_forward": $v}' --arg v "$want"
  set_args cat /proc/sys/net/ipv4/ip_forward
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$stdout" = "$want" ]
  [ "$(cat /proc/sys/net/ipv4/ip_forward)" = "$host_before" ]
}

@test "sysctl: kernel.* (host-wide) is refused with an error naming it" {
  local before
  before=$(cat /proc/sys/kernel/panic)
  set_cfg '.linux.sysctl = {"kernel.panic": "17"}'
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -ne 0 ]
  [[ $output == *kernel.panic* ]]
  [ "$(cat /proc/sys/kernel/panic)" = "$before" ]
}

@test "sysctl: net.* without a network namespace is refused" {
  set_cfg '.linux.namespaces |= map(select(.type != "network")) | .linux.sysctl = {"net.ipv4.ip_forward": "1"}'
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -ne 0 ]
  [[ $output == *net.ipv4.ip_forward* ]]
}

# A setuid-root copy of the payload in the rootfs: it prints its real/effective uid.
setuid_probe() {
  cp "$HOSTILE_BIN" "$BUNDLE/rootfs/bin/suid-probe"
  chown 0:0 "$BUNDLE/rootfs/bin/suid-probe"
  chmod 4755 "$BUNDLE/rootfs/bin/suid-probe"
  set_cfg '.process.user = {"uid": 1000, "gid": 1000} | .process.noNewPrivileges = $nnp' --argjson nnp "$1"
  set_args sh -c "grep NoNewPrivs /proc/self/status; /bin/suid-probe $MARKER ids"
}

@test "no_new_privileges: a setuid-root binary does not gain root" {
  setuid_probe true
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [[ $output == *"NoNewPrivs:"*1* ]]
  [[ $output == *"euid=1000"* ]]
}

@test "no_new_privileges false: the same setuid binary does gain euid 0 (the probe works)" {
  setuid_probe false
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [[ $output == *"NoNewPrivs:"*0* ]]
  [[ $output == *"euid=0"* ]]
}
