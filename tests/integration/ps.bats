#!/usr/bin/env bats
# `ps`: the container's processes, as a ps(1) table (default) or a JSON array of host pids.

load ../lib/helpers

@test "ps lists the container's processes: the table has init's row, json its pid" {
  set_args sleep 1000
  run_cm run --detach -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  local pid
  pid=$(state_field "$CID" pid)
  run_cm ps "$CID"
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" == *PID*CMD* ]]
  [ "${#lines[@]}" -eq 2 ]
  [[ "${lines[1]}" == *" $pid "*"sleep 1000"* ]]
  run_cm ps --format json "$CID"
  [ "$status" -eq 0 ]
  echo "$stdout" | jq -e --argjson p "$pid" '. == [$p]'
}

@test "ps of a stopped container prints the header and no rows" {
  set_args true
  run_cm create --bundle "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  cm start "$CID"
  wait_status "$CID" stopped
  run_cm ps "$CID"
  [ "$status" -eq 0 ]
  [ "${#lines[@]}" -eq 1 ]
  [[ "${lines[0]}" == *PID*CMD* ]]
  run_cm ps --format json "$CID"
  [ "$status" -eq 0 ]
  echo "$stdout" | jq -e 'length == 0'
  if codemode_part ps-json-empty; then
    [ "$stdout" = "[]" ]
  fi
}

@test "ps of a container that does not exist is an error" {
  run_cm ps "nosuch-$CID"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"does not exist"* ]]
}
