# shellcheck shell=bash
# tests/ci/test_image.bash — ci_test_image OUT: the ci suites' nested-container image, as
# `docker save` writes it: the template's busybox rootfs ($CM_TEMPLATE, cm_setup_file's) as one
# layer with its history entry (podman build counts them), tagged bb.
ci_test_image() {
  local out=$1
  cat >"$out.json" <<JSON
{"format": "docker-archive", "images": [{"tag": "bb", "platforms": [{"arch": "amd64",
  "layers": [[{"from_dir": "$CM_TEMPLATE/rootfs"}]], "config": {"Cmd": ["sh"]},
  "history": [{"created": "2026-01-01T00:00:00Z", "created_by": "busybox rootfs"}]}]}]}
JSON
  python3 "$CM_REPO/tests/image/mkimage.py" "$out.json" "$out"
}
