#!/bin/bash
# tests/rootless/run.sh — codemode and codemode-run as an unprivileged user, the way MCP clients
# (and CI agents) run them. TAP on stdout; exit 77 with the reason when this machine cannot.
#
# Run as root: it makes a test user with useradd and runs the suites as that user (setpriv), all
# inside a private mount namespace whose /etc is a tmpfs copy of the host's, so neither useradd
# nor the /etc/subuid variants ever touch the host's files; the user is removed at the end and
# the copy goes with the namespace. Passes:
#   1 no subordinate ids   tests/rootless/rootless.bats and features.bats (Landlock, learn mode
#                          and learned policies as the user), ci.bats's bundle job (--profile
#                          ci), and as that user tests/security's mcp_escape*.bats and the
#                          CVE-2019-5736 exec case (the runtime copy under test is the user's
#                          own, writable file)
#   2 /etc/subuid ranges   rootless.bats again (newuidmap maps 65536 ids), ci.bats (ci jobs: a
#                          bundle job; a --host C build as the job's root and as its uid 1000,
#                          a subordinate id on the host; then "user:100000:1000": the warning
#                          that the range is smaller than a ci job's), ci_nested.bats (nested
#                          podman load, run and build; apt-get install in a Debian image copied
#                          for the user), every rootfs-tools bundle maker
#                          (tests/integration/rootfs_tools.bats), the real MCP SDK client
#                          against @modelcontextprotocol/server-filesystem through codemode-run
#                          --profile mcp (tests/mcp/run.sh, its non-Docker cases: 1-4 and learn
#                          mode, 14-18)
#   3 delegated cgroup v2  a cgroup v2 subtree chowned to the user (the host's v2 hierarchy,
#                          mounted at /sys/fs/cgroup in the namespace): the container's cgroup is
#                          made there, holds its processes, and is removed at delete
#   4 egress               tests/rootless/egress.bats as the user inside the egress suite's test
#                          internet (tests/egress/lab.bash, network namespaces made here):
#                          codemode-run --profile mcp --allow-host, its broker the user's;
#                          two of its cases again with /etc/subuid ranges; ci_npm.bats: the npm
#                          ci job of tests/ci/npm.bats against its verdaccio mirror (root starts
#                          it in the lab), --profile ci --allow-host as the user
# Knobs: CM_ROOTLESS_PASSES="1 2 3 4" (default all), CM_TEST_FILTER (bats --filter).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
: "${CODEMODE:=$repo/build/codemode}"
export CODEMODE
CODEMODE_RUN=${CODEMODE_RUN:-$(dirname "$CODEMODE")/codemode-run}
passes=${CM_ROOTLESS_PASSES:-1 2 3 4}

cannot() {
  echo "tests/rootless: $*" >&2
  exit 77
}

if [ -z "${CM_ROOTLESS_INNER:-}" ]; then
  [ "$(id -u)" -eq 0 ] || cannot "needs root (it creates the test user)"
  for tool in useradd userdel setpriv unshare bats jq; do
    command -v $tool >/dev/null || cannot "$tool is not installed"
  done
  command -v newuidmap >/dev/null || cannot "newuidmap is not installed (apt-get install uidmap; tests/rootless/deps.sh)"
  [ -x "$CODEMODE" ] && [ -x "$CODEMODE_RUN" ] || { echo "tests/rootless: $CODEMODE or $CODEMODE_RUN is not built" >&2; exit 1; }
  # Every directory above the repository must be searchable by the test user.
  d=$repo
  while [ "$d" != / ]; do
    [ "$(($(stat -c %a "$d" | sed 's/^.*\(.\)$/\1/') & 1))" -eq 1 ] || cannot "$d is not searchable by other users"
    d=$(dirname "$d")
  done
  exec unshare -m --propagation private env CM_ROOTLESS_INNER=1 "$0" "$@"
fi

# --- inside the private mount namespace ---------------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/cm-rootless.XXXXXX")
chmod 0755 "$work"
user=cmrl$$
lab=
cleanup() {
  [ -n "$lab" ] && lab_down
  userdel "$user" >/dev/null 2>&1
  # The /etc copy's tmpfs is a mount point here only (rm would stop at it and leave $work behind
  # on the host); /etc stays bound until the namespace goes.
  umount -l "$work/etc" 2>/dev/null
  # Files a container made under a subordinate uid are not the user's to remove.
  rm -rf --one-file-system "$work" 2>/dev/null
}
trap cleanup EXIT

# /etc: a copy on a tmpfs, bound over the host's in this namespace only.
mkdir -p "$work/etc"
mount -t tmpfs -o mode=0755 tmpfs "$work/etc" || cannot "mount a tmpfs for the /etc copy"
cp -a /etc/. "$work/etc/" && mount --bind "$work/etc" /etc || cannot "bind the /etc copy over /etc"
: >/etc/subuid
: >/etc/subgid
# No automatic subordinate ids: the passes set /etc/subuid themselves. A uid of this run's own
# (from our pid), not the first free one: runs on the same machine at the same time (CI and a
# developer's) would otherwise share uid 1001, and the tests count the user's processes.
useradd -M -d "$work/home" -s /bin/bash -K SUB_UID_COUNT=0 -K SUB_GID_COUNT=0 -u $((20000 + $$ % 40000)) "$user" 2>/dev/null ||
  useradd -M -d "$work/home" -s /bin/bash -K SUB_UID_COUNT=0 -K SUB_GID_COUNT=0 "$user" ||
  cannot "useradd $user failed"
uid=$(id -u "$user")
gid=$(id -g "$user")
mkdir -p "$work/home" "$work/xdg" "$work/tmp"
chmod 0700 "$work/xdg"
chown "$uid:$gid" "$work/home" "$work/xdg" "$work/tmp"
echo "# test user $user (uid $uid), work dir $work"

# as_user CMD…: CMD as the test user, with a clean environment (what an MCP client would pass).
# CM_USER_NETNS: a network namespace (a /run/netns path) to run CMD in.
as_user() {
  ${CM_USER_NETNS:+nsenter --net="$CM_USER_NETNS"} setpriv --reuid="$uid" --regid="$gid" --init-groups \
    env -i HOME="$work/home" USER="$user" LOGNAME="$user" PATH=/usr/local/bin:/usr/bin:/bin \
    XDG_RUNTIME_DIR="$work/xdg" TMPDIR="$work/tmp" CODEMODE="$CODEMODE" CODEMODE_RUN="$CODEMODE_RUN" \
    CM_TEST_TOKEN="${CM_TEST_TOKEN:-cm-rootless-$$}" CM_RUN_TAG="${CM_RUN_TAG:-rl}" CM_TIMEOUT="${CM_TIMEOUT:-60}" \
    CM_ROOTLESS_PASS="$pass" CM_ROOTLESS_SUBUID="$subuid" CM_HELPER_DIR="$work/helpers" \
    CM_ROOTLESS_ROOT_BUNDLE="$CM_ROOTLESS_ROOT_BUNDLE" \
    ${CM_EXTRA_ENV:-} "$@"
}

# run_bats LABEL FILE… [-- FILTER]: bats as the user, its TAP lines numbered on from ours.
n=0
emit() {
  local label=$1 line
  while IFS= read -r line; do
    case $line in
      "ok "* | "not ok "*)
        n=$((n + 1))
        # "ok 3 name" -> "ok N [label] name"
        line=$(sed -E "s/^(not ok|ok) [0-9]+ /\1 $n [$label] /" <<<"$line")
        echo "$line"
        ;;
      1..*) ;;
      *) echo "$line" ;;
    esac
  done
}
run_bats() {
  local label=$1 filter=${CM_TEST_FILTER:-}
  shift
  local files=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do files+=("$1"); shift; done
  [ "${1:-}" = -- ] && filter=${2:-}
  local args=(--tap)
  [ -n "$filter" ] && args+=(--filter "$filter")
  emit "$label" < <(as_user bats "${args[@]}" "${files[@]}" </dev/null 2>&1)
}

mkdir -p "$work/helpers"
chown "$uid:$gid" "$work/helpers"
# A bundle made by root: its files are root's, which the user's container sees as nobody's.
"$repo/rootfs-tools/make-busybox-bundle.sh" "$work/rootmade" >/dev/null 2>&1 ||
  echo "# could not make the root-made bundle"
export CM_ROOTLESS_ROOT_BUNDLE=$work/rootmade
subuid=0
for pass in $passes; do
  case $pass in
    1)
      subuid=0
      : >/etc/subuid
      : >/etc/subgid
      echo "# pass 1: rootless without subordinate ids (only uid $uid is mapped)"
      run_bats "no subuid" "$here/rootless.bats"
      # Landlock (issue 18) and learn mode (issue 19) as the user.
      run_bats "no subuid" "$here/features.bats"
      # A ci job (--profile ci) as the user: its bundle case only (the job's root is the user's
      # uid; its uid 1000 needs the subordinate range of pass 2).
      # ci jobs as the user: the bundle case, a --state directory two jobs share, and the
      # warning at start that the user has no subordinate ids (the job's root only).
      run_bats "no subuid" "$here/ci.bats" -- "ephemeral bundle job|--state directory|without subordinate ids"
      run_bats "no subuid" "$repo/tests/security/mcp_escape.bats" "$repo/tests/security/mcp_exec.bats"
      # The other cases put an attacker into a container whose init still waits for `start`: a
      # rootless runtime cannot enter one (its init is closed to it until it execs, which is the
      # protection), so they have no rootless form; rootless.bats covers the entrypoint case.
      run_bats "no subuid" "$repo/tests/security/cve-2019-5736.bats" -- "own pid namespace\): an exec'd"
      ;;
    2)
      subuid=1
      echo "$user:100000:65536" >/etc/subuid
      echo "$user:100000:65536" >/etc/subgid
      echo "# pass 2: rootless with /etc/subuid and /etc/subgid ranges (newuidmap, newgidmap)"
      run_bats "subuid" "$here/rootless.bats"
      # ci jobs as the user with its subordinate ranges: a build user of the job is one of them.
      run_bats "subuid" "$here/ci.bats"
      # A range smaller than a ci job's 65536 ids: the warning names the ids that then fail.
      echo "$user:100000:1000" >/etc/subuid
      echo "$user:100000:1000" >/etc/subgid
      CM_EXTRA_ENV="CM_ROOTLESS_SMALL_RANGE=100000:1000" run_bats "small subuid" "$here/ci.bats" -- "smaller subordinate range"
      echo "$user:100000:65536" >/etc/subuid
      echo "$user:100000:65536" >/etc/subgid
      # The heavier ci jobs as the user: nested podman, and apt-get in a Debian image whose
      # copy is the user's (ids shifted as the user's own unpack writes them: 0 -> the user,
      # N -> 100000+N-1), since an overlay copies up only files whose owner is mapped.
      deb_src=$repo/tests/ci/.work/debian
      [ -x "$deb_src/usr/bin/apt-get" ] || "$repo/tests/ci/deps.sh" >"$work/ci-deps.log" 2>&1 || true
      deb_user=
      if [ -x "$deb_src/usr/bin/apt-get" ] && cp -a "$deb_src" "$work/debian" &&
        python3 - "$work/debian" "$uid" "$gid" <<'PY'; then
import os, sys
top, uid, gid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def shift(i, own):
    return own if i == 0 else 100000 + i - 1
for d, dirs, files in os.walk(top):
    for name in [d] + [os.path.join(d, n) for n in dirs + files]:
        st = os.lstat(name)
        mode = st.st_mode
        os.lchown(name, shift(st.st_uid, uid), shift(st.st_gid, gid))
        # chown clears setuid/setgid bits: put them back (never on a symlink).
        if mode & 0o6000 and not os.path.islink(name):
            os.chmod(name, mode & 0o7777)
PY
        deb_user=$work/debian
      else
        echo "# pass 2: no Debian rootfs for the user: $(tail -n 1 "$work/ci-deps.log" 2>/dev/null)"
      fi
      CM_EXTRA_ENV="CM_ROOTLESS_DEBIAN=$deb_user" run_bats "subuid" "$here/ci_nested.bats"
      # Every bundle maker as a normal user (no chown: ownership comes from the mapping); their
      # images run as uid 1000, which needs the subordinate range.
      run_bats "subuid" "$repo/tests/integration/rootfs_tools.bats"
      # The real MCP client and server, as the user: the npm packages were installed by root
      # (tests/mcp/deps.sh); Docker's cases need the daemon's root.
      # The npm packages first, as root (the user may not write tests/mcp/.work).
      if command -v node >/dev/null && "$repo/tests/mcp/deps.sh" >"$work/mcp-deps.log" 2>&1; then
        before=$n
        emit "subuid mcp" < <(CM_EXTRA_ENV="CM_MCP_NO_DOCKER=1" as_user "$repo/tests/mcp/run.sh" </dev/null 2>"$work/mcp.err")
        [ -s "$work/mcp.err" ] && sed 's/^/# mcp: /' "$work/mcp.err" | tail -n 20
        if [ "$n" -eq "$before" ]; then
          n=$((n + 1))
          echo "not ok $n [subuid mcp] the MCP SDK client through codemode-run as the user: no result (see above)"
        fi
      else
        n=$((n + 1))
        echo "not ok $n [subuid mcp] the MCP SDK client through codemode-run as the user: tests/mcp/deps.sh failed"
        tail -n 5 "$work/mcp-deps.log" | sed 's/^/# /'
      fi
      ;;
    3)
      subuid=0
      : >/etc/subuid
      : >/etc/subgid
      # The host's cgroup2 hierarchy at /sys/fs/cgroup in this namespace (on a hybrid host it is
      # the one at /sys/fs/cgroup/unified), and a subtree of it delegated to the user, the way
      # systemd delegates user@UID.service: the directory and its cgroup.procs,
      # cgroup.subtree_control and cgroup.threads chowned, our shell moved into a leaf of it.
      if [ "$(stat -f -c %T /sys/fs/cgroup)" != cgroup2fs ]; then
        umount -l /sys/fs/cgroup 2>/dev/null
        mount -t cgroup2 none /sys/fs/cgroup || { echo "# pass 3: cannot mount cgroup2: skipped"; continue; }
      fi
      deleg=/sys/fs/cgroup/cm-rootless-${CM_RUN_TAG:-rl}-$$
      mkdir -p "$deleg/shell"
      for f in "$deleg" "$deleg/cgroup.procs" "$deleg/cgroup.subtree_control" "$deleg/cgroup.threads" \
        "$deleg/shell" "$deleg/shell/cgroup.procs"; do
        chown "$uid:$gid" "$f"
      done
      echo "# pass 3: rootless under a delegated cgroup v2 subtree ($deleg, controllers: $(cat "$deleg/cgroup.controllers"))"
      old_cgroup=$(sed -n 's/^0:://p' /proc/self/cgroup)
      echo $$ >"$deleg/shell/cgroup.procs"
      CM_EXTRA_ENV="CM_ROOTLESS_DELEGATED=$deleg" run_bats "delegated" "$here/rootless.bats" -- "cgroup"
      echo $$ >"/sys/fs/cgroup$old_cgroup/cgroup.procs"
      # Whatever is left there is a leak: the container's cgroup must be gone after delete.
      left=$(find "$deleg" -mindepth 1 -type d ! -path "$deleg/shell")
      n=$((n + 1))
      if [ -z "$left" ]; then
        echo "ok $n [delegated] nothing left in the delegated subtree"
      else
        echo "not ok $n [delegated] left in the delegated subtree: $left"
      fi
      rmdir "$deleg/shell" "$deleg" 2>/dev/null
      ;;
    4)
      subuid=0
      : >/etc/subuid
      : >/etc/subgid
      # The egress suite's test internet, made by root; the user's shell enters its "machine"
      # namespace, so codemode-run, the container and the broker only ever see the lab.
      missing=
      for tool in ip nsenter dnsmasq openssl curl python3 busybox; do
        command -v $tool >/dev/null || missing+=" $tool"
      done
      [ -x "$(dirname "$CODEMODE")/codemode-broker" ] || missing+=" codemode-broker (make)"
      if [ -n "$missing" ]; then
        echo "# pass 4: skipped, not installed:$missing (tests/rootless/deps.sh)"
        continue
      fi
      # shellcheck source=tests/egress/lab.bash
      . "$repo/tests/egress/lab.bash"
      lab=$work/lab
      if ! lab_up "$lab" 2>"$work/lab.err"; then
        n=$((n + 1))
        echo "not ok $n [egress] the egress test internet: lab_up failed: $(tr '\n' ' ' <"$work/lab.err")"
        continue
      fi
      echo "# pass 4: egress by host name as the user, inside the test internet ($LAB_NET)"
      # The MCP case's npm packages and client, as root (the user may not write tests/egress/.work).
      eg_work=
      if command -v node >/dev/null && "$repo/tests/egress/npm-install.sh" >"$work/egress-npm.log" 2>&1 &&
        cp "$repo/tests/egress/mcp-client.mjs" "$repo/tests/egress/.work/mcp-client.mjs"; then
        eg_work=$repo/tests/egress/.work
      else
        echo "# pass 4: the MCP case has no npm packages: $(tail -n 1 "$work/egress-npm.log" 2>/dev/null)"
      fi
      CM_USER_NETNS=/run/netns/$LAB_NET \
        CM_EXTRA_ENV="LAB_DNS=$LAB_DNS LAB_CA=$LAB_CA LAB_DIR=$LAB_DIR LAB_TOKEN=$LAB_TOKEN EG_WORK=$eg_work" \
        run_bats "egress" "$here/egress.bats"
      # The npm ci job (tests/ci/npm.bats) as the user, against the mirror root starts in the lab.
      # shellcheck source=tests/ci/mirror.bash
      . "$repo/tests/ci/mirror.bash"
      if [ -x "$repo/tests/ci/.work/verdaccio/node_modules/.bin/verdaccio" ] || "$repo/tests/ci/deps.sh" >"$work/ci-deps.log" 2>&1; then
        if mirror_up "$work/mirror" 2>"$work/mirror.err"; then
          CM_USER_NETNS=/run/netns/$LAB_NET \
            CM_EXTRA_ENV="LAB_DNS=$LAB_DNS MIRROR_DIR=$MIRROR_DIR MIRROR_URL=$MIRROR_URL CM_GREET_INTEGRITY=$CM_GREET_INTEGRITY" \
            run_bats "egress" "$here/ci_npm.bats"
        else
          n=$((n + 1))
          echo "not ok $n [egress] the npm mirror: $(tr '\n' ' ' <"$work/mirror.err")"
        fi
        mirror_down
      else
        n=$((n + 1))
        echo "not ok $n [egress] the npm mirror: tests/ci/deps.sh failed: $(tail -n 1 "$work/ci-deps.log")"
      fi
      # With subordinate ranges (newuidmap) too: allowed and refused.
      subuid=1
      echo "$user:100000:65536" >/etc/subuid
      echo "$user:100000:65536" >/etc/subgid
      CM_USER_NETNS=/run/netns/$LAB_NET \
        CM_EXTRA_ENV="LAB_DNS=$LAB_DNS LAB_CA=$LAB_CA LAB_DIR=$LAB_DIR LAB_TOKEN=$LAB_TOKEN" \
        run_bats "egress subuid" "$here/egress.bats" -- "${CM_TEST_FILTER:-through the proxy|another host is refused}"
      : >/etc/subuid
      : >/etc/subgid
      lab_down
      lab=
      ;;
  esac
done
echo "1..$n"
