#!/usr/bin/env bats
# contrib/gitlab-runner, the GitLab Runner custom executor driver, driven exactly as the runner
# drives it (the runner binaries are not packaged here): config_exec, prepare_exec, run_exec
# SCRIPT STAGE for each stage of a real job (sources, a C build with make and make check, the
# cache), cleanup_exec, with BUILD_FAILURE_EXIT_CODE, SYSTEM_FAILURE_EXIT_CODE and the job's
# variables as CUSTOM_ENV_*.

load ../lib/helpers

setup() {
  cm_setup
  DRIVER=$CM_REPO/contrib/gitlab-runner
  CIDIR=$(mktemp -d /tmp/cm-gitlab.XXXXXX)
  SCRIPTS=$(mktemp -d /tmp/cm-gitlab-scripts.XXXXXX)
  export CODEMODE_RUN=${CODEMODE_RUN:-$(dirname "$CODEMODE")/codemode-run}
  export CODEMODE_ROOT=$ROOT CODEMODE_CI_DIR=$CIDIR
  export BUILD_FAILURE_EXIT_CODE=41 SYSTEM_FAILURE_EXIT_CODE=42
  export CUSTOM_ENV_CI_JOB_ID=$((100000 + RANDOM)) CUSTOM_ENV_CI_PROJECT_PATH_SLUG=group-demo
  export CUSTOM_ENV_CI_PROJECT_DIR=/builds/group/demo
}

teardown() {
  rm -rf --one-file-system "$CIDIR" "$SCRIPTS"
  cm_teardown
}

# stage NAME BODY: the script the runner would hand run_exec for stage NAME (bash, set -e).
stage() {
  printf '#!/usr/bin/env bash\nset -eo pipefail\nexport CI_PROJECT_DIR=%s\n%s\n' "$CUSTOM_ENV_CI_PROJECT_DIR" "$2" \
    >"$SCRIPTS/script-$1"
  status=0
  # The test token for the leak checks, only in the stage's own environment (exported, the
  # test's own processes would carry it and look like leaked container processes).
  CODEMODE_CI_ARGS="--env CODEMODE_TEST_CONTAINER=$CM_TEST_TOKEN:$CID" \
    timeout 300 "$DRIVER/run.sh" "$SCRIPTS/script-$1" "$1" </dev/null >"$TEST_DIR/out" 2>&1 3>&- || status=$?
  output=$(cat "$TEST_DIR/out")
  echo "# stage $1: status $status: $output" >&3
}

@test "gitlab-runner driver: config, prepare, every stage of a C job, cleanup" {
  run "$DRIVER/config.sh"
  [ "$status" -eq 0 ]
  [ "$(jq -r .builds_dir <<<"$output")" = /builds ]
  [ "$(jq -r .cache_dir <<<"$output")" = /cache ]
  [ "$(jq -r .builds_dir_is_shared <<<"$output")" = false ]
  jq -e '.driver.name and .driver.version' <<<"$output"
  run "$DRIVER/prepare.sh"
  [ "$status" -eq 0 ]
  stage prepare_script 'echo "Running on $(hostname) as $(id -u)"'
  [ "$status" -eq 0 ]
  stage get_sources 'mkdir -p "$CI_PROJECT_DIR" && cd "$CI_PROJECT_DIR"
    cat >hello.c <<C
#include <stdio.h>
int main(void) { puts("hello from the job"); return 0; }
C
    printf "hello: hello.c\n\tcc -O2 -o hello hello.c\ncheck: hello\n\t./hello | grep -q \"from the job\"\n" >Makefile'
  [ "$status" -eq 0 ]
  stage restore_cache 'ls /cache'
  [ "$status" -eq 0 ]
  stage step_script 'cd "$CI_PROJECT_DIR" && make && make check && ./hello && cp hello /cache/hello-bin'
  [ "$status" -eq 0 ]
  [[ "$output" == *"hello from the job"* ]]
  stage after_script 'ls -l "$CI_PROJECT_DIR"'
  [ "$status" -eq 0 ]
  stage archive_cache 'test -x /cache/hello-bin'
  [ "$status" -eq 0 ]
  # The builds directory is the job's across its stages, written as the unprivileged owner.
  [ "$(stat -c %u "$CIDIR/jobs/$CUSTOM_ENV_CI_JOB_ID/builds/group/demo/hello")" = 2147483647 ]
  [ "$(stat -c %u:%g "$CIDIR/cache/group-demo/hello-bin")" = 2147483647:2147483647 ]
  [ -z "$(ls -A "$ROOT")" ]
  run "$DRIVER/cleanup.sh"
  [ "$status" -eq 0 ]
  [ ! -e "$CIDIR/jobs/$CUSTOM_ENV_CI_JOB_ID" ]
  [ -x "$CIDIR/cache/group-demo/hello-bin" ] # the project's cache stays
}

@test "gitlab-runner driver: a failing script is the build's failure, a broken setup the system's" {
  run "$DRIVER/prepare.sh"
  [ "$status" -eq 0 ]
  stage step_script 'echo failing; exit 3'
  [ "$status" -eq 41 ]
  [[ "$output" == *failing* ]]
  # A second prepare of the same job: the runner's failure, the first job's directory untouched.
  run "$DRIVER/prepare.sh"
  [ "$status" -eq 42 ]
  run "$DRIVER/cleanup.sh"
  [ "$status" -eq 0 ]
  # run_exec without prepare_exec: the system's failure.
  stage step_script 'true'
  [ "$status" -eq 42 ]
  # A job variable that is not a job id never becomes a path.
  CUSTOM_ENV_CI_JOB_ID='1/../../etc' run "$DRIVER/prepare.sh"
  [ "$status" -eq 42 ]
  [[ "$output" == *"not a job id"* ]]
  [ -z "$(ls -A "$ROOT")" ]
}
