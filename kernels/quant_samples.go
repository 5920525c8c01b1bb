package kernels

import "math/rand"

func init() {
	RegisterSamples("quant", quantSamples)
	RegisterSamples("qswitch", qswitchSamples)
}

// qSampleMatrix is a random quantized [rows, cols] matrix: random codes, scales near
// 1/n (so values stay near [-1, 1]) and biases in [-0.5, 0.5).
func qSampleMatrix(rng *rand.Rand, rows, cols, bits, group int, dt DType) (w, s, b Arg) {
	words, groups, err := CheckQuant(cols, bits, group)
	if err != nil {
		panic(err)
	}
	w = NewArg(Contiguous(UInt32, rows, words))
	for i := range U32(w.Data) {
		U32(w.Data)[i] = rng.Uint32()
	}
	n := float64(int(1)<<bits - 1)
	s = randArg(rng, Contiguous(dt, rows, groups), -1/n, 1/n)
	b = randArg(rng, Contiguous(dt, rows, groups), -0.5, 0.5)
	return w, s, b
}

// qSampleIndex fills int32 indices in [-1, n]: -1 wraps, n is out of range.
func qSampleIndex(rng *rand.Rand, a *Arg, n int) {
	for i := range I32(a.Data) {
		I32(a.Data)[i] = int32(rng.Intn(n+2) - 1)
	}
}

// quantSamples covers every bits value, group size and scale dtype across the four
// kernels: decode and prefill row counts, wrapped ids, wrapped and out-of-range experts.
func quantSamples(rng *rand.Rand) []*Launch {
	var out []*Launch
	for _, c := range []struct {
		k           *Kernel
		m, n, kk    int
		bits, group int
		dt          DType
	}{
		{KQMV, 1, 5, 256, 4, 64, Float32},
		{KQMV, 2, 7, 128, 3, 32, BFloat16},
		{KQMV, 3, 4, 256, 6, 128, Float16},
		{KQMV, 1, 3, 64, 2, 32, Float32},
		{KQMV, 1, 3, 160, 5, 32, Float16},
		{KQMV, 1, 3, 64, 8, 64, BFloat16},
		// Several threadgroups of the MSL twin (8 rows each), the last one partial, and
		// threads that take several chunks of a row (K over 8 codes x 128 threads).
		{KQMV, 2, 19, 1152, 4, 128, Float32},
		{KQMV, 1, 17, 1088, 3, 64, Float16},
		{KQMV, 1, 9, 4160, 5, 32, BFloat16}, // threads with two chunks of a row
		{KQMM, 5, 6, 128, 5, 32, Float32},
		{KQMM, 4, 3, 256, 8, 128, BFloat16},
		{KQMM, 6, 3, 64, 2, 64, Float16},
	} {
		x := randArg(rng, Contiguous(Float32, c.m, c.kk), -1, 1)
		w, s, b := qSampleMatrix(rng, c.n, c.kk, c.bits, c.group, c.dt)
		out = append(out, launch(c.k, &QuantParams{M: c.m, N: c.n, K: c.kk, Bits: c.bits, Group: c.group},
			x, w, s, b, NewArg(Contiguous(Float32, c.m, c.n))))
	}
	for _, c := range []struct {
		t, v, d, bits, group int
		dt                   DType
	}{{4, 6, 128, 4, 32, Float32}, {3, 5, 64, 6, 64, BFloat16}, {3, 4, 96, 3, 32, Float16}} {
		ids := NewArg(Contiguous(Int32, c.t))
		for i := range I32(ids.Data) {
			I32(ids.Data)[i] = int32(rng.Intn(2*c.v) - c.v) // valid ids, negative ones wrap
		}
		w, s, b := qSampleMatrix(rng, c.v, c.d, c.bits, c.group, c.dt)
		out = append(out, launch(KQEmbed, &QEmbedParams{T: c.t, V: c.v, D: c.d, Bits: c.bits, Group: c.group},
			ids, w, s, b, NewArg(Contiguous(Float32, c.t, c.d))))
	}
	// The staged qmv entries (qmvStaged; 4-bit rows of at most qmvPipeMaxK codes take the
	// pipelined ones): threadgroups of 64 row blocks in 16 slots, the last threadgroup
	// with 3 blocks (idle slots), the last block 4 rows (read whole, overlapping the one
	// before, at 2 and 4 bits); 2 x rows (x staged again); a width and scale dtype each;
	// a launch past qmvStagedGroups threadgroups (65 blocks a threadgroup); and 4-bit
	// rows past qmvPipeMaxK codes (the staged loop). Drawn from their own generator, so adding them left every other sample's
	// data (the shared rng's draws) as it was.
	srng := rand.New(rand.NewSource(21))
	for _, c := range []struct {
		m, n, kk, bits, group int
		dt                    DType
	}{
		{2, qmvStagedMinRows + 20, 64, 4, 32, Float32},
		{1, qmvStagedMinRows + 20, 128, 8, 64, BFloat16},
		{1, qmvStagedMinRows, 64, 2, 64, Float16},
		{1, qmvStagedGroups*qmvStagedSlots*qmvStagedBlocks*qmvRows + 20, 64, 4, 64, Float32},
		{1, qmvStagedMinRows, qmvPipeMaxK + 64, 4, 64, Float32},
	} {
		x := randArg(srng, Contiguous(Float32, c.m, c.kk), -1, 1)
		w, s, b := qSampleMatrix(srng, c.n, c.kk, c.bits, c.group, c.dt)
		out = append(out, launch(KQMV, &QuantParams{M: c.m, N: c.n, K: c.kk, Bits: c.bits, Group: c.group},
			x, w, s, b, NewArg(Contiguous(Float32, c.m, c.n))))
	}
	// The tiled qmm (qmmGemmMinRows rows or more): partial row and column tiles, several
	// steps of K, every width, each scale dtype; drawn from their own generator too.
	grng := rand.New(rand.NewSource(22))
	for _, c := range []struct {
		m, n, kk, bits, group int
		dt                    DType
	}{
		{70, 67, 256, 4, 64, Float32},
		{20, 9, 128, 8, 32, BFloat16},
		{17, 65, 96, 3, 32, Float16},
		{16, 5, 64, 2, 64, Float32},
		{18, 3, 160, 5, 32, BFloat16},
		{33, 7, 256, 6, 128, Float32},
		{130, 6144, 32, 4, 32, BFloat16}, // gemmBigMinTiles tiles: the 8 x 8 entry
		// Fewer than qmmGemmMinRows rows: the one-thread-an-output entry.
		{3, 5, 96, 5, 32, Float16},
		{2, 4, 128, 6, 64, Float32},
	} {
		x := randArg(grng, Contiguous(Float32, c.m, c.kk), -1, 1)
		w, s, b := qSampleMatrix(grng, c.n, c.kk, c.bits, c.group, c.dt)
		out = append(out, launch(KQMM, &QuantParams{M: c.m, N: c.n, K: c.kk, Bits: c.bits, Group: c.group},
			x, w, s, b, NewArg(Contiguous(Float32, c.m, c.n))))
	}
	return out
}

// qswitchSamples are qswitch_glu's launches (the qswitch family), drawn from their own
// generator.
func qswitchSamples(_ *rand.Rand) []*Launch {
	rng := rand.New(rand.NewSource(23))
	var out []*Launch
	for _, c := range []struct {
		p  QSwitchGLUParams
		dt DType
	}{
		{QSwitchGLUParams{T: 2, H: 64, K: 2, E: 4, I: 32, GateBits: 4, UpBits: 4, DownBits: 8, GateGroup: 32, UpGroup: 32, DownGroup: 32}, Float32},
		{QSwitchGLUParams{T: 1, H: 128, K: 2, E: 3, I: 64, GateBits: 3, UpBits: 3, DownBits: 6, GateGroup: 64, UpGroup: 64, DownGroup: 64}, BFloat16},
		{QSwitchGLUParams{T: 3, H: 32, K: 2, E: 4, I: 32, GateBits: 2, UpBits: 5, DownBits: 4, GateGroup: 32, UpGroup: 32, DownGroup: 32}, Float16},
		// The MSL twin's threads each take several chunks of a gate/up row (H over 8 x 128)
		// and several (expert, chunk) pairs of the down rows (k x I over 8 x 128).
		{QSwitchGLUParams{T: 2, H: 1152, K: 3, E: 5, I: 384, GateBits: 4, UpBits: 4, DownBits: 4, GateGroup: 64, UpGroup: 64, DownGroup: 128}, Float32},
	} {
		p := c.p
		// x in [-1, 1] over H = 1152 makes gate/up dots near 14 and down terms near 100
		// that cancel to outputs far smaller, where another order of the same float32 sums
		// moves the result by 1e-5; real activations are normalized, so a long row gets
		// a smaller x (dots near 1, as in a model).
		xr := 1.0
		if p.H > 256 {
			xr = 0.1
		}
		x := randArg(rng, Contiguous(Float32, p.T, p.H), -xr, xr)
		gw, gs, gb := qSampleMatrix(rng, p.E*p.I, p.H, p.GateBits, p.GateGroup, c.dt)
		uw, us, ub := qSampleMatrix(rng, p.E*p.I, p.H, p.UpBits, p.UpGroup, c.dt)
		dw, ds, db := qSampleMatrix(rng, p.E*p.H, p.I, p.DownBits, p.DownGroup, c.dt)
		ix := NewArg(Contiguous(Int32, p.T, p.K))
		qSampleIndex(rng, &ix, p.E)
		sc := randArg(rng, Contiguous(Float32, p.T, p.K), 0, 1)
		out = append(out, launch(KQSwitchGLU, &p, x, gw, gs, gb, uw, us, ub, dw, ds, db, ix, sc,
			NewArg(Contiguous(Float32, p.T, p.H))))
	}
	return out
}
