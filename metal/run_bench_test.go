package metal

import (
	"testing"

	"github.com/ingotml/ingot/kernels"
)

// nopBackend accepts everything and does nothing: what is left is the runner's own
// cost per launch (cache lookup, Encode, argument checks, cadence).
type nopBackend struct{ bufs map[*byte]*fakeBuf }

type nopLib struct{}

func (nopLib) newPipeline(string) (pipeline, error) { return &fakePipe{max: 1024}, nil }

func (b *nopBackend) newLibrary(string, string) (library, error) { return nopLib{}, nil }
func (b *nopBackend) buffer(base *byte) (deviceBuffer, int, int, bool) {
	d, ok := b.bufs[base]
	if !ok {
		return nil, 0, 0, false
	}
	return d, 0, d.size(), true
}
func (b *nopBackend) errorWord() (deviceBuffer, []byte, error) {
	return &fakeBuf{n: kernels.ErrorWordSize}, make([]byte, kernels.ErrorWordSize), nil
}
func (b *nopBackend) scratch(n int) (deviceBuffer, error)   { return &fakeBuf{n: n}, nil }
func (b *nopBackend) barrier()                              {}
func (b *nopBackend) setPipeline(pipeline)                  {}
func (b *nopBackend) setBuffer(int, deviceBuffer, int)      {}
func (b *nopBackend) setBytes(int, []byte)                  {}
func (b *nopBackend) dispatch(dispatchKind, [3]int, [3]int) {}
func (b *nopBackend) commit() bool                          { return true }
func (b *nopBackend) wait(int) (int, error)                 { return -1, nil }
func (b *nopBackend) completed(int) <-chan struct{}         { return nil }
func (b *nopBackend) releaseScratch(deviceBuffer)           {}
func (b *nopBackend) reset()                                {}

// BenchmarkRunLaunch is GPU.Run's Go-side cost per launch of a binary kernel (three
// buffers, a 152-byte constant block, one dispatch), without the Metal calls.
func BenchmarkRunLaunch(b *testing.B) {
	f := newFake()
	be := &nopBackend{bufs: f.bufs}
	r := newRunner(be, GPUOptions{})
	l := kernels.Launch{Kernel: kernels.BinaryKernel(kernels.OpAdd), NArgs: 3}
	for i := range 3 {
		l.Args[i] = f.alloc(kernels.Contiguous(kernels.Float32, 64))
	}
	batch := make([]kernels.Launch, 100)
	for i := range batch {
		batch[i] = l
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := r.runBatch(batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/launch")
}
