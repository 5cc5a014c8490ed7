#!/usr/bin/env bats
# An npm project's `npm ci && npm test` as a ci job (issue 26, point 5): the job runs from the
# host's /usr (codemode-run --profile ci --host) inside the egress suite's test internet
# (tests/egress/lab.bash: network namespaces this file makes), and its registry is a real npm
# registry mirror there: verdaccio 5 (tests/ci/deps.sh installs it in tests/ci/.work) on
# registry.allowed.test:4873, plain HTTP, with no uplinks, so it never asks the real registry:
# it serves only what this file publishes to it. The job reaches it only through --allow-host
# (the egress broker); without it the fetch is refused. Each job is followed by the leak checks.

load ../lib/helpers
load ../egress/lab
load jobs

REG_PORT=4873
REG_URL=http://registry.allowed.test:$REG_PORT/

setup_file() {
  cm_setup_file
  export CODEMODE_RUN=${CODEMODE_RUN:-$(dirname "$CODEMODE")/codemode-run}
  local work=$CM_REPO/tests/ci/.work
  [ -x "$work/verdaccio/node_modules/.bin/verdaccio" ] || "$CM_REPO/tests/ci/deps.sh" >&2
  lab_up "$BATS_FILE_TMPDIR/lab"
  # The mirror: no uplinks (offline: a package it does not hold is a 404, never a fetch from
  # registry.npmjs.org), anyone may read and publish, every request logged (the test reads it).
  local v=$BATS_FILE_TMPDIR/verdaccio
  mkdir -p "$v/storage"
  cat >"$v/config.yaml" <<YAML
storage: $v/storage
auth:
  htpasswd:
    file: $v/htpasswd
uplinks: {}
packages:
  '**':
    access: \$all
    publish: \$all
log: { type: file, path: $v/requests.log, format: json, level: http }
listen: 203.0.113.40:$REG_PORT
YAML
  nsenter --net="/run/netns/$LAB_HOSTS" "$work/verdaccio/node_modules/.bin/verdaccio" --config "$v/config.yaml" \
    </dev/null >"$v/out" 2>&1 3>&- &
  echo $! >"$v/pid"
  local i
  for i in $(seq 150); do
    nsenter --net="/run/netns/$LAB_HOSTS" curl -sf -m 2 "http://203.0.113.40:$REG_PORT/-/ping" >/dev/null && break
    sleep 0.2
  done
  nsenter --net="/run/netns/$LAB_HOSTS" curl -sf -m 2 "http://203.0.113.40:$REG_PORT/-/ping" >/dev/null ||
    { echo "verdaccio did not start: $(cat "$v/out")" >&2; return 1; }
  # A user (verdaccio's npm adduser endpoint) and a tiny package published with the real npm.
  local token pkg=$BATS_FILE_TMPDIR/cm-greet
  token=$(nsenter --net="/run/netns/$LAB_HOSTS" curl -sf -m 10 -X PUT -H 'content-type: application/json' \
    -d '{"name": "ci", "password": "ci-mirror-pass"}' "http://203.0.113.40:$REG_PORT/-/user/org.couchdb.user:ci" | jq -r .token)
  [ -n "$token" ] && [ "$token" != null ]
  mkdir -p "$pkg"
  echo '{"name": "cm-greet", "version": "1.0.0", "main": "index.js", "license": "MIT"}' >"$pkg/package.json"
  echo 'module.exports = (who) => "hello " + who + " from the mirror";' >"$pkg/index.js"
  (cd "$pkg" && nsenter --net="/run/netns/$LAB_HOSTS" npm publish --registry "http://203.0.113.40:$REG_PORT/" \
    "--//203.0.113.40:$REG_PORT/:_authToken=$token" --cache "$BATS_FILE_TMPDIR/npm-cache" >&2)
  # The integrity the lockfile pins: the mirror's own, from its packument.
  CM_GREET_INTEGRITY=$(nsenter --net="/run/netns/$LAB_HOSTS" curl -sf -m 10 "http://203.0.113.40:$REG_PORT/cm-greet" |
    jq -er '.versions["1.0.0"].dist.integrity')
  export CM_GREET_INTEGRITY
}

teardown_file() {
  local v=$BATS_FILE_TMPDIR/verdaccio
  if [ -s "$v/pid" ]; then
    kill "$(cat "$v/pid")" 2>/dev/null
    wait "$(cat "$v/pid")" 2>/dev/null
  fi
  lab_down
}

setup() {
  cm_setup
  AUDIT=$TEST_DIR/audit.log
  brokers_before=$(live_brokers | wc -l)
  # The project: a dependency on the mirror's package, its lockfile (what `npm install` against
  # the mirror writes: the tarball's URL there and its integrity), and a test that requires it.
  WS=$(mktemp -d /tmp/cm-ci-npm.XXXXXX)
  cat >"$WS/package.json" <<'JSON'
{"name": "cm-ci-app", "version": "1.0.0", "private": true,
 "dependencies": {"cm-greet": "^1.0.0"},
 "scripts": {"test": "node test.js"}}
JSON
  cat >"$WS/package-lock.json" <<JSON
{"name": "cm-ci-app", "version": "1.0.0", "lockfileVersion": 3, "requires": true,
 "packages": {
  "": {"name": "cm-ci-app", "version": "1.0.0", "dependencies": {"cm-greet": "^1.0.0"}},
  "node_modules/cm-greet": {"version": "1.0.0", "license": "MIT",
   "resolved": "${REG_URL}cm-greet/-/cm-greet-1.0.0.tgz", "integrity": "$CM_GREET_INTEGRITY"}}}
JSON
  cat >"$WS/test.js" <<'JS'
const assert = require("assert");
const greet = require("cm-greet");
assert.strictEqual(greet("job"), "hello job from the mirror");
console.log("npm-test-ok: " + greet("job"));
JS
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
    --env "npm_config_registry=$REG_URL" --env npm_config_fetch_retries=0 --env npm_config_fetch_timeout=20000 \
    "$@" -- sh -c 'cat /proc/self/uid_map >uid_map; npm ci --no-audit --no-fund && npm test' \
    </dev/null >"$TEST_DIR/out" 2>&1 3>&- || status=$?
  output=$(cat "$TEST_DIR/out")
  echo "# job status $status: $output" >&3
}

# tarball_gets: how many times the mirror was asked for the package's tarball.
tarball_gets() {
  grep -c 'GET /cm-greet/-/cm-greet-1.0.0.tgz' "$BATS_FILE_TMPDIR/verdaccio/requests.log" || true
}

@test "ci npm: npm ci && npm test from the mirror, reached through --allow-host" {
  local before
  before=$(tarball_gets)
  npm_job --allow-host "registry.allowed.test:$REG_PORT"
  [ "$status" -eq 0 ]
  [[ "$output" == *"npm-test-ok: hello job from the mirror"* ]]
  # The package came from the mirror, through the broker by name.
  [ "$(tarball_gets)" -gt "$before" ]
  [ "$(jq -c "select(.decision == \"allow\" and .rule == \"allow-host registry.allowed.test:$REG_PORT\")" "$AUDIT" | wc -l)" -ge 1 ]
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
