#!/bin/bash
# prepare_exec: the job's builds directory (new, empty) and its project's cache, owned by
# CODEMODE_CI_OWNER. A failure here is the runner's (SYSTEM_FAILURE_EXIT_CODE).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=contrib/gitlab-runner/base.sh
. "$here/base.sh"
command -v "$CODEMODE_RUN" >/dev/null || system_failure "$CODEMODE_RUN is not installed"
[ ! -e "$job_dir" ] || system_failure "$job_dir exists: a job $job_id is running or was not cleaned up"
mkdir -p "$CODEMODE_CI_DIR/jobs" "$CODEMODE_CI_DIR/cache" || system_failure "cannot make $CODEMODE_CI_DIR"
chmod 0711 "$CODEMODE_CI_DIR" "$CODEMODE_CI_DIR/jobs" "$CODEMODE_CI_DIR/cache"
mkdir -m 0700 "$job_dir" "$builds_dir" || system_failure "cannot make $job_dir"
mkdir -p "$cache_dir" && chmod 0700 "$cache_dir"
chown "$CODEMODE_CI_OWNER" "$builds_dir" "$cache_dir" || system_failure "cannot chown to $CODEMODE_CI_OWNER"
chmod 0711 "$job_dir"
echo "codemode-ci: job $job_id: builds in $builds_dir, cache in $cache_dir (hardened: codemode-run --profile ci)"
