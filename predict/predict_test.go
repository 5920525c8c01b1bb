package predict

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/nn"
)

// hybrid is n layers, attention every interval-th (the HF layer pattern).
func hybrid(n, interval int) []nn.LayerKind {
	k := make([]nn.LayerKind, n)
	for i := range k {
		k[i] = nn.Recurrent
		if (i+1)%interval == 0 {
			k[i] = nn.Attention
		}
	}
	return k
}

// TestKnownStructures: the figures the README and the CLI print, from the structures'
// buffer counts (weights + 3 constants, 5 cache buffers per layer, the default limit).
func TestKnownStructures(t *testing.T) {
	for _, c := range []struct {
		name                              string
		kinds                             []nn.LayerKind
		weights                           int
		gdn, baseline, slope, crash, intv int
		line                              string
	}{
		{"default repro (50 layers, 49 GDN)", hybrid(50, 50), 950, 49, 1203, 48, 10370, 50,
			"[predict] leak ~48 objects/token -> resource-limit crash near token ~10,370 (if unpatched)\n"},
		{"Qwen3.5-0.8B (24 layers, interval 4)", hybrid(24, 4), 320, 18, 443, 17, 29326, 4,
			"[predict] leak ~17 objects/token -> resource-limit crash near token ~29,326 (if unpatched)\n"},
		{"Qwen3-Next-80B at 16 experts (48 layers, interval 4)", hybrid(48, 4), 807, 36, 1050, 35, 14227, 4,
			"[predict] leak ~35 objects/token -> resource-limit crash near token ~14,227 (if unpatched)\n"},
	} {
		p := New(Inputs{Kinds: c.kinds, Mode: "batch", WeightBuffers: c.weights, Constants: 3, CacheBuffersPerLayer: 5, Limit: alloc.DefaultResourceLimit})
		require.Equal(t, c.gdn, p.GDN, c.name)
		require.Equal(t, len(c.kinds)-c.gdn, p.Attention, c.name)
		require.Equal(t, c.weights+3, p.Loaded, c.name)
		require.Equal(t, c.baseline, p.Baseline, c.name)
		require.Equal(t, c.slope, p.Slope, c.name)
		require.Equal(t, c.crash, p.CrashToken, c.name)
		require.Equal(t, c.intv, Interval(c.kinds), c.name)
		var b bytes.Buffer
		p.WritePredict(&b)
		require.Equal(t, c.line, b.String(), c.name)
	}
	var b bytes.Buffer
	New(Inputs{Kinds: hybrid(50, 50), Mode: "batch", WeightBuffers: 950, Constants: 3, CacheBuffersPerLayer: 5, Limit: 499000}).WriteBaseline(&b)
	require.Equal(t, "[baseline] 953 buffers after load + 5 per layer x 50 layers of cache state = 1,203 live buffers once decoding begins\n", b.String())
}

// TestNoLeak: the paths and structures that never leak, and the line each prints.
func TestNoLeak(t *testing.T) {
	for _, c := range []struct {
		mode  string
		kinds []nn.LayerKind
		line  string
	}{
		{"plain", hybrid(50, 50), "[predict] plain path (generate_step): caches never armed -> no leak expected\n"},
		{"batch", hybrid(12, 1), "[predict] 0 GDN layers -> no leak expected\n"},                                             // attention-only
		{"batch", []nn.LayerKind{nn.Recurrent}, "[predict] 1 GDN layers -> no leak expected\n"},                              // layer 0 is always evaluated
		{"server", hybrid(8, 8), "[predict] leak ~6 objects/token -> resource-limit crash near token ~659 (if unpatched)\n"}, // churn arms it too: (5000 - 1043) / 6
	} {
		p := New(Inputs{Kinds: c.kinds, Mode: c.mode, WeightBuffers: 1000, Constants: 3, CacheBuffersPerLayer: 5, Limit: 5000})
		var b bytes.Buffer
		p.WritePredict(&b)
		require.Equal(t, c.line, b.String(), "%s %v", c.mode, c.kinds)
	}
	require.Equal(t, 0, CrashToken(499000, 1000, 0))
	require.Equal(t, 0, Interval(hybrid(4, 5)), "no attention layer")
	var b bytes.Buffer
	WritePredict(&b, "batch", cache.Eager, 49, 48, 0)
	require.Equal(t, "[predict] eager bookkeeping (the fix) -> no leak expected; the stock lazy path leaks ~48 objects/token\n", b.String())
}

// TestAttentionFirst: with an attention layer first the SSM mask reads no GDN cache,
// so every GDN layer leaks, and the batch baseline holds the token array beyond the
// per-layer count (what cmd/decode's runs of such configs measure).
func TestAttentionFirst(t *testing.T) {
	attnFirst := append([]nn.LayerKind{nn.Attention}, hybrid(11, 12)...)
	p := New(Inputs{Kinds: attnFirst, Mode: "batch", WeightBuffers: 1000, Constants: 3, CacheBuffersPerLayer: 5, PlainCacheBuffersPerLayer: 2, Limit: 5000})
	require.Equal(t, 11, p.Slope)
	require.Equal(t, 1003+5*12+1, p.Baseline)
	require.Equal(t, (5000-1064)/11, p.CrashToken)
	var b bytes.Buffer
	p.WriteBaseline(&b)
	p.WritePredict(&b)
	require.Equal(t, "[baseline] 1,003 buffers after load + 5 per layer x 12 layers of cache state + 1 (the token array each step feeds the next) = 1,064 live buffers once decoding begins\n"+
		"[predict] leak ~11 objects/token -> resource-limit crash near token ~357 (if unpatched)\n", b.String())
	// Attention only: one buffer beyond the layers', no leak.
	p = New(Inputs{Kinds: hybrid(4, 1), Mode: "batch", WeightBuffers: 47, CacheBuffersPerLayer: 5, PlainCacheBuffersPerLayer: 2, Limit: 5000})
	require.Equal(t, 0, p.Slope)
	require.Equal(t, 47+20+1, p.Baseline)
}

// TestPlainBaseline: the plain path holds each layer's state arrays and the token
// array each step feeds the next, whatever the layer mix.
func TestPlainBaseline(t *testing.T) {
	for _, kinds := range [][]nn.LayerKind{hybrid(4, 4), hybrid(4, 1), append([]nn.LayerKind{nn.Attention}, hybrid(3, 4)...)} {
		p := New(Inputs{Kinds: kinds, Mode: "plain", WeightBuffers: 56, Constants: 3, CacheBuffersPerLayer: 5, PlainCacheBuffersPerLayer: 2, Limit: 5000})
		require.Equal(t, 59+2*4+1, p.Baseline, "%v", kinds)
		require.Equal(t, 0, p.Slope)
		var b bytes.Buffer
		p.WriteBaseline(&b)
		require.Equal(t, "[baseline] 59 buffers after load + 2 per layer x 4 layers of cache state + 1 (the token array each step feeds the next) = 68 live buffers once decoding begins\n", b.String())
	}
}

func TestComma(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 10370: "10,370", 499000: "499,000", 1234567: "1,234,567", -1203: "-1,203"} {
		require.Equal(t, want, Comma(n))
	}
}

// TestCommaEveryInt64: the edge values of int64 format (math.MinInt64 has no positive
// twin: negating it recursed forever, a stack overflow that exited 2).
func TestCommaEveryInt64(t *testing.T) {
	for n, want := range map[int]string{
		math.MinInt64:     "-9,223,372,036,854,775,808",
		math.MinInt64 + 1: "-9,223,372,036,854,775,807",
		math.MaxInt64:     "9,223,372,036,854,775,807",
		-1:                "-1",
		1:                 "1",
		-999:              "-999",
		-1000:             "-1,000",
		-100000:           "-100,000",
		100:               "100",
		999999:            "999,999",
	} {
		require.Equal(t, want, Comma(n), "%d", n)
	}
	for v, want := range map[float64]string{
		0: "0", 1234.4: "1,234", -1234.6: "-1,235", 1e19: "10,000,000,000,000,000,000",
		-1e19: "-10,000,000,000,000,000,000", math.NaN(): "NaN", math.Inf(1): "+Inf", math.Inf(-1): "-Inf",
	} {
		require.Equal(t, want, CommaFloat(v), "%v", v)
	}
}

// limitErr is the allocator's resource-limit error, as a run meets it.
var limitErr = fmt.Errorf("step: %w", &alloc.ResourceLimitError{Limit: 3000})

func line(ss ...[2]int) []Sample {
	var out []Sample
	for _, s := range ss {
		out = append(out, Sample{Token: s[0], Live: s[1], Count: s[1]})
	}
	return out
}

// TestFitSlope: the window samples[len/4 : len-1] skips warm-up and the last sample;
// fewer than MinSamples samples are no verdict.
func TestFitSlope(t *testing.T) {
	sl, ok := FitSlope(line([2]int{0, 999}, [2]int{1, 10}, [2]int{2, 12}, [2]int{3, 14}, [2]int{4, 0}))
	require.InDelta(t, 2.0, sl, 1e-12)
	require.False(t, ok)
	var ss []Sample
	for i := range 12 {
		ss = append(ss, Sample{Token: 100 * i, Live: 1000 + 48*100*i})
	}
	ss[0].Live, ss[11].Live = 0, 0 // outside the window
	sl, ok = FitSlope(ss)
	require.True(t, ok)
	require.InDelta(t, 48.0, sl, 1e-9)
	sl, ok = FitSlope(line([2]int{5, 7}, [2]int{5, 9}))
	require.Equal(t, 0.0, sl, "all at one token: no slope")
	require.False(t, ok)
}

// TestVerdicts: each verdict, its exit code, and the line it prints.
func TestVerdicts(t *testing.T) {
	leak := func() *Run {
		r := &Run{Mode: "batch", Policy: cache.Lazy, Limit: 3000, Rate: 10, Baseline: 500, GDN: 11}
		for i := range 10 {
			r.Samples = append(r.Samples, Sample{Token: 10 * i, Live: 500 + 100*i, Count: 500 + 100*i, ActiveMB: 1.25})
		}
		r.Tokens = make([]int32, 90)
		return r
	}
	var b bytes.Buffer
	r := leak()
	require.Equal(t, Leaking, r.Verdict(0.5))
	require.Equal(t, ExitLeak, r.Verdict(0.5).ExitCode())
	r.WriteVerdict(&b, 0.5)
	require.Equal(t, "[verdict] LEAKING: +10.0 LIVE buffer objects/token (bytes flat: 1.2MB active); resource-limit crash near token ~250\n", b.String())
	require.Equal(t, Flat, r.Verdict(10), "at the bar is flat")

	r = leak()
	require.False(t, r.Crash(errors.New("other")))
	r.Tokens = make([]int32, 250)
	require.True(t, r.Crash(limitErr))
	require.Equal(t, 250, r.CrashToken)
	require.Equal(t, 250, r.PredictedCrash())
	require.Equal(t, ExitCrash, r.Verdict(0.5).ExitCode())
	b.Reset()
	r.WriteVerdict(&b, 0.5)
	require.Equal(t, "[verdict] CRASH REPRODUCED: step: [metal::malloc] Resource limit (3000) exceeded. at token 250 (predicted ~250; +10.0 live objects/token before it)\n", b.String())

	r = leak()
	r.Samples = r.Samples[:3]
	require.Equal(t, None, r.Verdict(0.5))
	require.Equal(t, ExitFailure, None.ExitCode())
	b.Reset()
	r.WriteVerdict(&b, 0.5)
	require.Equal(t, "[verdict] NONE: 3 samples over 90 tokens; a slope needs at least 8\n", b.String())

	r = leak()
	r.Policy = cache.Eager
	require.False(t, r.Leaks())
	require.Equal(t, 0, r.PredictedCrash())
	require.Equal(t, 250, r.StockCrash())
	for i := range r.Samples {
		r.Samples[i].Live = 500
	}
	b.Reset()
	r.WriteVerdict(&b, 0.5)
	require.Equal(t, "[verdict] FLAT: +0.000 live buffer objects/token over 90 tokens\n", b.String())
	require.Equal(t, ExitFlat, r.Verdict(0.5).ExitCode())

	r = leak()
	r.Mode = "server"
	require.Equal(t, "request", r.Unit())
	b.Reset()
	r.WriteVerdict(&b, 0.5)
	require.Equal(t, "[verdict] LEAKING across churn: +10.0 LIVE buffer objects per completed request (the batch never drained)\n", b.String())
}

// TestDriftAndHost: the size-class table (classes in either histogram, by size, the
// changed ones marked) and the Go heap per dead link.
func TestDriftAndHost(t *testing.T) {
	r := &Run{
		HistFirst: []alloc.SizeClass{{Bytes: 64 << 10, Count: 152}, {Bytes: 16, Count: 5}},
		HistLast:  []alloc.SizeClass{{Bytes: 16, Count: 4805}, {Bytes: 64 << 10, Count: 150}, {Bytes: 2 << 30, Count: 1}},
		Samples:   []Sample{{Token: 1, Live: 1000, HeapMB: 10}, {Token: 100, Live: 1000 + 4800, HeapMB: 10 + 4800*1024.0/(1<<20)}},
	}
	require.Equal(t, []Drift{{16, 5, 4805}, {64 << 10, 152, 150}, {2 << 30, 0, 1}}, r.Drift())
	var b bytes.Buffer
	r.WriteDrift(&b)
	require.Equal(t, "[sizes] live buffers by size class (first sample -> last sample)\n"+
		"        16 B         5 ->      4805      +4800  <- drift\n"+
		"      64 KiB       152 ->       150         -2  <- drift\n"+
		"       2 GiB         0 ->         1         +1  <- drift\n", b.String())
	require.InDelta(t, 1024.0, r.HostPerLink(), 1e-9)
	b.Reset()
	r.WriteHost(&b)
	require.Equal(t, "[host] Go heap 10.0MB -> 14.7MB for 4,800 more live buffers: ~1024 bytes of graph per dead link (MLX: ~2.7 KB)\n", b.String())
	r.Samples[1].Live = 1099 // under 100 more: no per-link figure, no line
	require.Equal(t, 0.0, r.HostPerLink())
	b.Reset()
	r.WriteHost(&b)
	require.Empty(t, b.String())
	require.Equal(t, "1 MiB", SizeName(1<<20))
}
