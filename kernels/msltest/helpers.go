package msltest

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// RequireCompiler skips the test when g++ is unavailable, except in CI (the
// environment variable CI set to true), where that is a failure.
func RequireCompiler(tb testing.TB) {
	tb.Helper()
	skipWhereOff(tb)
	err := Available()
	if err == nil {
		return
	}
	if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
		tb.Fatalf("msltest needs g++ in CI: %v", err)
	}
	tb.Skipf("skipping MSL emulation: %v", err)
}

// OffEnv names the environment variable that skips every emulation and lint test
// (RequireCompiler, RequireClang), CI or not: the macOS CI job sets it, since the
// harness targets Linux's g++ and the Linux CI runs these tests, while the Mac runs
// the same checks on its real GPU.
const OffEnv = "INGOT_NO_MSL_EMULATION"

// skipWhereOff skips the test when OffEnv is set (to anything but "" or "0").
func skipWhereOff(tb testing.TB) {
	tb.Helper()
	if v := os.Getenv(OffEnv); v != "" && v != "0" {
		tb.Skipf("skipping the MSL emulation and lint: %s is set", OffEnv)
	}
}

// Scalar is an element type that Bytes and Values convert.
type Scalar interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64 | ~float32 | ~float64
}

// Bytes returns the little-endian bytes of s, as a Metal buffer holds them.
func Bytes[T Scalar](s []T) []byte {
	b, err := binary.Append(nil, binary.LittleEndian, s)
	if err != nil {
		panic(err) // unreachable: every Scalar has a fixed size
	}
	return b
}

// Values decodes little-endian bytes into elements of type T.
func Values[T Scalar](b []byte) ([]T, error) {
	var zero T
	size := binary.Size(zero)
	if len(b)%size != 0 {
		return nil, fmt.Errorf("msltest: %d bytes is not a whole number of %d-byte values", len(b), size)
	}
	out := make([]T, len(b)/size)
	if _, err := binary.Decode(b, binary.LittleEndian, out); err != nil {
		return nil, fmt.Errorf("msltest: %w", err)
	}
	return out, nil
}

// RequireClang skips the test when clang++ is unavailable, except in CI (the
// environment variable CI set to true), where that is a failure.
func RequireClang(tb testing.TB) {
	tb.Helper()
	skipWhereOff(tb)
	_, err := exec.LookPath("clang++")
	if err == nil {
		return
	}
	if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
		tb.Fatalf("the MSL lint needs clang++ in CI: %v: %v", ErrNoClang, err)
	}
	tb.Skipf("skipping the MSL lint: %v: %v", ErrNoClang, err)
}
