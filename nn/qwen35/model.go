package qwen35

import (
	"fmt"
	"math"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/tensor"
)

// Model is a Qwen3.5 or Qwen3-Next model (Gated DeltaNet and attention layers): an
// nn.Model whose weights live on one graph.
type Model struct {
	nn.Decoder // Forward, ForwardHidden and VocabSize
	cfg        *Config
	g          *graph.Graph
	opt        nn.Options
	embed      nn.EmbeddingLayer
	layers     []*layer
	act        tensor.DType // the activations' dtype: the embedding table's, as in MLX
	k          *constants
}

// constants are small arrays every forward reuses, made once rather than per forward.
type constants struct {
	zero   tensor.Array // 0-d 0 in the activation dtype, for Where
	qScale tensor.Array // [Dk] filled with 1/Dk: turns RMSNorm into Dk^-0.5 * l2norm
	kScale tensor.Array // [Dk] filled with Dk^-0.5: turns RMSNorm into l2norm
	// qkEps is the RMSNorm epsilon of the q/k normalisation: 1e-6/Dk gives HF's
	// l2norm (eps 1e-6 on the sum of squares); 1e-6 gives mlx-lm's normalize_qk (eps
	// 1e-6 on the mean). The two differ only for tiny vectors, but those occur (a
	// randomly initialised checkpoint), so a checkpoint mlx-lm wrote runs mlx-lm's rule.
	qkEps float64
}

// layer is one decoder block: exactly one mixer and exactly one feed-forward block set.
type layer struct {
	index    int
	inNorm   nn.RMSNorm
	postNorm nn.RMSNorm
	gdn      *gatedDeltaNet
	attn     *nn.SelfAttention
	mlp      *nn.MLP            // a dense layer's MLP
	moe      *sparseMoE         // or a sparse layer's
	moeW     *tensor.MoEWeights // the fused MoE block's weights, or nil (see blockweights.go)
	mlpW     *tensor.MLPWeights // the fused dense MLP block's weights, or nil
}

var _ nn.Model = (*Model)(nil)

// Config returns the model's configuration (do not modify it).
func (m *Model) Config() *Config { return m.cfg }

// Graph returns the graph the model's weights live on.
func (m *Model) Graph() *graph.Graph { return m.g }

// LayerKinds returns each layer's mixer kind.
func (m *Model) LayerKinds() []nn.LayerKind { return append([]nn.LayerKind(nil), m.cfg.LayerTypes...) }

// MakeCache returns fresh caches, one per layer: a *cache.KVCache for attention layers
// and a *cache.ArraysCache with policy p for GDN layers (both metadata fields absent: the
// plain single-sequence path). They are bound to the model's graph, so that merging
// them while still empty makes the batch metadata there too.
func (m *Model) MakeCache(p cache.Policy) []cache.Cache {
	cs := make([]cache.Cache, len(m.layers))
	for i := range cs {
		if m.cfg.IsAttention(i) {
			cs[i] = cache.NewKVCacheOn(m.g)
		} else {
			cs[i] = cache.NewArraysCacheOn(m.g, p)
		}
	}
	return cs
}

// begin checks a forward's arguments, embeds the tokens and makes the masks the
// layers read (nn.Decoder runs the rest).
func (m *Model) begin(tokens tensor.Array, caches []cache.Cache) (tensor.Array, nn.LayerStep) {
	nn.CheckForward(family, m.g, tokens, caches, len(m.layers))
	s := tokens.Dim(1)
	x := m.embed.Forward(tokens)
	// Both masks are made once, from one cache each, before any layer runs (mlx-lm's
	// ssm_idx = 0 and fa_idx): which cache's metadata gets read decides what leaks.
	ssmMask := m.ssmMask(caches, s)
	attnMask := m.attentionMask(caches, s)
	return x, func(i int, x tensor.Array) tensor.Array {
		var c cache.Cache
		if caches != nil {
			c = caches[i]
		}
		return m.layers[i].forward(m, x, ssmMask, attnMask, c)
	}
}

// ssmMask is layer 0's ArraysCache mask for s new tokens, or invalid when layer 0 is
// not a GDN layer, there are no caches, or its cache is not armed.
func (m *Model) ssmMask(caches []cache.Cache, s int) tensor.Array {
	if caches == nil || m.cfg.IsAttention(0) {
		return tensor.Array{}
	}
	return arraysCache(0, caches[0]).MakeMask(s)
}

// attentionMask is the first attention layer's mask: the batched cache's own mask, or
// a causal mask when s > 1 (none for a single new token).
func (m *Model) attentionMask(caches []cache.Cache, s int) tensor.Array {
	if caches != nil {
		fa := m.cfg.FirstAttention()
		return attentionCache(fa, caches[fa]).MakeMask(s)
	}
	if s == 1 {
		return tensor.Array{}
	}
	return cache.CausalMask(m.g, s, 0)
}

// arraysCache returns c as a GDN cache (nil for no cache).
func arraysCache(i int, c cache.Cache) *cache.ArraysCache {
	if c == nil {
		return nil
	}
	ac, ok := c.(*cache.ArraysCache)
	if !ok {
		panic(fmt.Sprintf("qwen35: layer %d is a GDN layer; its cache must be *cache.ArraysCache, got %T", i, c))
	}
	return ac
}

// attentionCache returns c as an attention cache (nil for no cache).
func attentionCache(i int, c cache.Cache) cache.Attention {
	if c == nil {
		return nil
	}
	ac, ok := c.(cache.Attention)
	if !ok {
		panic(fmt.Sprintf("qwen35: layer %d is an attention layer; its cache must be *cache.KVCache or *cache.BatchKVCache, got %T", i, c))
	}
	return ac
}

func (l *layer) forward(m *Model, x, ssmMask, attnMask tensor.Array, c cache.Cache) tensor.Array {
	var mx mixed
	if l.gdn != nil {
		mx = l.gdn.forward(m, l.inNorm, x, ssmMask, arraysCache(l.index, c))
	} else {
		mx = mixed{r: l.attn.Forward(l.inNorm.Forward(x), attnMask, attentionCache(l.index, c))}
	}
	return l.feedForward(x, mx)
}

// mixed is a token mixer's output r, or the fused GDN decode step that holds it (a
// fused feed-forward block then reads r in place from the step: no view node).
type mixed struct {
	r    tensor.Array
	step *tensor.GDNStep
}

// feedForward adds the mixer's output to x and runs the feed-forward block with its
// residual: the fused kernel when build gave the layer one (see build), else op by op.
func (l *layer) feedForward(x tensor.Array, mx mixed) tensor.Array {
	eps := l.postNorm.Eps
	switch {
	case mx.step != nil && l.moeW != nil:
		return tensor.MoEBlockAfter(x, mx.step, l.moeW, eps, l.moe.topK, l.moe.renorm)
	case mx.step != nil && l.mlpW != nil:
		return tensor.MLPBlockAfter(x, mx.step, l.mlpW, eps)
	}
	r := mx.r
	if mx.step != nil {
		r = mx.step.R()
	}
	switch {
	case l.moeW != nil:
		return tensor.MoEBlock(x, r, l.moeW, eps, l.moe.topK, l.moe.renorm)
	case l.mlpW != nil:
		return tensor.MLPBlock(x, r, l.mlpW, eps)
	}
	x = tensor.Add(x, r)
	h := l.postNorm.Forward(x)
	if l.moe != nil {
		return tensor.Add(x, l.moe.forward(h))
	}
	return tensor.Add(x, l.mlp.Forward(h))
}

// build assembles a model, drawing every parameter from src in a fixed order.
// mlxRules: the checkpoint was written by mlx-lm, whose q/k epsilon applies.
func build(cfg *Config, g *graph.Graph, src nn.Source, opt nn.Options, mlxRules bool) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b := nn.NewBuilder(g, src)
	m := draw(cfg, b)
	if b.Err() != nil {
		return nil, b.Err()
	}
	m.g, m.opt = g, opt
	// The fused/unfused choice, made here once: a block gets its fused kernel's weights
	// unless the options ask for the unfused path, its weights do not allow it or the
	// graph's device does not take it at its sizes (blockweights.go); forward then runs whatever
	// the layer holds.
	for _, l := range m.layers {
		if m.act != tensor.Float32 || opt.Unfused {
			break
		}
		if l.moe != nil {
			l.moeW = fusedMoE(l.postNorm, l.moe)
		} else {
			l.mlpW = fusedMLP(l.postNorm, l.mlp)
		}
	}
	// Constants take the activation dtype, as MLX's Python scalars do; constantArrays
	// counts them.
	m.k = &constants{zero: tensor.Scalar(g, 0, m.act)}
	if dk := cfg.LinearKeyHeadDim; cfg.NumGDN() > 0 {
		m.k.qScale = tensor.Full(g, m.act, 1/float64(dk), dk)
		m.k.kScale = tensor.Full(g, m.act, 1/math.Sqrt(float64(dk)), dk)
		m.k.qkEps = 1e-6 / float64(dk)
		if mlxRules {
			m.k.qkEps = 1e-6
		}
	}
	for _, l := range m.layers {
		if l.gdn != nil && !opt.Unfused && !opt.OpsGatedDelta {
			l.gdn.fw, l.gdn.fp = fusedGDN(m, l.inNorm, l.gdn)
		}
	}
	return m, nil
}

// draw makes the model's layers from b's parameters, in the order a random model
// draws them. With a dry builder it makes nothing and only records (nn.Record).
func draw(cfg *Config, b *nn.Builder) *Model {
	m := &Model{cfg: cfg}
	eps := cfg.RMSNormEps
	m.embed, m.act = b.Embedding("model.embed_tokens", cfg.VocabSize, cfg.HiddenSize)
	m.layers = make([]*layer, cfg.NumLayers)
	for i := range m.layers {
		p := fmt.Sprintf("model.layers.%d.", i)
		l := &layer{index: i}
		l.inNorm = b.Norm(p+"input_layernorm.weight", nn.KindCentredNorm, cfg.HiddenSize, eps)
		l.postNorm = b.Norm(p+"post_attention_layernorm.weight", nn.KindCentredNorm, cfg.HiddenSize, eps)
		if cfg.IsAttention(i) {
			l.attn = b.SelfAttention(p+"self_attn.", nn.AttentionShape{Hidden: cfg.HiddenSize, Heads: cfg.NumHeads,
				KVHeads: cfg.NumKVHeads, HeadDim: cfg.HeadDim, Bias: cfg.AttentionBias, Gated: true,
				Norm: nn.KindCentredNorm, Eps: eps, RoPE: nn.RoPE{Dims: cfg.RotaryDims(), Base: cfg.RopeTheta}})
		} else {
			l.gdn = newGatedDeltaNet(b, cfg, p+"linear_attn.")
		}
		if cfg.IsSparse(i) {
			l.moe = newSparseMoE(b, cfg, p+"mlp.")
		} else {
			l.mlp = b.MLP(p+"mlp.", cfg.HiddenSize, cfg.IntermediateSize)
		}
		m.layers[i] = l
	}
	norm := b.Norm("model.norm.weight", nn.KindCentredNorm, cfg.HiddenSize, eps)
	m.Decoder = nn.NewDecoder(m.begin, len(m.layers), norm, b.Head(cfg.TieWordEmbeddings, m.embed, cfg.VocabSize, cfg.HiddenSize), cfg.VocabSize)
	return m
}

// constantArrays is how many constant arrays build makes beside the weights: the zero,
// and the q/k scales when the model has GDN layers.
func constantArrays(cfg *Config) int {
	if cfg.NumGDN() > 0 {
		return 3
	}
	return 1
}
