/* tests/cri: the pod sandbox's "pause" program, written for the test's own pause image (no
 * registry here). It holds the pod's namespaces open; as pid 1 of a shared pid namespace
 * (shareProcessNamespace) it reaps the pod's orphans; SIGTERM or SIGINT end it cleanly. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig) {
  (void)sig;
  _exit(0);
}

static void on_child(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0)
    ;
}

int main(void) {
  struct sigaction stop = {.sa_handler = on_stop}, child = {.sa_handler = on_child, .sa_flags = SA_NOCLDSTOP};
  if (sigaction(SIGTERM, &stop, NULL) < 0 || sigaction(SIGINT, &stop, NULL) < 0 ||
      sigaction(SIGCHLD, &child, NULL) < 0)
    return 1;
  for (;;)
    pause();
}
