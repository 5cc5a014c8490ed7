/* Copying a file's bytes from one fd to another in the kernel (sendfile), for the places that
 * copy a file they have already opened and checked: tmpfs copy-up, --host's small /etc files. */
#ifndef CM_UTIL_FILE_COPY_H
#define CM_UTIL_FILE_COPY_H

#include <sys/types.h>

/* Up to size bytes from in's offset to out's; fewer when in is shorter by now (it shrank since
 * it was measured). 0, or -1 with errno set. */
int file_copy_bytes(int out, int in, off_t size);

#endif
