/* util/log.c: runc's logrus line shapes (text and JSON, the time to the second, Go's quoting of
 * msg), and the routing of a container-side process's lines over the sync socket to the
 * runtime, which writes them (issue 28). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/log.h"
#include "util/sync.h"

/* A fresh log file; returns its path (static buffer). */
static const char *fresh_log(enum cm_log_format format, bool debug) {
  static char path[64];
  snprintf(path, sizeof(path), "/tmp/cm-test-log.%d", (int)getpid());
  unlink(path);
  assert_int_equal(cm_log_init(path, format, debug), 0);
  return path;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  static char buf[8192];
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  return buf;
}

static void assert_matches(const char *text, const char *pattern) {
  regex_t re;
  assert_int_equal(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB), 0);
  int r = regexec(&re, text, 0, NULL, 0);
  regfree(&re);
  if (r != 0)
    fail_msg("\"%s\" does not match /%s/", text, pattern);
}

static void test_text_is_logrus_shaped(void **state) {
  (void)state;
  const char *path = fresh_log(CM_LOG_TEXT, true);
  cm_debug("mount %s on %s", "a \"b\" \\ c", "line\nbreak\ttab\x01");
  char *out = slurp(path);
  assert_matches(out, "^time=\"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z\" level=debug msg=\"");
  assert_non_null(strstr(out, "msg=\"mount a \\\"b\\\" \\\\ c on line\\nbreak\\ttab\\x01\"\n"));
  unlink(path);
}

static void test_json_has_level_msg_time(void **state) {
  (void)state;
  const char *path = fresh_log(CM_LOG_JSON, false);
  cm_debug("not written: --debug is off");
  cm_warn("a \"quoted\" word");
  char *out = slurp(path);
  assert_matches(out, "^\\{\"level\":\"warning\",\"msg\":\"a \\\\\"quoted\\\\\" word\",\"time\":\"[0-9]{4}-[0-9]{2}-"
                      "[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z\"\\}\n$");
  unlink(path);
}

static void test_child_lines_go_over_the_sync_socket(void **state) {
  (void)state;
  const char *path = fresh_log(CM_LOG_TEXT, true);
  int sv[2];
  assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  cm_log_route_to_sync(sv[0], "init");
  cm_debug("mount proc on /proc");
  assert_int_equal(sync_send(sv[0], SYNC_READY, 0, NULL, -1, NULL), 0);
  cm_log_route_to_sync(-1, NULL);
  /* Nothing written by the "child" itself. */
  assert_string_equal(slurp(path), "");
  /* The runtime's receive writes the line and hands over the next message. */
  struct sync_msg m;
  assert_int_equal(sync_recv(sv[1], &m, NULL, NULL), 0);
  assert_int_equal(m.type, SYNC_READY);
  char want[64];
  snprintf(want, sizeof(want), "level=debug msg=\"init[%d]: mount proc on /proc\"\n", (int)getpid());
  assert_non_null(strstr(slurp(path), want));
  /* Unrouted: debug lines are dropped from then on (the container's stdio is not ours). */
  cm_debug("dropped");
  assert_null(strstr(slurp(path), "dropped"));
  close(sv[0]);
  close(sv[1]);
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_text_is_logrus_shaped),
      cmocka_unit_test(test_json_has_level_msg_time),
      cmocka_unit_test(test_child_lines_go_over_the_sync_socket),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
