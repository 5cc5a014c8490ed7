/* process.terminal: a pty allocated inside the container's devpts. */
#ifndef CM_LINUX_CONSOLE_H
#define CM_LINUX_CONSOLE_H

#include "spec/spec.h"
#include "util/error.h"

/* Called in the container after pivot_root, after setsid(): open /dev/ptmx, unlock, set
 * consoleSize, make the slave the controlling terminal and stdin/stdout/stderr, bind it over
 * /dev/console if that exists. Returns the master fd (O_CLOEXEC) to hand to the runtime. */
int console_setup(const struct spec_process *p, struct cm_error **err);

#endif
