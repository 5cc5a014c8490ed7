#!/usr/bin/env bats
# An npm project's `npm ci && npm test` as a ci job (issue 26, point 5): the job runs from the
# host's /usr (codemode-run --profile ci --host) inside the egress suite's test internet
# (tests/egress/lab.bash: network namespaces this file makes), and its registry is a real npm
# registry mirror there (tests/ci/mirror.bash): verdaccio 5 on registry.allowed.test:4873, with
# no uplinks, serving only the package published to it here. The job reaches it only through
# --allow-host (the egress broker); without it the fetch is refused. Each job is followed by the
# leak checks.

load ../lib/helpers
load ../egress/lab
load jobs
load mirror

setup_file() {
  cm_setup_file
  export CODEMODE_RUN=${CODEMODE_RUN:-$(dirname "$CODEMODE")/codemode-run}
  [ -x "$CM_REPO/tests/ci/.work/verdaccio/node_modules/.bin/verdaccio" ] || "$CM_REPO/tests/ci/deps.sh" >&2
  lab_up "$BATS_FILE_TMPDIR/lab"
  mirror_up "$BATS_FILE_TMPDIR/mirror"
}

teardown_file() {
  mirror_down
  lab_down
}

setup() {
  cm_setup
  AUDIT=$TEST_DIR/audit.log
  brokers_before=$(live_brokers | wc -l)
  # The project: a dependency on the mirror's package, its lockfile, a test that requires it.
  WS=$(mktemp -d /tmp/cm-ci-npm.XXXXXX)
  mirror_project "$WS"
  chown -R 65534:65534 "$WS"
}

teardown() {
  rm -rf --one-file-system "$WS"
  local left
  left=$(live_brokers | wc -l)
  cm_teardown || return 1
  [ "$left" -le "$brokers_before" ] || {
    echo "codemode-broker left running: $(live_brokers)" >&2
    return 1
  }
}

# npm_job [codemode-run options…]: `npm ci && npm test` in the workspace as a ci job in the
# lab's "machine" namespace, the broker resolving through the lab's DNS. npm's cache and HOME
# in the job's throwaway /tmp. The broker's flags (resolver, audit log) only with an allow-list:
# without one there is no broker (loopback only), and codemode-run refuses them.
npm_job() {
  local egress=()
  [[ " $* " != *" --allow-host "* ]] || egress=(--dns-upstream "$LAB_DNS" --audit-log "$AUDIT")
  status=0
  in_net timeout --kill-after=10 300 "$CODEMODE_RUN" --root "$ROOT" --id "$CID" --profile ci --host \
    "${egress[@]}" --mount "$WS:/ws:rw" --cwd /ws \
    --env "CODEMODE_TEST_CONTAINER=$CM_TEST_TOKEN:$CID" --env HOME=/tmp --env npm_config_cache=/tmp/npm-cache \
    --env "npm_config_registry=$MIRROR_URL" --env npm_config_fetch_retries=0 --env npm_config_fetch_timeout=20000 \
    "$@" -- sh -c 'cat /proc/self/uid_map >uid_map; npm ci --no-audit --no-fund && npm test' \
    </dev/null >"$TEST_DIR/out" 2>&1 3>&- || status=$?
  output=$(cat "$TEST_DIR/out")
  echo "# job status $status: $output" >&3
}

@test "ci npm: npm ci && npm test from the mirror, reached through --allow-host" {
  local before
  before=$(tarball_gets)
  npm_job --allow-host "registry.allowed.test:4873"
  [ "$status" -eq 0 ]
  [[ "$output" == *"npm-test-ok: hello job from the mirror"* ]]
  # The package came from the mirror, through the broker by name.
  [ "$(tarball_gets)" -gt "$before" ]
  [ "$(jq -c "select(.decision == \"allow\" and .rule == \"allow-host registry.allowed.test:4873\")" "$AUDIT" | wc -l)" -ge 1 ]
  [ -f "$WS/node_modules/cm-greet/index.js" ]
  nothing_left "$(range_start)"
}

@test "ci npm: without --allow-host the job cannot fetch from the mirror (refused), nothing left" {
  local before
  before=$(tarball_gets)
  npm_job
  [ "$status" -ne 0 ]
  [[ "$output" != *npm-test-ok* ]]
  # npm's own failure: the job's network is loopback only, so the name does not even resolve.
  [[ "$output" == *"npm error"* ]]
  [[ "$output" == *registry.allowed.test* ]]
  [ "$(tarball_gets)" -eq "$before" ]
  [ ! -e "$WS/node_modules/cm-greet" ]
  nothing_left "$(range_start)"
}

@test "ci npm: an allow-list naming another host refuses the mirror (the broker's decision)" {
  local before
  before=$(tarball_gets)
  npm_job --allow-host api.allowed.test
  [ "$status" -ne 0 ]
  [[ "$output" != *npm-test-ok* ]]
  [ "$(tarball_gets)" -eq "$before" ]
  [ "$(jq -c 'select(.decision == "deny")' "$AUDIT" | wc -l)" -ge 1 ]
  nothing_left "$(range_start)"
}
