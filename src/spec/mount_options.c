/* Mount options (as in fstab / mount(8)) → mount(2) flags, propagation and data. */
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include "spec/json_util.h"

enum option_kind {
  OPT_SET,         /* set flag */
  OPT_CLEAR,       /* explicitly clear flag */
  OPT_PROPAGATION, /* propagation change, applied with a separate mount(2) call */
  OPT_RRO,         /* recursive read-only via mount_setattr */
  OPT_IDMAP,       /* idmapped mount */
  OPT_TMPCOPYUP,   /* runc/crun extension: copy the covered directory into the tmpfs */
  OPT_IGNORE,      /* accepted and dropped */
};

static const struct mount_option {
  const char *name;
  enum option_kind kind;
  unsigned long flag;
} mount_options[] = {
    {"async", OPT_CLEAR, MS_SYNCHRONOUS},
    {"atime", OPT_CLEAR, MS_NOATIME},
    {"bind", OPT_SET, MS_BIND},
    {"defaults", OPT_IGNORE, 0},
    {"dev", OPT_CLEAR, MS_NODEV},
    {"diratime", OPT_CLEAR, MS_NODIRATIME},
    {"dirsync", OPT_SET, MS_DIRSYNC},
    {"exec", OPT_CLEAR, MS_NOEXEC},
    {"idmap", OPT_IDMAP, 0},
    {"lazytime", OPT_SET, MS_LAZYTIME},
    {"loud", OPT_CLEAR, MS_SILENT},
    {"mand", OPT_SET, MS_MANDLOCK},
    {"noatime", OPT_SET, MS_NOATIME},
    {"nodev", OPT_SET, MS_NODEV},
    {"nodiratime", OPT_SET, MS_NODIRATIME},
    {"noexec", OPT_SET, MS_NOEXEC},
    {"nomand", OPT_CLEAR, MS_MANDLOCK},
    {"norelatime", OPT_CLEAR, MS_RELATIME},
    {"nostrictatime", OPT_CLEAR, MS_STRICTATIME},
    {"nosuid", OPT_SET, MS_NOSUID},
    {"nosymfollow", OPT_SET, MS_NOSYMFOLLOW},
    {"private", OPT_PROPAGATION, MS_PRIVATE},
    {"rbind", OPT_SET, MS_BIND | MS_REC},
    {"relatime", OPT_SET, MS_RELATIME},
    {"remount", OPT_SET, MS_REMOUNT},
    {"ridmap", OPT_IDMAP, 1},
    {"ro", OPT_SET, MS_RDONLY},
    {"rprivate", OPT_PROPAGATION, MS_PRIVATE | MS_REC},
    {"rro", OPT_RRO, 0},
    {"rshared", OPT_PROPAGATION, MS_SHARED | MS_REC},
    {"rslave", OPT_PROPAGATION, MS_SLAVE | MS_REC},
    {"runbindable", OPT_PROPAGATION, MS_UNBINDABLE | MS_REC},
    {"rw", OPT_CLEAR, MS_RDONLY},
    {"shared", OPT_PROPAGATION, MS_SHARED},
    {"silent", OPT_SET, MS_SILENT},
    {"slave", OPT_PROPAGATION, MS_SLAVE},
    {"strictatime", OPT_SET, MS_STRICTATIME},
    {"suid", OPT_CLEAR, MS_NOSUID},
    {"sync", OPT_SET, MS_SYNCHRONOUS},
    /* runc's and crun's "copy the image's content up into the tmpfs" (linux/tmpfs_copyup.c);
     * meaningless for other types, where runc ignores it too. */
    {"tmpcopyup", OPT_TMPCOPYUP, 0},
    {"unbindable", OPT_PROPAGATION, MS_UNBINDABLE},
    {NULL, 0, 0},
};

/* What `features` advertises: the options we really apply (runc and containerd treat a listed
 * option as a promise). "rro" is applied by mount_setattr(AT_RECURSIVE) in linux/mounts.c,
 * "tmpcopyup" by linux/tmpfs_copyup.c, "idmap"/"ridmap" by mount_setattr(MOUNT_ATTR_IDMAP) in
 * runtime/userns_setup.c. */
const char *const spec_mount_option_names[] = {
    "async",         "atime",       "bind",        "defaults",   "dev",       "diratime",
    "dirsync",       "exec",        "idmap",       "lazytime",   "loud",      "mand",
    "noatime",       "nodev",       "nodiratime",  "noexec",     "nomand",    "norelatime",
    "nostrictatime", "nosuid",      "nosymfollow", "private",    "rbind",     "relatime",
    "remount",       "ridmap",      "ro",          "rprivate",   "rro",       "rshared",
    "rslave",        "runbindable", "rw",          "shared",     "silent",    "slave",
    "strictatime",   "suid",        "sync",        "tmpcopyup",  "unbindable", NULL,
};

static const struct mount_option *find_option(const char *name) {
  for (const struct mount_option *o = mount_options; o->name; o++)
    if (strcmp(o->name, name) == 0)
      return o;
  return NULL;
}

void spec_mount_decode_options(struct spec_mount *m) {
  m->flags = m->clear_flags = m->propagation = 0;
  m->recursive_readonly = m->idmap = m->idmap_recursive = m->tmpcopyup = false;
  free(m->data);
  m->data = NULL;

  size_t data_len = 0;
  for (size_t i = 0; i < m->options.count; i++) {
    const char *opt = m->options.items[i];
    if (opt[0] == '\0')
      continue;
    const struct mount_option *o = find_option(opt);
    if (o == NULL) {
      /* Filesystem-specific ("mode=755", "size=65536k", "newinstance"): mount(2) data. */
      size_t n = strlen(opt);
      char *grown = realloc(m->data, data_len + n + 2);
      if (grown == NULL)
        abort();
      m->data = grown;
      if (data_len > 0)
        m->data[data_len++] = ',';
      memcpy(m->data + data_len, opt, n + 1);
      data_len += n;
      continue;
    }
    /* Later options override earlier ones, as mount(8) does ("ro,rw" is rw). */
    switch (o->kind) {
    case OPT_SET:
      m->flags |= o->flag;
      m->clear_flags &= ~(o->flag & ~MS_REC);
      break;
    case OPT_CLEAR:
      m->flags &= ~o->flag;
      m->clear_flags |= o->flag;
      break;
    case OPT_PROPAGATION: m->propagation = o->flag; break;
    case OPT_RRO: m->recursive_readonly = true; break;
    case OPT_IDMAP:
      m->idmap = true;
      m->idmap_recursive = o->flag != 0;
      break;
    case OPT_TMPCOPYUP: m->tmpcopyup = true; break;
    case OPT_IGNORE: break;
    }
  }
}
