#!/usr/bin/env bash
# Runs crane's whole test suite: prepares the project's Python environment (kernels for the
# integration tests run in it), then every Rust test in the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-python.sh
export CRANE_PYTHON="$PWD/.venv/bin/python"
export MPLBACKEND=Agg
# Caches the tests fill (the probe's compiled code, LLM answers) stay inside the checkout.
export XDG_CACHE_HOME="$PWD/target/test-cache"
# A snapshot test whose text changed fails and writes nothing (CONTRIBUTING.md, "Snapshots").
export INSTA_UPDATE=no
cargo test --workspace --all-targets --locked
