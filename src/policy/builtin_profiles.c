/* The JSON files of seccomp-profiles/, built into the binary (the Makefile makes this object
 * depend on them), so codemode needs no data files at run time. Embedded as build/json-strip
 * leaves them (no comments, no whitespace: the same rules, half the bytes to parse on every
 * mcp start); the files as written are installed under $(DATADIR)/seccomp for use with Docker
 * or `codemode-run --seccomp`. */
#include <stddef.h>
#include <string.h>

#include "policy/seccomp_profile.h"
#include "util/embed.h"

CM_EMBED_STRING(cm_profile_default, "build/seccomp-profiles/default.json");
CM_EMBED_STRING(cm_profile_mcp, "build/seccomp-profiles/mcp.json");
CM_EMBED_STRING(cm_profile_ci, "build/seccomp-profiles/ci.json");

extern const char cm_profile_default[], cm_profile_default_end[];
extern const char cm_profile_mcp[], cm_profile_mcp_end[];
extern const char cm_profile_ci[], cm_profile_ci_end[];

const char *seccomp_profile_builtin(const char *name, size_t *len) {
  static const struct {
    const char *name;
    const char *start, *end;
  } table[] = {
      {"default", cm_profile_default, cm_profile_default_end},
      {"mcp", cm_profile_mcp, cm_profile_mcp_end},
      {"ci", cm_profile_ci, cm_profile_ci_end},
  };
  for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
    if (strcmp(table[i].name, name) == 0) {
      *len = (size_t)(table[i].end - table[i].start) - 1; /* without the NUL */
      return table[i].start;
    }
  }
  return NULL;
}
