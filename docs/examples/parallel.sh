#!/usr/bin/env bash
# The shards of one stage run with GNU parallel, then joined: the Slurm and Kubernetes pattern
# on one machine (or on several, with parallel's --sshlogin and a shared folder).
#
#   SHARDS=4 INPUT=problems.jsonl  MANIFEST=clover.toml ./parallel.sh calibrate    # -> calibrated.jsonl
#   SHARDS=4 INPUT=responses.jsonl MANIFEST=clover.toml ./parallel.sh sandbox-run  # -> results.jsonl
#
# A rerun after a crash or Ctrl-C goes on where each shard stopped (--resume).
set -euo pipefail

STAGE=${1:?name the stage: calibrate or sandbox-run}
case "$STAGE" in
    calibrate) OUT=calibrated ;;
    sandbox-run) OUT=results ;;
    *) echo "parallel.sh: unknown stage $STAGE; use calibrate or sandbox-run" >&2; exit 2 ;;
esac
CLOVER=${CLOVER:-clover}
MANIFEST=${MANIFEST:-clover.toml}
INPUT=${INPUT:?set INPUT to the input file of the stage}
OUT_DIR=${OUT_DIR:-shards}
SHARDS=${SHARDS:-$(nproc)}
JOINED=${JOINED:-$OUT.jsonl}
# Extra flags for the stage, e.g. STAGE_ARGS="--runs 5".
STAGE_ARGS=${STAGE_ARGS:-}

# One shard, in one process with one job. Exit 3 (some input records were bad, each reported)
# counts as done, so the join goes on.
run_shard() {
    local k=$1 status=0
    # shellcheck disable=SC2086 # STAGE_ARGS is a list of flags
    "$CLOVER" "$STAGE" --manifest "$MANIFEST" --jobs 1 --shard "$k/$SHARDS" --resume \
        -o "$OUT_DIR/$OUT.$k-of-$SHARDS.jsonl" $STAGE_ARGS "$INPUT" || status=$?
    [ "$status" -eq 0 ] || [ "$status" -eq 3 ]
}
export -f run_shard
export CLOVER MANIFEST INPUT OUT_DIR SHARDS STAGE OUT STAGE_ARGS

mkdir -p "$OUT_DIR"
# --halt stops the other shards at the first failure.
seq 0 $((SHARDS - 1)) | SHELL=$(command -v bash) parallel --will-cite --halt soon,fail=1 \
    --line-buffer --tagstring "$STAGE {}/$SHARDS" run_shard {}

SHARDS=$SHARDS OUT_DIR=$OUT_DIR JOINED=$JOINED bash "$(dirname "$0")/slurm/join.sbatch" "$OUT"
