# shellcheck shell=bash
# Rootless helpers and tests for the VM guests (guest-v2.sh, guest-systemd.sh): a test user made
# with useradd in the guest's own overlay (never the host's /etc), and codemode run as it.
RL_USER=cmvmrl
CODEMODE_RUN=$(dirname "$CODEMODE")/codemode-run

rl_user_setup() {
  id "$RL_USER" >/dev/null 2>&1 || useradd -M -d /run/cmvm-rl/home -s /bin/sh -K SUB_UID_COUNT=0 -K SUB_GID_COUNT=0 "$RL_USER"
  RL_UID=$(id -u "$RL_USER")
  mkdir -p /run/cmvm-rl/home /run/cmvm-rl/state /run/cmvm-rl/xdg
  chmod 0755 /run/cmvm-rl
  chmod 0700 /run/cmvm-rl/xdg
  chown "$RL_UID:$RL_UID" /run/cmvm-rl/home /run/cmvm-rl/state /run/cmvm-rl/xdg
  RL_XDG=/run/cmvm-rl/xdg
}

# rl_as CMD…: as the test user, with a clean environment (XDG_RUNTIME_DIR: RL_XDG).
rl_as() {
  setpriv --reuid="$RL_UID" --regid="$RL_UID" --init-groups \
    env -i HOME=/run/cmvm-rl/home PATH=/usr/local/bin:/usr/bin:/bin XDG_RUNTIME_DIR="$RL_XDG" "$@"
}

# AppArmor on Ubuntu 24.04+ lets an unconfined program create a user namespace only without any
# capability in it: codemode must say so with the fix, and its shipped profile must lift it.
rl_apparmor() {
  local knob=/proc/sys/kernel/apparmor_restrict_unprivileged_userns out rc=0
  [ -e "$knob" ] || { echo "this kernel ($(uname -r)) has no $knob"; return 1; }
  # A bundle of its own: no cgroupsPath (a rootless container may not name one outside its
  # delegated subtree).
  mkdir -p "$BUNDLES/rl-aa"
  jq --arg root "$TEMPLATE/rootfs" '.root.path = $root | .process.args = ["true"] | .process.terminal = false' \
    "$TEMPLATE/config.json" >"$BUNDLES/rl-aa/config.json"
  echo 1 >"$knob"
  out=$(rl_as "$CODEMODE" --root /run/cmvm-rl/state run -b "$BUNDLES/rl-aa" rl-aa </dev/null 2>&1) || rc=$?
  echo 0 >"$knob"
  echo "$out"
  [ "$rc" -ne 0 ] && [[ $out == *"apparmor_restrict_unprivileged_userns=1"* ]] && [[ $out == *"make install-apparmor"* ]] ||
    return 1
  # The profile, for this very binary: with it the same run works under the restriction.
  sed "s|@BINDIR@|$(dirname "$CODEMODE")|g" "$CMVM_REPO/contrib/apparmor/codemode.in" >/run/cmvm-rl/codemode.aa
  apparmor_parser --skip-cache --replace /run/cmvm-rl/codemode.aa || return 1
  echo 1 >"$knob"
  rc=0
  out=$(rl_as "$CODEMODE" --root /run/cmvm-rl/state run -b "$BUNDLES/rl-aa" rl-aa </dev/null 2>&1) || rc=$?
  echo 0 >"$knob"
  apparmor_parser --remove /run/cmvm-rl/codemode.aa
  echo "$out"
  [ "$rc" -eq 0 ]
}

# systemd variant: a user session (lingering user, its user@UID.service and systemd --user): a
# rootless container's cgroup is a transient scope of the user's manager, with the limits.
# Lingering on: the user's manager running (its unit active, its private socket there). Off:
# until the unit is inactive again. The unit stops asynchronously after disable-linger, and a
# socket left by a manager still stopping let the next test start against a vanishing manager.
rl_linger_on() {
  local i
  loginctl enable-linger "$RL_USER" || return 1
  for ((i = 0; i < 300; i++)); do
    systemctl is-active --quiet "user@$RL_UID.service" && [ -S "/run/user/$RL_UID/systemd/private" ] && return 0
    sleep 0.1
  done
  echo "no user manager at /run/user/$RL_UID"
  systemctl status "user@$RL_UID.service" | tail -n 5
  return 1
}
rl_linger_off() {
  local i
  loginctl disable-linger "$RL_USER"
  for ((i = 0; i < 300; i++)); do
    systemctl is-active --quiet "user@$RL_UID.service" || return 0
    sleep 0.1
  done
}
# rl_systemd_scope [FLAG…]: also with --ephemeral, where codemode-run talks to the user's manager
# from inside the user namespace it makes for its scratch mounts (supervisor/scratch.c).
rl_systemd_scope() {
  rl_linger_on || return 1
  local xdg=/run/user/$RL_UID out
  out=$(RL_XDG=$xdg rl_as "$CODEMODE_RUN" --root /run/cmvm-rl/state --id rl-sd "$@" --rootfs "$TEMPLATE/rootfs" -- \
    sh -c 'grep "^0::" /proc/self/cgroup; cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/pids.max' 2>/run/cmvm-rl/err)
  echo "$out"
  cat /run/cmvm-rl/err
  rl_linger_off
  ! grep -q warning /run/cmvm-rl/err || return 1
  [ "$(sed -n 2p <<<"$out")" = 536870912 ] && [ "$(sed -n 3p <<<"$out")" = 256 ] || return 1
  # The scope's cgroup, seen from the host: under the user's manager, removed after the run.
  [ -z "$(find /sys/fs/cgroup/user.slice -name 'codemode-rl-sd.scope' 2>/dev/null)" ]
}
rl_explain_systemd() {
  local xdg=/run/user/$RL_UID out
  rl_linger_on || return 1
  out=$(RL_XDG=$xdg rl_as "$CODEMODE_RUN" --explain --rootfs "$TEMPLATE/rootfs" -- true 2>&1)
  rl_linger_off
  echo "$out"
  [[ $out == *"cgroups: a transient scope of your systemd user manager"* ]]
}
