#!/usr/bin/env bash
# Regenerates calibrated_python.jsonl and calibrated_cpp.jsonl, the input of pack-context's
# tests, with the real stages: `clover extract | clover calibrate` on fixtures/python and
# fixtures/cpp. The end-to-end suite (tests/e2e/pack_data.rs at the top level) runs this
# script and fails when its output differs from the files here, so they cannot drift from what
# the stages produce.
#
#   crates/clover-pack-context/tests/data/regenerate.sh [BIN_DIR [OUT_DIR]]
#
# BIN_DIR holds the stage binaries (default target/debug: run `cargo build --bins` first);
# OUT_DIR defaults to this folder. Needs what calibrate needs: root (the sandbox), the test
# Python (`cargo xtask setup`; CLOVER_PYTHON overrides), g++ and GoogleTest.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
bin=${1:-$root/target/debug}
out=${2:-$here}
python=${CLOVER_PYTHON:-$root/target/clover-venv/bin/python}
mkdir -p "$out"

# tests/test_flaky.py fails at random by design (calibrate's flakiness check is tested on it),
# so it is left out: with it, no two runs would give the same records.
"$bin/clover-extract" --repo "$root/fixtures/python" |
    grep -v '"id":"pyfix/tests/test_flaky.py::' |
    "$bin/clover-calibrate" --repo "$root/fixtures/python" --python "$python" --runs 1 \
        >"$out/calibrated_python.jsonl.tmp"
"$bin/clover-extract" --repo "$root/fixtures/cpp" |
    "$bin/clover-calibrate" --repo "$root/fixtures/cpp" --runs 1 \
        >"$out/calibrated_cpp.jsonl.tmp"
mv "$out/calibrated_python.jsonl.tmp" "$out/calibrated_python.jsonl"
mv "$out/calibrated_cpp.jsonl.tmp" "$out/calibrated_cpp.jsonl"
