# shellcheck shell=bash
# tests/mcp/wrap.bash — `codemode mcp wrap` and `unwrap` (issue 29), sourced by tests/mcp/run.sh
# (as root, and as tests/rootless/run.sh's user). For each client's file shape (Claude Desktop,
# Claude Code, Cursor: .mcpServers; VS Code: .servers with "type": "stdio") a config with
# server-filesystem and server-memory through npx, a url entry and keys of the client's own:
#   wrapped, then each entry run as the client runs it (the SDK client with the entry's command,
#   args and env): the filesystem server lists, reads and writes its directory (bound at the
#   same path, under /tmp: the profile's /tmp tmpfs must not hide it) and is refused outside
#   it; the memory server stores where MEMORY_FILE_PATH points, on the host;
#   wrapping again changes nothing (byte for byte); unwrap gives back the same keys, values
#   and order; the backup is the file as it was.
# First `codemode doctor` on this machine, as the README's first step. Then bad files (not JSON, no server map): refused naming the file and the problem, unchanged,
# no backup. As root: root's own ~/.npm (/root/.npm, a tmpfs copy in a private mount namespace)
# as the entries' :cow cache.
# Uses run.sh's $work, $state, $cache, $here, $CODEMODE, $CM_TEST_TOKEN, pass/fail, nothing_left.

wrap_count() { if [ "$(id -u)" -eq 0 ]; then echo 20; else echo 19; fi; }

# write_config SHAPE FILE DIR: the client's config, with keys of its own around the servers.
write_config() {
  local shape=$1 file=$2 dir=$3 map=mcpServers type="" remote='{"url": "http://127.0.0.1:9/sse"}'
  if [ "$shape" = vscode ]; then
    map=servers type='"type": "stdio", ' remote='{"type": "http", "url": "http://127.0.0.1:9/mcp"}'
  fi
  mkdir -p "$(dirname "$file")"
  cat >"$file" <<EOF
{
  "globalShortcut": "Ctrl+Space",
  "inputs": [{"id": "token", "type": "promptString", "password": true}],
  "ratio": 1.50,
  "$map": {
    "filesystem": {
      ${type}"command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "$dir/files"],
      "env": {"CODEMODE_TEST_CONTAINER": "$CM_TEST_TOKEN"}
    },
    "remote": $remote,
    "memory": {
      ${type}"command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-memory"],
      "env": {"MEMORY_FILE_PATH": "$dir/memory/memory.json", "CODEMODE_TEST_CONTAINER": "$CM_TEST_TOKEN"}
    }
  },
  "théme": {"nested": [true, null, -0.25e2, "\u00e9\\n"]}
}
EOF
}

wrap_cases() {
  local ww=$work/wrap home=$work/wrap/home shape file dir out rc written json fails
  mkdir -p "$ww"
  # doctor: one line per check; --json the same checks as {check, status, detail, fix}; exit 0
  # unless one fails; what the cases below need (user namespaces, overlay in one, Landlock) ok.
  out=$("$CODEMODE" --root "$state" doctor 2>&1)
  rc=$?
  json=$("$CODEMODE" --root "$state" doctor --json 2>&1)
  fails=$(jq '[.[] | select(.status == "fail")] | length' <<<"$json" 2>/dev/null)
  if [ -n "$fails" ] && [ "$(jq 'length' <<<"$json")" -eq "$(grep -cE '^(ok|warn|fail) ' <<<"$out")" ] &&
    jq -e 'all(.[]; (keys == ["check", "detail", "fix", "status"]) and (.status | test("^(ok|warn|fail)$")) and (.status == "ok" or .fix != ""))' <<<"$json" >/dev/null &&
    [ "$rc" -eq "$([ "$fails" -eq 0 ] && echo 0 || echo 1)" ] &&
    jq -e '[.[] | select(.status == "ok") | .check] | index("user namespaces") and index("overlay in a user namespace") and index("landlock")' <<<"$json" >/dev/null; then
    pass "codemode doctor: $(jq 'length' <<<"$json") checks ($(jq -r '[.[] | .status] | group_by(.) | map("\(length) \(.[0])") | join(", ")' <<<"$json")), --json the same, exit $rc"
  else
    fail "codemode doctor (rc=$rc)" "${out//$'\n'/ | }" "$json"
  fi
  # The user's own warm ~/.npm: deps.sh's (root's) copied, so that its files are the user's.
  mkdir -p "$home"
  cp -a "$cache/npx-home/.npm" "$home/.npm"
  for shape in claude-desktop claude-code cursor vscode; do
    dir=$ww/$shape
    case $shape in
    claude-desktop) file=$dir/Claude/claude_desktop_config.json ;;
    claude-code) file=$dir/project/.mcp.json ;;
    cursor) file=$dir/.cursor/mcp.json ;;
    vscode) file=$dir/project/.vscode/mcp.json ;;
    esac
    mkdir -p "$dir/files"
    echo "hello from the host" >"$dir/files/hello.txt"
    echo "outside the served directory" >"$dir/outside.txt"
    write_config "$shape" "$file" "$dir"
    cp "$file" "$dir/original.json"
    out=$(HOME=$home "$CODEMODE" --root "$state" mcp wrap "$file" 2>&1)
    rc=$?
    if [ $rc -ne 0 ] || ! grep -q '^filesystem: wrapped' <<<"$out" || ! grep -q '^memory: wrapped' <<<"$out" ||
      ! cmp -s "$file.codemode-backup" "$dir/original.json"; then
      fail "mcp wrap [$shape] (rc=$rc)" "${out//$'\n'/ | }"
      continue
    fi
    # The filesystem server, as the client runs it.
    out=$(cd "$work" && timeout 180 node client.mjs "FS:$dir/files" --entry "$file" filesystem 2>&1)
    rc=$?
    written=$(sed -n 's/^WROTE //p' <<<"$out")
    if [ $rc -eq 0 ] && [ -n "$written" ] && grep -qx "written under codemode" "$written" && left=$(nothing_left none); then
      pass "mcp wrap [$shape]: server-filesystem as the client runs it: reads and writes $dir/files, refused outside"
    else
      fail "mcp wrap [$shape]: server-filesystem (rc=$rc)" "${out//$'\n'/ | }" "$(jq -c ".[\"filesystem\"]" <(jq '.mcpServers // .servers' "$file"))" "${left:-}"
    fi
    out=$(cd "$work" && MEMORY_ENTITY="wrap-$shape" timeout 180 node client.mjs MEMORY-WRITE --entry "$file" memory 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && grep -q "wrap-$shape" "$dir/memory/memory.json" 2>/dev/null; then
      pass "mcp wrap [$shape]: server-memory stores where MEMORY_FILE_PATH points ($dir/memory/memory.json)"
    else
      fail "mcp wrap [$shape]: server-memory (rc=$rc)" "${out//$'\n'/ | }"
    fi
    cp "$file" "$dir/wrapped.json"
    out=$(HOME=$home "$CODEMODE" --root "$state" mcp wrap "$file" 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && cmp -s "$file" "$dir/wrapped.json" && grep -q '^filesystem: already wrapped' <<<"$out" &&
      grep -q 'nothing to change' <<<"$out"; then
      pass "mcp wrap [$shape]: wrapping twice is wrapping once (the file byte for byte the same)"
    else
      fail "mcp wrap [$shape]: idempotence (rc=$rc)" "${out//$'\n'/ | }" "$(diff "$dir/wrapped.json" "$file" | head -5)"
    fi
    out=$("$CODEMODE" mcp unwrap "$file" 2>&1)
    rc=$?
    # Same keys, values and order (jq -c keeps the order; numbers and strings as written).
    if [ $rc -eq 0 ] && [ "$(jq -c . "$file")" = "$(jq -c . "$dir/original.json")" ] && grep -q '"ratio": 1.50' "$file" &&
      grep -q 'théme' "$file" && cmp -s "$file.codemode-backup" "$dir/wrapped.json"; then
      pass "mcp unwrap [$shape]: every entry as it was, the rest of the file's keys, values and order kept"
    else
      fail "mcp unwrap [$shape] (rc=$rc)" "${out//$'\n'/ | }" "$(diff <(jq . "$dir/original.json") <(jq . "$file") | head -10)"
    fi
  done

  # Bad files: refused, the file and the problem named, nothing changed or left.
  local bad=$ww/bad.json nomap=$ww/nomap.json
  printf '{"mcpServers": {"x": {"command": "npx",}\n' >"$bad"
  printf '{"servers2": {"x": {"command": "npx"}}}\n' >"$nomap"
  cp "$bad" "$bad.orig"
  cp "$nomap" "$nomap.orig"
  out=$("$CODEMODE" mcp wrap "$bad" 2>&1)
  rc=$?
  out2=$("$CODEMODE" mcp wrap "$nomap" 2>&1)
  rc2=$?
  if [ $rc -ne 0 ] && grep -q "$bad: invalid JSON" <<<"$out" && cmp -s "$bad" "$bad.orig" && [ ! -e "$bad.codemode-backup" ] &&
    [ $rc2 -ne 0 ] && grep -q "$nomap: no server map" <<<"$out2" && cmp -s "$nomap" "$nomap.orig" &&
    [ ! -e "$nomap.codemode-backup" ]; then
    pass "mcp wrap: bad files refused with the file and the problem named, unchanged ($out | $out2)"
  else
    fail "mcp wrap: bad files (rc=$rc, $rc2)" "$out" "$out2"
  fi
  out=$("$CODEMODE" mcp wrap "$file" --server nosuch 2>&1)
  rc=$?
  if [ $rc -ne 0 ] && grep -q -- "--server nosuch: no such server" <<<"$out"; then
    pass "mcp wrap --server NAME: an unknown name refused ($out)"
  else
    fail "mcp wrap --server unknown (rc=$rc)" "$out"
  fi

  # Root's own cache: /root/.npm as the :cow source (issue 29: refused as a host system tree
  # before). /root is a tmpfs in a private mount namespace here: the host's is never touched.
  if [ "$(id -u)" -eq 0 ]; then
    dir=$ww/as-root
    file=$dir/claude_desktop_config.json
    mkdir -p "$dir/files"
    echo "hello from the host" >"$dir/files/hello.txt"
    write_config claude-desktop "$file" "$dir"
    out=$(cd "$work" && unshare -m --propagation private bash -c '
      mount -t tmpfs -o mode=0700 tmpfs /root && cp -a "$1" /root/.npm || exit 99
      HOME=/root "$2" --root "$3" mcp wrap "$4" --server filesystem >/dev/null || exit 98
      grep -q "\"/root/.npm:/root/.npm:cow\"" "$4" || exit 97
      HOME=/root timeout 180 node client.mjs "FS:$5" --entry "$4" filesystem' _ \
      "$cache/npx-home/.npm" "$CODEMODE" "$state" "$file" "$dir/files" 2>&1)
    rc=$?
    if [ $rc -eq 0 ]; then
      pass "mcp wrap as root: root's own ~/.npm (/root/.npm) is the :cow cache, the server runs from it"
    else
      fail "mcp wrap as root with /root/.npm (rc=$rc)" "${out//$'\n'/ | }"
    fi
  fi
}
