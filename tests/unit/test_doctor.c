/* runtime/doctor*.c (issue 29): each of codemode doctor's checks against fake /proc, /sys and
 * /etc trees, machines this one is not (an old kernel, userns off, AppArmor's restriction,
 * cgroup v1/hybrid/v2 with and without delegation, no seccomp notify, no subordinate ids,
 * Docker and containerd registrations). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs the four above first. */
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/doctor.h"

static char dir[64], proc[96], sys[96], etc[96];

static void put(const char *root, const char *rel, const char *text) {
  char path[512], cmd[600];
  snprintf(path, sizeof(path), "%s/%s", root, rel);
  snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
  assert_int_equal(system(cmd), 0);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static int setup(void **state) {
  snprintf(dir, sizeof(dir), "/tmp/cm-unit-doctor.XXXXXX");
  assert_non_null(mkdtemp(dir));
  snprintf(proc, sizeof(proc), "%s/proc", dir);
  snprintf(sys, sizeof(sys), "%s/sys", dir);
  snprintf(etc, sizeof(etc), "%s/etc", dir);
  mkdir(proc, 0755);
  mkdir(sys, 0755);
  mkdir(etc, 0755);
  return 0;
}
static int teardown(void **state) {
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  return system(cmd);
}

static struct doctor_env env(uid_t uid) {
  return (struct doctor_env){.proc = proc,
                             .sys = sys,
                             .etc = etc,
                             .uid = uid,
                             .user = "alice",
                             .landlock_abi = 0,
                             .overlay_userns = -1,
                             .path = "/nonexistent",
                             .criu_check = -1};
}

static void test_kernel(void **state) {
  struct doctor_env e = env(1000);
  struct doctor_check c;
  put(proc, "sys/kernel/osrelease", "6.18.0-1-amd64\n");
  doctor_kernel(&e, &c);
  assert_int_equal(c.status, DOCTOR_OK);
  assert_string_equal(c.detail, "6.18.0-1-amd64");
  put(proc, "sys/kernel/osrelease", "5.10.0-28-amd64\n");
  doctor_kernel(&e, &c);
  assert_int_equal(c.status, DOCTOR_WARN);
  assert_non_null(strstr(c.detail, "idmapped"));
  put(proc, "sys/kernel/osrelease", "4.19.0\n");
  doctor_kernel(&e, &c);
  assert_int_equal(c.status, DOCTOR_FAIL);
  assert_non_null(strstr(c.fix, "5.12"));
}

static void test_userns_and_apparmor(void **state) {
  struct doctor_env e = env(1000);
  struct doctor_check c;
  doctor_userns(&e, &c);
  assert_int_equal(c.status, DOCTOR_FAIL); /* no such file: no user namespaces */
  put(proc, "sys/user/max_user_namespaces", "0\n");
  doctor_userns(&e, &c);
  assert_int_equal(c.status, DOCTOR_FAIL);
  assert_non_null(strstr(c.fix, "user.max_user_namespaces"));
  put(proc, "sys/user/max_user_namespaces", "63000\n");
  put(proc, "sys/kernel/unprivileged_userns_clone", "0\n");
  doctor_userns(&e, &c);
  assert_int_equal(c.status, DOCTOR_FAIL);
  assert_non_null(strstr(c.fix, "unprivileged_userns_clone=1"));
  put(proc, "sys/kernel/unprivileged_userns_clone", "1\n");
  doctor_userns(&e, &c);
  assert_int_equal(c.status, DOCTOR_OK);

  /* Ubuntu 24.04: restricted, unconfined: fail with the fix; under codemode's profile: ok. */
  doctor_apparmor(&e, &c);
  assert_int_equal(c.status, DOCTOR_OK);
  put(proc, "sys/kernel/apparmor_restrict_unprivileged_userns", "1\n");
  put(proc, "self/attr/apparmor/current", "unconfined\n");
  doctor_apparmor(&e, &c);
  assert_int_equal(c.status, DOCTOR_FAIL);
  assert_non_null(strstr(c.fix, "make install-apparmor"));
  assert_non_null(strstr(c.detail, "not installed"));
  put(etc, "apparmor.d/codemode", "profile codemode {}\n");
  doctor_apparmor(&e, &c);
  assert_non_null(strstr(c.detail, "installed, not attached"));
  put(proc, "self/attr/apparmor/current", "codemode (unconfined)\n");
  doctor_apparmor(&e, &c);
  assert_int_equal(c.status, DOCTOR_OK);
}

static const char mi_v2[] = "25 1 0:22 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n";
static const char mi_hybrid[] = "25 1 0:22 / /sys/fs/cgroup ro - tmpfs tmpfs ro,mode=755\n"
                                "26 25 0:23 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
                                "27 25 0:24 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
static const char mi_v1[] = "25 1 0:22 / /sys/fs/cgroup ro - tmpfs tmpfs ro,mode=755\n"
                            "27 25 0:24 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";

static void test_cgroups(void **state) {
  struct doctor_env e = env(1000);
  struct doctor_check c;
  put(proc, "self/mountinfo", mi_hybrid);
  doctor_cgroup_mode(&e, &c);
  assert_int_equal(c.status, DOCTOR_WARN);
  assert_non_null(strstr(c.detail, "hybrid"));
  doctor_cgroup_delegation(&e, &c);
  assert_int_equal(c.status, DOCTOR_WARN);
  struct doctor_env r = env(0);
  doctor_cgroup_mode(&r, &c);
  assert_int_equal(c.status, DOCTOR_OK);
  doctor_cgroup_delegation(&r, &c);
  assert_int_equal(c.status, DOCTOR_OK);
  put(proc, "self/mountinfo", mi_v1);
  doctor_cgroup_mode(&e, &c);
  assert_non_null(strstr(c.detail, "cgroup v1"));
  /* v2: the parent of our cgroup ours (delegated) or not. */
  put(proc, "self/mountinfo", mi_v2);
  put(proc, "self/cgroup", "0::/user.slice/user-1000.slice/session-3.scope\n");
  doctor_cgroup_mode(&e, &c);
  assert_int_equal(c.status, DOCTOR_OK);
  doctor_cgroup_delegation(&e, &c);
  assert_int_equal(c.status, DOCTOR_WARN);
  assert_non_null(strstr(c.detail, "/user.slice/user-1000.slice is not this user's"));
  put(sys, "fs/cgroup/user.slice/user-1000.slice/cgroup.procs", "");
  put(sys, "fs/cgroup/user.slice/user-1000.slice/cgroup.subtree_control", "");
  doctor_cgroup_delegation(&e, &c);
  assert_int_equal(c.status, DOCTOR_OK); /* our own files: writable */
  assert_non_null(strstr(c.detail, "delegated"));
}

static void test_landlock_seccomp_overlay(void **state) {
  struct doctor_env e = env(1000);
  struct doctor_check c;
  doctor_landlock(&e, &c);
  assert_int_equal(c.status, DOCTOR_WARN);
  e.landlock_abi = 3;
  doctor_landlock(&e, &c);
  assert_int_equal(c.status, DOCTOR_OK);
  assert_non_null(strstr(c.detail, "no TCP port rules"));
  doctor_seccomp(&e, &c);
  assert_int_equal(c.status, DOCTOR_FAIL);
  put(proc, "self/status", "Name:\tx\nSeccomp:\t0\nSeccomp_filters:\t0\n");
  put(proc, "sys/kernel/seccomp/actions_avail", "kill_process kill_thread trap errno trace log allow\n");
  doctor_seccomp(&e, &c);
  assert_int_equal(c.status, DOCTOR_WARN);
  put(proc, "sys/kernel/seccomp/actions_avail",
      "kill_process kill_thread trap errno user_notif trace log allow\n");
  doctor_seccomp(&e, &c);
  assert_int_equal(c.status, DOCTOR_OK);
  put(proc, "filesystems", "nodev\tsysfs\nnodev\ttmpfs\n");
  doctor_overlay_userns(&e, &c);
  assert_int_equal(c.status, DOCTOR_WARN);
  assert_non_null(strstr(c.fix, "modprobe overlay"));
  put(proc, "filesystems", "nodev\tsysfs\nnodev\toverlay\n");
  put(proc, "sys/kernel/osrelease", "5.10.0\n");
  doctor_overlay_userns(&e, &c);
  assert_int_equal(c.status, DOCTOR_WARN);
  e.overlay_userns = 1;
  doctor_overlay_userns(&e, &c);
  assert_int_equal(c.status, DOCTOR_OK);
  e.overlay_userns = 0;
  doctor_overlay_userns(&e, &c);
  assert_int_equal(c.status, DOCTOR_WARN);
}

static void test_subid_criu(void **state) {
  struct doctor_env e = env(1000);
  struct doctor_check c;
  doctor_subid(&e, &c);
  assert_int_equal(c.status, DOCTOR_WARN);
  assert_non_null(strstr(c.fix, "usermod --add-subuids 100000-165535 --add-subgids 100000-165535 alice"));
  put(etc, "subuid", "alice:100000:65536\n");
  put(etc, "subgid", "alice:100000:65536\n");
  doctor_subid(&e, &c);
  assert_int_equal(c.status, DOCTOR_WARN); /* no newuidmap in this PATH */
  assert_non_null(strstr(c.fix, "uidmap"));
  char bin[128];
  snprintf(bin, sizeof(bin), "%s/bin", dir);
  put(bin, "newuidmap", "#!/bin/sh\n");
  put(bin, "newgidmap", "#!/bin/sh\n");
  put(bin, "criu", "#!/bin/sh\n");
  char cmd[256];
  snprintf(cmd, sizeof(cmd), "chmod +x %s/*", bin);
  assert_int_equal(system(cmd), 0);
  e.path = bin;
  doctor_subid(&e, &c);
  assert_int_equal(c.status, DOCTOR_OK);
  struct doctor_env r = env(0);
  doctor_subid(&r, &c);
  assert_int_equal(c.status, DOCTOR_OK);
  doctor_criu(&r, &c);
  assert_int_equal(c.status, DOCTOR_WARN); /* not in PATH */
  r.path = bin;
  r.criu_check = 0;
  r.criu_detail = "vdso: Unexpected rt vDSO area bounds";
  doctor_criu(&r, &c);
  assert_int_equal(c.status, DOCTOR_WARN);
  assert_non_null(strstr(c.detail, "vDSO"));
  r.criu_check = 1;
  doctor_criu(&r, &c);
  assert_int_equal(c.status, DOCTOR_OK);
}

static void test_docker_containerd(void **state) {
  struct doctor_env e = env(0);
  struct doctor_check c;
  char name[64];
  doctor_docker(&e, &c);
  assert_int_equal(c.status, DOCTOR_WARN);
  put(etc, "docker/daemon.json", "{\"runtimes\": {\"cm\": {\"path\": \"/usr/local/bin/codemode\"}}}");
  doctor_docker(&e, &c);
  assert_int_equal(c.status, DOCTOR_WARN);
  assert_non_null(strstr(c.detail, "without the mcp profile"));
  put(etc, "docker/daemon.json",
      "{\"runtimes\": {\"cm\": {\"path\": \"/usr/local/bin/codemode\"}, \"codemode-mcp\": {\"path\": "
      "\"/usr/local/bin/codemode\", \"runtimeArgs\": [\"--profile=mcp\"]}}}");
  doctor_docker(&e, &c);
  assert_int_equal(c.status, DOCTOR_OK);
  char path[256];
  snprintf(path, sizeof(path), "%s/docker/daemon.json", etc);
  assert_true(doctor_docker_mcp_runtime(path, name, sizeof(name)));
  assert_string_equal(name, "codemode-mcp");
  put(etc, "docker/daemon.json", "{\"runtimes\": {\"m\": {\"path\": \"/opt/codemode-mcp\"}}}");
  assert_true(doctor_docker_mcp_runtime(path, name, sizeof(name)));
  assert_string_equal(name, "m");
  put(etc, "docker/daemon.json", "not json");
  assert_false(doctor_docker_mcp_runtime(path, name, sizeof(name)));

  doctor_containerd(&e, &c);
  assert_int_equal(c.status, DOCTOR_WARN);
  put(etc, "containerd/config.toml", "# BinaryName = \"/usr/local/bin/codemode-mcp\"\n");
  doctor_containerd(&e, &c);
  assert_int_equal(c.status, DOCTOR_WARN); /* a comment */
  put(etc, "containerd/config.toml",
      "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.codemode.options]\n"
      "  BinaryName = \"/usr/local/bin/codemode-mcp\"\n");
  doctor_containerd(&e, &c);
  assert_int_equal(c.status, DOCTOR_OK);
}

/* All of them in one go: one line each, fails only where a check failed. */
static void test_run_all(void **state) {
  struct doctor_env e = env(1000);
  e.state_dir = dir;
  e.store_dir = "/nonexistent/store";
  struct doctor_check out[32];
  size_t n = doctor_run(&e, out, 32);
  assert_int_equal(n, 13);
  for (size_t i = 0; i < n; i++) {
    assert_non_null(out[i].check);
    assert_true(out[i].detail[0] != '\0');
    if (out[i].status != DOCTOR_OK && out[i].fix[0] == '\0')
      fail_msg("%s: %s without a fix", out[i].check, doctor_status_name(out[i].status));
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_kernel, setup, teardown),
      cmocka_unit_test_setup_teardown(test_userns_and_apparmor, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cgroups, setup, teardown),
      cmocka_unit_test_setup_teardown(test_landlock_seccomp_overlay, setup, teardown),
      cmocka_unit_test_setup_teardown(test_subid_criu, setup, teardown),
      cmocka_unit_test_setup_teardown(test_docker_containerd, setup, teardown),
      cmocka_unit_test_setup_teardown(test_run_all, setup, teardown),
  };
  return cmocka_run_group_tests_name("doctor", tests, NULL, NULL);
}
