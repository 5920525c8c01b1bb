package kernels_test

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/kernels/msltest"
)

// TestQEmbedMSLReportsOutOfRange: the quantized embedding's MSL twin, given token ids
// outside the vocabulary, writes zero rows for them and sets the error word to the Go
// twin's error (the first offending id), for every scale dtype and thread order; the
// other rows are written.
func TestQEmbedMSLReportsOutOfRange(t *testing.T) {
	msltest.RequireCompiler(t)
	n := 0
	for _, l := range kernels.Samples(rand.New(rand.NewSource(9)))["quant"] {
		if l.Kernel != kernels.KQEmbed {
			continue
		}
		n++
		p := l.Params.(*kernels.QEmbedParams)
		ids := kernels.I32(l.In(0).Data)
		ids[1], ids[2] = int32(p.V+3), int32(-p.V-1)
		var want error
		func() {
			defer func() { want, _ = recover().(error) }()
			kernels.Run(l)
		}()
		require.EqualError(t, want,
			fmt.Sprintf("kernels: qembed: index %d out of range for an axis of length %d", p.V+3, p.V))
		for _, order := range msltest.Orders {
			e := &mmEncoder{family: "quant", args: map[int]*kernels.Arg{}, tag: 1, order: order}
			l.Kernel.Encode(l, e)
			require.NoError(t, e.err)
			require.EqualError(t, kernels.DeviceError(e.word, []kernels.Launch{{}, *l}), want.Error(), "%v order", order)
			var out []byte
			for _, b := range e.bufs {
				if b.Index == l.NArgs-1 {
					out = b.Data
				}
			}
			got := kernels.F32(out)[:p.T*p.D]
			for i, v := range got {
				row := i / p.D
				switch {
				case row == 1 || row == 2:
					require.Zerof(t, v, "row %d element %d", row, i%p.D)
				case row == 0: // the one row the Go twin wrote before it stopped
					w := kernels.F32(l.Out().Data)[i]
					require.InDeltaf(t, w, v, 1e-5*math.Max(1, math.Abs(float64(w))), "element %d", i)
				default:
					require.Falsef(t, math.IsNaN(float64(v)), "row %d unwritten", row)
				}
			}
		}
	}
	require.NotZero(t, n, "qembed samples")
}
