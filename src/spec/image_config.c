/* An OCI image config ("config": Entrypoint, Cmd, Env, WorkingDir, User) as the container's
 * process, the way Docker makes a container of an image: args = Entrypoint + Cmd (a command
 * line given by the user replaces Cmd; --entrypoint replaces Entrypoint and drops Cmd), the
 * image's Env over the default PATH/TERM, WorkingDir as cwd. User is returned as written: the
 * name lookup needs the rootfs' /etc/passwd (supervisor/run_image.c). */
#include <stdlib.h>
#include <string.h>

#include "spec/image_config.h"
#include "spec/json_util.h"
#include "util/cleanup.h"

void image_process_clear(struct image_process *ip) {
  spec_strv_free(&ip->entrypoint);
  spec_strv_free(&ip->cmd);
  spec_strv_free(&ip->env);
  free(ip->working_dir);
  free(ip->user);
  memset(ip, 0, sizeof(*ip));
}

int image_process_parse(const char *json, size_t len, struct image_process *out, struct cm_error **err) {
  memset(out, 0, sizeof(*out));
  yajl_val tree = json_parse(json, len, "image config", err);
  if (tree == NULL)
    return -1;
  struct jctx c;
  jctx_init(&c, "image config");
  yajl_val cfg = NULL;
  int rc = -1;
  if (jval_object(&c, tree, err) < 0 || jget_object(&c, tree, "config", &cfg, err) < 0)
    goto out;
  if (cfg) {
    size_t mark = jpush_key(&c, "config");
    if (jget_strv(&c, cfg, "Entrypoint", &out->entrypoint, err) < 0 || jget_strv(&c, cfg, "Cmd", &out->cmd, err) < 0 ||
        jget_strv(&c, cfg, "Env", &out->env, err) < 0 || jget_string(&c, cfg, "WorkingDir", &out->working_dir, err) < 0 ||
        jget_string(&c, cfg, "User", &out->user, err) < 0)
      goto out;
    jpop(&c, mark);
  }
  rc = 0;
out:
  yajl_tree_free(tree);
  if (rc < 0)
    image_process_clear(out);
  return rc;
}

int image_process_apply(const struct image_process *ip, struct spec_process *p, char *const *cmd, size_t n_cmd,
                        const char *entrypoint, struct cm_error **err) {
  struct spec_strv args = {0};
  if (entrypoint) {
    spec_strv_push(&args, entrypoint);
  } else {
    for (size_t i = 0; i < ip->entrypoint.count; i++)
      spec_strv_push(&args, ip->entrypoint.items[i]);
  }
  if (cmd) {
    for (size_t i = 0; i < n_cmd; i++)
      spec_strv_push(&args, cmd[i]);
  } else if (entrypoint == NULL) {
    for (size_t i = 0; i < ip->cmd.count; i++)
      spec_strv_push(&args, ip->cmd.items[i]);
  }
  if (args.count == 0) {
    spec_strv_free(&args);
    return cm_error_set(err, 0, "the image has no Entrypoint or Cmd: give the command after --");
  }
  spec_strv_free(&p->args);
  p->args = args;
  for (size_t i = 0; i < ip->env.count; i++)
    spec_env_set(&p->env, ip->env.items[i]);
  if (ip->working_dir && ip->working_dir[0] == '/') {
    free(p->cwd);
    p->cwd = xstrdup(ip->working_dir);
  }
  return 0;
}
