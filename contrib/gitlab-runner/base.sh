#!/bin/bash
# contrib/gitlab-runner/base.sh — shared by the custom executor driver's stages (config.sh,
# prepare.sh, run.sh, cleanup.sh): where a job's directories live and who owns them.
#
#   CODEMODE_RUN        codemode-run to use (default: the one on PATH)
#   CODEMODE_CI_DIR     the driver's own directory (default /var/lib/codemode-ci): jobs/<id>/
#                       holds each job's builds directory, cache/<project>/ each project's cache
#   CODEMODE_CI_OWNER   uid:gid owning them (default 2147483647:2147483647, the owner
#                       codemode-run gives the --state directories it makes for ci jobs: no
#                       account's, no job range's, not nobody's, whom the egress broker runs
#                       as). Never 0: --profile ci refuses a writable bind of host root's
#                       directory (a setuid program the job left there would be root's); the
#                       job's root writes as this owner, and its files are this id's
#   CODEMODE_CI_IMAGES  "1": a job's image (CI_JOB_IMAGE) runs with codemode-run --image;
#                       otherwise every job runs from the host's /usr (--host)
#   CODEMODE_ROOT       codemode's state directory (codemode-run --root; default its own)
#   CODEMODE_CI_ARGS    more codemode-run options for every stage (e.g. "--memory 8g --pids 8192")
# The runner sets BUILD_FAILURE_EXIT_CODE, SYSTEM_FAILURE_EXIT_CODE and the job's variables as
# CUSTOM_ENV_<NAME> (CUSTOM_ENV_CI_JOB_ID, CUSTOM_ENV_CI_PROJECT_PATH_SLUG …).
set -euo pipefail

: "${CODEMODE_RUN:=codemode-run}"
: "${CODEMODE_CI_DIR:=/var/lib/codemode-ci}"
: "${CODEMODE_CI_OWNER:=2147483647:2147483647}"

system_failure() {
  echo "codemode-ci: $*" >&2
  exit "${SYSTEM_FAILURE_EXIT_CODE:-1}"
}

# The job's variables are the job author's: only digits and a slug's characters make paths.
job_id=${CUSTOM_ENV_CI_JOB_ID:-}
[[ "$job_id" =~ ^[0-9]+$ ]] || system_failure "CUSTOM_ENV_CI_JOB_ID \"$job_id\" is not a job id (digits)"
project=${CUSTOM_ENV_CI_PROJECT_PATH_SLUG:-project}
[[ "$project" =~ ^[a-z0-9][a-z0-9-]{0,127}$ ]] || system_failure "CUSTOM_ENV_CI_PROJECT_PATH_SLUG \"$project\" is not a slug"
case $CODEMODE_CI_OWNER in
  0:* | *:0 | root:* | *:root) system_failure "CODEMODE_CI_OWNER must not be root (it is $CODEMODE_CI_OWNER)" ;;
esac

# shellcheck disable=SC2034 # used by the stage scripts that source this file
job_dir=$CODEMODE_CI_DIR/jobs/$job_id
# shellcheck disable=SC2034
builds_dir=$job_dir/builds
# shellcheck disable=SC2034
cache_dir=$CODEMODE_CI_DIR/cache/$project
# codemode-run's container ids: one per stage of the job
# shellcheck disable=SC2034
id_prefix=gitlab-job-$job_id
# shellcheck disable=SC2034
root_opts=()
# shellcheck disable=SC2034
[ -z "${CODEMODE_ROOT:-}" ] || root_opts=(--root "$CODEMODE_ROOT")
