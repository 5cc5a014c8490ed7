/* Names ↔ values shared across layers: namespace and hook names, annotation lookup. */
#include <sched.h>
#include <string.h>

#include "spec/json_util.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

static const struct {
  const char *name;      /* in config.json */
  const char *proc_name; /* in /proc/PID/ns */
  int clone_flag;
} ns_table[SPEC_NS_COUNT] = {
    [SPEC_NS_PID] = {"pid", "pid", CLONE_NEWPID},
    [SPEC_NS_NETWORK] = {"network", "net", CLONE_NEWNET},
    [SPEC_NS_MOUNT] = {"mount", "mnt", CLONE_NEWNS},
    [SPEC_NS_IPC] = {"ipc", "ipc", CLONE_NEWIPC},
    [SPEC_NS_UTS] = {"uts", "uts", CLONE_NEWUTS},
    [SPEC_NS_USER] = {"user", "user", CLONE_NEWUSER},
    [SPEC_NS_CGROUP] = {"cgroup", "cgroup", CLONE_NEWCGROUP},
    [SPEC_NS_TIME] = {"time", "time", CLONE_NEWTIME},
};

const char *spec_ns_name(enum spec_ns_type t) {
  return (unsigned)t < SPEC_NS_COUNT ? ns_table[t].name : NULL;
}

int spec_ns_clone_flag(enum spec_ns_type t) {
  return (unsigned)t < SPEC_NS_COUNT ? ns_table[t].clone_flag : 0;
}

const char *spec_ns_proc_name(enum spec_ns_type t) {
  return (unsigned)t < SPEC_NS_COUNT ? ns_table[t].proc_name : NULL;
}

int spec_ns_type_from_name(const char *name) {
  for (int t = 0; t < SPEC_NS_COUNT; t++)
    if (strcmp(ns_table[t].name, name) == 0)
      return t;
  return -1;
}

static const char *const hook_names[SPEC_HOOK_KIND_COUNT] = {
    [SPEC_HOOK_PRESTART] = "prestart",
    [SPEC_HOOK_CREATE_RUNTIME] = "createRuntime",
    [SPEC_HOOK_CREATE_CONTAINER] = "createContainer",
    [SPEC_HOOK_START_CONTAINER] = "startContainer",
    [SPEC_HOOK_POSTSTART] = "poststart",
    [SPEC_HOOK_POSTSTOP] = "poststop",
};

const char *spec_hook_kind_name(enum spec_hook_kind k) {
  return (unsigned)k < SPEC_HOOK_KIND_COUNT ? hook_names[k] : NULL;
}

const char *spec_kv_get(const struct spec_kv_list *l, const char *key) {
  if (l == NULL || key == NULL)
    return NULL;
  for (size_t i = 0; i < l->count; i++)
    if (strcmp(l->items[i].key, key) == 0)
      return l->items[i].value;
  return NULL;
}

const struct spec_name_value *spec_name_lookup(const struct spec_name_value *table, const char *name) {
  for (; table->name != NULL; table++)
    if (strcmp(table->name, name) == 0)
      return table;
  return NULL;
}
