#!/usr/bin/env bats
# create → start → kill → delete, state, pid files, ids.

load ../lib/helpers

@test "create leaves the container 'created' with its init alive" {
  set_args sleep 1000
  run_cm create --bundle "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  run cm state "$CID"
  [ "$status" -eq 0 ]
  echo "$output" | jq -e --arg id "$CID" --arg b "$BUNDLE" '
    .id == $id and .status == "created" and .pid > 0 and .bundle == $b
    and (.ociVersion | type == "string") and has("created")'
  local pid created
  pid=$(echo "$output" | jq -r .pid)
  kill -0 "$pid"
  # The init must not have run the user process yet.
  ! grep -q sleep "/proc/$pid/cmdline"
  # created: RFC 3339 in UTC with nanoseconds, and now. runc writes Go's RFC3339Nano, which drops
  # the fraction's trailing zeros (".12345678Z" one time in ten); codemode all nine digits.
  created=$(echo "$output" | jq -r .created)
  local frac='\.[0-9]{9}'
  [ "$CM_RUNTIME" = codemode ] || frac='(\.[0-9]{1,9})?'
  [[ "$created" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}${frac}Z$ ]]
  local age=$(($(date +%s) - $(date -d "$created" +%s)))
  [ "$age" -ge 0 ] && [ "$age" -lt 60 ]
}

@test "state has the rootfs path and the annotations" {
  set_args sleep 1000
  set_cfg '.annotations = {"org.example.key": "value"}'
  run_cm create --bundle "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  run cm state "$CID"
  echo "$output" | jq -e '.annotations["org.example.key"] == "value"'
  echo "$output" | jq -e --arg r "$BUNDLE/rootfs" '.rootfs == $r'
}

@test "create -b is --bundle, and the bundle defaults to the current directory" {
  set_args sleep 1000
  run_cm create -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  cd "$BUNDLE"
  run_cm create "$CID-cwd"
  [ "$status" -eq 0 ]
  [ "$(state_field "$CID-cwd" bundle)" = "$BUNDLE" ]
}

@test "create --pid-file writes the pid that state reports" {
  set_args sleep 1000
  run_cm create --bundle "$BUNDLE" --pid-file "$TEST_DIR/pid" "$CID"
  [ "$status" -eq 0 ]
  [ -s "$TEST_DIR/pid" ]
  [ "$(cat "$TEST_DIR/pid")" = "$(state_field "$CID" pid)" ]
}

@test "start runs the process: created → running" {
  set_args sleep 1000
  run_cm create --bundle "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  run cm start "$CID"
  [ "$status" -eq 0 ]
  wait_status "$CID" running
  grep -q sleep "/proc/$(state_field "$CID" pid)/cmdline"
}

@test "start of a running container fails" {
  set_args sleep 1000
  run_cm create --bundle "$BUNDLE" "$CID"
  cm start "$CID"
  run --separate-stderr cm start "$CID"
  [ "$status" -eq 1 ]
  if codemode_part error-wording; then
    [[ "$stderr" == codemode:* ]]
  fi
}

@test "a started process that exits leaves the container 'stopped'" {
  set_args true
  run_cm create --bundle "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  cm start "$CID"
  wait_status "$CID" stopped
}

@test "kill → stopped → delete → does not exist" {
  set_args sleep 1000
  run_cm create --bundle "$BUNDLE" "$CID"
  cm start "$CID"
  wait_status "$CID" running
  local pid
  pid=$(state_field "$CID" pid)
  run cm kill "$CID" KILL
  [ "$status" -eq 0 ]
  wait_status "$CID" stopped
  ! kill -0 "$pid" 2>/dev/null
  run cm delete "$CID"
  [ "$status" -eq 0 ]
  run --separate-stderr cm state "$CID"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"does not exist"* ]]
  if codemode_part error-wording; then
    [[ "$stderr" == *"container does not exist: \"$CID\""* ]]
  fi
  [ ! -e "$ROOT/$CID" ]
}

@test "kill defaults to SIGTERM" {
  # sh as pid 1 only gets signals it handles: trap TERM and leave with 42.
  set_args sh -c 'trap "exit 42" TERM; while :; do sleep 0.1; done'
  run_cm create --bundle "$BUNDLE" "$CID"
  cm start "$CID"
  wait_status "$CID" running
  sleep 0.3 # let the shell install its trap
  run cm kill "$CID"
  [ "$status" -eq 0 ]
  wait_status "$CID" stopped
}

@test "kill accepts 9, KILL and SIGKILL" {
  local sig n=0
  set_args sleep 1000
  for sig in 9 KILL SIGKILL; do
    n=$((n + 1))
    run_cm create --bundle "$BUNDLE" "$CID-$n"
    [ "$status" -eq 0 ]
    cm start "$CID-$n"
    wait_status "$CID-$n" running
    run cm kill "$CID-$n" "$sig"
    echo "signal $sig: $status $output"
    [ "$status" -eq 0 ]
    wait_status "$CID-$n" stopped
    cm delete "$CID-$n"
  done
}

@test "kill accepts other signals by SIG-prefixed name (SIGUSR1)" {
  set_args sh -c 'trap "exit 0" TERM USR1; while :; do sleep 0.1; done'
  run_cm create --bundle "$BUNDLE" "$CID"
  cm start "$CID"
  wait_status "$CID" running
  sleep 0.3
  run cm kill "$CID" SIGUSR1
  [ "$status" -eq 0 ]
  wait_status "$CID" stopped
}

@test "kill with an unknown signal is an error" {
  set_args sleep 1000
  run_cm create --bundle "$BUNDLE" "$CID"
  run --separate-stderr cm kill "$CID" NOTASIGNAL
  [ "$status" -eq 1 ]
  if codemode_part error-wording; then
    [[ "$stderr" == codemode:* ]]
  fi
  run --separate-stderr cm kill "$CID" 99999
  [ "$status" -eq 1 ]
  [ "$(state_field "$CID" status)" = created ]
}

@test "kill of a created container kills the waiting init" {
  set_args sleep 1000
  run_cm create --bundle "$BUNDLE" "$CID"
  run cm kill "$CID" KILL
  [ "$status" -eq 0 ]
  wait_status "$CID" stopped
}

@test "kill of a stopped container says 'container not running'" {
  set_args true
  run_cm create --bundle "$BUNDLE" "$CID"
  cm start "$CID"
  wait_status "$CID" stopped
  run --separate-stderr cm kill "$CID" KILL
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"container not running"* ]]
}

@test "kill ID 0 probes the init: 0 while it lives (created, running), 'not running' once stopped" {
  set_args sleep 1000
  run_cm create --bundle "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  run_cm kill "$CID" 0
  [ "$status" -eq 0 ]
  [ "$(state_field "$CID" status)" = created ]
  cm start "$CID"
  wait_status "$CID" running
  run_cm kill "$CID" 0
  [ "$status" -eq 0 ]
  [ "$(state_field "$CID" status)" = running ]
  cm kill "$CID" KILL
  wait_status "$CID" stopped
  run_cm kill "$CID" 0
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"container not running"* ]]
}

@test "kill --all of a stopped container is not an error" {
  set_args true
  run_cm create --bundle "$BUNDLE" "$CID"
  cm start "$CID"
  wait_status "$CID" stopped
  run_cm kill --all "$CID" KILL
  [ "$status" -eq 0 ]
  run_cm kill --all "$CID" 0
  [ "$status" -eq 0 ]
  [ "$(state_field "$CID" status)" = stopped ]
  # Without --all it still says so, as above.
  run_cm kill "$CID" TERM
  [ "$status" -eq 1 ]
  # A container that does not exist is an error with --all too.
  run_cm kill --all "nosuch-$CID" KILL
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"does not exist"* ]]
}

@test "delete of a running container without --force fails and leaves it running" {
  set_args sleep 1000
  run_cm create --bundle "$BUNDLE" "$CID"
  cm start "$CID"
  wait_status "$CID" running
  run --separate-stderr cm delete "$CID"
  [ "$status" -eq 1 ]
  if codemode_part error-wording; then
    [[ "$stderr" == codemode:* ]]
  fi
  [ "$(state_field "$CID" status)" = running ]
}

@test "delete --force kills and removes a running container" {
  set_args sleep 1000
  run_cm create --bundle "$BUNDLE" "$CID"
  cm start "$CID"
  wait_status "$CID" running
  local pid
  pid=$(state_field "$CID" pid)
  run cm delete --force "$CID"
  [ "$status" -eq 0 ]
  ! kill -0 "$pid" 2>/dev/null
  run cm state "$CID"
  [ "$status" -eq 1 ]
}

@test "delete of a created container (never started) works" {
  set_args sleep 1000
  run_cm create --bundle "$BUNDLE" "$CID"
  local pid
  pid=$(state_field "$CID" pid)
  run cm delete --force "$CID"
  [ "$status" -eq 0 ]
  ! kill -0 "$pid" 2>/dev/null
  [ -z "$(cm list -q)" ]
}

# containerd deletes with --force when it cleans up after a failed create, and relies on this.
@test "delete --force of a container that does not exist succeeds; without --force it is an error" {
  run --separate-stderr cm delete --force nosuch
  [ "$status" -eq 0 ]
  [ -z "$output" ]
  [ ! -e "$ROOT/nosuch" ]
  run --separate-stderr cm delete nosuch
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"does not exist"* ]]
  if codemode_part error-wording; then
    [[ "$stderr" == *'container does not exist: "nosuch"'* ]]
  fi
  # An id no container could have is still refused, even with --force.
  run --separate-stderr cm delete --force ../x
  [ "$status" -eq 1 ]
}

@test "a duplicate id is refused and the first container is untouched" {
  set_args sleep 1000
  run_cm create --bundle "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  local pid
  pid=$(state_field "$CID" pid)
  run_cm create --bundle "$BUNDLE" "$CID"
  [ "$status" -eq 1 ]
  if codemode_part error-wording; then
    [[ "$stderr" == codemode:* ]]
  fi
  [[ "$stderr" == *exist* ]]
  [ "$(state_field "$CID" pid)" = "$pid" ]
  [ "$(state_field "$CID" status)" = created ]
}

@test "invalid ids are refused and create nothing" {
  local id long
  long=$(printf 'a%.0s' $(seq 1025))
  for id in "../x" "a/b" "" "$long" "." ".." "a b" $'a\nb'; do
    run_cm create --bundle "$BUNDLE" "$id"
    echo "id '${id:0:40}': status $status: $stderr"
    [ "$status" -eq 1 ]
    if codemode_part error-wording; then
      [[ "$stderr" == codemode:* ]]
    fi
  done
  # Nothing escaped the state dir, nothing was left in it.
  [ ! -e "$TEST_DIR/x" ]
  [ ! -e "$ROOT/a" ]
  [ -z "$(find "$ROOT" -mindepth 1 -maxdepth 1 -type d)" ]
}

@test "an id of 1024 characters is fine" {
  local id
  id=$(printf 'b%.0s' $(seq 1024))
  set_args true
  run_cm run -b "$BUNDLE" "$id"
  # Allowed by the contract; if the runtime caps lower it must say so clearly (codemode and
  # runc 1.1.5 both do: the state dir is named after the id, and a name is at most 255 bytes).
  if [ "$status" -ne 0 ]; then
    [ "$status" -eq 1 ]
    [[ "$stderr" == *"too long"* ]]
    if codemode_part error-wording; then
      [[ "$stderr" == codemode:* ]]
    fi
  fi
}

@test "ids with letters, digits, '_', '+', '-' and '.' work" {
  set_args true
  run_cm run -b "$BUNDLE" "cm-test_x+1.2-$RANDOM"
  [ "$status" -eq 0 ]
}
