#!/usr/bin/env bats
# Rootless ci (issue 26, point 5): a runner that is not root runs its jobs with codemode-run
# --profile ci. tests/rootless/run.sh runs this file as its test user: the bundle case without
# subordinate ids (pass 1: only the user's uid is mapped, as the job's root), every case with
# /etc/subuid and /etc/subgid giving the user 100000:65536 (pass 2: newuidmap maps them as the
# job's ids 1-65536, so a build user of the job is a subordinate id on the host).

load ../lib/helpers

setup_file() {
  [ "$(id -u)" -ne 0 ] || {
    echo "tests/rootless/ci.bats runs as an unprivileged user (tests/rootless/run.sh)" >&2
    return 1
  }
  cm_setup_file
  export CODEMODE_RUN=${CODEMODE_RUN:-$(dirname "$CODEMODE")/codemode-run}
}

setup() {
  cm_setup
  # The job's workspace: the user's own directory.
  WS=$TEST_DIR/ws
  mkdir -p "$WS"
  printf '#include <stdio.h>\nint main(void) { puts("built-by-job"); return 0; }\n' >"$WS/hello.c"
}

# ci_job [codemode-run options…] -- CMD…: a ci job as this (unprivileged) user.
ci_job() {
  local opts=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  status=0
  timeout --kill-after=10 300 "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --profile ci \
    --env "CODEMODE_TEST_CONTAINER=$CM_TEST_TOKEN:$CID" "${opts[@]}" -- "$@" \
    </dev/null >"$TEST_DIR/out" 2>&1 3>&- || status=$?
  output=$(cat "$TEST_DIR/out")
  echo "# job status $status: $output" >&3
}

# nothing_left: the job's state directory and every process carrying its token are gone.
nothing_left() {
  local i
  for i in $(seq 1 20); do
    [ -z "$(test_processes "$CM_TEST_TOKEN:$CID")" ] && [ -z "$(ls -A "$ROOT")" ] && break
    sleep 0.5
  done
  [ -z "$(test_processes "$CM_TEST_TOKEN:$CID")" ]
  [ -z "$(ls -A "$ROOT")" ]
}

@test "rootless ci: an --ephemeral bundle job: the job's root, a writable throw-away root, a nested user namespace" {
  ci_job --ephemeral "$BUNDLE" -- sh -c 'id -u; touch /x && echo touched; unshare -U true && echo nested-userns-ok'
  [ "$status" -eq 0 ]
  [[ "$output" == *$'\n0\ntouched\nnested-userns-ok'* ]] || [[ "$output" == $'0\ntouched\nnested-userns-ok'* ]]
  # The write went to the job's upper layer, never to the bundle.
  [ ! -e "$BUNDLE/rootfs/x" ]
  nothing_left
}

@test "rootless ci: a --host build job: cc as the job's root and as its uid 1000, which is the user's subordinate id 100999 on the host" {
  [ "${CM_ROOTLESS_SUBUID:-0}" = 1 ]
  chmod 0777 "$WS"
  # The job's uid 1000 builds too, and holds a shell (its command line carries a marker the host
  # can read: another uid's environment it cannot) long enough for the host to look at it.
  local marker=cm-rl-ci-$$-$RANDOM
  (
    ci_job --host --mount "$WS:/ws:rw" --cwd /ws -- sh -c '
      set -e
      cc -o hello-root hello.c && ./hello-root
      setpriv --reuid 1000 --regid 1000 --clear-groups sh -c "cc -o hello-1000 hello.c && ./hello-1000 &&
        unshare -U true && echo user-userns-ok && touch ready && sleep 6; : '"$marker"'"'
    echo "$status" >"$TEST_DIR/status"
  ) &
  local job=$!
  bg_track $job
  wait_file "$WS/ready" 120
  # The uids of the processes with the marker: the user's (codemode-run, the job's root's shell)
  # and the one the job's uid 1000 is on the host.
  local pid host_uids
  host_uids=$(for pid in $(grep -lzF -- ": $marker" /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3); do
    awk '/^Uid:/ {print $2}' "/proc/$pid/status" 2>/dev/null
  done | sort -nu | tr '\n' ' ')
  wait $job
  status=$(cat "$TEST_DIR/status")
  output=$(cat "$TEST_DIR/out")
  echo "# host uids of the job's processes: $host_uids" >&3
  [ "$status" -eq 0 ]
  [ "$host_uids" = "$(id -u) 100999 " ]
  [ "$(grep -c built-by-job <<<"$output")" -eq 2 ]
  [[ "$output" == *user-userns-ok* ]]
  # The job's files in the workspace, as the host sees them: its root's are the user's, its uid
  # 1000's the subordinate id.
  [ "$(stat -c %u "$WS/hello-root")" = "$(id -u)" ]
  [ "$(stat -c %u "$WS/hello-1000")" = 100999 ]
  nothing_left
  [ -z "$(grep -lzF -- ": $marker" /proc/[0-9]*/cmdline 2>/dev/null)" ]
  # What the job's uid 1000 made is not the user's to remove: a job removes it.
  ci_job --host --mount "$WS:/ws:rw" -- rm -f /ws/hello-1000 /ws/ready
  [ "$status" -eq 0 ]
}
