# tests/ci/jobs.bash — the leak checks after a ci job, for the bats files of tests/ci that load
# it (ci.bats, npm.bats). Uses $ROOT, $CID, $WS and the
# test token of tests/lib/helpers.bash; the job writes its uid_map to $WS/uid_map.

# range_processes START: host pids whose uid is in the job's 1048576-id range from START and that
# are the job's: in its cgroup or below it (named after its id; nested containers run there with
# cgroups disabled, or in sub-cgroups of it where the job's cgroup is delegated) or carrying its
# token. Once the job is gone its range is free, and another
# container on this machine (another suite's) may hold it by then: its processes are not ours.
range_processes() {
  local f uid
  for f in /proc/[0-9]*; do
    uid=$(awk '/^Uid:/ {print $2}' "$f/status" 2>/dev/null) || continue
    [ -n "$uid" ] && [ "$uid" -ge "$1" ] && [ "$uid" -lt $(($1 + 1048576)) ] || continue
    grep -qF -- "$CID" "$f/cgroup" 2>/dev/null || is_test_process "${f#/proc/}" "$CM_TEST_TOKEN:$CID" || continue
    echo "${f#/proc/}"
  done
  return 0
}

# nothing_left START: the job and everything it started are gone: no process of its range, no
# state directory, no host-range registration naming it, no nested storage mount on the host.
nothing_left() {
  local start=$1 i
  for i in $(seq 1 40); do
    [ -z "$(range_processes "$start")" ] && [ -z "$(ls -A "$ROOT")" ] && break
    sleep 0.5
  done
  [ -z "$(range_processes "$start")" ]
  [ -z "$(ls -A "$ROOT")" ]
  ! grep -rqs "$ROOT" /run/codemode-userns
  ! grep -q "containers/storage" /proc/self/mountinfo
  [ -z "$(test_processes "$CM_TEST_TOKEN:$CID")" ]
}

# The first host uid of the job's range, from the uid_map the job wrote to the workspace.
range_start() { awk 'NR == 1 {print $2}' "$WS/uid_map"; }
