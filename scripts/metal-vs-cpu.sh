#!/usr/bin/env bash
# metal-vs-cpu.sh: runs cmd/decode on the CPU and on Metal with the same arguments and
# fails unless the Metal run ran on Metal and agrees with the CPU's: the same exit
# status (the repro's verdict: 0 flat, 1 leaking, 2 crashed), the same slope of live
# buffer objects per token and crash token, and, under --compare, lazy and eager
# emitting the same tokens. The macOS CI job runs it for the repro and for each golden
# checkpoint. DEVICE (default metal) names the device under test, so that the script
# itself can be tried on Linux with DEVICE=cpu.
#
# Usage: scripts/metal-vs-cpu.sh DECODE-ARGS...   e.g. --compare --tokens 3000
set -uo pipefail
cd "$(dirname "$0")/.."
dev="${DEVICE:-metal}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/decode" ./cmd/decode || exit 1

"$tmp/decode" --device cpu --json-out "$tmp/cpu.json" "$@" >"$tmp/cpu.txt" 2>&1
cpu_rc=$?
"$tmp/decode" --device "$dev" --json-out "$tmp/dev.json" "$@" >"$tmp/dev.txt" 2>&1
dev_rc=$?
grep -E '^(\[(model|verdict|compare|device|note)\]|=== |decode:)' "$tmp/dev.txt"

# field FILE KEY: the first value of "KEY" in a JSON report (a number, null or a string).
field() { sed -n "s/.*\"$2\": *\"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}\$/\1/p" "$1" | head -n 1; }
fail=0
problem() { echo "FAIL: $*"; fail=1; }
case "$cpu_rc" in 0 | 1 | 2) ;; *)
	tail -n 20 "$tmp/cpu.txt"
	problem "the CPU run exited $cpu_rc"
	;;
esac
[ "$dev_rc" = "$cpu_rc" ] || { tail -n 20 "$tmp/dev.txt"; problem "--device $dev exited $dev_rc, the CPU $cpu_rc"; }
grep -q "device=$dev" "$tmp/dev.txt" || problem "no run reports device=$dev"
[ "$dev" = cpu ] || ! grep -q 'device=cpu' "$tmp/dev.txt" || problem "a --device $dev run fell back to the CPU"
for key in slope_per_token crash_token verdict; do
	a="$(field "$tmp/cpu.json" "$key")"
	b="$(field "$tmp/dev.json" "$key")"
	[ -n "$a" ] || problem "the CPU's report has no $key"
	[ "$a" = "$b" ] || problem "$key: cpu $a, $dev $b"
	echo "$key: cpu $a, $dev $b"
done
case " $* " in *" --compare "*)
	grep -q '^\[compare\] lazy and eager emitted the same' "$tmp/dev.txt" ||
		problem "lazy and eager tokens differ on $dev"
	;;
esac
[ "$fail" = 0 ] && echo "ok: --device $dev agrees with the CPU ($*)"
exit "$fail"
