/* The egress allowlist turned into create's egress_config (runtime/egress.h). */
#ifndef CM_SUPERVISOR_EGRESS_SETUP_H
#define CM_SUPERVISOR_EGRESS_SETUP_H

#include "policy/egress.h"
#include "runtime/egress.h"

struct egress_setup_options {
  const char *dns_upstream; /* NULL: the host's resolver */
  const char *audit_log;    /* NULL: none */
  const struct egress_secret *secrets; /* placeholder mode */
  size_t n_secrets;
};

/* Open an audit log for appending, refusing anything but a new file or one of our logs. */
int egress_audit_open(const char *path, struct cm_error **err);
int egress_setup_build(const struct egress_policy *p, const struct egress_setup_options *o, struct egress_config *out,
                       struct cm_error **err);
void egress_setup_free(struct egress_config *c);

#endif
