#!/usr/bin/env bats
# contrib/github-actions/codemode-ci-shell, a GitHub Actions custom shell (`shell:
# codemode-ci-shell {0}`), called as the runner calls it: the step's script as the one argument,
# the runner's GITHUB_* variables and per-step files in the environment.

load ../lib/helpers

setup() {
  cm_setup
  export CODEMODE_RUN=${CODEMODE_RUN:-$(dirname "$CODEMODE")/codemode-run}
  RUNNER_DIR=$(mktemp -d /tmp/cm-gha.XXXXXX)
  mkdir -p "$RUNNER_DIR/work/repo" "$RUNNER_DIR/temp"
  : >"$RUNNER_DIR/temp/output" && : >"$RUNNER_DIR/temp/env"
  chown -R 65534:65534 "$RUNNER_DIR/work" "$RUNNER_DIR/temp" # the runner's user, not root
}

teardown() {
  rm -rf --one-file-system "$RUNNER_DIR"
  cm_teardown
}

@test "github actions: a step runs in a ci job: workspace, GITHUB_OUTPUT and GITHUB_ENV written, exit status kept" {
  printf 'echo "in $(pwd) as $(id -u), ns $(awk "{print \\$2}" /proc/self/uid_map)"\nprintf "int main(void){return 0;}" >t.c && cc -o t t.c && ./t\necho "built=yes" >>"$GITHUB_OUTPUT"\necho "FROM_STEP=1" >>"$GITHUB_ENV"\n' \
    >"$RUNNER_DIR/temp/step.sh"
  status=0
  GITHUB_WORKSPACE=$RUNNER_DIR/work/repo GITHUB_OUTPUT=$RUNNER_DIR/temp/output GITHUB_ENV=$RUNNER_DIR/temp/env \
    GITHUB_REPOSITORY=o/r CI=true CODEMODE_CI_ARGS="--root $ROOT --id $CID" \
    "$CM_REPO/contrib/github-actions/codemode-ci-shell" "$RUNNER_DIR/temp/step.sh" </dev/null >"$TEST_DIR/out" 2>&1 3>&- || status=$?
  cat "$TEST_DIR/out" >&3
  [ "$status" -eq 0 ]
  grep -q "in $RUNNER_DIR/work/repo as 0, ns [1-9]" "$TEST_DIR/out"
  [ "$(cat "$RUNNER_DIR/temp/output")" = built=yes ]
  [ "$(cat "$RUNNER_DIR/temp/env")" = FROM_STEP=1 ]
  [ "$(stat -c %u "$RUNNER_DIR/work/repo/t")" = 65534 ]
  printf 'exit 7\n' >"$RUNNER_DIR/temp/fail.sh"
  status=0
  GITHUB_WORKSPACE=$RUNNER_DIR/work/repo CODEMODE_CI_ARGS="--root $ROOT --id $CID" \
    "$CM_REPO/contrib/github-actions/codemode-ci-shell" "$RUNNER_DIR/temp/fail.sh" </dev/null >/dev/null 2>&1 3>&- || status=$?
  [ "$status" -eq 7 ]
  [ -z "$(ls -A "$ROOT")" ]
}
