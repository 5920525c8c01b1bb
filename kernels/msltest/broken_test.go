package msltest

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// The planted bugs of testdata/broken.metal must not pass unnoticed.

func brokenInputs(n int) []Buffer {
	a := ramp(n, func(i int) float32 { return float32(i) })
	return []Buffer{{Index: 0, Data: Bytes(a)}, {Index: 1, Data: make([]byte, 4*n)}}
}

func TestPlantedReadPastEndFaults(t *testing.T) {
	RequireCompiler(t)
	t.Parallel()
	const n = 256
	d := Dispatch{Threads: [3]int{n, 1, 1}, Group: [3]int{64, 1, 1}}
	err := Run("testdata/broken.metal", "add_past_end", d, brokenInputs(n))
	var re *RunError
	require.ErrorAs(t, err, &re)
	require.Equal(t, "add_past_end", re.Kernel)
	require.Equal(t, "msltest: kernel add_past_end: out-of-bounds access to buffer(0) at byte offset 1024 "+
		"(buffer is 1024 bytes) (thread_position_in_grid 255,0,0)", re.Output)
}

func TestPlantedWrongIndexGivesWrongAnswer(t *testing.T) {
	RequireCompiler(t)
	t.Parallel()
	const n = 256
	bufs := brokenInputs(n)
	d := Dispatch{Threads: [3]int{n, 1, 1}, Group: [3]int{64, 1, 1}}
	require.NoError(t, Run("testdata/broken.metal", "add_swapped", d, bufs))
	got := f32s(t, bufs[1].Data)
	wrong := 0
	for i, v := range got {
		if v != float32(i)*2 {
			wrong++
		}
	}
	require.Equal(t, n, wrong, "every element of the swapped kernel differs from the reference")
}

func TestWriteToConstantBufferFaults(t *testing.T) {
	RequireCompiler(t)
	t.Parallel()
	d := Dispatch{Threads: [3]int{4, 1, 1}, Group: [3]int{4, 1, 1}}
	err := Run("testdata/broken.metal", "write_constant", d, brokenInputs(4)[:1])
	var re *RunError
	require.ErrorAs(t, err, &re)
	require.Equal(t, "msltest: kernel write_constant: write to read-only buffer(0) at byte 0 (thread_position_in_grid 0,0,0)", re.Output)
}

func TestCompileErrorIsReported(t *testing.T) {
	RequireCompiler(t)
	t.Parallel()
	d := Dispatch{Threads: [3]int{4, 1, 1}, Group: [3]int{4, 1, 1}}
	err := Run("testdata/bad_compile.metal", "no_member", d, []Buffer{{Index: 0, Data: make([]byte, 64)}})
	var ce *CompileError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "testdata/bad_compile.metal", ce.File)
	require.Contains(t, ce.Output, "testdata/bad_compile.metal:8:10: error: 'float4' {aka 'struct vec<float, 4>'} has no member named 'q'")
	// The failure is remembered: a second Run reports it without g++.
	err2 := Run("testdata/bad_compile.metal", "no_member", d, []Buffer{{Index: 0, Data: make([]byte, 64)}})
	require.True(t, errors.As(err2, &ce))
	require.Equal(t, err.Error(), err2.Error())
}

func TestThreadgroupMemoryLimit(t *testing.T) {
	RequireCompiler(t)
	t.Parallel()
	d := Dispatch{Groups: [3]int{1, 1, 1}, Group: [3]int{4, 1, 1}}
	var re *RunError
	require.ErrorAs(t, Run("testdata/broken.metal", "too_much_threadgroup_memory", d, []Buffer{{Index: 0, Data: make([]byte, 16)}}), &re)
	require.Equal(t, "msltest: kernel too_much_threadgroup_memory: threadgroup memory of 36000 bytes exceeds Metal's 32768 "+
		"(thread_position_in_grid 0,0,0)", re.Output)
}

func TestStackOverflowFaults(t *testing.T) {
	RequireCompiler(t)
	t.Parallel()
	d := Dispatch{Groups: [3]int{1, 1, 1}, Group: [3]int{2, 1, 1}}
	var re *RunError
	require.ErrorAs(t, Run("testdata/broken.metal", "stack_hog", d, []Buffer{{Index: 0, Data: make([]byte, 8)}}), &re)
	require.Equal(t, "msltest: kernel stack_hog: stack overflow in a kernel thread (fiber stacks are 256 KiB) "+
		"(thread_position_in_grid 0,0,0)", re.Output)
}
