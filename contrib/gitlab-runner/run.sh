#!/bin/bash
# run_exec SCRIPT STAGE: one stage of the job (prepare_script, get_sources, restore_cache,
# step_script, after_script, archive_cache, upload_artifacts_on_success, cleanup_file_variables…)
# in its own codemode-run --profile ci job: the builds and cache directories bound writable, the
# runner's script read-only, the network loopback only except the GitLab server
# (CI_SERVER_HOST) and CODEMODE_CI_ALLOW_HOSTS. The script failing is the build's failure
# (BUILD_FAILURE_EXIT_CODE); codemode-run failing to run it (125) is the system's.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=contrib/gitlab-runner/base.sh
. "$here/base.sh"
[ $# -eq 2 ] || system_failure "run_exec expects SCRIPT STAGE, got $# arguments"
script=$1 stage=$2
[[ "$stage" =~ ^[a-z0-9_]+$ ]] || system_failure "stage \"$stage\" is not a stage name"
[ -f "$script" ] || system_failure "no script $script"
[ -d "$builds_dir" ] || system_failure "$builds_dir is missing (prepare_exec did not run)"

opts=("${root_opts[@]}" --profile ci --id "$id_prefix-${stage//_/-}" --mount "$builds_dir:/builds:rw" --mount "$cache_dir:/cache:rw"
  --mount "$script:/codemode-ci/script:ro" --cwd /builds)
for h in ${CUSTOM_ENV_CI_SERVER_HOST:-} ${CODEMODE_CI_ALLOW_HOSTS:-}; do
  opts+=(--allow-host "$h")
done
if [ "${CODEMODE_CI_IMAGES:-}" = 1 ] && [ -n "${CUSTOM_ENV_CI_JOB_IMAGE:-}" ]; then
  opts+=(--image "$CUSTOM_ENV_CI_JOB_IMAGE")
else
  opts+=(--host)
fi
# shellcheck disable=SC2206 # the administrator's options, split as a shell would
extra=(${CODEMODE_CI_ARGS:-})
status=0
"$CODEMODE_RUN" "${opts[@]}" "${extra[@]}" -- bash /codemode-ci/script || status=$?
case $status in
  0) exit 0 ;;
  125) exit "${SYSTEM_FAILURE_EXIT_CODE:-1}" ;;
  *) exit "${BUILD_FAILURE_EXIT_CODE:-1}" ;;
esac
