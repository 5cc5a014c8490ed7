/* Which mounts an mcp container may have: an allow-list of types and places, each with the options
 * the profile insists on. Everything else is refused with the mount's index, destination and type,
 * what is wrong and the fix.
 *
 * What a source *is* cannot be decided here, from a name: this layer refuses the obvious by name
 * (early, and in `policy explain`) and sets spec.hardening.check_mount_sources, so that the child
 * judges every bind source, overlay layer and the root on the very fd it mounts
 * (linux/mount_source.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include "policy/profile_rules.h"
#include "spec/json_util.h"
#include "util/cleanup.h"

/* ptys: the kernel shares kernel.pty.max (4096 here) between every devpts instance but the host's
 * reserve; one server may hold at most this many. */
#define MCP_DEVPTS_MAX 64

static bool has_option(const struct spec_mount *m, const char *prefix, bool whole) {
  size_t n = strlen(prefix);
  for (size_t i = 0; i < m->options.count; i++)
    if (whole ? strcmp(m->options.items[i], prefix) == 0 : strncmp(m->options.items[i], prefix, n) == 0)
      return true;
  return false;
}

static void option_append(struct spec_mount *m, const char *opt) {
  struct spec_strv *v = &m->options;
  char **grown = realloc(v->items, (v->count + 2) * sizeof(char *));
  if (grown == NULL)
    abort();
  v->items = grown;
  v->items[v->count++] = xstrdup(opt);
  v->items[v->count] = NULL;
}

/* Remove every option equal to one of `names` (or starting with it when it ends in '=').
 * Returns true when something was removed. */
static bool remove_options(struct spec_mount *m, const char *const *names) {
  bool changed = false;
  for (size_t i = 0; i < m->options.count;) {
    bool hit = false;
    for (const char *const *n = names; *n && !hit; n++) {
      size_t len = strlen(*n);
      hit = (*n)[len - 1] == '=' ? strncmp(m->options.items[i], *n, len) == 0
                                 : strcmp(m->options.items[i], *n) == 0;
    }
    if (hit) {
      free(m->options.items[i]);
      memmove(&m->options.items[i], &m->options.items[i + 1], (m->options.count - i) * sizeof(char *));
      m->options.count--;
      changed = true;
    } else {
      i++;
    }
  }
  return changed;
}

/* Add `opt` unless present; the option that contradicts it ("suid" for "nosuid") goes. */
static bool force_option(struct spec_mount *m, const char *opt, const char *opposite) {
  bool changed = remove_options(m, (const char *const[]){opposite, NULL});
  if (!has_option(m, opt, true)) {
    option_append(m, opt);
    changed = true;
  }
  return changed;
}

void policy_mount_force_option(struct spec_mount *m, const char *opt, const char *opposite) {
  if (force_option(m, opt, opposite))
    spec_mount_decode_options(m);
}

static bool is_bind(const struct spec_mount *m) {
  return (m->type && strcmp(m->type, "bind") == 0) || (m->flags & MS_BIND);
}

static int refuse(size_t i, const struct spec_mount *m, const char *type, struct cm_error **err,
                  const char *fmt, const char *detail) {
  char why[512];
  snprintf(why, sizeof(why), fmt, detail);
  return cm_error_set(err, EPERM, "mounts[%zu] (%s, type %s): %s", i, m->destination, type, why);
}

/* Each layer of an overlay is a host tree the container gets: checked like a bind source. */
static int check_overlay_layers(size_t i, const struct spec_mount *m, const char *bundle,
                                struct cm_error **err) {
  bool has_lower = false;
  for (size_t k = 0; k < m->options.count; k++) {
    const char *opt = m->options.items[k];
    const char *eq = strchr(opt, '=');
    if (eq == NULL)
      continue;
    int klen = (int)(eq - opt);
    char key[16] = "";
    if (klen < (int)sizeof(key))
      memcpy(key, opt, (size_t)klen), key[klen] = '\0';
    bool list = strcmp(key, "lowerdir") == 0;
    if (!list && strcmp(key, "lowerdir+") != 0 && strcmp(key, "datadir+") != 0 &&
        strcmp(key, "upperdir") != 0 && strcmp(key, "workdir") != 0)
      continue;
    has_lower |= list || strcmp(key, "lowerdir+") == 0;
    char layer[4096];
    for (const char *p = eq + 1; *p;) {
      size_t n = 0;
      for (; *p && !(list && *p == ':'); p++) {
        if (*p == '\\' && p[1])
          p++;
        if (n + 1 < sizeof(layer))
          layer[n++] = *p;
      }
      layer[n] = '\0';
      while (*p == ':')
        p++;
      if (layer[0] && policy_check_bind_source(layer, bundle, err) < 0)
        return cm_error_prefix(err, "mounts[%zu] (%s, type overlay): %s", i, m->destination, key);
    }
  }
  if (!has_lower)
    return refuse(i, m, "overlay", err, "%s", "an overlay without lowerdir (fix: name its layers)");
  return 0;
}

/* Tighten mounts[i] in place, or refuse it. *changed: its options were rewritten. */
static int tighten_one(struct spec_mount *m, size_t i, const char *bundle, const char *tmpfs_size, bool *changed,
                       struct policy_report *r, struct cm_error **err) {
  const char *type = m->type && *m->type ? m->type : "bind";
  if (is_bind(m)) {
    if ((m->cow_lower ? policy_check_cow_source(m->source, bundle, err) : policy_check_bind_source(m->source, bundle, err)) < 0)
      return cm_error_prefix(err, "mounts[%zu] (%s, type bind)", i, m->destination);
    /* A setuid binary or a device node on the host side must not work inside. */
    *changed |= force_option(m, "nosuid", "suid");
    *changed |= force_option(m, "nodev", "dev");
    /* A submount of the source could be anything (a procfs, another disk): not carried in. */
    if (m->flags & MS_REC) {
      remove_options(m, (const char *const[]){"rbind", NULL});
      option_append(m, "bind");
      *changed = true;
      policy_report_add(r, "mounts[%zu] %s: rbind -> bind (the source's submounts stay out)", i,
                        m->destination);
    }
    /* Shared or slave: a mount the host makes later under the source would appear inside. */
    if (m->propagation && (m->propagation & ~MS_REC) != MS_PRIVATE) {
      remove_options(m, (const char *const[]){"shared", "rshared", "slave", "rslave", "unbindable",
                                              "runbindable", "private", "rprivate", NULL});
      option_append(m, "rprivate");
      *changed = true;
    }
    return 0;
  }
  if (strcmp(type, "tmpfs") == 0) {
    /* Without a size (or with size=0, "unlimited") a tmpfs may take half the host's RAM, and its
     * pages can outlive the OOM kill. */
    bool unlimited = has_option(m, "size=0", true) || has_option(m, "nr_blocks=0", true);
    if (unlimited || (!has_option(m, "size=", false) && !has_option(m, "nr_blocks=", false))) {
      remove_options(m, (const char *const[]){"size=", "nr_blocks=", NULL});
      option_append(m, tmpfs_size);
      *changed = true;
    }
    return 0;
  }
  if (strcmp(type, "proc") == 0) {
    /* The masked and read-only paths cover /proc only: a second procfs would hand out
     * /proc/sys/kernel/core_pattern, a host-root code execution path. */
    if (strcmp(m->destination, "/proc") != 0)
      return refuse(i, m, type, err, "%s",
                    "a procfs is allowed only at /proc, where the masked and read-only paths cover it (fix: "
                    "remove this mount; the container has /proc)");
    return 0;
  }
  if (strcmp(type, "sysfs") == 0) {
    if (strcmp(m->destination, "/sys") != 0)
      return refuse(
          i, m, type, err, "%s",
          "a sysfs is allowed only at /sys, read-only (fix: remove this mount or mount it at /sys)");
    *changed |= force_option(m, "ro", "rw");
    return 0;
  }
  if (strcmp(type, "cgroup") == 0 || strcmp(type, "cgroup2") == 0) {
    /* cgroupfs writes act on the host's cgroups. */
    *changed |= force_option(m, "ro", "rw");
    return 0;
  }
  if (strcmp(type, "devpts") == 0) {
    if (strcmp(m->destination, "/dev/pts") != 0)
      return refuse(i, m, type, err, "%s", "a devpts is allowed only at /dev/pts (fix: mount it there)");
    /* Its own instance, with at most MCP_DEVPTS_MAX ptys of the machine's shared pool. */
    long max = -1;
    for (size_t k = 0; k < m->options.count; k++)
      if (strncmp(m->options.items[k], "max=", 4) == 0)
        max = strtol(m->options.items[k] + 4, NULL, 10);
    if (max < 0 || max > MCP_DEVPTS_MAX) {
      remove_options(m, (const char *const[]){"max=", NULL});
      char opt[32];
      snprintf(opt, sizeof(opt), "max=%d", MCP_DEVPTS_MAX);
      option_append(m, opt);
      *changed = true;
    }
    if (!has_option(m, "newinstance", true)) {
      option_append(m, "newinstance");
      *changed = true;
    }
    return 0;
  }
  if (strcmp(type, "mqueue") == 0)
    return 0; /* the container's own IPC namespace's */
  if (strcmp(type, "overlay") == 0) {
    if (check_overlay_layers(i, m, bundle, err) < 0)
      return -1;
    *changed |= force_option(m, "nosuid", "suid");
    *changed |= force_option(m, "nodev", "dev");
    return 0;
  }
  const char *what = m->source && strncmp(m->source, "/dev/", 5) == 0
                         ? "the filesystem of a block device, i.e. the disk itself"
                         : "a filesystem type a hardened container may not mount";
  return refuse(
      i, m, type, err,
      "%s: only bind, tmpfs, overlay, proc (at /proc), sysfs (at /sys, read-only), devpts (at /dev/pts), "
      "mqueue and cgroup/cgroup2 (read-only) mounts are allowed (fix: remove it, or bind a directory "
      "instead)",
      what);
}

int policy_tighten_mounts(struct spec *s, const char *bundle, const char *tmpfs_size, struct policy_report *r,
                          struct cm_error **err) {
  for (size_t i = 0; i < s->n_mounts; i++) {
    struct spec_mount *m = &s->mounts[i];
    bool changed = false;
    if (tighten_one(m, i, bundle, tmpfs_size, &changed, r, err) < 0)
      return -1;
    if (changed) {
      spec_mount_decode_options(m);
      cleanup_free char *joined = NULL;
      size_t len = 0;
      FILE *f = open_memstream(&joined, &len);
      for (size_t k = 0; k < m->options.count; k++)
        fprintf(f, "%s%s", k ? "," : "", m->options.items[k]);
      fclose(f);
      policy_report_add(r, "mounts[%zu] %s: options now %s", i, m->destination, joined);
    }
  }
  if (s->root_path && policy_check_bind_source(s->root_path, bundle, err) < 0)
    return cm_error_prefix(err, "root.path");
  /* The rest is decided in the child, on the fds it mounts. */
  s->hardening.check_mount_sources = true;
  return 0;
}
