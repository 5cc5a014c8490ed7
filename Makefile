# codemode — an OCI container runtime in C.
#   make                  build ./build/codemode
#   make install PREFIX=/usr/local
#   make check            every suite this machine can run; ends with "N passed, N failed, N skipped"
#   make unit             cmocka unit tests only
#   make check-oracle     the integration and security suites against runc (CODEMODE=…/crun for crun)

PREFIX    ?= /usr/local
BINDIR    ?= $(PREFIX)/bin
MANDIR    ?= $(PREFIX)/share/man
DATADIR   ?= $(PREFIX)/share/codemode
LIBEXECDIR ?= $(PREFIX)/libexec/codemode
VERSION   := 0.1.0

CC        ?= cc
PKGS      := libseccomp libcap yajl libsystemd
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS))
# libsystemd: headers only; src/cgroup/systemd.c dlopens it when the systemd driver is used (a
# linked libsystemd and its five dependencies cost every command ~1.1 ms of start-up, issue 7).
PKG_LIBS   := $(shell pkg-config --libs $(filter-out libsystemd,$(PKGS)))
# STATIC_DEPS=1 (default): libseccomp, libcap and yajl come from their static archives when the
# -dev packages ship them (Debian's do). The runtime starts at least once per create/run/exec
# (twice with the sealed re-exec, src/linux/selfclone.h) and the loader spends ~0.1 ms per
# shared library each time; measured: 0.30 ms less CPU per start. STATIC_DEPS=0 links them all shared.
STATIC_DEPS ?= 1
static_archive = $(filter /%,$(shell $(CC) -print-file-name=$(1)))
ifeq ($(STATIC_DEPS),1)
DEP_LIBS   := $(or $(call static_archive,libseccomp.a),-lseccomp) $(or $(call static_archive,libcap.a),-lcap) \
              $(or $(call static_archive,libyajl_s.a),-lyajl)
else
DEP_LIBS   := $(PKG_LIBS)
endif
# STATIC=1 (default, when libc.a is there and no SANITIZE): codemode and codemode-run are linked
# fully statically, glibc included, as static PIE (still loaded at a random address). No loader,
# no shared libc mapped, a process of a few mappings to fork and to tear down at init's execve:
# `run` measured 1.1 ms faster, `--version` 0.45 ms (issue 7). The systemd driver still dlopens libsystemd (glibc's static dlopen needs the shared
# libraries of the glibc it was built with, which a package build has; the linker warns about it).
# A glibc security fix then needs a rebuild, as for any static binary. STATIC=0 links glibc shared.
STATIC ?= $(STATIC_DEPS)
ifeq ($(STATIC)$(SANITIZE)$(if $(call static_archive,libc.a),y,),1y)
BIN_LDFLAGS := -static-pie
endif

SANITIZE  ?=
comma     := ,
WERROR    ?= -Werror
CFLAGS    ?= -O2 -g
CFLAGS    += -std=gnu11 -Wall -Wextra $(WERROR) -Wno-unused-parameter -fno-strict-aliasing \
             -D_GNU_SOURCE -DCODEMODE_VERSION=\"$(VERSION)\" -DCODEMODE_DATADIR=\"$(DATADIR)\" -DCODEMODE_BINDIR=\"$(BINDIR)\" \
             -DCODEMODE_LIBEXECDIR=\"$(LIBEXECDIR)\" \
             -iquote src $(PKG_CFLAGS)
LDLIBS    += $(DEP_LIBS)
ifneq ($(SANITIZE),)
CFLAGS    += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer
LDFLAGS   += -fsanitize=$(SANITIZE)
endif

# A sanitizer build gets its own tree: objects do not depend on CFLAGS, so sharing build/ would
# mix instrumented and plain objects.
ifeq ($(SANITIZE),)
B := build
else
B := build/san-$(subst $(comma),-,$(SANITIZE))
endif
LIB_SRCS  := $(sort $(wildcard src/util/*.c src/spec/*.c src/policy/*.c src/linux/*.c src/cgroup/*.c src/runtime/*.c \
                          src/supervisor/*.c))
CLI_SRCS  := $(sort $(filter-out src/cli/run_standalone.c src/cli/image.c src/cli/criu_main.c,$(wildcard src/cli/*.c)))
LIB_OBJS  := $(LIB_SRCS:%.c=$(B)/%.o)
CLI_OBJS  := $(CLI_SRCS:%.c=$(B)/%.o)
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(B)/tests/%)

all: $(B)/codemode $(B)/codemode-run $(B)/codemode-image $(B)/codemode-broker $(B)/codemode-broker-tls.so \
     $(B)/codemode-mcp $(B)/codemode-criu $(B)/codemode-ci

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(B)/libcodemode.a: $(LIB_OBJS)
	@rm -f $@
	@echo "  AR      $@"
	@ar rcs $@ $^

$(B)/codemode: $(CLI_OBJS) $(B)/libcodemode.a
	$(CC) $(LDFLAGS) $(BIN_LDFLAGS) -o $@ $(CLI_OBJS) $(B)/libcodemode.a $(LDLIBS)

# codemode-mcp: a link to codemode; the name selects the mcp profile (src/cli/main.c), for
# engines that can only name a binary (containerd's BinaryName, a Kubernetes RuntimeClass).
$(B)/codemode-mcp: $(B)/codemode
	@ln -sfn codemode $@
# codemode-ci: the same for the ci profile (docker run --runtime=codemode-ci, a CI runner's engine).
$(B)/codemode-ci: $(B)/codemode
	@ln -sfn codemode $@

# codemode-run (issue 6): the standalone launcher, its flags (src/cli/run_standalone.c) on top of
# the library, whose src/supervisor/ part runs the container's life.
$(B)/codemode-run: $(B)/src/cli/run_standalone.o $(B)/libcodemode.a
	$(CC) $(LDFLAGS) $(BIN_LDFLAGS) -o $@ $< $(B)/libcodemode.a $(LDLIBS) -lm

# codemode-image (issue 17): images without Docker. Its own binary, linked shared with libcurl,
# libarchive and libcrypto, so that none of them is ever on the container start path (codemode
# and codemode-run stay static and exec it for pull/images/rmi and --image).
IMAGE_PKGS := libcurl libarchive libcrypto
IMAGE_SRCS := $(sort $(wildcard src/image/*.c))
IMAGE_OBJS := $(IMAGE_SRCS:%.c=$(B)/%.o) $(B)/src/cli/image.o
$(IMAGE_OBJS): CFLAGS += $(shell pkg-config --cflags $(IMAGE_PKGS))
$(B)/codemode-image: $(IMAGE_OBJS) $(B)/libcodemode.a
	$(CC) $(LDFLAGS) -o $@ $(IMAGE_OBJS) $(B)/libcodemode.a $(LDLIBS) $(shell pkg-config --libs $(IMAGE_PKGS))

# codemode-criu (issue 28): checkpoint and restore through CRIU's RPC (criu swrk, protobuf
# messages of src/criu/rpc.proto, compiled by protoc-c). Its own binary, linked with
# libprotobuf-c, exec'd by `codemode checkpoint|restore`: the container start path (codemode,
# static) never carries the protobuf runtime or the CRIU code.
CRIU_SRCS := $(sort $(filter-out %.pb-c.c,$(wildcard src/criu/*.c)))
CRIU_OBJS := $(CRIU_SRCS:%.c=$(B)/%.o) $(B)/gen/criu/rpc.pb-c.o $(B)/src/cli/criu_main.o $(B)/src/cli/report.o
$(B)/gen/criu/rpc.pb-c.c $(B)/gen/criu/rpc.pb-c.h: src/criu/rpc.proto
	@mkdir -p $(B)/gen/criu
	@echo "  PROTOC  $<"
	@protoc-c --c_out=$(B)/gen/criu --proto_path=src/criu $<
$(B)/gen/criu/rpc.pb-c.o: $(B)/gen/criu/rpc.pb-c.c
	@echo "  CC      $<"
	@$(CC) $(CFLAGS) -Wno-error -iquote $(B)/gen -MMD -MP -c $< -o $@
$(CRIU_SRCS:%.c=$(B)/%.o) $(B)/src/cli/criu_main.o: $(B)/gen/criu/rpc.pb-c.h
$(CRIU_SRCS:%.c=$(B)/%.o) $(B)/src/cli/criu_main.o: CFLAGS += -iquote $(B)/gen
$(B)/codemode-criu: $(CRIU_OBJS) $(B)/libcodemode.a
	$(CC) $(LDFLAGS) -o $@ $(CRIU_OBJS) $(B)/libcodemode.a $(LDLIBS) $(shell pkg-config --libs libprotobuf-c)

# codemode-broker (issue 16): the per-container egress broker, started by create only when an
# allowlist is active, never on the plain start path. A separate dynamic binary: it links what
# only it needs, c-ares (async DNS) and libmnl (netlink). The TLS interceptor (OpenSSL: the
# per-run CA, secrets substituted for a bound host) is codemode-broker-tls.so, loaded only by a
# broker that has a secret to substitute: libssl and libcrypto were most of every broker's
# loader time (measured, issue 16). It calls back into the broker for the symbols exported. Every
# plain-HTTP request it relays, and every request its TLS interceptor decides, is framed and
# checked by http1.c over nodejs' http-parser (libhttp-parser, issue 25): the .so calls the
# broker's own http1 (exported) rather than a second copy linked in, so both paths run the one
# object code.
BROKER_SRCS := $(sort $(filter-out %/intercept.c %/intercept_http.c,$(wildcard src/supervisor/broker/*.c)))
BROKER_OBJS := $(BROKER_SRCS:%.c=$(B)/%.o)
BROKER_LIBS := -lcares -lmnl -lhttp_parser -lpthread
# The broker binary itself, with STATIC_DEPS: c-ares and http-parser from their archives when
# their -dev packages ship them (libmnl's ships none): two shared objects fewer for the loader
# at every broker start (measured, issue 27: 275k -> 189k instructions from exec to exit, 74 ->
# 62 page faults). The TLS plugin keeps its own shared http-parser.
ifeq ($(STATIC_DEPS),1)
BROKER_BIN_LIBS := $(or $(call static_archive,libcares.a),-lcares) -lmnl \
                   $(or $(call static_archive,libhttp_parser.a),-lhttp_parser) -lpthread
else
BROKER_BIN_LIBS := $(BROKER_LIBS)
endif
BROKER_EXPORTS := -Wl,--export-dynamic-symbol=audit_write -Wl,--export-dynamic-symbol=now_mono \
                  -Wl,--export-dynamic-symbol=egress_host_matches -Wl,--export-dynamic-symbol=egress_check_host \
                  -Wl,--export-dynamic-symbol=broker_watch -Wl,--export-dynamic-symbol=broker_rewatch \
                  -Wl,--export-dynamic-symbol=broker_unwatch -Wl,--export-dynamic-symbol=http1_stream_init \
                  -Wl,--export-dynamic-symbol=http1_head -Wl,--export-dynamic-symbol=http1_body
$(B)/libbroker.a: $(filter-out %/main.o,$(BROKER_OBJS))
	@rm -f $@
	@echo "  AR      $@"
	@ar rcs $@ $^
$(B)/codemode-broker: $(B)/src/supervisor/broker/main.o $(B)/libbroker.a $(B)/libcodemode.a
	$(CC) $(LDFLAGS) $(BROKER_EXPORTS) -o $@ $^ $(LDLIBS) $(BROKER_BIN_LIBS)
$(B)/src/supervisor/broker/%.pic.o: src/supervisor/broker/%.c
	@mkdir -p $(dir $@)
	@echo "  CC      $< (PIC)"
	@$(CC) $(CFLAGS) -fPIC -MMD -MP -c $< -o $@
$(B)/codemode-broker-tls.so: $(B)/src/supervisor/broker/intercept.pic.o $(B)/src/supervisor/broker/intercept_http.pic.o
	$(CC) $(LDFLAGS) -shared -o $@ $^ -lssl -lcrypto -lhttp_parser

# The same objects linked against the shared glibc, for the valgrind suite: memcheck replaces
# malloc through the loader, which a static binary does not have. `make check` builds it.
$(B)/codemode-dynamic: $(CLI_OBJS) $(B)/libcodemode.a
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJS) $(B)/libcodemode.a $(LDLIBS)

# The exec trampoline (src/linux/exec_trampoline.h): freestanding, static, no loader; embedded
# into the library (.incbin) and never instrumented, whatever SANITIZE says.
TRAMPOLINE_CFLAGS := -Os -std=gnu11 -Wall -Wextra -Werror -ffreestanding -fno-builtin -fno-stack-protector \
                     -fno-asynchronous-unwind-tables -fno-unwind-tables -fno-pie
TRAMPOLINE_LDFLAGS := -nostdlib -static -no-pie -Wl,--build-id=none -Wl,-z,noexecstack -Wl,-z,norelro -Wl,-z,noseparate-code -s
build/codemode-exec-trampoline: src/trampoline/exec_trampoline.c src/trampoline/last_steps.h src/trampoline/last_steps_run.h
	@mkdir -p build
	@echo "  CC      $@"
	@$(CC) $(TRAMPOLINE_CFLAGS) $(TRAMPOLINE_LDFLAGS) -o $@ $<
$(B)/src/linux/exec_trampoline.o: build/codemode-exec-trampoline
# codemode-init (src/trampoline/init.c): pid 1 of a codemode-run container; freestanding, built
# and embedded like the trampoline.
build/codemode-init: src/trampoline/init.c
	@mkdir -p build
	@echo "  CC      $@"
	@$(CC) $(TRAMPOLINE_CFLAGS) $(TRAMPOLINE_LDFLAGS) -o $@ $<
$(B)/src/supervisor/run_init.o: build/codemode-init

# The seccomp profiles are built into the binary (.incbin), without their comments and
# whitespace (scripts/json-strip.c: half of mcp.json's bytes, which every mcp start parses);
# rebuild when one changes. Under build/ whatever $(B) is, like the trampoline.
build/json-strip: scripts/json-strip.c
	@mkdir -p build
	@echo "  CC      $@"
	@$(CC) -O2 $(PKG_CFLAGS) -o $@ $< $(shell pkg-config --libs yajl)
EMBEDDED_PROFILES := $(patsubst seccomp-profiles/%.json,build/seccomp-profiles/%.json,$(wildcard seccomp-profiles/*.json))
build/seccomp-profiles/%.json: seccomp-profiles/%.json build/json-strip
	@mkdir -p $(dir $@)
	@build/json-strip <$< >$@.tmp && mv $@.tmp $@
$(B)/src/policy/builtin_profiles.o: $(EMBEDDED_PROFILES)

$(B)/tests/test_broker_%: tests/unit/test_broker_%.c $(B)/libbroker.a $(B)/libcodemode.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -Itests/unit -o $@ $< $(B)/libbroker.a $(B)/libcodemode.a $(LDLIBS) $(BROKER_LIBS) -lcmocka

$(B)/tests/%: tests/unit/%.c $(B)/libcodemode.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -Itests/unit -o $@ $< $(B)/libcodemode.a $(LDLIBS) -lcmocka

unit-bins: $(UNIT_BINS)

unit: $(UNIT_BINS)
	tests/run-unit.sh $(UNIT_BINS)

# The test command of the README: installs what is missing first (apt-get; nothing when all is
# there), then builds in a second make, whose pkg-config flags see the fresh libraries.
check:
	@scripts/install-deps.sh all </dev/null
	@$(MAKE) --no-print-directory all unit-bins $(B)/codemode-dynamic
	CODEMODE=$(abspath $(B)/codemode) tests/run-all.sh $(UNIT_BINS)

# The oracle pass (issue 14): tests/integration and tests/security, unchanged, against runc (the
# default) or another runtime: CODEMODE=/usr/bin/crun make check-oracle. Fails on any difference
# tests/KNOWN_DIFFERENCES.md does not list (tests/oracle/run.sh); ORACLE_AUDIT=1 finds stale markers.
check-oracle:
	@scripts/install-deps.sh all </dev/null
	tests/oracle/run.sh $(if $(ORACLE_AUDIT),--audit)

# cgroup v2 with every controller and the systemd driver, in qemu (tests/vm/run.sh).
check-v2: all $(UNIT_BINS)
	CODEMODE=$(abspath $(B)/codemode) tests/vm/run.sh all

install: all
	install -D -m 0755 $(B)/codemode $(DESTDIR)$(BINDIR)/codemode
	install -D -m 0755 $(B)/codemode-run $(DESTDIR)$(BINDIR)/codemode-run
	install -D -m 0755 $(B)/codemode-image $(DESTDIR)$(BINDIR)/codemode-image
	install -D -m 0755 $(B)/codemode-criu $(DESTDIR)$(BINDIR)/codemode-criu
	install -D -m 0755 $(B)/codemode-broker $(DESTDIR)$(LIBEXECDIR)/codemode-broker
	install -D -m 0644 $(B)/codemode-broker-tls.so $(DESTDIR)$(LIBEXECDIR)/codemode-broker-tls.so
	ln -sfn codemode $(DESTDIR)$(BINDIR)/codemode-mcp
	ln -sfn codemode $(DESTDIR)$(BINDIR)/codemode-ci
	@for m in man/*.[0-9]; do [ -e "$$m" ] || continue; \
	  s=$${m##*.}; install -D -m 0644 $$m $(DESTDIR)$(MANDIR)/man$$s/$$(basename $$m); done
	@for p in seccomp-profiles/*.json; do [ -e "$$p" ] || continue; \
	  install -D -m 0644 $$p $(DESTDIR)$(DATADIR)/seccomp/$$(basename $$p); done
	@$(MAKE) --no-print-directory install-apparmor AUTO=1

# The AppArmor profile that lets codemode create user namespaces where AppArmor restricts them
# (contrib/apparmor/codemode.in). `make install` runs it with AUTO=1: only where the kernel
# mediates user namespaces and /etc/apparmor.d is writable, else a note. APPARMOR_DIR, default
# /etc/apparmor.d ($(DESTDIR) applies).
APPARMOR_DIR ?= /etc/apparmor.d
APPARMOR_USERNS := /sys/kernel/security/apparmor/features/namespaces/userns_create
install-apparmor:
	@if [ -n "$(AUTO)" ] && [ -z "$(DESTDIR)" ] && [ ! -e $(APPARMOR_USERNS) ]; then \
	  exit 0; \
	elif [ -n "$(AUTO)" ] && [ -z "$(DESTDIR)" ] && [ ! -w $(APPARMOR_DIR) ]; then \
	  echo "note: AppArmor restricts user namespaces here; as root, run: make install-apparmor PREFIX=$(PREFIX)"; \
	else \
	  mkdir -p $(DESTDIR)$(APPARMOR_DIR) && \
	  sed 's|@BINDIR@|$(BINDIR)|g' contrib/apparmor/codemode.in >$(DESTDIR)$(APPARMOR_DIR)/codemode && \
	  echo "installed $(DESTDIR)$(APPARMOR_DIR)/codemode" && \
	  if [ -z "$(DESTDIR)" ] && [ -e $(APPARMOR_USERNS) ] && command -v apparmor_parser >/dev/null; then \
	    apparmor_parser -r $(APPARMOR_DIR)/codemode && echo "loaded the codemode AppArmor profile"; \
	  fi; \
	fi

clean:
	rm -rf $(B)

format:
	clang-format -i $$(git ls-files 'src/*.c' 'src/*.h' 'tests/*.c')

# README's first command, as a target too: dependencies, build, a busybox container and its isolation.
quickstart: all
	scripts/quickstart.sh

deps:
	scripts/install-deps.sh all

.PHONY: install-apparmor all unit unit-bins check check-oracle check-v2 install clean format quickstart deps
-include $(LIB_OBJS:.o=.d) $(CLI_OBJS:.o=.d) $(IMAGE_OBJS:.o=.d) $(B)/src/cli/run_standalone.d
# The broker's objects too (a changed broker header must rebuild the .so's as well as the binary's).
-include $(BROKER_OBJS:.o=.d) $(B)/src/supervisor/broker/intercept.pic.d $(B)/src/supervisor/broker/intercept_http.pic.d

# Fuzzing (tests/fuzz): make fuzz [FUZZ_SECONDS=60]. Each tests/fuzz/fuzz_*.c is a libFuzzer
# target built with clang, ASan and UBSan against the parser sources it needs; FUZZ_SECONDS=0
# only replays the seed corpus (a quick regression check).
FUZZ_SECONDS  ?= 60
FUZZ_CC       ?= clang
FUZZ_CFLAGS   := -O1 -g -std=gnu11 -Wall -Wextra -Wno-unused-parameter -D_GNU_SOURCE \
                 -DCODEMODE_VERSION=\"$(VERSION)\" -DCODEMODE_DATADIR=\"$(DATADIR)\" -iquote src \
                 $(PKG_CFLAGS) -fsanitize=address,undefined -fno-sanitize-recover=all \
                 -fno-omit-frame-pointer
FUZZ_LIB_SRCS := $(sort $(wildcard src/util/*.c src/spec/*.c)) src/runtime/state.c src/runtime/lock_holder.c
FUZZ_LIB_OBJS := $(FUZZ_LIB_SRCS:%.c=$(B)/fuzz/%.o)
FUZZ_BINS     := $(patsubst tests/fuzz/%.c,$(B)/fuzz/%,$(sort $(wildcard tests/fuzz/fuzz_*.c)))

$(B)/fuzz/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(B)/fuzz/libfuzzlib.a: $(FUZZ_LIB_OBJS)
	@rm -f $@
	@echo "  AR      $@"
	@ar rcs $@ $^

$(B)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(B)/fuzz/libfuzzlib.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(B)/fuzz/libfuzzlib.a $(PKG_LIBS)

# The layer unpacker (src/image/unpack.c) with libarchive: a layer is an attacker's tar stream.
$(B)/fuzz/fuzz_unpack: tests/fuzz/fuzz_unpack.c $(B)/fuzz/src/image/unpack.o $(B)/fuzz/libfuzzlib.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(B)/fuzz/src/image/unpack.o $(B)/fuzz/libfuzzlib.a \
	  $(PKG_LIBS) $(shell pkg-config --libs libarchive)

# The learned policy file (issue 19): its parser and what --policy makes of it, with the seccomp
# profile loader (libseccomp) behind it.
FUZZ_LEARNED_OBJS := $(patsubst %.c,$(B)/fuzz/%.o,src/policy/learned_policy.c src/policy/learned_policy_json.c \
                       src/policy/learned_paths.c src/policy/seccomp_profile.c src/policy/builtin_profiles.c)
$(B)/fuzz/src/policy/builtin_profiles.o: $(EMBEDDED_PROFILES)
$(B)/fuzz/fuzz_learned_policy: tests/fuzz/fuzz_learned_policy.c $(FUZZ_LEARNED_OBJS) $(B)/fuzz/libfuzzlib.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_LEARNED_OBJS) $(B)/fuzz/libfuzzlib.a $(PKG_LIBS)

fuzz-bins: $(FUZZ_BINS)

fuzz: $(FUZZ_BINS)
	tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_BINS)

.PHONY: fuzz fuzz-bins
-include $(FUZZ_LIB_OBJS:.o=.d) $(FUZZ_LEARNED_OBJS:.o=.d) $(B)/fuzz/src/image/unpack.d

# Side-by-side start-up benchmark: codemode vs runc vs crun (tests/bench/run.sh; issue 7); then
# the MCP, egress and learn benches, and each hardened path beside its base (paths.sh, issue 27).
# Reports only, never fails on timings. CI: make bench BENCH_RUNS=5
BENCH_RUNS ?= 50
# Every bench runs with a /dev/null of its own (tests/bench/private-null.sh says why).
bench: all $(B)/tests/landlock_cost
	BENCH_RUNS=$(BENCH_RUNS) CODEMODE=$(abspath $(B)/codemode) BENCH_LANDLOCK_COST=$(abspath $(B)/tests/landlock_cost) \
	  tests/bench/private-null.sh tests/bench/run.sh
	BENCH_RUNS=$(BENCH_RUNS) CODEMODE=$(abspath $(B)/codemode) tests/bench/private-null.sh tests/bench/mcp.sh
	BENCH_RUNS=$(BENCH_RUNS) CODEMODE=$(abspath $(B)/codemode) tests/bench/private-null.sh tests/bench/egress.sh
	BENCH_RUNS=$(BENCH_RUNS) CODEMODE=$(abspath $(B)/codemode) tests/bench/private-null.sh tests/bench/learn.sh
	BENCH_RUNS=$(BENCH_RUNS) CODEMODE=$(abspath $(B)/codemode) tests/bench/private-null.sh tests/bench/paths.sh
	BENCH_RUNS=$(BENCH_RUNS) CODEMODE=$(abspath $(B)/codemode) tests/bench/private-null.sh tests/bench/ci.sh

# What Landlock adds to an mcp start, step by step (issue 18): run.sh reports it.
$(B)/tests/landlock_cost: tests/bench/landlock_cost.c $(B)/libcodemode.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(B)/libcodemode.a $(LDLIBS)

# Pod start through containerd's CRI, runc vs codemode as the RuntimeClass handler
# (tests/cri/bench.sh): needs containerd, the CNI plugins and tests/cri's npm packages
# (tests/cri/deps.sh), so it is a target of its own. CRI_BENCH_RUNS runs per handler, interleaved.
CRI_BENCH_RUNS ?= 20
bench-cri: all
	CODEMODE=$(abspath $(B)/codemode) tests/cri/bench.sh $(CRI_BENCH_RUNS)

.PHONY: bench bench-cri

# Stress (tests/stress/run.sh; issue 8): STRESS_N containers in parallel × STRESS_R rounds of the
# whole lifecycle, concurrent operations on one id, then no leaks. `make check` runs it small.
STRESS_N ?= 50
STRESS_R ?= 20
stress: all
	CODEMODE=$(abspath $(B)/codemode) tests/stress/run.sh $(STRESS_N) $(STRESS_R)

.PHONY: stress
