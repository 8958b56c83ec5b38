#!/usr/bin/env bash
# The differential soundness tests at full size: seeded generated programs (plain Python values,
# numpy shapes) run in CPython and in crane's interpreter; every value crane claims must be the
# one Python computed; generated calls bound by crane and by CPython (signature_binding). The test suite runs a bounded number of programs; this runs many more.
#
#   bash scripts/differential.sh [CASES_PER_TEST] [SEEDS...]
#
# Defaults: 20000 programs per test and per seed, seeds 1 2 3. Needs the project's Python
# environment (CRANE_PYTHON, default .venv/bin/python) with numpy.
set -euo pipefail
cd "$(dirname "$0")/.."
cases="${1:-20000}"
shift || true
seeds=("$@")
if [ "${#seeds[@]}" -eq 0 ]; then
    seeds=(1 2 3)
fi
export CRANE_PYTHON="${CRANE_PYTHON:-$PWD/.venv/bin/python}"
for seed in "${seeds[@]}"; do
    echo "seed $seed, $cases programs per test"
    CRANE_DIFFERENTIAL_SEED="$seed" CRANE_DIFFERENTIAL_CASES="$cases" \
        cargo test -q -p crane-detect --test differential --test signature_binding -- --nocapture 2>&1 |
        grep -E "programs, |cases: |test result|disagree|--" || true
done
