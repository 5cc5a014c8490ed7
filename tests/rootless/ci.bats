#!/usr/bin/env bats
# Rootless ci (issue 26, point 5): a runner that is not root runs its jobs with codemode-run
# --profile ci. tests/rootless/run.sh runs this file as its test user: the bundle case, a
# --state directory and the warning at start without subordinate ids (pass 1: only the user's
# uid is mapped, as the job's root), every case with /etc/subuid and /etc/subgid giving the
# user 100000:65536 (pass 2: newuidmap maps them as the job's ids 1-65536, so a build user of
# the job is a subordinate id on the host), and the warning for a smaller range
# (CM_ROOTLESS_SMALL_RANGE=START:COUNT, what run.sh wrote to /etc/subuid and /etc/subgid).

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
  timeout --kill-after=10 "${CM_CI_JOB_TIMEOUT:-300}" "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --profile ci \
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

@test "rootless ci: a real build: codemode's own make, as the job's root and as its uid 1000 (the user's subordinate id 100999)" {
  [ "${CM_ROOTLESS_SUBUID:-0}" = 1 ]
  # tests/ci/ci.bats's root case (tests/ci/build-job.sh) as this user, from a copy of the source
  # the user makes (the repository's own test caches are root's).
  mkdir "$WS/src"
  tar -C "$CM_REPO" --exclude=./build --exclude=./.git --exclude="./tests/*/.work" -cf - . | tar -C "$WS/src" -xf -
  CM_CI_JOB_TIMEOUT=900 ci_job --host --mount "$WS/src:/src:ro" -- sh /src/tests/ci/build-job.sh
  [ "$status" -eq 0 ]
  [ "$(grep -c "^codemode version" <<<"$output")" -eq 2 ]
  [ "$(tail -1 <<<"$output")" = 1000 ]
  nothing_left
}

@test "rootless ci: a --state directory two jobs share in sequence: made by codemode-run as the user's (0700); the second job's root reads and writes what the first left" {
  local cache=$TEST_DIR/cache
  ci_job --host --state "$cache:/cache" -- sh -c 'set -e; echo from-1 >/cache/data; mkdir /cache/d; touch /cache/d/f'
  [ "$status" -eq 0 ]
  [ "$(stat -c '%u:%g %a' "$cache")" = "$(id -u):$(id -g) 700" ]
  [ -z "$(find "$cache" ! -uid "$(id -u)" -o ! -gid "$(id -g)")" ]
  ci_job --host --state "$cache:/cache" -- sh -c 'cat /cache/data; echo from-2 >>/cache/data; rm -r /cache/d && echo removed; stat -c %u /cache/data'
  [ "$status" -eq 0 ]
  [[ "$output" == *$'from-1\nremoved\n0'* ]]
  [ "$(cat "$cache/data")" = $'from-1\nfrom-2' ]
  # With the user's full range (pass 2) there is nothing to warn about.
  if [ "${CM_ROOTLESS_SUBUID:-0}" = 1 ]; then
    [[ "$output" != *"warning: --profile ci"* ]]
  fi
  nothing_left
}

@test "rootless ci without subordinate ids: a warning at start names the user, what it has, the 65536 ids a job needs and the lines to add; the job's root runs, a switch to another id fails as it says" {
  [ "${CM_ROOTLESS_SUBUID:-0}" = 0 ] || skip "the pass without /etc/subuid ranges (pass 1)"
  local me group
  me=$(id -un)
  group=$(id -gn)
  ci_job --host -- sh -c 'id -u; setpriv --reuid 1000 --regid 1000 --clear-groups true 2>&1 || echo switch-failed'
  [ "$status" -eq 0 ]
  local first
  first=$(head -n 1 <<<"$output")
  # The warning comes first, before anything of the job's.
  [[ "$first" == "codemode-run: warning: --profile ci as user $me (uid $(id -u)): /etc/subuid has no range for it, /etc/subgid has no range for it;"* ]]
  [[ "$first" == *"a ci job maps its root and 65536 subordinate uids and gids"* ]]
  [[ "$first" == *"this one gets only its root: su, sudo, setpriv or chown to any other id fail with EINVAL"* ]]
  [[ "$first" == *"(fix: add \"$me:100000:65536\" to /etc/subuid and add \"$group:100000:65536\" to /etc/subgid)" ]]
  # ... and the job: its root, and the switch failing as said.
  [[ "$output" == *$'\n0\n'*"Invalid argument"*switch-failed* ]]
  nothing_left
  # codemode itself (the OCI runtime's --profile ci) says the same at create.
  set_args true
  run_cm --profile ci run -b "$BUNDLE" "$CID-cli"
  [[ "$stderr" == *"codemode: warning: --profile ci as user $me (uid $(id -u)): /etc/subuid has no range for it"* ]]
}

@test "rootless ci with a smaller subordinate range: the warning names the range and the ids that then fail, and the fix replaces the line; ids inside the range still work" {
  [ -n "${CM_ROOTLESS_SMALL_RANGE:-}" ] || skip "the pass with a small /etc/subuid range (tests/rootless/run.sh pass 2)"
  local me group start=${CM_ROOTLESS_SMALL_RANGE%%:*} count=${CM_ROOTLESS_SMALL_RANGE##*:}
  me=$(id -un)
  group=$(id -gn)
  ci_job --host -- sh -c "id -u; setpriv --reuid $count --regid $count --clear-groups id -u
    setpriv --reuid $((count + 1)) --regid $((count + 1)) --clear-groups true 2>&1 || echo switch-failed"
  [ "$status" -eq 0 ]
  local first
  first=$(head -n 1 <<<"$output")
  [[ "$first" == "codemode-run: warning: --profile ci as user $me (uid $(id -u)): /etc/subuid gives it $start-$((start + count - 1)) ($count ids), /etc/subgid gives it $start-$((start + count - 1)) ($count ids);"* ]]
  [[ "$first" == *"this one gets its ids 1-$count: su, sudo, setpriv or chown to ids $((count + 1))-65536 (nobody 65534 among them) fail with EINVAL"* ]]
  [[ "$first" == *"(fix: replace its line in /etc/subuid with \"$me:$start:65536\" and replace its line in /etc/subgid with \"$group:$start:65536\")" ]]
  # The last id of the range is mapped, the next is not.
  [[ "$output" == *$'\n0\n'"$count"$'\n'*"Invalid argument"*switch-failed* ]]
  nothing_left
}
