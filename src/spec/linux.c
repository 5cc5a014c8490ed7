/* The .linux object (resources and seccomp have their own files). */
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/personality.h>

#include "spec/json_util.h"
#include "util/cleanup.h"

static int parse_namespaces(struct jctx *c, yajl_val arr, struct spec_linux *l, struct cm_error **err) {
  for (size_t i = 0; i < arr->u.array.len; i++) {
    yajl_val v = arr->u.array.values[i];
    size_t mark = jpush_index(c, i);
    cleanup_free char *type = NULL;
    if (jval_object(c, v, err) < 0 || jrequire(c, v, "type", err) < 0 ||
        jget_string(c, v, "type", &type, err) < 0)
      return -1;
    int t = spec_ns_type_from_name(type);
    if (t < 0) {
      jpush_key(c, "type");
      return jerr(c, err, "unknown namespace type \"%s\"", type);
    }
    if (l->namespaces[t].present) {
      jpush_key(c, "type");
      return jerr(c, err, "duplicate namespace type \"%s\"", type);
    }
    l->namespaces[t].present = true;
    if (jget_string(c, v, "path", &l->namespaces[t].path, err) < 0)
      return -1;
    /* An empty path means "create one", as in the Go runtimes. */
    if (l->namespaces[t].path != NULL && l->namespaces[t].path[0] == '\0') {
      free(l->namespaces[t].path);
      l->namespaces[t].path = NULL;
    }
    if (l->namespaces[t].path != NULL && !path_is_absolute(l->namespaces[t].path)) {
      jpush_key(c, "path");
      return jerr(c, err, "must be an absolute path");
    }
    jpop(c, mark);
  }
  return 0;
}

static bool ranges_overlap(uint32_t a, uint32_t a_size, uint32_t b, uint32_t b_size) {
  uint64_t a_end = (uint64_t)a + a_size, b_end = (uint64_t)b + b_size;
  return a < b_end && b < a_end;
}

int spec_parse_id_mappings(struct jctx *c, yajl_val obj, const char *key, struct spec_id_mapping **out,
                           size_t *n, struct cm_error **err) {
  yajl_val arr;
  int r = jget_array(c, obj, key, &arr, err);
  if (r <= 0)
    return r;
  size_t count = arr->u.array.len;
  if (count == 0)
    return 0;
  size_t mark = jpush_key(c, key);
  *out = xcalloc(count, sizeof(**out));
  *n = count;
  for (size_t i = 0; i < count; i++) {
    yajl_val v = arr->u.array.values[i];
    struct spec_id_mapping *m = &(*out)[i];
    size_t m2 = jpush_index(c, i);
    if (jval_object(c, v, err) < 0 || jrequire(c, v, "containerID", err) < 0 ||
        jget_u32(c, v, "containerID", &m->container_id, err) < 0 || jrequire(c, v, "hostID", err) < 0 ||
        jget_u32(c, v, "hostID", &m->host_id, err) < 0 || jrequire(c, v, "size", err) < 0 ||
        jget_u32(c, v, "size", &m->size, err) < 0)
      return -1;
    if (m->size == 0) {
      jpush_key(c, "size");
      return jerr(c, err, "must be greater than 0");
    }
    /* Ranges past 2^32 would wrap around inside the kernel's id arithmetic. */
    if ((uint64_t)m->container_id + m->size > (uint64_t)UINT32_MAX + 1 ||
        (uint64_t)m->host_id + m->size > (uint64_t)UINT32_MAX + 1)
      return jerr(c, err, "range exceeds the 32-bit id space");
    /* Overlapping ranges are rejected by the kernel with a bare EINVAL; say which ones here. */
    for (size_t j = 0; j < i; j++) {
      const struct spec_id_mapping *o = &(*out)[j];
      if (ranges_overlap(m->container_id, m->size, o->container_id, o->size))
        return jerr(c, err, "container ID range overlaps %s[%zu]", key, j);
      if (ranges_overlap(m->host_id, m->size, o->host_id, o->size))
        return jerr(c, err, "host ID range overlaps %s[%zu]", key, j);
    }
    jpop(c, m2);
  }
  jpop(c, mark);
  return 1;
}

static int parse_time_offsets(struct jctx *c, yajl_val obj, struct spec_linux *l, struct cm_error **err) {
  for (size_t i = 0; i < obj->u.object.len; i++) {
    const char *clock = obj->u.object.keys[i];
    yajl_val v = obj->u.object.values[i];
    size_t mark = jpush_key(c, clock);
    struct spec_time_offset *off;
    if (strcmp(clock, "monotonic") == 0)
      off = &l->time_monotonic;
    else if (strcmp(clock, "boottime") == 0)
      off = &l->time_boottime;
    else
      return jerr(c, err, "unknown clock \"%s\" (expected \"monotonic\" or \"boottime\")", clock);
    if (YAJL_IS_NULL(v)) {
      jpop(c, mark);
      continue;
    }
    if (jval_object(c, v, err) < 0 || jget_i64(c, v, "secs", INT64_MIN, INT64_MAX, &off->secs, err) < 0 ||
        jget_u32(c, v, "nanosecs", &off->nanosecs, err) < 0)
      return -1;
    if (off->nanosecs >= 1000000000u) {
      jpush_key(c, "nanosecs");
      return jerr(c, err, "must be less than 1000000000");
    }
    off->present = true;
    jpop(c, mark);
  }
  return 0;
}

static int parse_device(struct jctx *c, yajl_val v, struct spec_device *d, struct cm_error **err) {
  if (jval_object(c, v, err) < 0 || jrequire(c, v, "path", err) < 0 ||
      jget_string(c, v, "path", &d->path, err) < 0)
    return -1;
  bool dotdot;
  char *clean = path_is_absolute(d->path) ? path_clean_absolute(d->path, &dotdot) : NULL;
  if (clean == NULL) {
    jpush_key(c, "path");
    /* ".." could place the node outside /dev once resolved; refuse rather than guess. */
    return jerr(c, err, path_is_absolute(d->path) ? "must not contain \"..\"" : "must be an absolute path");
  }
  free(d->path);
  d->path = clean;

  cleanup_free char *type = NULL;
  if (jrequire(c, v, "type", err) < 0 || jget_string(c, v, "type", &type, err) < 0)
    return -1;
  if (strlen(type) != 1 || strchr("cbup", type[0]) == NULL) {
    jpush_key(c, "type");
    return jerr(c, err, "unknown device type \"%s\" (expected c, b, u or p)", type);
  }
  d->type = type[0];
  int has_major = jget_i64(c, v, "major", 0, INT64_MAX, &d->major, err);
  if (has_major < 0)
    return -1;
  int has_minor = jget_i64(c, v, "minor", 0, INT64_MAX, &d->minor, err);
  if (has_minor < 0)
    return -1;
  if (d->type != 'p' && (has_major == 0 || has_minor == 0)) {
    jpush_key(c, has_major == 0 ? "major" : "minor");
    return jerr(c, err, "required for device type '%c'", d->type);
  }
  int r;
  if ((r = jget_u32(c, v, "fileMode", &d->file_mode, err)) < 0)
    return -1;
  d->has_file_mode = r == 1;
  if ((r = jget_u32(c, v, "uid", &d->uid, err)) < 0)
    return -1;
  d->has_uid = r == 1;
  if ((r = jget_u32(c, v, "gid", &d->gid, err)) < 0)
    return -1;
  d->has_gid = r == 1;
  return 0;
}

static int parse_path_list(struct jctx *c, yajl_val obj, const char *key, struct spec_strv *out,
                           struct cm_error **err) {
  if (jget_strv(c, obj, key, out, err) < 0)
    return -1;
  for (size_t i = 0; i < out->count; i++)
    if (!path_is_absolute(out->items[i])) {
      jpush_key(c, key);
      jpush_index(c, i);
      return jerr(c, err, "must be an absolute path");
    }
  return 0;
}

static int parse_personality(struct jctx *c, yajl_val v, struct spec_personality *p, struct cm_error **err) {
  cleanup_free char *domain = NULL;
  if (jrequire(c, v, "domain", err) < 0 || jget_string(c, v, "domain", &domain, err) < 0)
    return -1;
  if (strcmp(domain, "LINUX") == 0)
    p->domain = PER_LINUX;
  else if (strcmp(domain, "LINUX32") == 0)
    p->domain = PER_LINUX32;
  else {
    jpush_key(c, "domain");
    return jerr(c, err, "unknown personality domain \"%s\" (expected LINUX or LINUX32)", domain);
  }
  if (jget_strv(c, v, "flags", &p->flags, err) < 0)
    return -1;
  p->present = true;
  return 0;
}

static const struct spec_name_value propagation_names[] = {
    {"shared", MS_SHARED},
    {"rshared", MS_SHARED | MS_REC},
    {"slave", MS_SLAVE},
    {"rslave", MS_SLAVE | MS_REC},
    {"private", MS_PRIVATE},
    {"rprivate", MS_PRIVATE | MS_REC},
    {"unbindable", MS_UNBINDABLE},
    {"runbindable", MS_UNBINDABLE | MS_REC},
    {NULL, 0},
};

#define PARSE_SUB(key, getter, parser) JSON_PARSE_SUB(v, key, getter, parser)

int spec_parse_linux(struct jctx *c, yajl_val v, struct spec_linux *l, struct cm_error **err) {
  if (jval_object(c, v, err) < 0)
    return -1;
  PARSE_SUB("namespaces", jget_array, parse_namespaces(c, sub_, l, err));
  if (spec_parse_id_mappings(c, v, "uidMappings", &l->uid_mappings, &l->n_uid_mappings, err) < 0 ||
      spec_parse_id_mappings(c, v, "gidMappings", &l->gid_mappings, &l->n_gid_mappings, err) < 0)
    return -1;
  PARSE_SUB("timeOffsets", jget_object, parse_time_offsets(c, sub_, l, err));

  yajl_val devices;
  if (jget_array(c, v, "devices", &devices, err) < 0)
    return -1;
  if (devices != NULL && devices->u.array.len > 0) {
    size_t mark = jpush_key(c, "devices");
    l->devices = xcalloc(devices->u.array.len, sizeof(*l->devices));
    for (size_t i = 0; i < devices->u.array.len; i++) {
      size_t m2 = jpush_index(c, i);
      l->n_devices = i + 1;
      if (parse_device(c, devices->u.array.values[i], &l->devices[i], err) < 0)
        return -1;
      jpop(c, m2);
    }
    jpop(c, mark);
  }

  if (jget_string(c, v, "cgroupsPath", &l->cgroups_path, err) < 0)
    return -1;
  PARSE_SUB("resources", jget_object, spec_parse_resources(c, sub_, &l->resources, err));

  if (jget_string(c, v, "rootfsPropagation", &l->rootfs_propagation, err) < 0)
    return -1;
  if (l->rootfs_propagation != NULL && l->rootfs_propagation[0] != '\0') {
    const struct spec_name_value *nv = spec_name_lookup(propagation_names, l->rootfs_propagation);
    if (nv == NULL) {
      jpush_key(c, "rootfsPropagation");
      return jerr(c, err, "unknown propagation \"%s\" (expected shared, slave, private or unbindable)",
                  l->rootfs_propagation);
    }
    l->rootfs_propagation_flags = nv->value;
  }

  PARSE_SUB("seccomp", jget_object, spec_parse_seccomp(c, sub_, &l->seccomp, err));
  if (jget_kv(c, v, "sysctl", &l->sysctl, err) < 0 ||
      parse_path_list(c, v, "maskedPaths", &l->masked_paths, err) < 0 ||
      parse_path_list(c, v, "readonlyPaths", &l->readonly_paths, err) < 0 ||
      jget_string(c, v, "mountLabel", &l->mount_label, err) < 0)
    return -1;
  PARSE_SUB("personality", jget_object, parse_personality(c, sub_, &l->personality, err));
  return 0;
}

void spec_linux_clear(struct spec_linux *l) {
  for (int t = 0; t < SPEC_NS_COUNT; t++)
    free(l->namespaces[t].path);
  free(l->uid_mappings);
  free(l->gid_mappings);
  for (size_t i = 0; i < l->n_devices; i++)
    free(l->devices[i].path);
  free(l->devices);
  free(l->cgroups_path);
  spec_resources_free(&l->resources);
  free(l->rootfs_propagation);
  spec_seccomp_clear(&l->seccomp);
  spec_kv_list_free(&l->sysctl);
  spec_strv_free(&l->masked_paths);
  spec_strv_free(&l->readonly_paths);
  free(l->mount_label);
  spec_strv_free(&l->personality.flags);
  memset(l, 0, sizeof(*l));
}
