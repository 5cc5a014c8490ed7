/* linux.seccomp.listenerPath: see seccomp_listener.h. */
#include "runtime/seccomp_listener.h"

#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>

#include "util/cleanup.h"
#include "util/sync.h"

/* The OCI "container process state" goes to linux.seccomp.listenerPath with the listener fd. */
int seccomp_listener_send(const struct spec_seccomp *sc, const struct container_state *st, const char *status,
                          pid_t pid, int listener, struct cm_error **err) {
  cleanup_free char *state = state_oci_json(st, status);
  yajl_gen g = yajl_gen_alloc(NULL);
  yajl_gen_map_open(g);
  yajl_gen_string(g, (const unsigned char *)"ociVersion", 10);
  yajl_gen_string(g, (const unsigned char *)SPEC_OCI_VERSION, strlen(SPEC_OCI_VERSION));
  yajl_gen_string(g, (const unsigned char *)"fds", 3);
  yajl_gen_array_open(g);
  yajl_gen_string(g, (const unsigned char *)"seccompFd", 9);
  yajl_gen_array_close(g);
  yajl_gen_string(g, (const unsigned char *)"pid", 3);
  yajl_gen_integer(g, pid);
  yajl_gen_string(g, (const unsigned char *)"metadata", 8);
  const char *md = sc->listener_metadata ? sc->listener_metadata : "";
  yajl_gen_string(g, (const unsigned char *)md, strlen(md));
  yajl_gen_string(g, (const unsigned char *)"state", 5);
  /* The state document is already JSON: splice it in as a raw value. */
  yajl_gen_number(g, state, strlen(state));
  yajl_gen_map_close(g);
  const unsigned char *buf;
  size_t len;
  yajl_gen_get_buf(g, &buf, &len);
  cleanup_free char *json = strndup((const char *)buf, len);
  yajl_gen_free(g);
  if (unix_path_send_fd(sc->listener_path, listener, json, err) < 0)
    return cm_error_prefix(err, "config.json: .linux.seccomp.listenerPath");
  return 0;
}

