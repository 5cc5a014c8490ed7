#!/usr/bin/env bats
# Hostile rootfs matrix (issue 3 item 8; CVE-2019-19921, CVE-2021-30465, CVE-2025-31133/52565
# classes): the image makes /proc, /sys, /dev, /dev/null, /dev/console, /dev/pts, a mount
# destination or the cwd a symlink pointing out of the rootfs — absolute, relative (../../..)
# or dangling. codemode must refuse with a clear error or keep everything inside the rootfs:
# never a mount on a host path, never a host file changed.
#
# Each case: make the rootfs hostile, run a container whose process checks that it sees what
# the spec says (prints VIEW-OK), then check the host: the sentinel dir untouched, nothing
# mounted under the test dir. codemode resolves every mount target inside the rootfs
# (RESOLVE_IN_ROOT): a symlinked /proc gets procfs mounted where the link points *inside* the
# rootfs, so the check follows the link (stat /proc/) rather than demanding a plain directory.

load lib

# What the process checks for each kind, when the runtime accepted the bundle.
view_check() {
  case $1 in
    proc) echo '[ "$(stat -f -c %T /proc/)" = proc ] && [ -r /proc/self/status ]' ;;
    sys) echo '[ "$(stat -f -c %T /sys/)" = sysfs ]' ;;
    dev) echo '[ "$(stat -f -c %T /dev/)" = tmpfs ] && [ "$(stat -c %F-%t:%T /dev/null)" = "character special file-1:3" ]' ;;
    dev-null) echo '[ "$(stat -c %F-%t:%T /dev/null)" = "character special file-1:3" ] && echo x >/dev/null' ;;
    dev-console) echo '[ -c /dev/console ] && [ "$(stat -L -c %t /dev/console)" = 88 ]' ;;
    dev-pts) echo '[ "$(stat -f -c %T /dev/pts/)" = devpts ]' ;;
    mount-target) echo '[ "$(cat /etc/hostname)" = from-spec ] && [ "$(stat -f -c %T /mnt/)" = tmpfs ]' ;;
    cwd) echo 'c=$(readlink /proc/self/cwd) && [ "$(stat -c %d:%i "$c")" = "$(stat -c %d:%i .)" ]' ;;
  esac
}

# hostile_case KIND STYLE [REFUSAL-WORD]: the whole check for one cell of the matrix.
hostile_case() {
  local kind=$1 style=$2
  hostile "$kind:$style"
  local check
  check="[ -e /$MARKER ] && $(view_check "$kind") && echo VIEW-OK"
  set_args sh -c "$check"
  case $kind in
    mount-target)
      printf 'from-spec\n' >"$TEST_DIR/hostname-src"
      # /mnt and /etc/hostname point at the same host dir: tmpfs first, so the file bind lands
      # in it instead of being hidden under it.
      set_cfg '.mounts += [{"destination": "/mnt", "type": "tmpfs", "source": "tmpfs"},
                 {"destination": "/etc/hostname", "type": "bind", "source": $src, "options": ["bind", "ro"]}]' \
        --arg src "$TEST_DIR/hostname-src"
      ;;
    cwd) set_cfg '.process.cwd = "/work"' ;;
  esac
  if [ "$kind" = dev-console ]; then
    bundle_set_terminal "$BUNDLE" true
    SOCK=$TEST_DIR/console.sock
    "$CM_HELPER_DIR/recvtty" "$SOCK" >"$TEST_DIR/tty.out" 2>"$TEST_DIR/tty.err" 3>&- &
    bg_track $!
    wait_file "$SOCK" 5
    run_cm run --console-socket "$SOCK" --detach -b "$BUNDLE" "$CID"
    if [ "$status" -eq 0 ]; then
      wait_status "$CID" stopped 10
      sleep 0.2
      stdout=$(tr -d '\r' <"$TEST_DIR/tty.out")
    fi
  else
    run_cm run -b "$BUNDLE" "$CID"
  fi
  echo "# $kind:$style -> status $status: $(head -c 300 <<<"$output")" >&3
  if [ "$status" -eq 0 ]; then
    [[ $stdout == *VIEW-OK* ]] || {
      echo "the container does not see what the spec says: $output" >&2
      return 1
    }
  else
    # A refusal is fine when it is clear: a codemode error naming the path it refused.
    assert_clear_refusal "${3:-/}"
  fi
  assert_host_untouched
}

@test "hostile /proc -> absolute symlink out" { hostile_case proc abs /proc; }
@test "hostile /proc -> relative ../../.. climb" { hostile_case proc rel /proc; }
@test "hostile /proc -> dangling symlink" { hostile_case proc dangling /proc; }
@test "hostile /sys -> absolute symlink out" { hostile_case sys abs /sys; }
@test "hostile /sys -> relative ../../.. climb" { hostile_case sys rel /sys; }
@test "hostile /sys -> dangling symlink" { hostile_case sys dangling /sys; }
@test "hostile /dev -> absolute symlink out" {
  codemode_only runc-dev-symlink-escape
  hostile_case dev abs /dev
}
@test "hostile /dev -> relative ../../.. climb" {
  codemode_only runc-dev-symlink-escape
  hostile_case dev rel /dev
}
@test "hostile /dev -> dangling symlink" { hostile_case dev dangling /dev; }
@test "hostile /dev/null -> absolute symlink out" { hostile_case dev-null abs /dev/null; }
@test "hostile /dev/null -> relative ../../.. climb" { hostile_case dev-null rel /dev/null; }
@test "hostile /dev/null -> dangling symlink" { hostile_case dev-null dangling /dev/null; }
@test "hostile /dev/console (terminal + console socket) -> absolute symlink out" { hostile_case dev-console abs /dev/console; }
@test "hostile /dev/console (terminal + console socket) -> relative ../../.. climb" { hostile_case dev-console rel /dev/console; }
@test "hostile /dev/console (terminal + console socket) -> dangling symlink" { hostile_case dev-console dangling /dev/console; }
@test "hostile /dev/pts -> absolute symlink out" { hostile_case dev-pts abs /dev/pts; }
@test "hostile /dev/pts -> relative ../../.. climb" { hostile_case dev-pts rel /dev/pts; }
@test "hostile /dev/pts -> dangling symlink" { hostile_case dev-pts dangling /dev/pts; }
@test "hostile mount destinations (/etc/hostname, /mnt) -> absolute symlink out" { hostile_case mount-target abs; }
@test "hostile mount destinations (/etc/hostname, /mnt) -> relative ../../.. climb" { hostile_case mount-target rel; }
@test "hostile mount destinations (/etc/hostname, /mnt) -> dangling symlink" { hostile_case mount-target dangling; }
@test "hostile cwd -> absolute symlink out" { hostile_case cwd abs /work; }
@test "hostile cwd -> relative ../../.. climb" { hostile_case cwd rel /work; }
@test "hostile cwd -> dangling symlink" { hostile_case cwd dangling /work; }

@test "hostile /etc -> relative climb, and every /dev entry symlinked out at once" {
  hostile dotdot dev-entries
  set_args sh -c "[ -e /$MARKER ] && [ \"\$(stat -c %t:%T /dev/null)\" = 1:3 ] && echo VIEW-OK"
  run_cm run -b "$BUNDLE" "$CID"
  echo "# status $status: $output" >&3
  if [ "$status" -eq 0 ]; then [[ $stdout == *VIEW-OK* ]]; else assert_clear_refusal /; fi
  assert_host_untouched
}
