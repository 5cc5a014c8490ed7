/* With a read-only root, codemode-run passes the server's stdout and stderr through byte for
 * byte, reading them on the way: when the server reports a write refused with EROFS ("EROFS:
 * read-only file system, open '/app/x'" from node, in a log line or inside an MCP tool result on
 * stdout; "[Errno 30] Read-only file system: '/app/x'" from Python), the user learns on stderr at
 * once which path it was and the flag that gives the server a writable place, instead of a tool
 * call that fails for no visible reason. Once per directory. */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "supervisor/supervisor.h"

static const char *find_ci(const char *hay, size_t n, const char *needle) {
  size_t m = strlen(needle);
  for (size_t i = 0; i + m <= n; i++)
    if (strncasecmp(hay + i, needle, m) == 0)
      return hay + i;
  return NULL;
}

static void hint_for_line(struct erofs_hints *h, const char *line, size_t n) {
  const char *hit = find_ci(line, n, "read-only file system");
  if (hit == NULL)
    return;
  /* The path: the first quoted string after the phrase. */
  const char *end = line + n, *q = hit;
  while (q < end && *q != '\'' && *q != '"')
    q++;
  char path[1024] = "";
  if (q < end) {
    const char *e = memchr(q + 1, *q, (size_t)(end - q - 1));
    if (e && (size_t)(e - q - 1) < sizeof(path) && q[1] == '/')
      snprintf(path, sizeof(path), "%.*s", (int)(e - q - 1), q + 1);
  }
  char dir[1024];
  snprintf(dir, sizeof(dir), "%s", path[0] ? path : "/");
  char *d = path[0] ? dirname(dir) : dir;
  if (strcmp(d, h->last_dir) == 0)
    return;
  snprintf(h->last_dir, sizeof(h->last_dir), "%s", d);
  if (path[0])
    dprintf(h->to,
            "codemode-run: the server could not write %s: the container's root is read-only (profile %s).\n"
            "codemode-run:   keep its data: --state DIR:%s (a host directory, read-write); throw it away at exit: "
            "--ephemeral\n",
            path, h->profile, d);
  else
    dprintf(h->to,
            "codemode-run: the server hit a read-only file system (profile %s): give it a writable place with "
            "--state DIR:/PATH, or --ephemeral\n",
            h->profile);
}

void erofs_hints_feed(struct erofs_hints *h, struct erofs_scan *sc, const char *buf, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char c = buf[i];
    if (c == '\n' || sc->len == sizeof(sc->line)) {
      hint_for_line(h, sc->line, sc->len);
      sc->len = 0;
      if (c == '\n')
        continue;
    }
    sc->line[sc->len++] = c;
  }
}

bool erofs_hints_pump(struct erofs_hints *h, struct erofs_scan *sc, int from, int to) {
  char buf[8192];
  ssize_t n = read(from, buf, sizeof(buf));
  if (n <= 0) {
    if (n == 0 && sc->len)
      hint_for_line(h, sc->line, sc->len);
    return n < 0 && (errno == EINTR || errno == EAGAIN);
  }
  for (ssize_t off = 0; off < n;) {
    ssize_t w = write(to, buf + off, (size_t)(n - off));
    if (w < 0) {
      if (errno == EINTR)
        continue;
      break; /* the reader went away: keep draining so the server is never blocked */
    }
    off += w;
  }
  erofs_hints_feed(h, sc, buf, (size_t)n);
  return true;
}
