package predict

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/nn"
)

// Inputs are what a prediction is made from.
type Inputs struct {
	// Kinds is each layer's mixer kind, in layer order.
	Kinds []nn.LayerKind
	// Mode is the decode path: "batch" (mlx-lm's BatchGenerator), "plain"
	// (generate_step) or "server" (batch under churn).
	Mode string
	// WeightBuffers is how many device buffers the loaded weights are.
	WeightBuffers int
	// Constants is how many small constant arrays the model builds beside its weights.
	Constants int
	// CacheBuffersPerLayer is what one decoding request holds per layer besides the
	// weights (the layer's cache state and batch metadata) on the batch path.
	CacheBuffersPerLayer int
	// PlainCacheBuffersPerLayer is the same on the plain path (the state arrays only).
	PlainCacheBuffersPerLayer int
	// Limit is the allocator's resource limit in buffer objects.
	Limit int
}

// Prediction is what a model's structure says about its stock (lazy) decode.
type Prediction struct {
	Inputs
	// GDN and Attention count the layers of each kind.
	GDN, Attention int
	// Loaded is the live buffers after load: weights and constants.
	Loaded int
	// Baseline is the live buffers once decoding begins: Loaded plus the cache
	// buffers of every layer plus Extra.
	Baseline int
	// Extra is what the path holds beyond the per-layer count (see New): 0 or 1.
	Extra int
	// Slope is the leak in buffer objects per token on the stock path (0: none).
	Slope int
	// CrashToken is the token at which the stock path hits Limit (0: it never does).
	CrashToken int
}

// New makes the prediction of in.
func New(in Inputs) Prediction {
	p := Prediction{Inputs: in, GDN: nn.CountKinds(in.Kinds, nn.Recurrent)}
	p.Attention = len(in.Kinds) - p.GDN
	p.Loaded = in.WeightBuffers + in.Constants
	// Both sums are the live counts measured once decoding begins, for every layer mix
	// (cmd/decode's TestPredictOnlyMatchesRun runs each). Both paths hold one buffer
	// beyond the layers' state: the token array each step feeds the next. On the batch
	// path a GDN layer 0, whose padding the SSM mask evaluates every step, holds one
	// buffer fewer than the per-layer count, which cancels it.
	per := in.CacheBuffersPerLayer
	if in.Mode == "plain" {
		per = in.PlainCacheBuffersPerLayer
	}
	if in.Mode == "plain" || len(in.Kinds) == 0 || in.Kinds[0] != nn.Recurrent {
		p.Extra = 1
	}
	p.Baseline = p.Loaded + per*len(in.Kinds) + p.Extra
	p.Slope = Slope(in.Mode, in.Kinds)
	p.CrashToken = CrashToken(in.Limit, p.Baseline, p.Slope)
	return p
}

// Slope is the predicted leak in objects/token: the stock batch path leaks one link
// per GDN layer but layer 0's per token (the model reads layer 0's cache for the SSM
// mask every step, which evaluates it, as mlx-lm's ssm_idx = 0 does); when layer 0 is
// an attention layer no GDN cache is read, and every GDN layer leaks. The plain path
// never arms the leak.
func Slope(mode string, kinds []nn.LayerKind) int {
	n := nn.CountKinds(kinds, nn.Recurrent)
	switch {
	case mode == "plain" || n == 0:
		return 0
	case kinds[0] == nn.Recurrent:
		return n - 1
	default:
		return n
	}
}

// CrashToken is the token at which a completion leaking slope objects/token from
// baseline live buffers hits limit (0 when it does not leak).
func CrashToken(limit, baseline, slope int) int {
	if slope <= 0 {
		return 0
	}
	return (limit - baseline) / slope
}

// Interval recovers full_attention_interval from the layer pattern: the first
// attention layer's index + 1 (0 when there is none).
func Interval(kinds []nn.LayerKind) int {
	for i, k := range kinds {
		if k == nn.Attention {
			return i + 1
		}
	}
	return 0
}

// WriteBaseline prints the [baseline] line: how the baseline adds up.
func (p Prediction) WriteBaseline(out io.Writer) {
	per, extra := p.CacheBuffersPerLayer, ""
	if p.Mode == "plain" {
		per = p.PlainCacheBuffersPerLayer
	}
	if p.Extra > 0 {
		extra = fmt.Sprintf(" + %d (the token array each step feeds the next)", p.Extra)
	}
	fmt.Fprintf(out, "[baseline] %s buffers after load + %d per layer x %d layers of cache state%s = %s live buffers once decoding begins\n",
		Comma(p.Loaded), per, len(p.Kinds), extra, Comma(p.Baseline))
}

// WritePredict prints the [predict] line of the stock (lazy) path: when would it die?
func (p Prediction) WritePredict(out io.Writer) {
	WritePredict(out, p.Mode, cache.Lazy, p.GDN, p.Slope, p.CrashToken)
}

// WritePredict prints the [predict] line of a run on mode's path with policy's
// bookkeeping, for a model of gdn GDN layers whose stock path leaks slope
// objects/token and would crash at crash.
func WritePredict(out io.Writer, mode string, policy cache.Policy, gdn, slope, crash int) {
	switch {
	case mode == "plain":
		fmt.Fprintf(out, "[predict] plain path (generate_step): caches never armed -> no leak expected\n")
	case slope == 0:
		fmt.Fprintf(out, "[predict] %d GDN layers -> no leak expected\n", gdn)
	case policy != cache.Lazy:
		fmt.Fprintf(out, "[predict] %s bookkeeping (the fix) -> no leak expected; the stock lazy path leaks ~%d objects/token\n",
			policy, slope)
	default:
		fmt.Fprintf(out, "[predict] leak ~%d objects/token -> resource-limit crash near token ~%s (if unpatched)\n",
			slope, Comma(crash))
	}
}

// Comma formats n with thousands separators, as the repro prints; every int64,
// math.MinInt64 included (it has no positive twin to format instead).
func Comma(n int) string { return group(strconv.Itoa(n)) }

// CommaFloat formats v rounded to a whole number with thousands separators, for
// values past int64 (a chart's axis above the largest limit); NaN and infinities as
// strconv spells them.
func CommaFloat(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return group(strconv.FormatFloat(math.Round(v), 'f', 0, 64))
}

// group inserts a comma every three digits of the decimal integer s (sign kept).
func group(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	if s == "0" {
		sign = "" // math.Round(-0.4) is -0
	}
	var b strings.Builder
	b.WriteString(sign)
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Describe is the prediction of the model d describes (nn.Description: the same
// description the loader, the memory estimate and the baseline read) on the decode
// path mode at limit.
func Describe(d *nn.Description, mode string, limit int) Prediction {
	return New(Inputs{Kinds: d.Kinds, Mode: mode, WeightBuffers: d.WeightBuffers(), Constants: d.Constants,
		CacheBuffersPerLayer: d.CacheBuffersPerLayer, PlainCacheBuffersPerLayer: d.PlainCacheBuffersPerLayer, Limit: limit})
}

// WriteRandomModel writes the [model] line --predict-only prints for the random model
// of d (a --model-type shape or a --config structure): layer counts, experts, width and
// the buffers after load, on device at limit (whose origin is source).
func (p Prediction) WriteRandomModel(out io.Writer, d *nn.Description, device, source string) {
	fmt.Fprintf(out, "[model] %s: layers=%d (ssm=%d attn=%d) experts=%d hidden=%d; %s buffers after load device=%s limit=%d (%s)\n",
		d.ModelType, d.Layers(), p.GDN, p.Attention, d.Experts, d.Hidden, Comma(p.Loaded), device, p.Limit, source)
}
