#!/bin/bash
# cleanup_exec: the job's builds directory goes (the project's cache stays for its next job).
# codemode-run removed each stage's container itself; a stage whose codemode-run was killed
# with its watcher is deleted here.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=contrib/gitlab-runner/base.sh
. "$here/base.sh"
codemode=${CODEMODE:-$(dirname "$(command -v "$CODEMODE_RUN")")/codemode}
if [ -x "$codemode" ]; then
  for id in $("$codemode" "${root_opts[@]}" list --format json 2>/dev/null | jq -r '.[]?.id' 2>/dev/null | grep "^$id_prefix-"); do
    "$codemode" "${root_opts[@]}" delete --force "$id" || true
  done
fi
rm -rf --one-file-system "$job_dir"
