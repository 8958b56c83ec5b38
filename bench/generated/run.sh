#!/usr/bin/env bash
# The generated corpus at full size: generate, run each case for its truth (with crane's probe
# facts collected in-process), judge with the rules. Prints the per-library table and every
# false alarm (a proven finding that execution contradicts); exits 1 if there is one.
#
#   bash bench/generated/run.sh [COUNT] [SEED] [DIR]     defaults: 2400 13 target/generated
set -euo pipefail
cd "$(dirname "$0")/../.."
count="${1:-2400}"
seed="${2:-13}"
dir="${3:-target/generated}"
python="${CRANE_PYTHON:-$PWD/.venv/bin/python}"
rm -rf "$dir"
"$python" bench/generated/corpus.py generate --out "$dir" --count "$count" --seed "$seed"
cargo run -q -p crane-detect --example generated_corpus -- targets "$dir"
MPLBACKEND=Agg "$python" bench/generated/corpus.py truth "$dir"
cargo run -q -p crane-detect --example generated_corpus -- judge "$dir"
