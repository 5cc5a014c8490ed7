#!/usr/bin/env python3
"""Write default.json, mcp.json and ci.json (Docker's seccomp profile format).

One source for both profiles, so they cannot drift apart:
  default.json    what Docker's default profile lets a container do: an allow list, the
                  capability-gated groups (includes/excludes on caps), the arch-specific calls,
                  clone without namespace flags, clone3 -> ENOSYS.
  mcp.json        strict, stacked on top of whatever filter the caller brings: the default
                  allow list minus the calls an MCP server never needs (MCP_DENIED), only the
                  native 64-bit ABI, socket families UNIX/INET/INET6/NETLINK_ROUTE, no
                  TIOCSTI/TIOCLINUX/TIOCSETD, no namespace flags on clone, mknod only for FIFOs,
                  no setuid/setgid mode bits (chmod, open…), openat2 -> ENOSYS.
  ci.json         a CI job's, in place of the config's filter (which was resolved for capabilities
                  the ci profile changes): the default allow list, plus what Docker's default
                  allows a container holding CAP_SYS_ADMIN, CAP_SYS_CHROOT and CAP_SYS_PTRACE
                  (namespaces, mounts, pivot_root, chroot, ptrace: nested containers and
                  debuggers, all confined by the job's user namespace), minus CI_DENIED (kernel
                  attack surface and whole-machine operations no job needs, with the reason per
                  group), socket families other than AF_VSOCK and AF_ALG, and no
                  TIOCSTI/TIOCLINUX/TIOCSETD.
(mcp-audit.json, mcp.json with its denials turned into SCMP_ACT_LOG, is retired: its records went
to the kernel log and nothing turned them into a policy. --profile mcp-audit is now codemode-run's
learn mode on top of mcp.json, codemode-profiles(5).)
Run it after editing; the generated files are committed and built into codemode.
"""
import json
import os

EPERM, ENOTTY, ENOSYS = 1, 25, 38

# The calls every container may make (Docker's default allows them without conditions).
ALLOWED = """
accept accept4 access adjtimex alarm bind brk cachestat capget capset chdir chmod chown chown32
clock_adjtime clock_adjtime64 clock_getres clock_getres_time64 clock_gettime clock_gettime64
clock_nanosleep clock_nanosleep_time64 close close_range connect copy_file_range creat dup dup2
dup3 epoll_create epoll_create1 epoll_ctl epoll_ctl_old epoll_pwait epoll_pwait2 epoll_wait
epoll_wait_old eventfd eventfd2 execve execveat exit exit_group faccessat faccessat2 fadvise64
fadvise64_64 fallocate fanotify_mark fchdir fchmod fchmodat fchmodat2 fchown fchown32 fchownat
fcntl fcntl64 fdatasync fgetxattr flistxattr flock fork fremovexattr fsetxattr fstat fstat64
fstatat64 fstatfs fstatfs64 fsync ftruncate ftruncate64 futex futex_requeue futex_time64
futex_wait futex_waitv futex_wake futimesat getcpu getcwd getdents getdents64 getegid getegid32
geteuid geteuid32 getgid getgid32 getgroups getgroups32 getitimer getpeername getpgid getpgrp
getpid getppid getpriority getrandom getresgid getresgid32 getresuid getresuid32 getrlimit
get_robust_list getrusage getsid getsockname getsockopt get_thread_area gettid gettimeofday
getuid getuid32 getxattr inotify_add_watch inotify_init inotify_init1 inotify_rm_watch io_cancel
ioctl io_destroy io_getevents io_pgetevents io_pgetevents_time64 ioprio_get ioprio_set io_setup
io_submit ipc kill landlock_add_rule landlock_create_ruleset landlock_restrict_self lchown
lchown32 lgetxattr link linkat listen listxattr llistxattr _llseek lremovexattr lseek lsetxattr
lstat lstat64 madvise map_shadow_stack membarrier memfd_create memfd_secret mincore mkdir mkdirat
mknod mknodat mlock mlock2 mlockall mmap mmap2 mprotect mq_getsetattr mq_notify mq_open
mq_timedreceive mq_timedreceive_time64 mq_timedsend mq_timedsend_time64 mq_unlink mremap msgctl
msgget msgrcv msgsnd msync munlock munlockall munmap name_to_handle_at nanosleep newfstatat
_newselect open openat openat2 pause pidfd_open pidfd_send_signal pipe pipe2 pkey_alloc pkey_free
pkey_mprotect poll ppoll ppoll_time64 prctl pread64 preadv preadv2 prlimit64 process_mrelease
pselect6 pselect6_time64 pwrite64 pwritev pwritev2 read readahead readlink readlinkat readv recv
recvfrom recvmmsg recvmmsg_time64 recvmsg remap_file_pages removexattr rename renameat renameat2
restart_syscall rmdir rseq rt_sigaction rt_sigpending rt_sigprocmask rt_sigqueueinfo rt_sigreturn
rt_sigsuspend rt_sigtimedwait rt_sigtimedwait_time64 rt_tgsigqueueinfo sched_getaffinity
sched_getattr sched_getparam sched_get_priority_max sched_get_priority_min sched_getscheduler
sched_rr_get_interval sched_rr_get_interval_time64 sched_setaffinity sched_setattr sched_setparam
sched_setscheduler sched_yield seccomp select semctl semget semop semtimedop semtimedop_time64
send sendfile sendfile64 sendmmsg sendmsg sendto setfsgid setfsgid32 setfsuid setfsuid32 setgid
setgid32 setgroups setgroups32 setitimer setpgid setpriority setregid setregid32 setresgid
setresgid32 setresuid setresuid32 setreuid setreuid32 setrlimit set_robust_list setsid
setsockopt set_thread_area set_tid_address setuid setuid32 setxattr shmat shmctl shmdt shmget
shutdown sigaltstack signalfd signalfd4 sigprocmask sigreturn socket socketcall socketpair splice
stat stat64 statfs statfs64 statx symlink symlinkat sync sync_file_range syncfs sysinfo tee
tgkill time timer_create timer_delete timer_getoverrun timer_gettime timer_gettime64
timer_settime timer_settime64 timerfd_create timerfd_gettime timerfd_gettime64 timerfd_settime
timerfd_settime64 times tkill truncate truncate64 ugetrlimit umask uname unlink unlinkat utime
utimensat utimensat_time64 utimes vfork vmsplice wait4 waitid waitpid write writev
""".split()

# Allowed by the default profile only to a container holding the capability.
CAP_GATED = {
    "CAP_DAC_READ_SEARCH": "open_by_handle_at",
    "CAP_SYS_ADMIN": "bpf clone3 fanotify_init fsconfig fsmount fsopen fspick lookup_dcookie mount "
                     "mount_setattr move_mount open_tree perf_event_open quotactl quotactl_fd "
                     "setdomainname sethostname setns syslog umount umount2 unshare",
    "CAP_SYS_BOOT": "reboot",
    "CAP_SYS_CHROOT": "chroot",
    "CAP_SYS_MODULE": "delete_module init_module finit_module",
    "CAP_SYS_PACCT": "acct",
    "CAP_SYS_PTRACE": "kcmp pidfd_getfd process_madvise process_vm_readv process_vm_writev ptrace",
    "CAP_SYS_RAWIO": "iopl ioperm",
    "CAP_SYS_TIME": "settimeofday stime clock_settime clock_settime64",
    "CAP_SYS_TTY_CONFIG": "vhangup",
    "CAP_SYS_NICE": "get_mempolicy mbind set_mempolicy set_mempolicy_home_node",
    "CAP_SYSLOG": "syslog",
    "CAP_BPF": "bpf",
    "CAP_PERFMON": "perf_event_open",
}

# Namespace flags of clone(2): CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET.
CLONE_NS_FLAGS = [0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000]
CLONE_NS_MASK = sum(CLONE_NS_FLAGS)

# What mcp.json takes away from the default allow list.
# Each one is either a known escape primitive or kernel attack surface an MCP server never needs.
MCP_DENIED = {
    "ptrace process_vm_readv process_vm_writev kcmp pidfd_getfd process_madvise":
        "reading or steering other processes",
    "unshare setns mount umount umount2 fsopen fsconfig fsmount fspick move_mount open_tree "
    "mount_setattr pivot_root chroot":
        "new namespaces and mounts: the first step of most container escapes",
    "bpf perf_event_open": "kernel attack surface (eBPF verifier, perf)",
    "keyctl add_key request_key": "the kernel keyring is not namespaced",
    "io_uring_setup io_uring_enter io_uring_register": "io_uring: a frequent source of kernel bugs",
    "userfaultfd": "stalls kernel copies: a race-widening primitive for exploits",
    "execveat": "exec through an fd (fileless execution)",
    "memfd_secret": "memory the kernel cannot inspect",
    "modify_ldt": "16-bit segments: old kernel attack surface",
    "vmsplice": "page-cache write bugs (Dirty Pipe class)",
    "name_to_handle_at open_by_handle_at": "file handles bypass path checks (Shocker class)",
    "remap_file_pages": "deprecated, rarely used, bug-prone",
    "epoll_ctl_old epoll_wait_old": "the old epoll calls",
    "init_module finit_module delete_module kexec_load kexec_file_load reboot swapon swapoff acct "
    "iopl ioperm syslog lookup_dcookie quotactl quotactl_fd":
        "whole-machine operations",
}

# What ci.json adds to the default allow list: Docker's allowances for a container holding
# CAP_SYS_ADMIN, CAP_SYS_CHROOT and CAP_SYS_PTRACE, which the ci profile gives the job's root
# inside its user namespace. The kernel checks each against that namespace: a mount, unshare or
# setns acts only on namespaces the job owns, ptrace reaches only the job's own processes (its
# pid namespace), sethostname its own UTS namespace.
CI_ADDED = {
    "clone clone3 unshare setns": "nested user, mount, pid, net, ipc, uts and cgroup namespaces (nested containers)",
    "mount umount umount2 fsopen fsconfig fsmount fspick move_mount open_tree mount_setattr pivot_root chroot":
        "mounts in the job's own mount namespaces: overlays, tmpfs, procfs and sysfs of nested containers",
    "sethostname setdomainname": "the job's own UTS namespace",
    "ptrace process_vm_readv process_vm_writev kcmp pidfd_getfd process_madvise":
        "debuggers, strace and sanitizers (LeakSanitizer stops threads with ptrace): the job's own processes only",
}

# What ci.json refuses although Docker's default would allow it to a container with those
# capabilities (or never): no CI job needs it, and each is host-facing or kernel attack surface.
CI_DENIED = {
    "bpf": "the eBPF verifier is kernel attack surface; in a user namespace the kernel refuses the program "
           "types nested runtimes load anyway (cgroup device programs need CAP_BPF in the host's namespace), "
           "so crun and runc see the EPERM they already handle",
    "perf_event_open": "performance counters see the whole machine (and are frequent kernel bugs)",
    "io_uring_setup io_uring_enter io_uring_register": "io_uring: a frequent source of kernel bugs (build tools fall back to read/write)",
    "userfaultfd": "stalls kernel copies: a race-widening primitive for exploits",
    "kexec_load kexec_file_load reboot": "replace or stop the host's kernel",
    "init_module finit_module delete_module": "load code into the host's kernel",
    "swapon swapoff acct iopl ioperm syslog lookup_dcookie quotactl quotactl_fd fanotify_init":
        "whole-machine operations: host swap, process accounting, I/O ports, the kernel log, host quotas, "
        "filesystem-wide watches",
    "clock_settime clock_settime64 settimeofday stime clock_adjtime clock_adjtime64 adjtimex":
        "the clock is not namespaced: setting it would set the host's",
    "open_by_handle_at": "file handles bypass path checks (Shocker class)",
    "memfd_secret": "memory the kernel cannot inspect",
    "modify_ldt": "16-bit segments: old kernel attack surface",
    "remap_file_pages": "deprecated, rarely used, bug-prone",
    "epoll_ctl_old epoll_wait_old": "the old epoll calls",
}
# Answered ENOSYS, as by a kernel without keyrings: the keyring is not namespaced, and nested
# runtimes (crun, runc) then skip the session keyring they would make for each container.
CI_ENOSYS = {"keyctl add_key request_key": "the kernel keyring is not namespaced (ENOSYS: runtimes skip their session keyring)"}
# socket families refused in a ci job: neither is confined by the job's network namespace.
CI_SOCKET_DENIED = {40: "AF_VSOCK: talks to the hypervisor and other VMs, outside any network namespace",
                    38: "AF_ALG: the kernel crypto API's sockets, kernel attack surface no build needs"}

ARCH_MAP_ALL = [
    {"architecture": "SCMP_ARCH_X86_64", "subArchitectures": ["SCMP_ARCH_X86", "SCMP_ARCH_X32"]},
    {"architecture": "SCMP_ARCH_AARCH64", "subArchitectures": ["SCMP_ARCH_ARM"]},
    {"architecture": "SCMP_ARCH_PPC64LE", "subArchitectures": []},
    {"architecture": "SCMP_ARCH_S390X", "subArchitectures": ["SCMP_ARCH_S390"]},
    {"architecture": "SCMP_ARCH_RISCV64", "subArchitectures": []},
]
# mcp: every 32-bit ABI is refused (their syscalls hit the bad-architecture action: kill).
ARCH_MAP_64 = [{"architecture": a["architecture"], "subArchitectures": []} for a in ARCH_MAP_ALL]

# mcp: the calls that take a file mode, and which argument it is.
SETID_MODE_ARG = [("chmod", 1), ("fchmod", 1), ("fchmodat", 2), ("fchmodat2", 2), ("creat", 1), ("open", 2),
                  ("openat", 3)]

PERSONALITY_OK = [0x0, 0x8, 0x20000, 0x20008, 0xFFFFFFFF]  # PER_LINUX, *_32BIT, UNAME26, query


def rule(names, action="SCMP_ACT_ALLOW", comment=None, **extra):
    r = {"names": sorted(names.split()) if isinstance(names, str) else sorted(names), "action": action}
    r.update(extra)
    if comment:
        r["comment"] = comment
    return r


def arg(index, op, value, value_two=None):
    a = {"index": index, "value": value, "op": op}
    if value_two is not None:
        a["valueTwo"] = value_two
    return a


def default_profile():
    s = [rule(ALLOWED, comment="the default allow list")]
    for v in PERSONALITY_OK:
        s.append(rule("personality", args=[arg(0, "SCMP_CMP_EQ", v)], comment="personality: the harmless values"))
    s.append(rule("arch_prctl modify_ldt", includes={"arches": ["amd64", "x32", "386"]}))
    s.append(rule("sync_file_range2 swapcontext", includes={"arches": ["ppc64le"]}))
    s.append(rule("arm_fadvise64_64 arm_sync_file_range breakpoint cacheflush set_tls sync_file_range2",
                  includes={"arches": ["arm", "arm64"]}))
    s.append(rule("s390_pci_mmio_read s390_pci_mmio_write s390_runtime_instr", includes={"arches": ["s390", "s390x"]}))
    s.append(rule("riscv_flush_icache", includes={"arches": ["riscv64"]}))
    for cap, names in CAP_GATED.items():
        s.append(rule(names, includes={"caps": [cap]}, comment=f"needs {cap}"))
    s.append(rule("clone", args=[arg(0, "SCMP_CMP_MASKED_EQ", CLONE_NS_MASK, 0)],
                  excludes={"caps": ["CAP_SYS_ADMIN"], "arches": ["s390", "s390x"]},
                  comment="clone without namespace flags"))
    s.append(rule("clone", args=[arg(1, "SCMP_CMP_MASKED_EQ", CLONE_NS_MASK, 0)],
                  includes={"arches": ["s390", "s390x"]}, excludes={"caps": ["CAP_SYS_ADMIN"]},
                  comment="s390 passes clone's flags second"))
    s.append(rule("clone", includes={"caps": ["CAP_SYS_ADMIN"]}))
    s.append(rule("clone3", action="SCMP_ACT_ERRNO", errnoRet=ENOSYS, excludes={"caps": ["CAP_SYS_ADMIN"]},
                  comment="its flags are behind a pointer seccomp cannot read: ENOSYS makes libc fall back to clone"))
    s.append(rule("ptrace process_vm_readv process_vm_writev", includes={"minKernel": "4.8"},
                  comment="safe since 4.8, when seccomp checks are redone after a tracer's changes"))
    return {"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": EPERM, "archMap": ARCH_MAP_ALL, "syscalls": s}


def mcp_profile():
    denied = set()
    for names in MCP_DENIED:
        denied.update(names.split())
    conditional = {"ioctl", "socket", "socketpair", "mknod", "mknodat", "clone", "clone3", "personality"}
    conditional |= {name for name, _ in SETID_MODE_ARG} | {"openat2"}
    refuse = "SCMP_ACT_ERRNO"
    refuse_extra = {"errnoRet": EPERM}
    allowed = [n for n in ALLOWED if n not in denied and n not in conditional]
    s = [rule(allowed, comment="the default allow list minus what an MCP server never needs")]
    s.append(rule("arch_prctl", includes={"arches": ["amd64"]}))
    for v in PERSONALITY_OK:
        s.append(rule("personality", args=[arg(0, "SCMP_CMP_EQ", v)]))
    # clone: never with namespace flags; clone3's flags are unreadable, so ENOSYS (libc falls back).
    s.append(rule("clone", args=[arg(0, "SCMP_CMP_MASKED_EQ", CLONE_NS_MASK, 0)], comment="no namespace flags"))
    s.append(rule("clone3", action="SCMP_ACT_ERRNO", errnoRet=ENOSYS))
    # ioctl: the command is an unsigned int, but seccomp sees 64 bits: compare the low 32 bits
    # (a caller could set the high ones, the kernel drops them) and refuse high bits outright.
    # The refusals answer ENOTTY, not EPERM: libseccomp drops a rule whose action equals the
    # default (ERRNO(EPERM)), and the ALLOW rule below would then let these through too.
    tty_refuse_extra = {"errnoRet": ENOTTY}
    for req, name, why in ((0x5412, "TIOCSTI", "would inject keystrokes into the caller's terminal"),
                           (0x541C, "TIOCLINUX", "would inject keystrokes into the caller's terminal"),
                           (0x5423, "TIOCSETD", "would change the line discipline of the caller's terminal "
                                                "(line disciplines such as n_gsm are kernel attack surface)")):
        s.append(rule("ioctl", refuse, args=[arg(1, "SCMP_CMP_MASKED_EQ", 0xFFFFFFFF, req)],
                      comment=f"{name}: {why}", **tty_refuse_extra))
    s.append(rule("ioctl", args=[arg(1, "SCMP_CMP_MASKED_EQ", 0xFFFFFFFF00000000, 0)]))
    # socket families: UNIX, INET, INET6 and NETLINK_ROUTE only (no packet/raw-link, vsock, alg, …).
    for fam in (1, 2, 10):
        s.append(rule("socket", args=[arg(0, "SCMP_CMP_EQ", fam)]))
    s.append(rule("socket", args=[arg(0, "SCMP_CMP_EQ", 16), arg(2, "SCMP_CMP_EQ", 0)], comment="NETLINK_ROUTE"))
    s.append(rule("socketpair", args=[arg(0, "SCMP_CMP_EQ", 1)]))
    # mknod: FIFOs only (device nodes need CAP_MKNOD anyway; this keeps the surface closed).
    for name, idx in (("mknod", 1), ("mknodat", 2)):
        s.append(rule(name, args=[arg(idx, "SCMP_CMP_MASKED_EQ", 0o170000, 0o010000)], comment="S_IFIFO only"))
    # No setuid or setgid bit, ever: the container's root owns what it writes through an idmapped
    # mount as the host ids its mapping names (host root, for the profile's own maps), and a
    # setuid-root program planted in a host directory would be a way to host root. The mode
    # argument is checked where the calls take one; openat2's is in a struct seccomp cannot read,
    # so it answers ENOSYS (libc falls back to openat).
    for name, idx in SETID_MODE_ARG:
        s.append(rule(name, args=[arg(idx, "SCMP_CMP_MASKED_EQ", 0o6000, 0)],
                      comment="no setuid/setgid mode bits (files the container's root owns as host root's)"))
    s.append(rule("openat2", "SCMP_ACT_ERRNO", errnoRet=ENOSYS,
                  comment="its mode (a setuid bit) is out of the filter's sight"))
    for names, why in MCP_DENIED.items():
        s.append(rule(names, refuse, comment=why, **refuse_extra))
    return {"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": EPERM, "archMap": ARCH_MAP_64, "syscalls": s}


def tty_ioctl_rules():
    # As in mcp.json: the refusals answer ENOTTY (an EPERM rule would equal the default action
    # and libseccomp would drop it); the low 32 bits compared, high bits refused.
    s = []
    for req, name, why in ((0x5412, "TIOCSTI", "would inject keystrokes into the caller's terminal"),
                           (0x541C, "TIOCLINUX", "would inject keystrokes into the caller's terminal"),
                           (0x5423, "TIOCSETD", "would change the line discipline of the caller's terminal "
                                                "(line disciplines such as n_gsm are kernel attack surface)")):
        s.append(rule("ioctl", "SCMP_ACT_ERRNO", args=[arg(1, "SCMP_CMP_MASKED_EQ", 0xFFFFFFFF, req)],
                      comment=f"{name}: {why}", errnoRet=ENOTTY))
    s.append(rule("ioctl", args=[arg(1, "SCMP_CMP_MASKED_EQ", 0xFFFFFFFF00000000, 0)]))
    return s


def ci_profile():
    denied = set()
    for names in CI_DENIED:
        denied.update(names.split())
    conditional = {"ioctl", "socket", "personality"}
    added = set()
    for names in CI_ADDED:
        added.update(names.split())
    allowed = sorted((set(ALLOWED) | added) - denied - conditional)
    s = [rule(allowed, comment="the default allow list, with what CAP_SYS_ADMIN, CAP_SYS_CHROOT and CAP_SYS_PTRACE "
                               "allow in Docker's default, minus CI_DENIED")]
    s.append(rule("arch_prctl", includes={"arches": ["amd64", "x32", "386"]}))
    for v in PERSONALITY_OK:
        s.append(rule("personality", args=[arg(0, "SCMP_CMP_EQ", v)]))
    s += tty_ioctl_rules()
    # socket: every family but the two below (ranges, since one rule cannot test one argument twice).
    s.append(rule("socket", args=[arg(0, "SCMP_CMP_LT", 38)]))
    s.append(rule("socket", args=[arg(0, "SCMP_CMP_EQ", 39)]))
    s.append(rule("socket", args=[arg(0, "SCMP_CMP_GT", 40)], comment="; ".join(CI_SOCKET_DENIED.values())))
    for names, why in CI_DENIED.items():
        s.append(rule(names, "SCMP_ACT_ERRNO", comment=why, errnoRet=EPERM))
    for names, why in CI_ENOSYS.items():
        s.append(rule(names, "SCMP_ACT_ERRNO", comment=why, errnoRet=ENOSYS))
    return {"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": EPERM, "archMap": ARCH_MAP_ALL, "syscalls": s}


def write(name, profile):
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, name), "w") as f:
        json.dump(profile, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    write("default.json", default_profile())
    write("mcp.json", mcp_profile())
    write("ci.json", ci_profile())
