#!/bin/bash
# config_exec: the JSON the runner reads before the job: the job's builds and cache
# directories as the job sees them (its binds), never shared between jobs.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=contrib/gitlab-runner/base.sh
. "$here/base.sh"
version=$("$CODEMODE_RUN" --version 2>/dev/null | head -1 | awk '{print $3}') || version=unknown
cat <<JSON
{
  "builds_dir": "/builds",
  "cache_dir": "/cache",
  "builds_dir_is_shared": false,
  "hostname": "codemode-ci-job-$job_id",
  "driver": {"name": "codemode --profile ci", "version": "${version:-unknown}"},
  "job_env": {"CODEMODE_CI": "1"}
}
JSON
