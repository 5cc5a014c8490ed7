# tests/ci/mirror.bash — an npm registry mirror inside the egress lab (tests/egress/lab.bash),
# for the npm jobs of tests/ci/npm.bats and tests/rootless/ci_npm.bats: verdaccio 5
# (tests/ci/deps.sh installs it in tests/ci/.work) in LAB_HOSTS on registry.allowed.test:4873
# (203.0.113.40), plain HTTP, with no uplinks, so it never asks the real registry: it serves
# only the package published here, cm-greet 1.0.0.
#
# mirror_up DIR     (root, after lab_up) → MIRROR_DIR MIRROR_URL CM_GREET_INTEGRITY
# mirror_down       stops it
# mirror_project WS a project depending on cm-greet: package.json, its package-lock.json (the
#                   mirror's tarball URL and integrity) and an `npm test` that requires it
# tarball_gets      how many times the mirror was asked for cm-greet's tarball

MIRROR_URL=http://registry.allowed.test:4873/
MIRROR_ADDR=203.0.113.40:4873

mirror_in() { nsenter --net="/run/netns/$LAB_HOSTS" "$@"; }

mirror_up() {
  MIRROR_DIR=$1
  export MIRROR_DIR MIRROR_URL
  local v=$MIRROR_DIR bin
  bin=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/.work/verdaccio/node_modules/.bin/verdaccio
  [ -x "$bin" ] || { echo "mirror: verdaccio is not installed (tests/ci/deps.sh)" >&2; return 1; }
  mkdir -p "$v/storage"
  # No uplinks (offline: a package it does not hold is a 404, never a fetch from
  # registry.npmjs.org); anyone may read and publish; every request logged (the tests read it).
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
listen: $MIRROR_ADDR
YAML
  mirror_in "$bin" --config "$v/config.yaml" </dev/null >"$v/out" 2>&1 3>&- &
  echo $! >"$v/pid"
  local _
  for _ in $(seq 150); do
    mirror_in curl -sf -m 2 "http://$MIRROR_ADDR/-/ping" >/dev/null && break
    sleep 0.2
  done
  mirror_in curl -sf -m 2 "http://$MIRROR_ADDR/-/ping" >/dev/null ||
    { echo "mirror: verdaccio did not start: $(cat "$v/out")" >&2; return 1; }
  # A user (verdaccio's `npm adduser` endpoint) and a tiny package, published with the real npm.
  local token pkg=$v/cm-greet
  token=$(mirror_in curl -sf -m 10 -X PUT -H 'content-type: application/json' \
    -d '{"name": "ci", "password": "ci-mirror-pass"}' "http://$MIRROR_ADDR/-/user/org.couchdb.user:ci" | jq -r .token)
  [ -n "$token" ] && [ "$token" != null ] || { echo "mirror: no token from verdaccio" >&2; return 1; }
  mkdir -p "$pkg"
  echo '{"name": "cm-greet", "version": "1.0.0", "main": "index.js", "license": "MIT"}' >"$pkg/package.json"
  echo 'module.exports = (who) => "hello " + who + " from the mirror";' >"$pkg/index.js"
  (cd "$pkg" && mirror_in npm publish --registry "http://$MIRROR_ADDR/" "--//$MIRROR_ADDR/:_authToken=$token" \
    --cache "$v/npm-cache" >"$v/publish.log" 2>&1) || { cat "$v/publish.log" >&2; return 1; }
  # The integrity the lockfile pins: the mirror's own, from its packument.
  CM_GREET_INTEGRITY=$(mirror_in curl -sf -m 10 "http://$MIRROR_ADDR/cm-greet" | jq -er '.versions["1.0.0"].dist.integrity') ||
    { echo "mirror: no cm-greet packument" >&2; return 1; }
  export CM_GREET_INTEGRITY
}

mirror_down() {
  [ -s "${MIRROR_DIR:-}/pid" ] || return 0
  kill "$(cat "$MIRROR_DIR/pid")" 2>/dev/null
  wait "$(cat "$MIRROR_DIR/pid")" 2>/dev/null
  rm -f "$MIRROR_DIR/pid"
}

mirror_project() {
  local ws=$1
  cat >"$ws/package.json" <<'JSON'
{"name": "cm-ci-app", "version": "1.0.0", "private": true,
 "dependencies": {"cm-greet": "^1.0.0"},
 "scripts": {"test": "node test.js"}}
JSON
  # What `npm install` against the mirror writes: the tarball's URL there and its integrity.
  cat >"$ws/package-lock.json" <<JSON
{"name": "cm-ci-app", "version": "1.0.0", "lockfileVersion": 3, "requires": true,
 "packages": {
  "": {"name": "cm-ci-app", "version": "1.0.0", "dependencies": {"cm-greet": "^1.0.0"}},
  "node_modules/cm-greet": {"version": "1.0.0", "license": "MIT",
   "resolved": "${MIRROR_URL}cm-greet/-/cm-greet-1.0.0.tgz", "integrity": "$CM_GREET_INTEGRITY"}}}
JSON
  cat >"$ws/test.js" <<'JS'
const assert = require("assert");
const greet = require("cm-greet");
assert.strictEqual(greet("job"), "hello job from the mirror");
console.log("npm-test-ok: " + greet("job"));
JS
}

tarball_gets() {
  grep -c 'GET /cm-greet/-/cm-greet-1.0.0.tgz' "$MIRROR_DIR/requests.log" || true
}
