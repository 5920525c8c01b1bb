package kernels_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
)

// entryRecorder is an Encoder that keeps the entry of each dispatch.
type entryRecorder struct {
	entry   string
	entries []string
}

func (r *entryRecorder) Entry(name string)                { r.entry = name }
func (r *entryRecorder) SetArg(int, *kernels.Arg)         {}
func (r *entryRecorder) SetBytes(int, []byte)             {}
func (r *entryRecorder) ErrorWord(int)                    {}
func (r *entryRecorder) Scratch(int, int)                 {}
func (r *entryRecorder) DispatchThreads(_, _ [3]int)      { r.entries = append(r.entries, r.entry) }
func (r *entryRecorder) DispatchThreadgroups(_, _ [3]int) { r.entries = append(r.entries, r.entry) }

// encodeEntries returns the entries a launch's Encode dispatches, with packed rows
// (the uint32 arguments listed in packed) bound at the given element offset.
func encodeEntries(k *kernels.Kernel, p any, shapes []kernels.Layout, packed []int, offset int) []string {
	l := &kernels.Launch{Kernel: k, Params: p, NArgs: len(shapes)}
	for i, s := range shapes {
		l.Args[i] = kernels.Arg{Layout: s}
	}
	for _, i := range packed {
		l.Args[i].Offset = offset
	}
	r := &entryRecorder{}
	k.Encode(l, r)
	return r.entries
}

// TestQuantChunkEntriesNeedAlignedRows: the chunk entries load a chunk's words as
// uint4s, which Metal wants at 16-byte offsets, so packed rows bound elsewhere take the
// unit entries (4-byte loads).
func TestQuantChunkEntriesNeedAlignedRows(t *testing.T) {
	const n, k = 32800, 1024 // enough row blocks for the staged qmv
	qmv := &kernels.QuantParams{M: 1, N: n, K: k, Bits: 4, Group: 64}
	qmvArgs := []kernels.Layout{kernels.Contiguous(kernels.Float32, 1, k), kernels.Contiguous(kernels.UInt32, n, k/8),
		kernels.Contiguous(kernels.Float32, n, k/64), kernels.Contiguous(kernels.Float32, n, k/64),
		kernels.Contiguous(kernels.Float32, 1, n)}
	for off, want := range map[int]string{0: "qmv_pipe_float32", 4: "qmv_pipe_float32", 1: "qmv_float32", 2: "qmv_float32"} {
		require.Equal(t, []string{want}, encodeEntries(kernels.KQMV, qmv, qmvArgs, []int{1}, off), "offset %d", off)
	}

	p := &kernels.QSwitchGLUParams{T: 1, H: 256, K: 2, E: 4, I: 64, GateBits: 4, UpBits: 4, DownBits: 4,
		GateGroup: 64, UpGroup: 64, DownGroup: 64}
	gu := []kernels.Layout{kernels.Contiguous(kernels.UInt32, p.E*p.I, p.H/8), kernels.Contiguous(kernels.Float32, p.E*p.I, p.H/64),
		kernels.Contiguous(kernels.Float32, p.E*p.I, p.H/64)}
	dn := []kernels.Layout{kernels.Contiguous(kernels.UInt32, p.E*p.H, p.I/8), kernels.Contiguous(kernels.Float32, p.E*p.H, p.I/64),
		kernels.Contiguous(kernels.Float32, p.E*p.H, p.I/64)}
	args := append([]kernels.Layout{kernels.Contiguous(kernels.Float32, p.T, p.H)}, gu...)
	args = append(append(args, gu...), dn...)
	args = append(args, kernels.Contiguous(kernels.Int32, p.T, p.K), kernels.Contiguous(kernels.Float32, p.T, p.K),
		kernels.Contiguous(kernels.Float32, p.T, p.H))
	for _, c := range []struct {
		packed []int
		off    int
		want   []string
	}{
		{[]int{1, 4, 7}, 0, []string{"qswitch_act_chunks_float32", "qswitch_down_chunks_float32"}},
		{[]int{1}, 1, []string{"qswitch_act_float32", "qswitch_down_chunks_float32"}},
		{[]int{4}, 2, []string{"qswitch_act_float32", "qswitch_down_chunks_float32"}},
		{[]int{7}, 3, []string{"qswitch_act_chunks_float32", "qswitch_down_float32"}},
	} {
		require.Equal(t, c.want, encodeEntries(kernels.KQSwitchGLU, p, args, c.packed, c.off), "args %v at %d", c.packed, c.off)
	}
}

// gridRecorder is an Encoder with a pipeline thread limit that keeps each dispatch's
// threadgroups and threadgroup size.
type gridRecorder struct {
	entryRecorder
	limit        int
	groups, tpgs [][3]int
}

func (r *gridRecorder) MaxThreads() int { return r.limit }
func (r *gridRecorder) DispatchThreadgroups(g, tpg [3]int) {
	r.groups, r.tpgs = append(r.groups, g), append(r.tpgs, tpg)
}

// TestStagedQMVGridFollowsPipelineLimit: the staged qmv takes one threadgroup a core
// (132), each 16 slots where the pipeline takes 512 threads, else as many as it takes,
// fewer threadgroups for fewer blocks; 4-bit rows of at most 1,024 codes take the
// pipelined entries, other widths and longer rows the staged loop.
func TestStagedQMVGridFollowsPipelineLimit(t *testing.T) {
	grid := func(n, limit int) ([3]int, [3]int) {
		const k = 1024
		l := &kernels.Launch{Kernel: kernels.KQMV, Params: &kernels.QuantParams{M: 1, N: n, K: k, Bits: 4, Group: 64}, NArgs: 5}
		for i, s := range []kernels.Layout{kernels.Contiguous(kernels.Float32, 1, k), kernels.Contiguous(kernels.UInt32, n, k/8),
			kernels.Contiguous(kernels.Float32, n, k/64), kernels.Contiguous(kernels.Float32, n, k/64),
			kernels.Contiguous(kernels.Float32, 1, n)} {
			l.Args[i] = kernels.Arg{Layout: s}
		}
		r := &gridRecorder{limit: limit}
		kernels.KQMV.Encode(l, r)
		require.Equal(t, "qmv_pipe_float32", r.entry)
		require.Len(t, r.groups, 1)
		return r.groups[0], r.tpgs[0]
	}
	for _, c := range []struct {
		n, limit  int
		groups    int
		slots     int
		situation string
	}{
		{248320, 1024, 132, 16, "the 0.8B head, a full pipeline"},
		{248320, 512, 132, 16, "512 threads"},
		{248320, 256, 132, 8, "256 threads"},
		{248320, 384, 132, 12, "384 threads (the pipelined entry on the H200 translation)"},
		{248320, 96, 132, 3, "96 threads"},
		{32800, 1024, 65, 16, "4,100 blocks: 64 a threadgroup"},
	} {
		g, tpg := grid(c.n, c.limit)
		require.Equal(t, [3]int{c.groups, 1, 1}, g, c.situation)
		require.Equal(t, [3]int{32, c.slots, 1}, tpg, c.situation)
	}
}
