#!/usr/bin/env bats
# /proc and /sys must be the real thing when the runtime writes through them:
#   CVE-2019-16884 / CVE-2019-19921 / CVE-2023-27561: /proc replaced by a fake mount (a bind of
#     a plain directory over /proc from the config), so LSM labels and oom_score_adj writes land
#     in the fake and the container runs unconfined — or on a host file.
#   CVE-2025-52881: a config mount redirects a /proc file the runtime writes (a sysctl,
#     /proc/self/oom_score_adj) to a host file.
# The symlinked-/proc cases are in hostile-rootfs.bats.

load lib

@test "CVE-2019-16884: a plain directory bind-mounted over /proc is refused or never written" {
  mkdir -p "$TEST_DIR/fakeproc/self/attr" "$TEST_DIR/fakeproc/sys/net/ipv4"
  echo 0 >"$TEST_DIR/fakeproc/self/oom_score_adj"
  echo 0 >"$TEST_DIR/fakeproc/sys/net/ipv4/ip_forward"
  : >"$TEST_DIR/fakeproc/self/attr/exec"
  local before
  before=$(cd "$TEST_DIR/fakeproc" && find . -type f -exec sha256sum {} + | sort)
  set_cfg '.mounts += [{"destination": "/proc", "type": "bind", "source": $src, "options": ["rbind"]}]
    | .process.oomScoreAdj = 123 | .linux.sysctl = {"net.ipv4.ip_forward": "1"}' \
    --arg src "$TEST_DIR/fakeproc"
  set_args sh -c 'cat /proc/self/oom_score_adj'
  run_cm run -b "$BUNDLE" "$CID"
  echo "# $status: $output" >&3
  if [ "$status" -ne 0 ]; then assert_clear_refusal /proc; else [ "$stdout" = 123 ]; fi
  [ "$(cd "$TEST_DIR/fakeproc" && find . -type f -exec sha256sum {} + | sort)" = "$before" ]
  assert_host_untouched
}

@test "CVE-2025-52881: a bind mount over /proc/sys/<sysctl> does not redirect the sysctl write" {
  set_cfg '.mounts += [{"destination": "/proc/sys/net/ipv4/ip_forward", "type": "bind", "source": $s,
    "options": ["bind"]}] | .linux.sysctl = {"net.ipv4.ip_forward": "1"}' --arg s "$SENTINEL/sentinel"
  set_args sh -c 'cat /proc/sys/net/ipv4/ip_forward'
  run_cm run -b "$BUNDLE" "$CID"
  echo "# $status: $output" >&3
  if [ "$status" -ne 0 ]; then assert_clear_refusal /proc/sys/net/ipv4/ip_forward; fi
  assert_host_untouched
}

@test "CVE-2025-52881: a bind mount over /proc/1/oom_score_adj does not redirect the runtime's write" {
  set_cfg '.mounts += [{"destination": "/proc/1/oom_score_adj", "type": "bind", "source": $s,
    "options": ["bind"]}] | .process.oomScoreAdj = 321' --arg s "$SENTINEL/sentinel"
  set_args sh -c 'cat /proc/self/oom_score_adj'
  run_cm run -b "$BUNDLE" "$CID"
  echo "# $status: $output" >&3
  if [ "$status" -eq 0 ]; then [ "$stdout" = 321 ]; else assert_clear_refusal oom_score_adj; fi
  assert_host_untouched
}

@test "CVE-2025-31133: /dev/null symlinked out with no /dev tmpfs: masked paths never get the host file" {
  hostile dev-null:abs
  # Without the /dev tmpfs the rootfs's own /dev/null (a symlink to the host sentinel) is what a
  # naive runtime would bind over the masked paths.
  set_cfg '.mounts |= map(select(.destination != "/dev"))'
  set_args sh -c '[ "$(stat -c %t:%T /proc/keys)" = 1:3 ] && [ "$(stat -c %t:%T /proc/timer_list)" = 1:3 ] && ! grep -q host-sentinel /proc/keys /proc/timer_list && echo MASKED-OK'
  run_cm run -b "$BUNDLE" "$CID"
  echo "# $status: $output" >&3
  if [ "$status" -eq 0 ]; then [[ $stdout == *MASKED-OK* ]]; else assert_clear_refusal /dev/null; fi
  assert_host_untouched
}
