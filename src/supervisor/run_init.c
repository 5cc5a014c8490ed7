/* codemode-run's init (src/trampoline/init.c): pid 1 of the container forwards signals to the
 * server and reaps orphans, so Ctrl-C or a client that dies stops a node server at once (a
 * server that is pid 1 ignores SIGTERM: the kernel gives pid 1 no default signal actions). The
 * init reaches the container as fd 3, a sealed memfd (--preserve-fds 1), and the process becomes
 * ["/proc/self/fd/3", PROGRAM, ARGS…]: the container can run it, never change it. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "linux/sealed_memfd.h"
#include "spec/json_util.h"
#include "supervisor/supervisor.h"
#include "util/embed.h"

CM_EMBED_BYTES(cm_init_image, "build/codemode-init");
extern const char cm_init_image[], cm_init_image_end[];

#define INIT_FD 3

int run_init_prepare(struct spec *s, int *preserve_fds, struct cm_error **err) {
  int fd = sealed_memfd_create("codemode-init", err);
  if (fd < 0)
    return -1;
  size_t size = (size_t)(cm_init_image_end - cm_init_image);
  for (size_t done = 0; done < size;) {
    ssize_t n = write(fd, cm_init_image + done, size - done);
    if (n <= 0) {
      int e = n < 0 ? errno : EIO;
      close(fd);
      return cm_error_set(err, e, "write the container's init");
    }
    done += (size_t)n;
  }
  if (sealed_memfd_seal(fd, err) < 0)
    return cm_error_prefix(err, "the container's init");
  /* fd 3 exactly (supervisor_run_standalone kept it for us): the first fd --preserve-fds hands
   * to the container, without close-on-exec, or the exec trampoline's execve would close it
   * before the kernel opens /proc/self/fd/3. */
  if (fd != INIT_FD) {
    if (dup2(fd, INIT_FD) < 0) {
      int e = errno;
      close(fd);
      return cm_error_set(err, e, "the container's init: dup2");
    }
    close(fd);
  } else if (fcntl(fd, F_SETFD, 0) < 0) {
    return cm_error_set(err, errno, "the container's init: fcntl");
  }
  struct spec_strv args = {0};
  spec_strv_push(&args, "/proc/self/fd/3");
  for (size_t i = 0; i < s->process->args.count; i++)
    spec_strv_push(&args, s->process->args.items[i]);
  spec_strv_free(&s->process->args);
  s->process->args = args;
  *preserve_fds = 1;
  return 0;
}
