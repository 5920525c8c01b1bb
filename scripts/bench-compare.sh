#!/usr/bin/env bash
# bench-compare.sh REV: times a given revision against the working tree in one run.
#
# Builds REV (exported with git archive into a temporary directory) and the working
# tree, then runs the same commands on both, alternating A (REV) and B (working tree)
# so drift on a shared machine hits both alike:
#   cmd/decode --cache eager --tokens 3000, --tokens 3000 (lazy), the default crash run,
#   the same 10,370 tokens eager (lazy against eager at depth),
#   and the Go benchmarks Decode, Chain1000, GEMV/Linear and SDPA.
# Prints each run's wall time, the median per side and the median ratio A/B, and each
# side's last output line (the verdict) so a changed result shows.
#
# B is a snapshot of the working tree taken at the start (uncommitted changes included),
# so editing the tree while the script runs changes nothing.
#
# Environment: RUNS (timed runs per command and side, default 3), CRASH_RUNS (the same
# for the default crash run, about a minute a run, default 1), BENCH_COUNT (go test
# -count, default 5), SKIP_CRASH=1 to leave the crash run out.
set -euo pipefail
export LC_ALL=C

rev=${1:?usage: scripts/bench-compare.sh REV}
runs=${RUNS:-3}
count=${BENCH_COUNT:-5}
root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== A: $rev ($(git -C "$root" rev-parse --short "$rev")), B: working tree ($(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD || echo ', modified'))"
echo "== $(nproc) CPUs, $(uname -m), $(go version | cut -d' ' -f3), load $(cut -d' ' -f1-3 /proc/loadavg)"

mkdir "$tmp/a" "$tmp/b"
git -C "$root" archive "$rev" | tar -x -C "$tmp/a"
# The working tree as it is now: tracked files plus untracked ones not ignored.
(cd "$root" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$tmp/b" 2>/dev/null || true)
# The speed benchmarks use only the exported kernel API: give REV the same file.
if [ -f "$root/kernels/speed_bench_test.go" ] && [ ! -f "$tmp/a/kernels/speed_bench_test.go" ]; then
	cp "$root/kernels/speed_bench_test.go" "$tmp/a/kernels/"
fi
(cd "$tmp/a" && go build -o "$tmp/decode-a" ./cmd/decode)
(cd "$tmp/b" && go build -o "$tmp/decode-b" ./cmd/decode)

# median reads numbers, one a line, and prints their median.
median() { sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else printf "%.4g\n", (v[NR/2]+v[NR/2+1])/2}'; }

# timed NAME N ARGS...: runs both binaries N times each, alternating, after one warm-up
# run each unless WARMUP=0.
timed() {
	local name=$1 n=$2; shift 2
	local side t0 t1
	echo
	echo "== $name: decode $*"
	if [ "${WARMUP:-1}" = 1 ]; then
		"$tmp/decode-a" "$@" >/dev/null 2>&1 || true
		"$tmp/decode-b" "$@" >/dev/null 2>&1 || true
	fi
	: >"$tmp/ta"; : >"$tmp/tb"; : >"$tmp/ratio"
	for ((i = 1; i <= n; i++)); do
		for side in a b; do
			t0=$(date +%s.%N)
			"$tmp/decode-$side" "$@" >"$tmp/out-$side" 2>&1 || true
			t1=$(date +%s.%N)
			echo "$t1 - $t0" | bc -l >>"$tmp/t$side"
		done
		paste "$tmp/ta" "$tmp/tb" | tail -1 | awk '{printf "%.4f\n", $1/$2}' >>"$tmp/ratio"
		printf '  run %d: A %.2f s, B %.2f s\n' "$i" "$(tail -1 "$tmp/ta")" "$(tail -1 "$tmp/tb")"
	done
	printf '  median wall: A %.2f s, B %.2f s; median ratio A/B %.3f\n' \
		"$(median <"$tmp/ta")" "$(median <"$tmp/tb")" "$(median <"$tmp/ratio")"
	echo "  A last line: $(grep -v '^\s*$' "$tmp/out-a" | tail -1)"
	echo "  B last line: $(grep -v '^\s*$' "$tmp/out-b" | tail -1)"
}

timed "eager, 3000 tokens" "$runs" --cache eager --tokens 3000
timed "lazy, 3000 tokens" "$runs" --tokens 3000
if [ "${SKIP_CRASH:-}" != 1 ]; then
	WARMUP=0 timed "default crash run (no warm-up run: it is long)" "${CRASH_RUNS:-1}"
	# The same 10,370 tokens with the fix: lazy against eager at the crash run's depth.
	WARMUP=0 timed "eager, the crash run's 10,370 tokens" "${CRASH_RUNS:-1}" --cache eager --tokens 10370
fi

# gobench DIR PKG PATTERN: one go test -bench run; prints the raw benchmark lines.
gobench() { (cd "$1" && go test -run '^$' -bench "$3" -count 1 -benchtime "${4:-1s}" "$2" 2>/dev/null | grep '^Benchmark' || true); }

echo
echo "== Go benchmarks: -count $count, A and B alternating; medians per benchmark and unit"
: >"$tmp/ba"; : >"$tmp/bb"
for ((i = 1; i <= count; i++)); do
	for side in a b; do
		dir=$tmp/$side
		{
			gobench "$dir" ./kernels/ 'GEMV|SDPAKeys|Linear/1x64'
			gobench "$dir" ./tensor/ 'Chain1000'
			gobench "$dir" ./generate/ 'Decode' 2000x
		} >>"$tmp/b$side"
	done
done
# Each line: name, iterations, then value-unit pairs. Print the median per name and unit.
summary() {
	awk '{for (i = 3; i < NF; i += 2) print $1, $(i+1), $i}' "$1" | sort -k1,1 -k2,2 -k3,3g |
		awk '{k=$1" "$2; v[k]=v[k]" "$3; n[k]++} END {for (k in v) {split(substr(v[k],2), a, " "); m=n[k]; med=(m%2)?a[(m+1)/2]:(a[m/2]+a[m/2+1])/2; print k, med}}' | sort
}
summary "$tmp/ba" >"$tmp/sa"
summary "$tmp/bb" >"$tmp/sb"
printf '%-44s %-10s %14s %14s %8s\n' benchmark unit A B A/B
# A unit only B reports for a benchmark A has too (a metric added since REV, such as
# nodes/token) prints with A "-"; benchmarks only B has are left out.
join -a 2 -e - -o 0,1.2,2.2 <(awk '{print $1"|"$2, $3}' "$tmp/sa" | sort) <(awk '{print $1"|"$2, $3}' "$tmp/sb" | sort) |
	awk -v names="$(cut -d' ' -f1 "$tmp/sa" | sort -u | tr '\n' ' ')" '
		BEGIN {n = split(names, a, " "); for (i = 1; i <= n; i++) inA[a[i]] = 1}
		{split($1, k, "|")
		if ($2 == "-") { if (k[1] in inA) printf "%-44s %-10s %14s %14.6g %8s\n", k[1], k[2], "-", $3, "-"; next }
		r = ($3 != 0) ? $2/$3 : 0; printf "%-44s %-10s %14.6g %14.6g %8.3f\n", k[1], k[2], $2, $3, r}'
