#!/usr/bin/env bash
# bench-real.sh REV: real-size decode speed of a given revision against the working
# tree in one run (issue 20), alternating A (REV) and B (working tree) as
# bench-compare.sh does.
#
# Makes random checkpoints of Qwen3.5-0.8B's structure once with B's cmd/quantize
# (-random, then -bits 4 and -bits 8, group 64) in $INGOT_REAL_MODELS (default
# /tmp/ingot-real-0.8b), then runs BenchmarkDecodeReal (generate/: eager decode of
# the q4, q8 and bf16 checkpoints, tokens/s, GB/s of weights and % of the read
# bandwidth measured in the same run) and BenchmarkRealGEMV (kernels/: the 0.8B's
# products at every weight format, one and two cores) on both sides; REV gets the
# same benchmark files and internal/membw. Prints the medians per benchmark and unit
# and the ratio B/A.
#
# Environment: BENCH_COUNT (runs per side, default 3), TOKENS (decode tokens per run,
# default 60; A's bf16 decodes BF16_TOKENS, default 3), GEMV (the RealGEMV pattern, default the q4g64, q8g64 and bf16 rows of
# the up, down and head products; empty skips it).
set -euo pipefail
export LC_ALL=C

rev=${1:?usage: scripts/bench-real.sh REV}
count=${BENCH_COUNT:-3}
tokens=${TOKENS:-60}
gemv=${GEMV-RealGEMV/(up|down|head).*/(q4g64|q8g64|bf16)/}
models=${INGOT_REAL_MODELS:-/tmp/ingot-real-0.8b}
root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== A: $rev ($(git -C "$root" rev-parse --short "$rev")), B: working tree ($(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD || echo ', modified'))"
echo "== $(nproc) CPUs, $(go version | cut -d' ' -f3), load $(cut -d' ' -f1-3 /proc/loadavg)"
mkdir "$tmp/a" "$tmp/b"
git -C "$root" archive "$rev" | tar -x -C "$tmp/a"
(cd "$root" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$tmp/b" 2>/dev/null || true)
mkdir -p "$tmp/a/internal"
rm -rf "$tmp/a/internal/membw"
cp -r "$tmp/b/internal/membw" "$tmp/a/internal/"
cp "$tmp/b/kernels/real_bench_test.go" "$tmp/a/kernels/"
cp "$tmp/b/generate/real_bench_test.go" "$tmp/b/generate/"cputime_*_test.go "$tmp/a/generate/"
for side in a b; do
	(cd "$tmp/$side" && go test -c -o "$tmp/gen-$side.test" ./generate && go test -c -o "$tmp/kern-$side.test" ./kernels)
done

if [ ! -f "$models/q8/config.json" ]; then
	(cd "$tmp/b" && go build -o "$tmp/quantize" ./cmd/quantize)
	cfg=$root/cmd/decode/testdata/qwen3_5_0.8b/config.json
	rm -rf "$models" && mkdir -p "$models"
	"$tmp/quantize" -random "$cfg" -out "$models/bf16"
	"$tmp/quantize" -in "$models/bf16" -out "$models/q4" -bits 4 -group 64
	"$tmp/quantize" -in "$models/bf16" -out "$models/q8" -bits 8 -group 64
fi
export INGOT_REAL_MODELS=$models

: >"$tmp/ba"; : >"$tmp/bb"
for ((i = 1; i <= count; i++)); do
	for side in a b; do
		# REV's bfloat16 decode may take seconds a token (it did at 4c2aea7): A decodes
		# BF16_TOKENS of them.
		bt=$tokens
		[ $side = a ] && bt=${BF16_TOKENS:-3}
		(cd "$tmp/$side/generate" &&
			"$tmp/gen-$side.test" -test.run '^$' -test.bench 'DecodeReal/q' -test.benchtime "${tokens}x" &&
			"$tmp/gen-$side.test" -test.run '^$' -test.bench 'DecodeReal/bf16' -test.benchtime "${bt}x") |
			grep '^Benchmark' | tee -a "$tmp/b$side" | sed "s/^/  $side: /" || true
		if [ -n "$gemv" ]; then
			(cd "$tmp/$side/kernels" && "$tmp/kern-$side.test" -test.run '^$' -test.bench "$gemv" -test.benchtime 20x | grep '^Benchmark' || true) >>"$tmp/b$side"
		fi
	done
done
summary() {
	awk '{for (i = 3; i < NF; i += 2) print $1, $(i+1), $i}' "$1" | sort -k1,1 -k2,2 -k3,3g |
		awk '{k=$1" "$2; v[k]=v[k]" "$3; n[k]++} END {for (k in v) {split(substr(v[k],2), a, " "); m=n[k]; med=(m%2)?a[(m+1)/2]:(a[m/2]+a[m/2+1])/2; print k, med}}' | sort
}
summary "$tmp/ba" >"$tmp/sa"
summary "$tmp/bb" >"$tmp/sb"
echo
echo "== medians of $count runs per side"
printf '%-52s %-10s %12s %12s %7s\n' benchmark unit A B B/A
join <(awk '{print $1"|"$2, $3}' "$tmp/sa" | sort) <(awk '{print $1"|"$2, $3}' "$tmp/sb" | sort) |
	awk '{split($1, k, "|"); if (k[2] == "ns/op" || k[2] == "MB/s") next; r = ($2 != 0) ? $3/$2 : 0; printf "%-52s %-10s %12.4g %12.4g %7.2f\n", k[1], k[2], $2, $3, r}'
