package metal

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
)

// TestStrideOver32BitsFails: a batched linear whose weight stride passes 2^31 elements
// cannot travel in the kernel's 32-bit parameter: the launch fails with the field's
// name instead of running with a wrapped stride. Element offsets that large are fine:
// they travel as 64-bit buffer offsets.
func TestStrideOver32BitsFails(t *testing.T) {
	f := newFake()
	r := newRunner(f, GPUOptions{})
	s := &stepBuilder{f: f}
	const stride = 1 << 31
	l := kernels.Launch{Kernel: kernels.KLinear, NArgs: 3,
		Params: &kernels.MatmulParams{Batch: 2, M: 1, N: 4, K: 8, XStride: 8, WStride: stride}}
	l.Args[0] = s.arg(kernels.Float32, 2, 8)
	l.Args[1] = s.arg(kernels.Float32, stride+32)
	l.Args[1].Layout = kernels.Contiguous(kernels.Float32, 2, 4, 8)
	l.Args[1].Strides[0] = stride
	l.Args[2] = s.arg(kernels.Float32, 2, 4)
	require.EqualError(t, r.run([]kernels.Launch{l}),
		"metal: kernel linear: Encode panicked: kernels: MatmulParams.WStride = 2147483648 does not fit the 32-bit MSL parameter")

	// The same weight one batch in, as an element offset past 2^31: bound at a 64-bit
	// byte offset, and the launch runs.
	l.Params = &kernels.MatmulParams{Batch: 1, M: 1, N: 4, K: 8, XStride: 8, WStride: 0}
	l.Args[1].Layout = kernels.Contiguous(kernels.Float32, 4, 8)
	l.Args[1].Offset = stride
	f.ops = nil
	require.NoError(t, r.run([]kernels.Launch{l}))
	require.Contains(t, f.ops, "buffer 1 = b2+8589934592")
}
