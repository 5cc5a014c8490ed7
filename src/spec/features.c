/* The OCI features document (`codemode features`): every field of runtime-spec 1.2's features.md
 * that codemode implements, and only what it implements (issue 14). Absent on purpose:
 * linux.netDevices (spec 1.3). Reported false: intelRdt (linux.intelRdt is not applied). */
#include <ctype.h>
#include <errno.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "spec/json_gen.h"
#include "spec/landlock_config.h"
#include "spec/json_util.h"

static void gen_capabilities(yajl_gen g) {
  gen_str(g, "capabilities");
  yajl_gen_array_open(g);
  /* Every capability both libcap and the running kernel know, in number order. */
  for (cap_value_t cap = 0; cap < (cap_value_t)cap_max_bits() && cap < 64; cap++) {
    char *name = cap_to_name(cap);
    if (name == NULL)
      continue;
    if (strncmp(name, "cap_", 4) == 0) {
      for (char *p = name; *p; p++)
        *p = (char)toupper((unsigned char)*p);
      gen_str(g, name);
    }
    cap_free(name);
  }
  yajl_gen_array_close(g);
}

/* The kernel answers EFAULT for a supported flag with a NULL program and EINVAL otherwise;
 * nothing gets installed either way. */
static bool seccomp_flag_supported(unsigned long flag) {
  /* WAIT_KILLABLE_RECV is only valid together with NEW_LISTENER. */
  if (flag == SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)
    flag |= SECCOMP_FILTER_FLAG_NEW_LISTENER;
  long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flag, NULL);
  return r < 0 && errno == EFAULT;
}

static void gen_seccomp(yajl_gen g) {
  gen_str(g, "seccomp");
  yajl_gen_map_open(g);
  gen_kv_bool(g, "enabled", 1);
  gen_str(g, "actions");
  yajl_gen_array_open(g);
  for (const struct spec_name_value *a = spec_seccomp_action_names; a->name; a++)
    gen_str(g, a->name);
  yajl_gen_array_close(g);
  gen_str(g, "operators");
  yajl_gen_array_open(g);
  for (const struct spec_name_value *o = spec_seccomp_op_names; o->name; o++)
    gen_str(g, o->name);
  yajl_gen_array_close(g);
  gen_str(g, "archs");
  yajl_gen_array_open(g);
  /* Only the architectures this libseccomp can build filters for. */
  for (const char *const *a = spec_seccomp_arch_names; *a; a++) {
    char lower[64];
    size_t i;
    const char *suffix = *a + strlen("SCMP_ARCH_");
    for (i = 0; suffix[i] && i + 1 < sizeof(lower); i++)
      lower[i] = (char)tolower((unsigned char)suffix[i]);
    lower[i] = '\0';
    if (seccomp_arch_resolve_name(lower) != 0)
      gen_str(g, *a);
  }
  yajl_gen_array_close(g);
  gen_str(g, "knownFlags");
  yajl_gen_array_open(g);
  for (const struct spec_name_value *f = spec_seccomp_flag_names; f->name; f++)
    gen_str(g, f->name);
  yajl_gen_array_close(g);
  gen_str(g, "supportedFlags");
  yajl_gen_array_open(g);
  for (const struct spec_name_value *f = spec_seccomp_flag_names; f->name; f++)
    if (seccomp_flag_supported(f->value))
      gen_str(g, f->name);
  yajl_gen_array_close(g);
  yajl_gen_map_close(g);
}

static void gen_linux(yajl_gen g) {
  gen_str(g, "linux");
  yajl_gen_map_open(g);
  gen_str(g, "namespaces");
  yajl_gen_array_open(g);
  for (int t = 0; t < SPEC_NS_COUNT; t++)
    gen_str(g, spec_ns_name(t));
  yajl_gen_array_close(g);
  gen_capabilities(g);
  gen_str(g, "cgroup");
  yajl_gen_map_open(g);
  gen_kv_bool(g, "v1", 1);
  gen_kv_bool(g, "v2", 1);
  /* cgroup/systemd.c: transient scopes over the system bus (--systemd-cgroup). */
  gen_kv_bool(g, "systemd", 1);
  /* rootless: the user's manager over its private bus (runtime/rootless.h). */
  gen_kv_bool(g, "systemdUser", 1);
  /* linux.resources.rdma: rdma.max, v1 and v2 (cgroup/resources_v2.c). */
  gen_kv_bool(g, "rdma", 1);
  yajl_gen_map_close(g);
  gen_seccomp(g);
  gen_str(g, "apparmor");
  yajl_gen_map_open(g);
  gen_kv_bool(g, "enabled", 1);
  yajl_gen_map_close(g);
  gen_str(g, "selinux");
  yajl_gen_map_open(g);
  gen_kv_bool(g, "enabled", 1);
  yajl_gen_map_close(g);
  gen_str(g, "intelRdt");
  yajl_gen_map_open(g);
  gen_kv_bool(g, "enabled", 0);
  yajl_gen_map_close(g);
  /* Idmapped mounts: mounts[].uidMappings/gidMappings and idmap/ridmap (runtime/userns_setup.h). */
  gen_str(g, "mountExtensions");
  yajl_gen_map_open(g);
  gen_str(g, "idmap");
  yajl_gen_map_open(g);
  gen_kv_bool(g, "enabled", 1);
  yajl_gen_map_close(g);
  yajl_gen_map_close(g);
  yajl_gen_map_close(g);
}

char *spec_features_json(int landlock_abi) {
  return spec_features_json_with(landlock_abi, NULL);
}

char *spec_features_json_with(int landlock_abi, const struct spec_kv_list *extra) {
  yajl_gen g = gen_new_pretty("    ");
  yajl_gen_map_open(g);
  gen_kv_str(g, "ociVersionMin", "1.0.0");
  gen_kv_str(g, "ociVersionMax", SPEC_OCI_VERSION);
  gen_str(g, "hooks");
  yajl_gen_array_open(g);
  for (int k = 0; k < SPEC_HOOK_KIND_COUNT; k++)
    gen_str(g, spec_hook_kind_name(k));
  yajl_gen_array_close(g);
  gen_str(g, "mountOptions");
  gen_strv(g, spec_mount_option_names);
  gen_linux(g);
  /* Annotations of config.json that change what codemode does, as a prefix (the spec's trailing
   * "."): run.codemode.profile (policy/profile.h), run.codemode.landlock and .landlock.deny
   * (spec/landlock_config.h), and whatever run.codemode.* comes next. */
  gen_str(g, "potentiallyUnsafeConfigAnnotations");
  yajl_gen_array_open(g);
  gen_str(g, "run.codemode.");
  yajl_gen_array_close(g);

  gen_str(g, "annotations");
  yajl_gen_map_open(g);
  const struct scmp_version *v = seccomp_version();
  char version[64];
  snprintf(version, sizeof(version), "%u.%u.%u", v->major, v->minor, v->micro);
  gen_kv_str(g, "io.github.seccomp.libseccomp.version", version);
  gen_kv_str(g, "io.github.codemode.version", CODEMODE_VERSION);
  /* Landlock: the ABI this kernel enforces (0: none), the newest one codemode knows the rights
   * of, and the annotations that ask for it (codemode-profiles(5)). */
  char abi[16];
  snprintf(abi, sizeof(abi), "%d", landlock_abi);
  gen_kv_str(g, "run.codemode.landlock.abi", abi);
  snprintf(abi, sizeof(abi), "%d", SPEC_LANDLOCK_ABI_KNOWN);
  gen_kv_str(g, "run.codemode.landlock.abi.known", abi);
  gen_kv_str(g, "run.codemode.landlock.annotations", SPEC_LANDLOCK_ANNOTATION " (landlockconfig JSON), "
             SPEC_LANDLOCK_DENY_ANNOTATION " (JSON array of paths)");
  for (size_t i = 0; extra && i < extra->count; i++)
    gen_kv_str(g, extra->items[i].key, extra->items[i].value);
  yajl_gen_map_close(g);
  yajl_gen_map_close(g);
  return gen_finish(g);
}
