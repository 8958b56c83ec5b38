#!/usr/bin/env bash
# Every offline detector on the JunoBench cases, as one Markdown table (the figures in
# docs/benchmarks.md). Usage: scripts/bench-offline.sh [CRANE_BINARY] [CASES_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
crane=${1:-target/release/crane}
cases=${2:-../shared/junobench/cases}
row() {
  "$crane" bench "$cases" --format json --quiet "$@" | python3 -c '
import json, sys
o = json.load(sys.stdin)["overall"]
label = sys.argv[1]
print("| {} | {n} | {tp} | {fp} | {fn} | {tn} | {precision:.3f} | {recall:.3f} | {f1:.3f} | {accuracy:.3f} |".format(label, **o))
' "$*"
}
start=$(date +%s.%N)
echo "| detector and options | n | TP | FP | FN | TN | precision | recall | F1 | accuracy |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
row --detector rules
for model in gpt_5 gemini_2_5_flash Qwen_2_5_32B_Instruct; do
  for config in code_only with_runtime; do
    row --detector llm --llm "replay:$model" --config "$config"
  done
  row --detector hybrid --llm "replay:$model" --config with_runtime
done
end=$(date +%s.%N)
python3 -c "import sys; print(f'\ncomputed in {float(sys.argv[2]) - float(sys.argv[1]):.1f} s')" "$start" "$end"
