/* From the effective allowlist (policy/egress.h) to what create needs to start the broker
 * (runtime/egress.h): the rule lines, the ports, the audit log's fd, the placeholder secrets.
 * Shared by codemode-run and by `codemode create/run` (the Docker/containerd path). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spec/json_util.h"
#include "supervisor/egress_setup.h"
#include "util/audit_log.h"
#include "util/cleanup.h"

int egress_audit_open(const char *path, struct cm_error **err) {
  /* The path may come from the config's annotation: util/audit_log.h's checks (no symlink, no
   * device or fifo, never a file that is not already an audit log of ours). */
  return audit_log_open(path, err);
}

int egress_setup_build(const struct egress_policy *p, const struct egress_setup_options *o, struct egress_config *out,
                       struct cm_error **err) {
  memset(out, 0, sizeof(*out));
  out->audit_fd = -1;
  for (size_t i = 0; i < p->n; i++) {
    /* "allow-host x:443" → "--allow-host x:443": the broker re-reads the flag syntax. */
    cleanup_free char *line = NULL;
    if (asprintf(&line, "--%s", p->rules[i].text) < 0)
      abort();
    spec_strv_push(&out->rules, line);
  }
  out->n_tcp_ports = egress_tcp_ports(p, out->tcp_ports, EGRESS_MAX_LISTEN_PORTS);
  out->dns_upstream = o->dns_upstream;
  out->secrets = o->secrets;
  out->n_secrets = o->n_secrets;
  for (size_t i = 0; i < o->n_secrets; i++) {
    const char *h = o->secrets[i].host;
    char probe[300];
    snprintf(probe, sizeof(probe), "%s%s", strncmp(h, "*.", 2) == 0 ? "x" : "", strncmp(h, "*.", 2) == 0 ? h + 1 : h);
    /* A secret goes only where the allowlist already lets the container go. */
    if (!egress_check_host(p, probe, 443).allowed) {
      egress_setup_free(out);
      return cm_error_set(err, 0, "--secret-host %s=%s: the host is not allowed on port 443 (add --allow-host %s)",
                          o->secrets[i].name, h, h);
    }
  }
  if (o->audit_log) {
    out->audit_fd = egress_audit_open(o->audit_log, err);
    if (out->audit_fd < 0) {
      egress_setup_free(out);
      return -1;
    }
  }
  return 0;
}

void egress_setup_free(struct egress_config *c) {
  spec_strv_free(&c->rules);
  if (c->audit_fd >= 0)
    close(c->audit_fd);
  c->audit_fd = -1;
}
