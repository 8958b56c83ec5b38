#!/usr/bin/env bash
# Runs crane's whole test suite: prepares the project's Python environment (kernels for the
# integration tests run in it), then every Rust test in the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-python.sh
export CRANE_PYTHON="$PWD/.venv/bin/python"
export MPLBACKEND=Agg
cargo test --workspace --all-targets --locked
