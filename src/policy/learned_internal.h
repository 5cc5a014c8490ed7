/* Internal to the learned policy's files (learned_policy.c, learned_policy_json.c,
 * learned_paths.c). */
#ifndef CM_POLICY_LEARNED_INTERNAL_H
#define CM_POLICY_LEARNED_INTERNAL_H

#include "policy/learned_policy.h"

bool learned_is_baseline(const char *name);
size_t learned_key_limit(const char *name);
void learned_seen_merge(struct learned_seen *into, const struct learned_seen *from);
/* learned_paths.c: files to their directories, directories to a common parent where sensible. */
void learned_paths_collapse(struct learned_policy *p);
/* "socket(arg0 == 0x10, …)"; malloc'd. */
char *learned_rule_describe(const struct learned_rule *r);
/* s as a JSON string literal, quotes included; malloc'd. */
char *learned_json_string(const char *s);

#endif
