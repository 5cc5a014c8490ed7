#!/bin/bash
# tests/vm/run.sh [v2|systemd|selinux|criu|ci|all] — cgroup v2 with every controller, and SELinux, in qemu
# (DESIGN.md §5).
#
# Boots Debian's kernel (linux-image-amd64's current package, unpacked with dpkg -x into a cache
# dir, never installed into /boot) under qemu-system-x86_64 with TCG. A busybox initramfs loads
# the virtio/9p/overlay modules, mounts the host's / read-only over 9p with a tmpfs overlay and
# switch_roots into it; tests/vm/guest.sh then mounts cgroup2 with every controller and runs
# tests/vm/guest-<variant>.sh. Their TAP lines come back on ttyS0 prefixed "CMVM: ", and this
# script prints them as TAP. Variants:
#   v2       the cgroupfs driver against every v2 controller (default)
#   systemd  systemd as PID 1 (unified hierarchy), a oneshot unit runs the systemd-driver tests
#   selinux  booted with security=selinux (AppArmor off): tests/vm/selinux/policy.conf, compiled
#            here with checkpolicy, is loaded and enforced; process.selinuxLabel,
#            linux.mountLabel and exec --process-label are checked for real (guest-selinux.sh)
#   criu     checkpoint/restore through CRIU (guest-criu.sh): Debian's criu works on this kernel
#   ci       the ci profile's delegated cgroup v2 subtree, nested podman with cgroups in it
#            (guest-ci.sh), on Debian 12's 6.12 kernel package (the profile needs idmapped tmpfs)
#   criu-v1  guest-criu.sh's cgroup v1 cases, the guest's cgroups mounted hybrid (one v1 hierarchy
#            per controller, cgroup2 with none at /sys/fs/cgroup/unified)
#   all      all six, one boot each (also the default)
# Exit 77 (tests/run-all.sh: suite skipped) when this machine cannot run it; the last stderr line
# says why. Knobs: CM_VM_CACHE (default /var/cache/codemode-vm), CM_VM_TIMEOUT (seconds per
# boot, default 600), CM_VM_KEEP=1 keeps the work dir (serial logs) for a look afterwards.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
variants=${1:-${CM_VM_VARIANTS:-v2 systemd selinux criu criu-v1 ci}}
[ "$variants" = all ] && variants="v2 systemd selinux criu criu-v1 ci"
CACHE=${CM_VM_CACHE:-/var/cache/codemode-vm}
TIMEOUT=${CM_VM_TIMEOUT:-600}
: "${CODEMODE:=$repo/build/codemode}"

cannot() {
  echo "tests/vm: $*" >&2
  exit 77
}
log() { echo "# $*"; }

[ "$(id -u)" -eq 0 ] || cannot "needs root (9p passthrough of the host tree)"
[ -x "$CODEMODE" ] || cannot "$CODEMODE is not built (run make)"
case $CODEMODE in "$repo"/*) ;; *) cannot "CODEMODE must be inside the repository (the guest sees the host tree)" ;; esac
command -v jq >/dev/null || cannot "jq is not installed"
[ -x /bin/busybox ] || cannot "/bin/busybox is missing (apt-get install busybox-static)"
if ! command -v qemu-system-x86_64 >/dev/null; then
  log "installing qemu-system-x86 (no recommends)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends qemu-system-x86 >&2 ||
    cannot "qemu-system-x86_64 is missing and apt-get install qemu-system-x86 failed"
fi
# apparmor_parser loads the guest's AppArmor test profile (the guest runs the host's copy over
# 9p); without it that one test is skipped, the rest of the suite still runs.
if ! command -v apparmor_parser >/dev/null; then
  log "installing apparmor (no recommends)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends apparmor >&2 ||
    log "apt-get install apparmor failed: the AppArmor test will be skipped"
fi
# The selinux variant: checkpolicy compiles its policy, getfattr (attr) reads file labels.
if [[ " $variants " == *" selinux "* ]] && ! { command -v checkpolicy && command -v getfattr; } >/dev/null; then
  log "installing checkpolicy and attr (no recommends)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends checkpolicy attr >&2 ||
    log "apt-get install checkpolicy attr failed: the selinux variant will be skipped"
fi

# The criu variant: Debian's criu runs in the guest (the host's copy over 9p).
if [[ " $variants " == *" criu"* ]] && ! command -v criu >/dev/null; then
  log "installing criu (no recommends)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends criu >&2 ||
    log "apt-get install criu failed: the criu variant will fail its first test"
fi

# --- the kernel: linux-image-amd64's dependency, unpacked into the cache ---------------------
# The ci variant needs Linux 6.3 or later (idmapped tmpfs: the ci profile's throwaway upper
# layers and its /var/lib/containers are tmpfs, idmapped for the job's range), which Debian 12's
# default 6.1 is not: it boots Debian 12's newest 6.x kernel package instead
# (linux-image-6.12.*+deb12-amd64), or CM_VM_CI_KERNEL.
kernel_package() {
  if [ "$1" = ci ]; then
    [ -n "${CM_VM_CI_KERNEL:-}" ] && { echo "$CM_VM_CI_KERNEL"; return; }
    apt-cache search --names-only '^linux-image-6\.[0-9]+\.[0-9]+\+deb12-amd64$' 2>/dev/null | awk '{print $1}' |
      sort -V | tail -n 1
    return
  fi
  apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ { print $2; exit }'
}
fetch_kernel() {
  local pkg=$1 deb
  mkdir -p "$CACHE" || return 1
  if [ -z "$pkg" ]; then
    # No apt metadata: use whatever was unpacked before.
    KDIR=$(find "$CACHE" -maxdepth 1 -type d -name 'linux-image-[0-9]*' | sort -V | tail -n 1)
    [ -n "$KDIR" ] || return 1
  else
    KDIR=$CACHE/$pkg
  fi
  if [ ! -d "$KDIR/boot" ]; then
    log "fetching $pkg into $CACHE"
    (cd "$CACHE" && apt-get download -q "$pkg" >&2 2>/dev/null) || return 1
    deb=$(ls "$CACHE/${pkg}"_*.deb 2>/dev/null | tail -n 1)
    [ -n "$deb" ] || return 1
    rm -rf "$KDIR.tmp"
    dpkg -x "$deb" "$KDIR.tmp" && mv "$KDIR.tmp" "$KDIR" || return 1
    rm -f "$deb"
  fi
  VMLINUZ=$(ls "$KDIR"/boot/vmlinuz-* 2>/dev/null | head -n 1)
  MODDIR=$(ls -d "$KDIR"/lib/modules/* 2>/dev/null | head -n 1)
  [ -n "$VMLINUZ" ] && [ -n "$MODDIR" ]
}

# Under /tmp, not the suite's TMPDIR: that may be on /dev/shm, which the guest does not share
# (it sees the host's root filesystem over 9p, and /dev is its own).
WORK=$(mktemp -d /tmp/cm-vm.XXXXXX)
chmod 755 "$WORK"
cleanup() {
  [ -n "${QEMU_PID:-}" ] && kill "$QEMU_PID" 2>/dev/null
  if [ "${CM_VM_KEEP:-}" = 1 ]; then echo "tests/vm: work dir kept: $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

# --- the initramfs ----------------------------------------------------------------------------
# Module dependencies straight from each .ko's .modinfo section ("depends=a,b"): what
# `modinfo -F depends` prints, without needing kmod on the host.
mod_depends() { tr '\0' '\n' <"$1" | sed -n 's/^depends=//p' | head -n 1 | tr ',' ' '; }
add_module() {
  local m=${1//-/_} d
  [ -n "${MOD_DONE[$m]:-}" ] && return 0
  MOD_DONE[$m]=1
  [ -n "${MOD_BUILTIN[$m]:-}" ] && return 0 # built into the kernel (virtio_pci in 6.12)
  [ -n "${MOD_PATH[$m]:-}" ] || { echo "tests/vm: module $m not found in $MODDIR" >&2; return 1; }
  # Newer Debian kernels ship modules xz-compressed, which busybox insmod cannot load.
  if [[ ${MOD_PATH[$m]} == *.xz ]]; then
    mkdir -p "$WORK/modules-xz"
    xz -dc "${MOD_PATH[$m]}" >"$WORK/modules-xz/$m.ko" || return 1
    MOD_PATH[$m]=$WORK/modules-xz/$m.ko
  fi
  for d in $(mod_depends "${MOD_PATH[$m]}"); do add_module "$d" || return 1; done
  MOD_ORDER+=("$m")
}
# prepare_kernel PACKAGE: KDIR, VMLINUZ and the initramfs ($WORK/initramfs.gz) for that kernel.
prepare_kernel() {
  fetch_kernel "$1" || cannot "cannot get Debian's kernel (apt-get download ${1:-the linux-image-amd64 dependency} into $CACHE)"
  unset MOD_PATH MOD_DONE MOD_BUILTIN
  declare -gA MOD_PATH=() MOD_DONE=() MOD_BUILTIN=()
  MOD_ORDER=()
  local f m
  while IFS= read -r f; do
    m=${f##*/}
    m=${m%.ko}
    MOD_BUILTIN[${m//-/_}]=1
  done < <(cat "$MODDIR/modules.builtin" 2>/dev/null)
  while IFS= read -r f; do
    m=${f##*/}
    m=${m%.xz}
    m=${m%.ko}
    MOD_PATH[${m//-/_}]=$f
  done < <(find "$MODDIR/kernel" -name '*.ko' -o -name '*.ko.xz')
  # virtio_blk: the scratch disk the io.max throttle test writes to.
  for m in virtio_pci 9pnet_virtio 9p overlay virtio_blk; do
    add_module "$m" || cannot "the kernel in $KDIR lacks module $m"
  done
# The criu variant: the socket diag modules CRIU reads sockets through, iptables and nf_tables
# (probed at CRIU's start-up, as is veth; it locks the network of a container whose TCP
# connections it dumps with iptables rules: Debian's iptables is iptables-nft, hence nft_compat;
# a network namespace's dump reads its conntrack table over netlink: nf_conntrack_netlink).
if [[ " $variants " == *" criu"* ]]; then
  # crc32c_generic: libcrc32c (nf_tables needs it) has it only as a softdep, not in depends=.
  for m in crc32c_generic unix_diag inet_diag tcp_diag udp_diag raw_diag netlink_diag af_packet_diag \
    ip_tables iptable_filter ip6_tables ip6table_filter xt_mark nf_tables nft_compat veth tun \
    nf_conntrack nf_conntrack_netlink; do
    add_module "$m" || cannot "the kernel in $KDIR lacks module $m"
  done
fi
  build_initramfs || cannot "building the initramfs failed"
  log "kernel $VMLINUZ; modules: ${MOD_ORDER[*]}"
}

build_initramfs() {
  local d=$WORK/initramfs m
  rm -rf "$d" "$WORK/initramfs.gz"
  mkdir -p "$d"/{bin,dev,proc,sys,lower,upper,newroot,lib/modules}
  cp /bin/busybox "$d/bin/busybox"
  for m in "${MOD_ORDER[@]}"; do cp "${MOD_PATH[$m]}" "$d/lib/modules/$m.ko"; done
  printf '%s\n' "${MOD_ORDER[@]}" >"$d/modules.order"
  cp "$here/initramfs-init.sh" "$d/init"
  chmod 755 "$d/init"
  (cd "$d" && find . | /bin/busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$WORK/initramfs.gz"
}

# --- what the guest tests use, prepared here (the guest sees the host tree read-only) ---------
"$repo/rootfs-tools/make-busybox-bundle.sh" "$WORK/bundle" >/dev/null 2>&1 ||
  cannot "rootfs-tools/make-busybox-bundle.sh failed"
# The criu variant's helpers: criu-peer (static: it runs in the busybox containers) and recvtty.
if [[ " $variants " == *" criu"* ]]; then
  mkdir -p "$WORK/bin"
  cc -static -O2 -o "$WORK/bin/criu-peer" "$here/criu-peer.c" && cc -O2 -o "$WORK/bin/recvtty" "$repo/tests/helpers/recvtty.c" ||
    cannot "building tests/vm/criu-peer.c or tests/helpers/recvtty.c failed"
fi
# The systemd variant drives containerd's CRI too (tests/cri, SystemdCgroup = true): its images,
# made here; without tests/cri's packages that part is skipped in the guest.
if [[ " $variants " == *" systemd "* ]] && command -v containerd >/dev/null && command -v node >/dev/null &&
  [ -d "$repo/tests/cri/.work/node_modules/@grpc/grpc-js" ] && [ -x /usr/lib/cni/bridge ]; then
  (CODEMODE=$CODEMODE CM_REPO=$repo && . "$repo/tests/cri/cri.bash" && cri_images "$WORK/cri-work" &&
    mv "$WORK/cri-work/images" "$WORK/cri-images" && rm -rf "$WORK/cri-work") >/dev/null 2>&1 ||
    log "building the CRI images failed: the guest skips the CRI part"
fi
# A sparse 64 MiB scratch disk (the guest's /dev/vda): the blockIO throttle test writes raw to it.
truncate -s 64M "$WORK/disk.img" || cannot "creating the scratch disk $WORK/disk.img failed"

# The selinux variant's policy: MCS (-M), every class and permission it leaves out allowed (-U).
# Policy version 33 is what Debian 12's 6.1 kernel loads at most.
build_selinux_policy() {
  local d=$WORK/selinux
  command -v checkpolicy >/dev/null || { echo "checkpolicy is not installed (apt-get install checkpolicy)"; return 1; }
  command -v getfattr >/dev/null || { echo "getfattr is not installed (apt-get install attr)"; return 1; }
  mkdir -p "$d" || return 1
  { seq 0 1023 | sed 's/^/category c/; s/$/;/'; echo 'level s0:c0.c1023;'; } >"$d/categories"
  sed -e "/^@MCS_CATEGORIES@\$/{r $d/categories" -e 'd;}' "$here/selinux/policy.conf" >"$d/policy.conf" &&
    checkpolicy -M -U allow -c 33 -o "$d/policy.33" "$d/policy.conf" >"$d/checkpolicy.log" 2>&1 ||
    { echo "checkpolicy failed: $(tail -n 3 "$d/checkpolicy.log")"; return 1; }
}

# --- boot -------------------------------------------------------------------------------------
TESTNO=0
tap() { TESTNO=$((TESTNO + 1)); echo "$1 $TESTNO - $2"; }

# A guest kernel that panics before the first result (seen once in CI: Debian's 6.12 under TCG,
# "Fatal exception in interrupt" from an hrtimer at 1.7 s, not reproduced in 5 boots since) is
# the emulator's or the kernel's failure, not a test's: boot once more, say so, and fail only if
# the second boot fails too. A panic after a result has been printed is never retried.
boot() {
  local tries=0
  while :; do
    tries=$((tries + 1))
    BOOT_RETRY=0
    boot_once "$1" "$tries"
    [ "$BOOT_RETRY" -eq 1 ] || return 0
    log "vm $1: the guest kernel panicked before its first result; booting it again (serial log head below)"
    grep -m 1 -B 2 -A 25 -E 'BUG:|Oops|general protection|Kernel panic' "$WORK/serial-$1.log" | sed 's/^/#   /'
  done
}

boot_once() {
  local variant=$1 try=$2 serial=$WORK/serial-$1.log init_arg="" start end rc line done_seen=0 got=0
  case $variant in
    systemd)
      [ -x /lib/systemd/systemd ] || { tap "ok" "vm systemd: boot # skip /lib/systemd/systemd is not installed"; return; }
      init_arg="cmvm.init=/lib/systemd/systemd systemd.unit=cmvm.target systemd.unified_cgroup_hierarchy=1 systemd.show_status=false systemd.log_level=warning"
      ;;
    selinux)
      local why
      why=$(build_selinux_policy) || { tap "ok" "vm selinux: boot # skip $why"; return; }
      # SELinux instead of Debian's default AppArmor (only one of them can be the major LSM).
      init_arg="security=selinux selinux=1"
      ;;
  esac
  : >"$serial"
  start=$(date +%s.%N)
  # TCG only: this machine has no working KVM. -nodefaults: no VGA/NIC to probe, faster boot.
  timeout --kill-after=10 "$TIMEOUT" qemu-system-x86_64 -nodefaults -no-reboot -accel tcg,thread=multi \
    -smp 2 -m 1536 -display none -monitor none -serial "file:$serial" \
    -kernel "$VMLINUZ" -initrd "$WORK/initramfs.gz" \
    -drive "file=$WORK/disk.img,if=virtio,format=raw,cache=none" \
    -virtfs "local,path=/,mount_tag=hostroot,security_model=passthrough,readonly=on,multidevs=remap" \
    -append "console=ttyS0 loglevel=1 panic=-1 mitigations=off nokaslr no_timer_check cmvm.repo=$repo cmvm.work=$WORK cmvm.variant=$variant cmvm.codemode=$CODEMODE cmvm.trace=${CM_VM_TRACE:-0} cmvm.only=${CM_VM_ONLY:-} $init_arg" \
    </dev/null >"$WORK/qemu-$variant.out" 2>&1 &
  QEMU_PID=$!
  # Follow the serial log while the VM runs: TAP lines as they come.
  while IFS= read -r line; do
    line=${line%$'\r'}
    case $line in
      "CMVM: ok "* | "CMVM: not ok "*)
        line=${line#CMVM: }
        got=$((got + 1))
        local verdict=ok
        [[ $line == "not ok "* ]] && verdict="not ok"
        line=${line#"$verdict "}
        # "N - desc" (ours) or "N desc" (bats): drop the guest's numbering.
        line=${line#"${line%%[!0-9]*}"}
        line=${line# }
        line=${line#- }
        tap "$verdict" "vm $variant: $line"
        ;;
      "CMVM: #"*) echo "${line#CMVM: }" ;;
      "CMVM: done") done_seen=1 ;;
    esac
  done < <(tail -n +1 -F --pid="$QEMU_PID" "$serial" 2>/dev/null)
  wait "$QEMU_PID"
  rc=$?
  QEMU_PID=
  end=$(date +%s.%N)
  log "vm $variant: qemu exited $rc after $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s"
  if [ "$done_seen" -ne 1 ] && [ "$got" -eq 0 ] && [ "$try" -eq 1 ] && grep -q 'Kernel panic' "$serial"; then
    BOOT_RETRY=1
    return
  fi
  if [ "$done_seen" -ne 1 ] || [ "$got" -eq 0 ]; then
    tap "not ok" "vm $variant: the guest did not finish (qemu status $rc, $got results); serial log tail:"
    tail -n 40 "$serial" | sed 's/^/#   /'
    cat "$WORK/qemu-$variant.out" | sed 's/^/#   qemu: /'
  fi
}

KPKG_NOW=none
for v in $variants; do
  pkg=$(kernel_package "$v")
  [ "$pkg" = "$KPKG_NOW" ] || { prepare_kernel "$pkg"; KPKG_NOW=$pkg; }
  boot "$v"
done
echo "1..$TESTNO"
