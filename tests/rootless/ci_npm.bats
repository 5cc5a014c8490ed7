#!/usr/bin/env bats
# The npm job of tests/ci/npm.bats as an unprivileged user (rootless ci, issue 26): run by
# tests/rootless/run.sh (pass 4) as its test user inside the egress lab's "machine" namespace,
# with the verdaccio mirror of tests/ci/mirror.bash that root started in the lab. The job,
# codemode-run and its broker are the user's; npm reaches the mirror only through --allow-host.
#   LAB_DNS  the lab's resolver   MIRROR_DIR MIRROR_URL CM_GREET_INTEGRITY  the mirror's

load ../lib/helpers
load ../ci/mirror

setup_file() {
  [ "$(id -u)" -ne 0 ] || {
    echo "tests/rootless/ci_npm.bats runs as an unprivileged user (tests/rootless/run.sh)" >&2
    return 1
  }
  if [ -z "${LAB_DNS:-}" ] || [ -z "${CM_GREET_INTEGRITY:-}" ] || [ ! -r "${MIRROR_DIR:-}/requests.log" ]; then
    echo "tests/rootless/ci_npm.bats needs the egress lab and its npm mirror (tests/rootless/run.sh pass 4)" >&2
    return 1
  fi
  export CODEMODE_RUN=${CODEMODE_RUN:-$(dirname "$CODEMODE")/codemode-run}
}

setup() {
  TEST_DIR=$BATS_TEST_TMPDIR
  ROOT=$TEST_DIR/state
  AUDIT=$TEST_DIR/audit.log
  CID=cm-test-$CM_RUN_TAG-rlnpm$BATS_TEST_NUMBER
  WS=$TEST_DIR/ws
  mkdir -p "$WS"
  mirror_project "$WS"
}

teardown() {
  local d
  for d in "$ROOT"/*/; do [ -d "$d" ] && "$CODEMODE" --root "$ROOT" delete --force "$(basename "$d")" 2>/dev/null; done
  return 0
}

# npm_job [codemode-run options…]: `npm ci && npm test` in the user's workspace as a ci job.
npm_job() {
  local egress=()
  [[ " $* " != *" --allow-host "* ]] || egress=(--dns-upstream "$LAB_DNS" --audit-log "$AUDIT")
  status=0
  timeout --kill-after=10 300 "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --profile ci --host \
    "${egress[@]}" --mount "$WS:/ws:rw" --cwd /ws \
    --env "CODEMODE_TEST_CONTAINER=$CM_TEST_TOKEN:$CID" --env HOME=/tmp --env npm_config_cache=/tmp/npm-cache \
    --env "npm_config_registry=$MIRROR_URL" --env npm_config_fetch_retries=0 --env npm_config_fetch_timeout=20000 \
    "$@" -- sh -c 'npm ci --no-audit --no-fund && npm test' </dev/null >"$TEST_DIR/out" 2>&1 3>&- || status=$?
  output=$(cat "$TEST_DIR/out")
  echo "# job status $status: $output" >&3
}

# nothing_left: the job's state directory, its processes and the user's brokers are gone.
nothing_left() {
  local i
  for i in $(seq 1 20); do
    [ -z "$(test_processes "$CM_TEST_TOKEN:$CID")" ] && [ -z "$(ls -A "$ROOT")" ] && break
    sleep 0.5
  done
  [ -z "$(test_processes "$CM_TEST_TOKEN:$CID")" ]
  [ -z "$(ls -A "$ROOT")" ]
  [ -z "$(ps -u "$(id -u)" -o stat=,comm= | awk '$2 == "codemode-broker" && $1 !~ /^Z/')" ]
}

@test "rootless ci npm: npm ci && npm test from the mirror through --allow-host, as a normal user" {
  local before
  before=$(tarball_gets)
  npm_job --allow-host registry.allowed.test:4873
  [ "$status" -eq 0 ]
  [[ "$output" == *"npm-test-ok: hello job from the mirror"* ]]
  [ "$(tarball_gets)" -gt "$before" ]
  [ "$(jq -c 'select(.decision == "allow" and .rule == "allow-host registry.allowed.test:4873")' "$AUDIT" | wc -l)" -ge 1 ]
  # The job's root wrote node_modules as the user.
  [ "$(stat -c %u "$WS/node_modules/cm-greet/index.js")" = "$(id -u)" ]
  nothing_left
}

@test "rootless ci npm: without --allow-host the fetch fails, as a normal user" {
  local before
  before=$(tarball_gets)
  npm_job
  [ "$status" -ne 0 ]
  [[ "$output" != *npm-test-ok* ]]
  [[ "$output" == *"npm error"* ]]
  [ "$(tarball_gets)" -eq "$before" ]
  [ ! -e "$WS/node_modules/cm-greet" ]
  nothing_left
}
