#!/usr/bin/env bash
# mac-check.sh: one command for a Mac user (and the macOS CI job). It checks that ingot
# runs on this Mac's GPU and prints a report to paste into an issue: the macOS version,
# the GPU's name and family, each kernel family's compile result and time, every
# kernel's Metal output against its Go twin (the samples, and the golden models'
# shapes through their logits), the repro's slope on Metal against the CPU's, and the
# device's real bytes for a 4-byte buffer. Exit status 0 when every check passed, 1
# otherwise.
#
# Usage: scripts/mac-check.sh [report-file]   (default: mac-check-report.txt)
set -uo pipefail
cd "$(dirname "$0")/.."
report="${1:-mac-check-report.txt}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# The Metal tests fail, not skip, when the device is missing or refused.
export INGOT_REQUIRE_METAL=1
failures=0
: >"$report"

say() { printf '%s\n' "$*" | tee -a "$report"; }
section() { say ""; say "== $*"; }
# check NAME CMD...: runs CMD with its output in the report, and counts a failure.
check() {
	local name="$1"
	shift
	section "$name"
	say "\$ $*"
	"$@" >"$tmp/out" 2>&1
	local rc=$?
	tee -a "$report" <"$tmp/out" | tail -n 40
	if [ "$rc" -ne 0 ]; then
		say "-> FAILED (exit $rc)"
		failures=$((failures + 1))
	else
		say "-> ok"
	fi
	return "$rc"
}

say "ingot mac-check, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ "$(uname -s)" != "Darwin" ]; then
	say "this is $(uname -s), not macOS: nothing to check (the Metal path runs only on a Mac)"
	exit 1
fi
section "system"
say "$(sw_vers 2>&1 | tr '\n' ' ')"
say "machine: $(uname -m); CPU: $(sysctl -n machdep.cpu.brand_string 2>/dev/null || echo unknown)"
say "go: $(go version 2>&1)"
# ingot compiles its kernels at run time (newLibraryWithSource:); the offline compiler
# is not needed, and its absence is only noted.
if xcrun -sdk macosx --find metal >/dev/null 2>&1; then
	say "xcrun metal: $(xcrun -sdk macosx --find metal)"
else
	say "xcrun metal: not installed (not needed to run ingot; see docs/mac.md)"
fi

# The device: family, SIMD probe, each family's compile result and time, NewGPU's
# verdict and GPU.Ready's (every family compiled in the background), a 4-byte buffer's real size.
section "device (metal.TestMacReport)"
INGOT_MAC_REPORT="$tmp/device.txt" go test -count=1 -run '^TestMacReport$' ./metal/ >"$tmp/out" 2>&1
rc=$?
[ -f "$tmp/device.txt" ] && tee -a "$report" <"$tmp/device.txt"
if [ "$rc" -ne 0 ]; then
	tee -a "$report" <"$tmp/out" | tail -n 40
	say "-> FAILED (exit $rc)"
	failures=$((failures + 1))
else
	say "-> ok"
fi

# Every kernel's Metal output against its Go twin: the registered samples, and the
# golden models (prefill and decode logits against the CPU device's).
check "kernels against their Go twins (samples, golden models)" \
	go test -count=1 -v -run '^(TestSamplesMatchGoTwins|TestGoldenModelsOnMetal)$' ./metal/

# The repro's slope on Metal against the CPU's: the same config leaks the same number
# of buffer objects a token on both devices.
section "repro slope, Metal against CPU"
slope() { sed -n 's/.*"slope_per_token": *\([-0-9.eE+]*\).*/\1/p' "$1" | head -n 1; }
for dev in cpu metal; do
	go run ./cmd/decode --device "$dev" --tokens 1000 --report-every 50 --json-out "$tmp/$dev.json" >"$tmp/$dev.txt" 2>&1
	echo "$?" >"$tmp/$dev.rc"
	grep -E '^\[(model|verdict|device)\]|^decode:' "$tmp/$dev.txt" | tee -a "$report"
done
cpu_slope="$(slope "$tmp/cpu.json" 2>/dev/null)"
metal_slope="$(slope "$tmp/metal.json" 2>/dev/null)"
say "slope per token: cpu ${cpu_slope:-none} (exit $(cat "$tmp/cpu.rc")), metal ${metal_slope:-none} (exit $(cat "$tmp/metal.rc"))"
if [ -n "$metal_slope" ] && [ "$cpu_slope" = "$metal_slope" ] && [ "$(cat "$tmp/cpu.rc")" = "$(cat "$tmp/metal.rc")" ] &&
	grep -q 'device=metal' "$tmp/metal.txt"; then
	say "-> ok"
else
	say "-> FAILED: Metal's run differs from the CPU's"
	failures=$((failures + 1))
fi

section "summary"
if [ "$failures" -eq 0 ]; then
	say "every check passed; report in $report"
	exit 0
fi
say "$failures check(s) FAILED; report in $report (please paste it into an issue)"
exit 1
