#!/usr/bin/env bats
# `list`: table, json and -q.

load ../lib/helpers

make_two() {
  set_args sleep 1000
  run_cm create --bundle "$BUNDLE" "$CID-a"
  [ "$status" -eq 0 ]
  run_cm run --detach -b "$BUNDLE" "$CID-b"
  [ "$status" -eq 0 ]
}

@test "list of an empty root prints only the header" {
  run cm list
  [ "$status" -eq 0 ]
  [ "${#lines[@]}" -eq 1 ]
  [[ "${lines[0]}" == ID* ]]
}

@test "list prints a table with one row per container" {
  make_two
  run cm list
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" =~ ^ID\ +PID\ +STATUS\ +BUNDLE ]]
  [ "${#lines[@]}" -eq 3 ]
  local row
  row=$(printf '%s\n' "${lines[@]}" | grep "^$CID-a ")
  [[ "$row" == *created* ]]
  [[ "$row" == *"$BUNDLE"* ]]
  [[ "$row" == *" $(state_field "$CID-a" pid) "* ]]
  printf '%s\n' "${lines[@]}" | grep "^$CID-b " | grep -q running
}

@test "list --format json is an array of states" {
  make_two
  run --separate-stderr cm list --format json
  [ "$status" -eq 0 ]
  echo "$output" | jq -e --arg a "$CID-a" --arg b "$CID-b" '
    type == "array" and length == 2
    and (map(select(.id == $a))[0].status == "created")
    and (map(select(.id == $b))[0].status == "running")
    and all(.[]; .pid > 0 and (.bundle | type == "string"))'
}

@test "list --format json gives each container's rootfs, as state does (issue 28)" {
  make_two
  run --separate-stderr cm list --format json
  [ "$status" -eq 0 ]
  echo "$output"
  local want
  want=$(cd "$BUNDLE/rootfs" && pwd -P)
  echo "$output" | jq -e --arg r "$want" 'length == 2 and all(.[]; .rootfs == $r)'
  [ "$(echo "$output" | jq -r --arg a "$CID-a" '.[] | select(.id == $a) | .rootfs')" = "$(state_field "$CID-a" rootfs)" ]
}

@test "list --format json of an empty root is an empty array" {
  run --separate-stderr cm list --format json
  [ "$status" -eq 0 ]
  echo "$output" | jq -e 'length == 0'
}

@test "list -q prints only the ids" {
  make_two
  run cm list -q
  [ "$status" -eq 0 ]
  [ "$(printf '%s\n' "${lines[@]}" | sort | tr '\n' ' ')" = "$CID-a $CID-b " ]
}

@test "list --format table is the default" {
  make_two
  run cm list
  local default=$output
  run cm list --format table
  [ "$status" -eq 0 ]
  [ "$output" = "$default" ]
}

@test "list --format with a bad value is an error" {
  run --separate-stderr cm list --format yaml
  [ "$status" -eq 1 ]
  if codemode_part error-wording; then
    [[ "$stderr" == codemode:* ]]
  fi
}

@test "list shows stopped containers as stopped" {
  set_args true
  run cm run --keep -b "$BUNDLE" "$CID"
  [ "$status" -eq 0 ]
  run cm list --format json
  echo "$output" | jq -e --arg id "$CID" 'map(select(.id == $id))[0].status == "stopped"'
}

# runc sorts by id and names the owner of each container's state dir (root here).
@test "list is sorted by id, in the table, -q and json, and fills OWNER" {
  set_args sleep 1000
  local id
  for id in zz mm aa; do
    run_cm create --bundle "$BUNDLE" "$CID-$id"
    [ "$status" -eq 0 ]
  done
  run_cm list -q
  [ "$(printf '%s ' "${lines[@]}")" = "$CID-aa $CID-mm $CID-zz " ]
  run_cm list
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" =~ ^ID\ +PID\ +STATUS\ +BUNDLE\ +CREATED\ +OWNER$ ]]
  [ "$(printf '%s\n' "${lines[@]:1}" | awk '{ print $1 }' | tr '\n' ' ')" = "$CID-aa $CID-mm $CID-zz " ]
  [ "$(printf '%s\n' "${lines[@]:1}" | awk '{ print $NF }' | sort -u)" = root ]
  run --separate-stderr cm list --format json
  [ "$status" -eq 0 ]
  echo "$output" | jq -e --arg p "$CID" '[.[].id] == [$p + "-aa", $p + "-mm", $p + "-zz"] and all(.[]; .owner == "root")'
}
