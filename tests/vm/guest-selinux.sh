#!/bin/bash
# In-VM tests: SELinux labels applied for real (process.selinuxLabel, linux.mountLabel, exec's
# --process-label). The kernel was booted with security=selinux (AppArmor off); run.sh compiled
# tests/vm/selinux/policy.conf into $CMVM_WORK/selinux/policy.33. Every process of the VM runs
# as the unconfined kernel_t; container_t may do everything but write other_file_t files, so an
# enforced label shows as exactly that EACCES (and an AVC denial in the kernel log).
# shellcheck source=tests/vm/guest-lib.sh
. "$CMVM_REPO/tests/vm/guest-lib.sh"

POLICY=$CMVM_WORK/selinux/policy.33
LABEL='system_u:system_r:container_t:s0:c1,c2'
OTHER_LABEL='system_u:system_r:container_t:s0:c3,c4'
MOUNT_LABEL='system_u:object_r:container_file_t:s0:c1,c2'
DENIED_CONTEXT='system_u:object_r:other_file_t:s0'
# A host tmpfs whose every file is other_file_t, bind-mounted into the test containers at /mnt.
DENIED=$BUNDLES/denied
# What the passing tests saw, shown as TAP comments after them.
EVIDENCE=/run/cmvm-selinux-evidence
: >"$EVIDENCE"
evidence() { echo "$*" >>"$EVIDENCE"; }

echo "# kernel $(uname -r), LSMs: $(cat /sys/kernel/security/lsm 2>/dev/null)"

# /proc/PID/attr/* ends in a NUL byte.
attr() { tr -d '\0' <"$1"; }

setup() {
  local aa
  aa=$(cat /sys/module/apparmor/parameters/enabled 2>/dev/null)
  [ "$aa" != Y ] || { echo "AppArmor is still enabled (security=selinux was not honoured)"; return 1; }
  grep -qw selinuxfs /proc/filesystems || { echo "no selinuxfs: SELinux is not enabled in this kernel"; return 1; }
  mountpoint -q /sys/fs/selinux || mount -t selinuxfs selinuxfs /sys/fs/selinux || return 1
  [ -r "$POLICY" ] || { echo "$POLICY is missing (run.sh compiles it)"; return 1; }
  cat "$POLICY" >/sys/fs/selinux/load || { dmesg | grep -i selinux | tail -n 10; return 1; }
  # Enforcing: denials are real, not just logged.
  echo 1 >/sys/fs/selinux/enforce || return 1
  [ "$(cat /sys/fs/selinux/enforce)" = 1 ] || { echo "not enforcing"; return 1; }
  [ "$(attr /proc/self/attr/current)" = 'system_u:system_r:kernel_t:s0-s0:c0.c1023' ] ||
    { echo "unexpected own label: $(attr /proc/self/attr/current)"; return 1; }
  # busybox mount passes context= through; util-linux's libmount drops it when libselinux thinks
  # SELinux is off (no /etc/selinux/config, as on this Debian host tree).
  mkdir -p "$DENIED" &&
    busybox mount -t tmpfs -o "context=$DENIED_CONTEXT,size=1m" tmpfs "$DENIED" &&
    echo old >"$DENIED/f" || return 1
  local got
  got=$(getfattr --absolute-names -n security.selinux --only-values "$DENIED/f" | tr -d '\0')
  [ "$got" = "$DENIED_CONTEXT" ] || { echo "$DENIED/f is labelled '$got'"; grep " $DENIED " /proc/self/mountinfo; return 1; }
}
t "selinux: AppArmor off, policy loaded, enforcing (getenforce 1), PID 1 is kernel_t" setup
if [ "$(cat /sys/fs/selinux/enforce 2>/dev/null)" != 1 ]; then
  echo "# SELinux is not enforcing: the label tests cannot run"
  echo "not ok $((T += 1)) - selinux: label tests # setup failed"
  echo "# $T tests, $((FAILED + 1)) failed"
  exit 0
fi

# a. process.selinuxLabel, with and without no_new_privs (NNP + a domain transition needs
# process2:nnp_transition, which the policy grants kernel_t).
label_applied() {
  local name=$1 nnp=$2 out
  bundle "$name" sh -c 'tr -d "\0" </proc/self/attr/current' >/dev/null
  cfg "$name" ".process.selinuxLabel = \"$LABEL\" | .process.noNewPrivileges = $nnp"
  out=$(cm run -b "$BUNDLES/$name" "$name" </dev/null 2>&1)
  [ "$out" = "$LABEL" ] || { echo "got '$out', want '$LABEL'"; return 1; }
  evidence "$name (noNewPrivileges $nnp): /proc/self/attr/current = $out"
}
t "selinux: process.selinuxLabel is the container's /proc/self/attr/current (noNewPrivileges false)" label_applied label false
t "selinux: process.selinuxLabel with noNewPrivileges true (NNP domain transition)" label_applied label-nnp true
cleanup_container label
cleanup_container label-nnp

# The labelled container the next tests look at: a mountLabel'd tmpfs at /tmp, the denied tmpfs
# bind-mounted at /mnt.
bundle lab sh -c 'echo hi >/tmp/f; grep " /tmp " /proc/self/mountinfo >/tmp/mountinfo; exec sleep 1000' >/dev/null
cfg lab ".process.selinuxLabel = \"$LABEL\" | .linux.mountLabel = \"$MOUNT_LABEL\" |
  .mounts += [{destination: \"/tmp\", type: \"tmpfs\", source: \"tmpfs\", options: [\"nosuid\", \"size=1m\"]},
              {destination: \"/mnt\", type: \"bind\", source: \"$DENIED\", options: [\"rbind\"]}]"

# b. linux.mountLabel: the context= option of the container's tmpfs, and what files there carry.
mount_label() {
  run_detached lab || return 1
  local pid root
  pid=$(pid_of lab)
  root=/proc/$pid/root
  wait_for 10 test -s "$root/tmp/mountinfo" || return 1
  cat "$root/tmp/mountinfo"
  grep -qF "context=\"$MOUNT_LABEL\"" "$root/tmp/mountinfo" || { echo "no context=\"$MOUNT_LABEL\""; return 1; }
  local got
  got=$(getfattr --absolute-names -n security.selinux --only-values "$root/tmp/f" | tr -d '\0')
  [ "$got" = "$MOUNT_LABEL" ] || { echo "/tmp/f (created by the container) is labelled '$got'"; return 1; }
  # /dev (tmpfs), /dev/pts, /dev/shm and /dev/mqueue are labelled too.
  got=$(getfattr --absolute-names -n security.selinux --only-values "$root/dev/pts/ptmx" | tr -d '\0')
  [ "$got" = "$MOUNT_LABEL" ] || { echo "/dev/pts/ptmx is labelled '$got'"; return 1; }
  [ "$(attr "/proc/$pid/attr/current")" = "$LABEL" ] || { echo "init runs as $(attr "/proc/$pid/attr/current")"; return 1; }
  evidence "lab mountinfo: $(cut -d' ' -f5- "$root/tmp/mountinfo")"
  evidence "lab /tmp/f security.selinux = $MOUNT_LABEL"
}
t "selinux: linux.mountLabel: context=\"…\" in the container's mountinfo, new files carry it" mount_label

# c. The label is enforced: container_t may not write other_file_t files.
enforced() {
  local out want
  out=$(cm exec lab sh -c 'cat /mnt/f; echo new >/mnt/f; echo "rc=$?"; echo ok >/tmp/g && cat /tmp/g' </dev/null 2>&1)
  want="old
sh: can't create /mnt/f: Permission denied
rc=1
ok"
  [ "$out" = "$want" ] || { echo "got:"; echo "$out"; echo "want:"; echo "$want"; return 1; }
  [ "$(cat "$DENIED/f")" = old ] || { echo "$DENIED/f was changed"; return 1; }
  # The EACCES is SELinux's, for this label.
  dmesg | grep -E 'avc: +denied +\{ write \}' | grep -F "scontext=$LABEL " | grep -qF "tcontext=$DENIED_CONTEXT tclass=file permissive=0" ||
    { dmesg | grep avc | tail -n 5; return 1; }
  evidence "enforced: $(dmesg | grep -E 'avc: +denied +\{ write \}' | grep -F "scontext=$LABEL " | tail -n 1 | sed 's/^\[[^]]*\] //')"
}
t "selinux: enforced: container_t cannot write an other_file_t file (EACCES, avc denied { write }), its own tmpfs it can" enforced

unlabelled_writes() {
  local out
  bundle unlabelled sh -c 'echo new >/mnt/f && cat /mnt/f' >/dev/null
  cfg unlabelled ".mounts += [{destination: \"/mnt\", type: \"bind\", source: \"$DENIED\", options: [\"rbind\"]}]"
  out=$(cm run -b "$BUNDLES/unlabelled" unlabelled </dev/null 2>&1)
  [ "$out" = new ] || { echo "got '$out'"; return 1; }
  echo old >"$DENIED/f"
}
t "selinux: the same write succeeds in a container without selinuxLabel (kernel_t)" unlabelled_writes
cleanup_container unlabelled

# d. exec: the container's label, or --process-label's.
exec_label() {
  local out
  out=$(cm exec lab sh -c 'tr -d "\0" </proc/self/attr/current' </dev/null 2>&1)
  [ "$out" = "$LABEL" ] || { echo "exec: got '$out', want '$LABEL'"; return 1; }
  out=$(cm exec --process-label "$OTHER_LABEL" lab sh -c 'tr -d "\0" </proc/self/attr/current' </dev/null 2>&1)
  [ "$out" = "$OTHER_LABEL" ] || { echo "exec --process-label: got '$out', want '$OTHER_LABEL'"; return 1; }
  evidence "exec --process-label: /proc/self/attr/current = $out"
}
t "selinux: exec gets the container's label, exec --process-label another" exec_label
cleanup_container lab

# e. A label the policy does not know: refused, nothing left behind.
invalid_label() {
  local name=$1 jqexpr=$2 want=$3 out rc=0
  bundle "$name" true >/dev/null
  cfg "$name" "$jqexpr"
  out=$(cm create -b "$BUNDLES/$name" "$name" </dev/null 2>&1) || rc=$?
  echo "$out"
  [ "$rc" -ne 0 ] || { echo "create succeeded"; cleanup_container "$name"; return 1; }
  [[ $out == *"$want"* ]] || { echo "the error does not name $want"; return 1; }
  [ -z "$(state_of "$name")" ] || { echo "a failed create left state behind"; return 1; }
  [ ! -e "$STATE/$name" ] || { echo "$STATE/$name left behind"; return 1; }
  [ ! -d "$CG/cmvm/$name" ] || { echo "cgroup $CG/cmvm/$name left behind"; return 1; }
  evidence "$name: $out"
}
t "selinux: create fails naming process.selinuxLabel when the policy has no such type, leaves nothing" \
  invalid_label bad-label '.process.selinuxLabel = "system_u:system_r:no_such_t:s0"' selinuxLabel
t "selinux: create fails naming linux.mountLabel when the policy has no such type, leaves nothing" \
  invalid_label bad-mount-label '.linux.mountLabel = "system_u:object_r:no_such_t:s0"' mountLabel

t "selinux: delete leaves no cgroup and no state behind" nothing_left
rmdir $CG/cmvm 2>/dev/null
umount "$DENIED"
sed 's/^/# /' "$EVIDENCE"
echo "# $T tests, $FAILED failed"
