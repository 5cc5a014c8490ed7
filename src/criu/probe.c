/* Whether CRIU works here (src/criu/criu.h): `features` and `--version` report it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "criu/criu.h"
#include "criu/swrk.h"
#include "util/cleanup.h"

/* One request on its own session (swrk serves one unless asked to keep the socket open). */
static int one_request(const char *criu_path, CriuReqType type, int work_fd, CriuResp **resp, struct cm_error **err) {
  struct criu_swrk w;
  CriuOpts opts = CRIU_OPTS__INIT;
  CriuReq req = CRIU_REQ__INIT;
  req.type = type;
  int keep[1] = {work_fd};
  if (type == CRIU_REQ_TYPE__CHECK) {
    /* CHECK writes its log into the "images" dir: a private temp dir, removed after. */
    opts.images_dir_fd = work_fd;
    opts.log_file = "check.log";
    opts.has_log_level = true;
    opts.log_level = 2;
    req.opts = &opts;
  }
  if (criu_swrk_start(&w, criu_path, keep, work_fd >= 0 ? 1 : 0, err) < 0)
    return -1;
  int rc = criu_swrk_call(&w, &req, NULL, NULL, resp, err);
  criu_swrk_end(&w);
  return rc;
}

int criu_probe(const char *criu_path, char **version, struct cm_error **err) {
  *version = NULL;
  CriuResp *resp = NULL;
  if (one_request(criu_path, CRIU_REQ_TYPE__VERSION, -1, &resp, err) < 0)
    return cm_error_prefix(err, "criu version");
  if (resp->success && resp->version) {
    if (resp->version->has_sublevel)
      asprintf(version, "%d.%d.%d", resp->version->major_number, resp->version->minor_number, resp->version->sublevel);
    else
      asprintf(version, "%d.%d", resp->version->major_number, resp->version->minor_number);
  }
  criu_resp__free_unpacked(resp, NULL);
  resp = NULL;
  char tmpl[] = "/tmp/codemode-criu-check.XXXXXX";
  if (mkdtemp(tmpl) == NULL)
    return cm_error_set(err, errno, "criu check: mkdtemp");
  int dfd = open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int rc = -1;
  if (dfd < 0)
    cm_error_set(err, errno, "criu check: open %s", tmpl);
  else if (one_request(criu_path, CRIU_REQ_TYPE__CHECK, dfd, &resp, err) == 0) {
    if (resp->success)
      rc = 0;
    else {
      /* Quoted here: the log goes with the temp dir. */
      cleanup_free char *log = criu_log_errors(dfd, "check.log");
      cm_error_set(err, resp->has_cr_errno ? resp->cr_errno : 0, "criu check failed: CRIU says: %s",
                   log ? log : (resp->cr_errmsg ? resp->cr_errmsg : "(no reason given)"));
    }
  }
  if (resp)
    criu_resp__free_unpacked(resp, NULL);
  if (dfd >= 0) {
    unlinkat(dfd, "check.log", 0);
    close(dfd);
  }
  rmdir(tmpl);
  return rc;
}

int criu_lazy_pages_probe(const char *criu_path, const char **why, struct cm_error **err) {
  *why = NULL;
  struct criu_swrk w;
  CriuFeatures want = CRIU_FEATURES__INIT;
  want.has_lazy_pages = true;
  want.lazy_pages = true;
  CriuReq req = CRIU_REQ__INIT;
  req.type = CRIU_REQ_TYPE__FEATURE_CHECK;
  req.features = &want;
  CriuResp *resp = NULL;
  /* A feature check logs to criu's stderr (it takes no log file): ours would show CRIU's lines
   * unasked. criu gets /dev/null as its stderr; the caller words the outcome. */
  int saved = dup(2), null = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null >= 0)
    dup2(null, 2);
  int started = criu_swrk_start(&w, criu_path, NULL, 0, err);
  if (saved >= 0) {
    dup2(saved, 2);
    close(saved);
  }
  if (null >= 0)
    close(null);
  if (started < 0)
    return -1;
  int rc = criu_swrk_call(&w, &req, NULL, NULL, &resp, err);
  criu_swrk_end(&w);
  if (rc < 0)
    return cm_error_prefix(err, "criu feature check");
  /* CRIU answers true only when the kernel has userfaultfd and the non-cooperative events
   * (fork, remap, remove, unmap) a restored tree needs: its own kerndat probe. */
  bool yes = resp->success && resp->features && resp->features->has_lazy_pages && resp->features->lazy_pages;
  if (!resp->success)
    rc = cm_error_set(err, resp->has_cr_errno ? resp->cr_errno : 0, "criu feature check failed%s%s",
                      resp->cr_errmsg ? ": " : "", resp->cr_errmsg ? resp->cr_errmsg : "");
  else if (!yes)
    *why = "CRIU's feature check says this kernel lacks what lazy pages need (userfaultfd with the "
           "non-cooperative fork, remap, remove and unmap events; vm.unprivileged_userfaultfd does not "
           "matter to root)";
  criu_resp__free_unpacked(resp, NULL);
  return rc < 0 ? -1 : yes;
}

int criu_lazy_pages_usable(const char *criu_path, struct cm_error **err) {
  const char *why = NULL;
  int yes = criu_lazy_pages_probe(criu_path, &why, err);
  if (yes < 0) {
    /* CRIU's feature check says no more than that it failed: its CHECK quotes the reason (a
     * kernel this CRIU cannot work on at all). */
    char *version = NULL;
    struct cm_error *check = NULL;
    if (criu_probe(criu_path, &version, &check) < 0) {
      cm_error_free(*err);
      *err = check;
    } else
      cm_error_free(check);
    free(version);
    return cm_error_prefix(err, "--lazy-pages");
  }
  if (yes == 0)
    return cm_error_set(err, ENOTSUP, "--lazy-pages: %s; go without --lazy-pages", why);
  return 0;
}
