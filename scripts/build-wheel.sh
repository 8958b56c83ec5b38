#!/usr/bin/env bash
# Builds crane's Python wheel (pyproject.toml: maturin, bindings = "bin") into target/wheels.
# maturin lives in its own environment under target/, never in the project's .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
tools=target/wheel-tools
if ! "$tools/bin/maturin" --version >/dev/null 2>&1; then
  python3 -m venv "$tools"
  "$tools/bin/python" -m pip install --quiet --disable-pip-version-check maturin==1.16.0
fi
"$tools/bin/maturin" build --release --locked --out target/wheels "$@"
