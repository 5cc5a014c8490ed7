/* The config.json that `codemode spec [--rootless]` writes: the same shape as `runc spec`. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>

#include "spec/json_gen.h"
#include "spec/json_util.h"

static const char *const default_caps[] = {"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE", NULL};

const char *const spec_default_masked_paths[] = {
    "/proc/acpi",
    "/proc/asound",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/sys/firmware",
    "/proc/scsi",
    /* RAPL energy counters leak secrets through power side channels (CVE-2020-8694, PLATYPUS). */
    "/sys/devices/virtual/powercap",
    NULL,
};

const char *const spec_default_readonly_paths[] = {
    "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger", NULL,
};

static void gen_mount(yajl_gen g, const char *dest, const char *type, const char *source,
                      const char *const *options) {
  yajl_gen_map_open(g);
  gen_kv_str(g, "destination", dest);
  gen_kv_str(g, "type", type);
  gen_kv_str(g, "source", source);
  if (options != NULL) {
    gen_str(g, "options");
    gen_strv(g, options);
  }
  yajl_gen_map_close(g);
}

static void gen_id_mapping(yajl_gen g, const char *key, unsigned host_id) {
  gen_str(g, key);
  yajl_gen_array_open(g);
  yajl_gen_map_open(g);
  gen_kv_int(g, "containerID", 0);
  gen_kv_int(g, "hostID", host_id);
  gen_kv_int(g, "size", 1);
  yajl_gen_map_close(g);
  yajl_gen_array_close(g);
}

static void gen_process(yajl_gen g) {
  gen_str(g, "process");
  yajl_gen_map_open(g);
  gen_str(g, "terminal");
  yajl_gen_bool(g, 1);
  gen_str(g, "user");
  yajl_gen_map_open(g);
  gen_kv_int(g, "uid", 0);
  gen_kv_int(g, "gid", 0);
  yajl_gen_map_close(g);
  gen_str(g, "args");
  gen_strv(g, (const char *const[]){"sh", NULL});
  gen_str(g, "env");
  gen_strv(g, (const char *const[]){"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                                    "TERM=xterm", NULL});
  gen_kv_str(g, "cwd", "/");
  gen_str(g, "capabilities");
  yajl_gen_map_open(g);
  static const char *const sets[] = {"bounding", "effective", "permitted", "ambient", NULL};
  for (const char *const *set = sets; *set; set++) {
    gen_str(g, *set);
    gen_strv(g, default_caps);
  }
  yajl_gen_map_close(g);
  gen_str(g, "rlimits");
  yajl_gen_array_open(g);
  yajl_gen_map_open(g);
  gen_kv_str(g, "type", "RLIMIT_NOFILE");
  gen_kv_int(g, "hard", 1024);
  gen_kv_int(g, "soft", 1024);
  yajl_gen_map_close(g);
  yajl_gen_array_close(g);
  gen_str(g, "noNewPrivileges");
  yajl_gen_bool(g, 1);
  yajl_gen_map_close(g);
}

static void gen_mounts(yajl_gen g, bool rootless) {
  gen_str(g, "mounts");
  yajl_gen_array_open(g);
  gen_mount(g, "/proc", "proc", "proc", NULL);
  gen_mount(g, "/dev", "tmpfs", "tmpfs",
            (const char *const[]){"nosuid", "strictatime", "mode=755", "size=65536k", NULL});
  /* gid=5 (tty) does not exist in a user namespace that maps only the caller. */
  if (rootless)
    gen_mount(g, "/dev/pts", "devpts", "devpts",
              (const char *const[]){"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", NULL});
  else
    gen_mount(g, "/dev/pts", "devpts", "devpts",
              (const char *const[]){"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5",
                                    NULL});
  gen_mount(g, "/dev/shm", "tmpfs", "shm",
            (const char *const[]){"nosuid", "noexec", "nodev", "mode=1777", "size=65536k", NULL});
  gen_mount(g, "/dev/mqueue", "mqueue", "mqueue", (const char *const[]){"nosuid", "noexec", "nodev", NULL});
  /* Without its own network namespace a rootless container may not mount a fresh sysfs. */
  if (rootless)
    gen_mount(g, "/sys", "none", "/sys",
              (const char *const[]){"rbind", "nosuid", "noexec", "nodev", "ro", NULL});
  else
    gen_mount(g, "/sys", "sysfs", "sysfs", (const char *const[]){"nosuid", "noexec", "nodev", "ro", NULL});
  gen_mount(g, "/sys/fs/cgroup", "cgroup", "cgroup",
            (const char *const[]){"nosuid", "noexec", "nodev", "relatime", "ro", NULL});
  yajl_gen_array_close(g);
}

static void gen_linux(yajl_gen g, bool rootless) {
  gen_str(g, "linux");
  yajl_gen_map_open(g);
  if (rootless) {
    gen_id_mapping(g, "uidMappings", geteuid());
    gen_id_mapping(g, "gidMappings", getegid());
  } else {
    /* Deny every device by default; the runtime adds the standard ones (null, zero, tty…). */
    gen_str(g, "resources");
    yajl_gen_map_open(g);
    gen_str(g, "devices");
    yajl_gen_array_open(g);
    yajl_gen_map_open(g);
    gen_str(g, "allow");
    yajl_gen_bool(g, 0);
    gen_kv_str(g, "access", "rwm");
    yajl_gen_map_close(g);
    yajl_gen_array_close(g);
    yajl_gen_map_close(g);
  }
  gen_str(g, "namespaces");
  yajl_gen_array_open(g);
  const char *const *ns = rootless ? (const char *const[]){"pid", "ipc", "uts", "mount", "user", NULL}
                                   : (const char *const[]){"pid", "network", "ipc", "uts", "mount", NULL};
  for (; *ns; ns++) {
    yajl_gen_map_open(g);
    gen_kv_str(g, "type", *ns);
    yajl_gen_map_close(g);
  }
  yajl_gen_array_close(g);
  gen_str(g, "maskedPaths");
  gen_strv(g, spec_default_masked_paths);
  gen_str(g, "readonlyPaths");
  gen_strv(g, spec_default_readonly_paths);
  yajl_gen_map_close(g);
}

char *spec_default_json(bool rootless) {
  yajl_gen g = gen_new_pretty("\t");
  yajl_gen_map_open(g);
  gen_kv_str(g, "ociVersion", SPEC_OCI_VERSION);
  gen_process(g);
  gen_str(g, "root");
  yajl_gen_map_open(g);
  gen_kv_str(g, "path", "rootfs");
  gen_str(g, "readonly");
  yajl_gen_bool(g, 1);
  yajl_gen_map_close(g);
  gen_kv_str(g, "hostname", "codemode");
  gen_mounts(g, rootless);
  gen_linux(g, rootless);
  yajl_gen_map_close(g);
  return gen_finish(g);
}
