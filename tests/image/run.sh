#!/bin/bash
# tests/image/run.sh — images without Docker (codemode-image, codemode-run --image): a real
# registry (Debian's docker-registry, distribution 2.8) with TLS and token auth, images pushed
# with skopeo, unpacked rootfs compared with umoci's, hostile layers. Everything runs inside a
# network and mount namespace made here (unshare): the registry listens on 127.0.0.1 of that
# namespace and registry.test resolves through a hosts file bound over /etc/hosts there only, so
# no packet can leave the machine and no host file changes. TAP on stdout (bats); exit 77 with
# the reason as the last stderr line when a tool is missing (tests/image/deps.sh installs them).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
: "${CODEMODE:=$repo/build/codemode}"
export CODEMODE

for tool in docker-registry skopeo umoci node openssl python3 bats jq unshare ip; do
  command -v "$tool" >/dev/null || { echo "tests/image: $tool is not installed (tests/image/deps.sh)" >&2; exit 77; }
done
[ -x "$(dirname "$CODEMODE")/codemode-image" ] || { echo "tests/image: codemode-image is not built (run make)" >&2; exit 1; }

if [ "${CM_IMAGE_IN_NS:-}" != 1 ]; then
  exec env CM_IMAGE_IN_NS=1 unshare --net --mount --propagation private "$0" "$@"
fi
ip link set lo up
hosts=$(mktemp /tmp/cm-image-hosts.XXXXXX)
# evil.test: bounded_pulls.bats' lying registry, on an address it adds to this namespace's lo.
printf '127.0.0.1 localhost registry.test\n198.18.0.5 evil.test\n::1 localhost\n' >"$hosts"
chmod 0644 "$hosts" # readable by the user of the rootless case
mount --bind "$hosts" /etc/hosts
trap 'umount /etc/hosts 2>/dev/null; rm -f "$hosts"' EXIT
args=(--tap)
[ -n "${CM_TEST_FILTER:-}" ] && args+=(--filter "$CM_TEST_FILTER")
bats "${args[@]}" "$here"/*.bats
