#!/bin/bash
# In-VM tests of the ci profile's delegated cgroup v2 subtree (issue 26, src/cgroup/delegate.c):
# a ci job whose cgroup is given to the job's root the way systemd delegates, the host's podman
# nested in it with cgroups enabled, a nested `podman run --memory` limit below the job's own,
# and nothing left of any of it after the job. Its own variant (tests/vm/run.sh ci): the ci
# profile needs Linux 6.3 or later (idmapped tmpfs), which run.sh boots for it (Debian 12's 6.12
# kernel package). The delegated case runs the job through the runtime's own CLI (`codemode-ci
# run`) on a bundle whose image holds podman
# (tests/ci/make-podman-bundle.sh --no-config), its rootfs on a tmpfs, idmapped directly. Under
# TCG a nested podman run takes a minute.
# shellcheck source=tests/vm/guest-lib.sh
. "$CMVM_REPO/tests/vm/guest-lib.sh"
CI_ROOT=/run/cmvm-ci-state
W=/tmp/cmvm-ci
# codemode-run's cgroups are /codemode/<id>: the job's parent.
JOBS=$CG/codemode
echo "# kernel $(uname -r), controllers: $(cat $CG/cgroup.controllers)"

mkdir -p "$CI_ROOT"
# The guest's devtmpfs has no /dev/fd (bash's process substitution, the bundle maker need it).
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
cat >/run/cmvm-ci-img.json <<JSON
{"format": "docker-archive", "images": [{"tag": "bb", "platforms": [{"arch": "amd64",
  "layers": [[{"from_dir": "$TEMPLATE/rootfs"}]], "config": {"Cmd": ["sh"]},
  "history": [{"created": "2026-01-01T00:00:00Z", "created_by": "busybox rootfs"}]}]}]}
JSON
python3 "$CMVM_REPO/tests/image/mkimage.py" /run/cmvm-ci-img.json /run/cmvm-ci-img.tar
# The guest's / is an overlay over 9p: the job's rootfs goes on a tmpfs, which can be idmapped.
# Its own, not one over /tmp: that hid a repo cloned under /tmp (the script itself, the bundle
# maker, the binaries), and the guest ran nothing until its timeout.
mkdir -p "$W"
mount -t tmpfs -o mode=1777 tmpfs "$W"
# The job's image: podman, crun and conmon with no containers.conf of their own; the test image
# and the job's files in its /ws.
B=$W/podman
"$CMVM_REPO/tests/ci/make-podman-bundle.sh" --no-config "$B" 2>&1 | tail -n 8 | sed "s/^/# make-podman-bundle: /"
# A writable root of the job's own range must be an overlay or read-only: read-only, with the
# workspace and a copy of the image's /etc/containers (where the profile's drop-in goes) bound
# writable, owned by an unprivileged user (the profile refuses host root's), /run and /var/tmp
# tmpfs for podman.
WS=$W/ws
mkdir -p "$WS"
mv /run/cmvm-ci-img.tar "$WS/img.tar"
cp -a "$B/rootfs/etc/containers" "$W/etc-containers"
chown -R 65534:65534 "$WS" "$W/etc-containers"
jq --arg ws "$WS" --arg etc "$W/etc-containers" '.root.readonly = true | .mounts += [
    {destination: "/ws", type: "bind", source: $ws, options: ["rbind", "rw"]},
    {destination: "/etc/containers", type: "bind", source: $etc, options: ["rbind", "rw"]},
    {destination: "/run", type: "tmpfs", source: "tmpfs", options: ["nosuid", "nodev", "mode=755"]},
    {destination: "/var/tmp", type: "tmpfs", source: "tmpfs", options: ["nosuid", "nodev", "mode=1777"]}]' \
  "$B/config.json" >"$B/config.json.new" && mv "$B/config.json.new" "$B/config.json"
CODEMODE_CI=$(dirname "$CODEMODE")/codemode-ci

# owner FILE: its host uid.
owner() { stat -c %u "$1"; }

# ci_job ID SCRIPT: the job in the foreground through `codemode-ci run` (its status in CI_STATUS,
# its output in $W/out-ID and, as it comes, on the console), cwd /ws. What must look at a running
# job runs beside it, in the background, and waits for the job's /ws/ready.
ci_job() {
  local id=$1
  jq --arg s "$2" '.process.args = ["sh", "-c", $s] | .process.cwd = "/ws" | .process.terminal = false
      | .process.env += ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"]' \
    "$B/config.json" >"$B/config.json.new" && mv "$B/config.json.new" "$B/config.json"
  CI_STATUS=0
  timeout 900 "$CODEMODE_CI" --root "$CI_ROOT" run -b "$B" "$id" </dev/null 2>&1 | tee "$W/out-$id" |
    sed -u "s/^/CMVM: # $id: /" >/dev/ttyS0
  CI_STATUS=${PIPESTATUS[0]}
}

# No cgroup below the jobs' parent, no state, no process left in a job's cgroup.
ci_nothing_left() {
  local left
  wait_for 30 sh -c "[ -z \"\$(find $JOBS -mindepth 1 -type d 2>/dev/null)\" ]" >/dev/null || {
    echo "cgroups left below $JOBS: $(find $JOBS -mindepth 1 -type d)"
    return 1
  }
  wait_for 30 sh -c "[ -z \"\$(ls -A $CI_ROOT)\" ]" >/dev/null || { echo "state left: $(ls -A $CI_ROOT)"; return 1; }
  left=$(grep -l "^0::/codemode/" /proc/[0-9]*/cgroup 2>/dev/null)
  [ -z "$left" ] || { echo "processes left in job cgroups: $left"; return 1; }
}

# The host's side of the test, while the job waits: ownership, placement, the nested
# container's cgroup, exec. Its findings in $W/check.
delegated_check() {
  local d=$JOBS/ci1 r nested out rc=0
  wait_for 800 test -e "$WS/ready" >/dev/null || { echo "the job never got ready"; return 1; }
  r=$(awk 'NR == 1 {print $2}' "$WS/uid_map")
  echo "job range from $r; $d:"
  ls -ln "$d" | head -12
  # What is the job's root's, and what stays host root's.
  for f in "$d" "$d/cgroup.procs" "$d/cgroup.threads" "$d/cgroup.subtree_control" "$d/job" "$d/job/cgroup.procs"; do
    [ "$(owner "$f")" = "$r" ] || { echo "$f: owner $(owner "$f"), want $r"; rc=1; }
  done
  for f in "$d/memory.max" "$d/memory.swap.max" "$d/pids.max" "$d/cpu.max" "$d/cgroup.max.depth" \
    "$d/cgroup.max.descendants" "$d/cgroup.freeze" "$d/cgroup.kill" "$d/cgroup.type"; do
    [ "$(owner "$f")" = 0 ] || { echo "$f: owner $(owner "$f"), want 0"; rc=1; }
  done
  expect "$d/memory.max" 4294967296 || rc=1
  expect "$d/pids.max" 4096 || rc=1
  expect "$d/cgroup.max.descendants" 1024 || rc=1
  # No process in the delegated cgroup itself; the job's in its leaf; controllers handed down.
  [ -z "$(cat "$d/cgroup.procs")" ] || { echo "processes in $d itself: $(cat "$d/cgroup.procs")"; rc=1; }
  [ -n "$(cat "$d/job/cgroup.procs")" ] || { echo "no process in $d/job"; rc=1; }
  for c in memory pids cpu; do grep -qw "$c" "$d/cgroup.subtree_control" || { echo "$c not handed down"; rc=1; }; done
  # The nested container's cgroup: below the job's, outside its leaf, with podman's limit.
  nested=$(grep -lx 67108864 $(find "$d" -mindepth 2 -name memory.max ! -path "$d/job/*") 2>/dev/null)
  echo "nested container's memory.max: ${nested:-none}"
  [ -n "$nested" ] || { find "$d" -type d; rc=1; }
  # exec joins the leaf, never the delegated cgroup itself.
  out=$(timeout 120 "$CODEMODE_CI" --root "$CI_ROOT" exec ci1 cat /proc/self/cgroup </dev/null 2>&1)
  [ "$out" = "0::/job" ] || { echo "exec: $out"; rc=1; }
  return $rc
}

delegated() {
  local out rc=0
  rm -f "$WS/ready" "$WS/checked"
  { delegated_check >"$W/check" 2>&1; echo "check status $?" >>"$W/check"; touch "$WS/checked"; } </dev/null &
  ci_job ci1 'cat /proc/self/uid_map >uid_map; cat /proc/self/cgroup
    echo 1 >/sys/fs/cgroup/memory.max 2>/dev/null && echo memory.max-written || echo memory.max-refused
    echo 1 >/sys/fs/cgroup/pids.max 2>/dev/null && echo pids.max-written || echo pids.max-refused
    echo 100 >/sys/fs/cgroup/cgroup.max.descendants 2>/dev/null && echo max.descendants-written || echo max.descendants-refused
    grep " /sys/fs/cgroup " /proc/self/mountinfo | grep -q " rw," && echo cgroupfs-rw
    grep "^cgroups" /etc/containers/containers.conf.d/zz-codemode-ci.conf
    mkdir -p /sys/fs/cgroup/own/deeper && echo made-own-sub-cgroups
    date; podman load -q -i img.tar >/dev/null && date &&
      podman run -d --name n1 --memory 64m --network none localhost/test/bb:latest sleep 1000 >/dev/null &&
      echo "nested memory.max $(podman exec n1 cat /sys/fs/cgroup/memory.max)"
    touch ready; while [ ! -e checked ]; do sleep 0.2; done'
  wait
  cat "$W/check"
  grep -qx "check status 0" "$W/check" || rc=1
  [ "$CI_STATUS" = 0 ] || { echo "codemode-ci run exited $CI_STATUS"; rc=1; }
  out=$(cat "$W/out-ci1")
  for want in "0::/job" memory.max-refused pids.max-refused max.descendants-refused cgroupfs-rw \
    'cgroups = "enabled"' made-own-sub-cgroups "nested memory.max 67108864"; do
    grep -qxF -- "$want" <<<"$out" || { echo "missing in the job's output: $want"; rc=1; }
  done
  # The nested container was left running and the job made sub-cgroups of its own: the job's
  # end took them all, deepest first.
  ci_nothing_left || rc=1
  return $rc
}
t "ci: the job's cgroup is delegated (dir, cgroup.procs/threads/subtree_control its root's, limits host root's), nested podman --memory 64m below it, nothing left" delegated

# codemode-run's throwaway root (an overlay over idmapped clones of the rootfs, assembled by the
# runtime) on this kernel, which takes overlay layers only from mounts in the caller's mount
# namespace (Linux before 6.15): the runtime assembles it again in a private mount namespace
# where the clones are attached (src/linux/idmap.c). It failed "assemble an overlay over
# idmapped layers: Invalid argument" before.
overlay_root() {
  local out st rc=0
  out=$(timeout 300 "$(dirname "$CODEMODE")/codemode-run" --profile ci --rootfs "$B/rootfs" -- \
    sh -c 'echo written >/overlay-root-check && cat /overlay-root-check && touch /etc/x && echo etc-writable' \
    </dev/null 2>"$W/overlay-err")
  st=$?
  { echo "$out"; cat "$W/overlay-err"; } | sed 's/^/# overlay: /'
  [ "$st" = 0 ] || { echo "codemode-run exited $st"; rc=1; }
  [ "$out" = "written
etc-writable" ] || rc=1
  [ ! -e "$B/rootfs/overlay-root-check" ] || { echo "the rootfs itself was written"; rc=1; }
  ci_nothing_left || rc=1
  return $rc
}
t "ci: codemode-run --profile ci's throwaway overlay root works before Linux 6.15 (layers attached in a private mount namespace), the rootfs untouched" overlay_root

echo "# $T tests, $FAILED failed"
