#!/usr/bin/env bash
# The tokenizer's speed against the reference, in one run on one machine: Go's
# BenchmarkEncodeMixed (1 MB of mixed text) and BenchmarkLoad (the 11 MB Qwen3
# tokenizer.json), then the JS reference (@huggingface/tokenizers) on the same text.
# Needs node and the npm packages (see scripts/tokenizer-golden.mjs):
#   TOKENIZER_NPM=/work/npm-tok bash scripts/tokenizer-bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
text=$(mktemp --suffix=.txt)
trap 'rm -f "$text"' EXIT
go test ./tokenizer/ -count=1 -run '^TestWriteBenchText$' -benchtext "$text" >/dev/null
go test ./tokenizer/ -count=1 -run '^$' -bench 'EncodeMixed|Load' -benchtime 5x
TOKENIZER_NPM="${TOKENIZER_NPM:-/work/npm-tok}" node scripts/tokenizer-golden.mjs bench "$text"
