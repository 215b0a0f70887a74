#!/usr/bin/env bash
# Grades a benchmark run on a Slurm cluster: one array job of N shards, then the merge.
#   bash scripts/slurm-grade.sh N TASKS PREDICTIONS OUT [grade flags, e.g. -j 2 --backend docker]
# Element i of the array runs `ssebench grade --tasks TASKS --predictions PREDICTIONS --out OUT
# --shard i/N [flags]` on whichever node Slurm gives it, so TASKS, PREDICTIONS and OUT must lie on
# a file system every node sees. Once every element has ended, the merge runs here, with the same
# flags and no shard: it grades whatever is still missing (an element's errors, a lost node) and
# writes OUT/summary.json, which it also prints. The exit status is the merge's: 0 when every
# prediction has a verdict, 1 when some are errors, 2 for bad arguments or a job Slurm refused.
# sbatch takes its own settings from its environment (SBATCH_PARTITION, SBATCH_TIMELIMIT, ...);
# SSEBENCH_SBATCH adds flags (e.g. "--cpus-per-task=2 --mem=8G"). `ssebench` is the one on PATH,
# or $SSEBENCH; each element's stdout and stderr go to OUT/slurm-<job>_<i>.log.
set -euo pipefail
say() { echo "ssebench: slurm: $*" >&2; }
if [ $# -lt 4 ] || ! [[ $1 =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: $0 N TASKS PREDICTIONS OUT [grade flags...]   (N shards, 1 or more)" >&2
    exit 2
fi
shards=$1
tasks=$(realpath -- "$2")
predictions=$(realpath -- "$3")
out=$(realpath -m -- "$4")
shift 4
ssebench=${SSEBENCH:-$(command -v ssebench || true)}
[ -n "$ssebench" ] || { say "no ssebench on PATH (or set SSEBENCH)"; exit 2; }
mkdir -p -- "$out"

script=$(mktemp)
trap 'rm -f -- "$script"' EXIT
{
    echo '#!/bin/bash'
    printf 'exec %q grade --tasks %q --predictions %q --out %q --shard "$SLURM_ARRAY_TASK_ID/%d"' \
        "$ssebench" "$tasks" "$predictions" "$out" "$shards"
    [ $# -eq 0 ] || printf ' %q' "$@"
    echo
} >"$script"

started=$SECONDS
# --wait returns once every element has ended, with the worst element's status: 1 when some
# prediction could not be graded there, which the merge retries, so only a refused job stops us.
# shellcheck disable=SC2086  # SSEBENCH_SBATCH is a list of flags
job=$(sbatch --parsable --wait --array="0-$((shards - 1))" --job-name=ssebench-grade \
    --output="$out/slurm-%A_%a.log" ${SSEBENCH_SBATCH:-} "$script") || true
job=${job%%;*}
[[ $job =~ ^[0-9]+$ ]] || { say "sbatch did not take the job"; exit 2; }
say "job $job: $shards shards ended after $((SECONDS - started)) s; merging into $out"
exec "$ssebench" grade --tasks "$tasks" --predictions "$predictions" --out "$out" "$@"
