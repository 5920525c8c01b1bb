package checkpoint_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/ingotml/ingot/nn/checkpoint"
	"github.com/stretchr/testify/require"
)

// stManyEmpty is a header of n empty tensors (the shape of issue 24's 72 MB header:
// a million of them) and no data.
func stManyEmpty(n int) []byte {
	var h strings.Builder
	h.WriteByte('{')
	for i := range n {
		if i > 0 {
			h.WriteByte(',')
		}
		fmt.Fprintf(&h, `"t%07d":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}`, i)
	}
	h.WriteByte('}')
	return stRaw(h.String(), nil)
}

// TestSafetensorsHeaderCostPerTensor: parsing allocates a few hundred bytes per tensor
// (its name, shape and map slot). encoding/json's tokenizer allocated ~3.3 KB per
// tensor, which made a million-tensor header cost seconds and gigabytes.
func TestSafetensorsHeaderCostPerTensor(t *testing.T) {
	const n = 100_000
	file := stManyEmpty(n)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	s, err := checkpoint.ParseSafetensors("many.st", file)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	require.Len(t, s.Names(), n)
	perTensor := (after.TotalAlloc - before.TotalAlloc) / n
	t.Logf("%d bytes allocated per tensor", perTensor)
	require.Less(t, perTensor, uint64(800))
}

// BenchmarkParseManyTensors parses a header of 100,000 empty tensors (7 MB).
func BenchmarkParseManyTensors(b *testing.B) {
	file := stManyEmpty(100_000)
	b.SetBytes(int64(len(file)))
	for b.Loop() {
		if _, err := checkpoint.ParseSafetensors("many.st", file); err != nil {
			b.Fatal(err)
		}
	}
}
