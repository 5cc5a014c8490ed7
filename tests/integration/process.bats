#!/usr/bin/env bats
# process.*: args, env, cwd, user, umask, rlimits, oomScoreAdj, capabilities.

load ../lib/helpers

@test "process.env reaches the process, and nothing else from the caller does" {
  set_env FOO=bar "WITH_SPACE=a b"
  set_args sh -c 'echo "$FOO|$WITH_SPACE|${BATS_TEST_NAME:-unset}|${CODEMODE:-unset}"'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = "bar|a b|unset|unset" ]
}

@test "PATH from process.env is used to find args[0]" {
  mkdir -p "$BUNDLE/rootfs/opt/tools"
  printf '#!/bin/sh\necho found-on-path\n' >"$BUNDLE/rootfs/opt/tools/mytool"
  chmod +x "$BUNDLE/rootfs/opt/tools/mytool"
  set_env PATH=/opt/tools:/bin
  set_args mytool
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = found-on-path ]
}

@test "process.cwd is the working directory" {
  mkdir -p "$BUNDLE/rootfs/work/dir"
  set_cfg '.process.cwd = "/work/dir"'
  set_args pwd
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = /work/dir ]
}

@test "a missing process.cwd is created (as runc does)" {
  set_cfg '.process.cwd = "/not/yet/there" | .root.readonly = false'
  set_args pwd
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = /not/yet/there ]
}

@test "process.user sets uid, gid and additionalGids" {
  set_cfg '.process.user = {uid: 1000, gid: 1000, additionalGids: [5, 100]}'
  set_args sh -c 'id -u; id -g; id -G'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = 1000 ]
  [ "${lines[1]}" = 1000 ]
  [[ " ${lines[2]} " == *" 5 "* ]]
  [[ " ${lines[2]} " == *" 100 "* ]]
  # No leftover root group.
  [[ " ${lines[2]} " != *" 0 "* ]]
}

@test "a non-root user gets no capabilities from the default set unless ambient" {
  set_cfg '.process.user = {uid: 1000, gid: 1000} | .process.capabilities.ambient = []'
  set_args grep -E '^Cap(Eff|Prm)' /proc/self/status
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [[ "$output" == *$'CapEff:\t0000000000000000'* ]]
}

@test "process.user.umask sets the umask" {
  set_cfg '.process.user.umask = 63' # 0077
  set_args sh -c umask
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = 0077 ]
}

@test "the default umask is 0022" {
  set_args sh -c umask
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = 0022 ]
}

@test "rlimits set soft and hard limits (RLIMIT_NOFILE via ulimit -n)" {
  set_cfg '.process.rlimits = [{type: "RLIMIT_NOFILE", soft: 512, hard: 768}]'
  set_args sh -c 'ulimit -n; ulimit -Hn'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = 512 ]
  [ "${lines[1]}" = 768 ]
}

@test "several rlimits at once" {
  set_cfg '.process.rlimits = [{type: "RLIMIT_NOFILE", soft: 256, hard: 256},
                               {type: "RLIMIT_NPROC", soft: 300, hard: 300},
                               {type: "RLIMIT_CORE", soft: 0, hard: 0}]'
  set_args sh -c 'ulimit -n; ulimit -u; ulimit -c'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | tr '\n' ' ')" = "256 300 0 " ]
}

@test "an rlimit the runtime cannot raise fails with an error naming it" {
  # No CAP_SYS_RESOURCE on this machine: a hard limit above the current one cannot be set.
  local hard capeff
  capeff=$(awk '/^CapEff/ { print $2 }' /proc/self/status)
  [ $((0x$capeff >> 24 & 1)) -eq 0 ] || skip "this machine has CAP_SYS_RESOURCE"
  hard=$(ulimit -Hl)
  [ "$hard" != unlimited ] || skip "RLIMIT_MEMLOCK is unlimited here"
  set_cfg '.process.rlimits = [{type: "RLIMIT_MEMLOCK", soft: 1, hard: ($h * 1024 * 4 + 4096)}]' --argjson h "$hard"
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -ne 0 ]
  if codemode_part error-wording; then
    [[ "$stderr" == *RLIMIT_MEMLOCK* ]]
  fi
}

@test "oomScoreAdj is applied" {
  set_cfg '.process.oomScoreAdj = 500'
  set_args cat /proc/self/oom_score_adj
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = 500 ]
}

@test "capabilities: an explicit set is what the process gets" {
  set_cfg '.process.capabilities = {bounding: ["CAP_CHOWN", "CAP_NET_RAW"], effective: ["CAP_CHOWN"],
                                    permitted: ["CAP_CHOWN", "CAP_NET_RAW"]}'
  set_args grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  # CAP_CHOWN = bit 0, CAP_NET_RAW = bit 13. For uid 0 execve() raises effective to permitted
  # (no SECBIT_NOROOT), as with runc.
  [[ "$output" == *$'CapEff:\t0000000000002001'* ]]
  [[ "$output" == *$'CapPrm:\t0000000000002001'* ]]
  [[ "$output" == *$'CapBnd:\t0000000000002001'* ]]
  [[ "$output" == *$'CapInh:\t0000000000000000'* ]]
  [[ "$output" == *$'CapAmb:\t0000000000000000'* ]]
}

# runc 1.1.5 on this bundle: `run` itself fails ("unable to apply caps"), status 1, nothing left:
# the sets are applied before the exec fifo. Issue 14: the process failed with 127 instead.
@test "capabilities the kernel refuses fail create itself, with the reason" {
  set_cfg '.process.capabilities = {bounding: ["CAP_CHOWN"], effective: ["CAP_CHOWN", "CAP_SYS_ADMIN"],
                                    permitted: ["CAP_CHOWN"]}'
  set_args true
  run_cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 1 ]
  if codemode_part error-wording; then
    [[ "$stderr" == *"effective lists capabilities that are not in permitted"* ]]
  fi
  [ -z "$(cm list -q)" ]
}

@test "args with spaces, quotes and empty strings arrive intact" {
  set_args sh -c 'for a in "$@"; do echo "[$a]"; done' argv0 "a b" "" "'q'" '$HOME'
  run cm run -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  [ "$output" = "[a b]
[]
['q']
[\$HOME]" ]
}

@test "apparmorProfile and selinuxLabel on a host without them: ignored or refused clearly" {
  set_cfg '.process.apparmorProfile = "unconfined"'
  set_args true
  run_cm run -b "$BUNDLE" "$CID"
  if [ "$status" -ne 0 ]; then
    [[ "$stderr" == *apparmor* ]]
  fi
}
