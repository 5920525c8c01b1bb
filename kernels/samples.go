package kernels

import (
	"math/rand"
	"sort"
	"sync"
)

// Sample launches let one generic test run every kernel both ways (Go twin and MSL twin
// under emulation, or on a GPU) on the same inputs. Each family registers a function that
// builds fully populated launches: fresh buffers, random inputs, a poisoned output.

var (
	sampleMu sync.Mutex
	samples  = map[string]func(rng *rand.Rand) []*Launch{}
)

// RegisterSamples records the sample-launch builder of a family.
func RegisterSamples(family string, f func(rng *rand.Rand) []*Launch) {
	sampleMu.Lock()
	defer sampleMu.Unlock()
	samples[family] = f
}

// Samples returns the sample launches of every family, keyed by family, built from rng.
func Samples(rng *rand.Rand) map[string][]*Launch {
	sampleMu.Lock()
	fams := make([]string, 0, len(samples))
	for f := range samples {
		fams = append(fams, f)
	}
	sampleMu.Unlock()
	sort.Strings(fams)
	out := map[string][]*Launch{}
	for _, f := range fams {
		out[f] = samples[f](rng)
	}
	return out
}

// NewArg makes an argument with a fresh, 8-byte aligned buffer of layout l's span.
func NewArg(l Layout) Arg {
	n := (l.Offset + l.Span()) * l.DType.Size()
	words := make([]uint64, (n+7)/8+1)
	b := unsafeBytes(words)[:n]
	return Arg{Data: b, Layout: l}
}

// Fill writes uniform random values in [lo, hi) into every element a's layout addresses
// (integers are truncated; bool is a coin flip).
func Fill(rng *rand.Rand, a *Arg, lo, hi float64) {
	n := len(a.Data) / a.DType.Size()
	for i := 0; i < n; i++ {
		v := lo + rng.Float64()*(hi-lo)
		if a.DType == Bool {
			v = float64(rng.Intn(2))
		}
		Store(a.DType, a.Data, i, v)
	}
}

// Poison fills a float output with NaN (integers with a sentinel) so an unwritten
// element cannot pass a comparison.
func Poison(a *Arg) {
	n := len(a.Data) / a.DType.Size()
	for i := 0; i < n; i++ {
		switch {
		case a.DType.IsFloat():
			Store(a.DType, a.Data, i, nan)
		case a.DType == Bool:
			a.Data[i] = 0xAA
		default:
			Store(a.DType, a.Data, i, -123456789)
		}
	}
}
