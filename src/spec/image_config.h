/* The process part of an OCI image config (spec/image_config.c). */
#ifndef CM_SPEC_IMAGE_CONFIG_H
#define CM_SPEC_IMAGE_CONFIG_H

#include "spec/spec.h"
#include "util/error.h"

struct image_process {
  struct spec_strv entrypoint, cmd, env;
  char *working_dir; /* NULL or "" when unset */
  char *user;        /* "", "name", "uid", "name:group", "uid:gid"; NULL when unset */
};
int image_process_parse(const char *json, size_t len, struct image_process *out, struct cm_error **err);
void image_process_clear(struct image_process *ip);
/* Make p the image's process: cmd (n_cmd args, NULL: the image's Cmd) and entrypoint (NULL: the
 * image's) as Docker combines them; Env over p's env; WorkingDir. */
int image_process_apply(const struct image_process *ip, struct spec_process *p, char *const *cmd, size_t n_cmd,
                        const char *entrypoint, struct cm_error **err);

#endif
