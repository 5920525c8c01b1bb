package qwen3

import (
	"fmt"
	"math"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/tensor"
)

// Model is a dense Qwen3 model (every layer attends): an nn.Model whose weights live
// on one graph.
type Model struct {
	nn.Decoder // Forward, ForwardHidden and VocabSize
	cfg        *Config
	g          *graph.Graph
	embed      nn.EmbeddingLayer
	layers     []*layer
}

var _ nn.Model = (*Model)(nil)

// layer is one decoder block: attention, then the SwiGLU MLP, each after its norm and
// around a residual.
type layer struct {
	inNorm, postNorm nn.RMSNorm
	attn             *attention
	mlp              *nn.MLP
}

// attention is Qwen3's attention: q and k RMS-normalised per head, then rotated over
// the whole head; grouped KV heads; no output gate.
type attention struct {
	q, k, v, o   nn.LinearLayer
	qNorm, kNorm nn.RMSNorm
	rope         nn.RoPE
	nh, nkv, hd  int
	scale        float64
}

// Config returns the model's configuration (do not modify it).
func (m *Model) Config() *Config { return m.cfg }

// Graph returns the graph the model's weights live on.
func (m *Model) Graph() *graph.Graph { return m.g }

// LayerKinds returns each layer's mixer kind: all nn.Attention.
func (m *Model) LayerKinds() []nn.LayerKind { return m.cfg.Kinds() }

// MakeCache returns a fresh *cache.KVCache per layer, bound to the model's graph (so
// merging them while still empty makes the batch metadata there too). The policy
// applies to recurrent caches only, and this model has none.
func (m *Model) MakeCache(cache.Policy) []cache.Cache {
	cs := make([]cache.Cache, len(m.layers))
	for i := range cs {
		cs[i] = cache.NewKVCacheOn(m.g)
	}
	return cs
}

// begin checks a forward's arguments, embeds the tokens and makes the one mask every
// layer reads (nn.Decoder runs the rest).
func (m *Model) begin(tokens tensor.Array, caches []cache.Cache) (tensor.Array, nn.LayerStep) {
	nn.CheckForward(family, m.g, tokens, caches, len(m.layers))
	s := tokens.Dim(1)
	x := m.embed.Forward(tokens)
	// One mask for every layer, from layer 0's cache (mlx-lm's create_attention_mask
	// with cache[0]): every layer's cache holds the same rows and offsets.
	var mask tensor.Array
	switch {
	case caches != nil:
		mask = attentionCache(0, caches[0]).MakeMask(s)
	case s > 1:
		mask = cache.CausalMask(m.g, s, 0)
	}
	return x, func(i int, x tensor.Array) tensor.Array {
		var c cache.Attention
		if caches != nil {
			c = attentionCache(i, caches[i])
		}
		l := m.layers[i]
		x = tensor.Add(x, l.attn.forward(l.inNorm.Forward(x), mask, c))
		return tensor.Add(x, l.mlp.Forward(l.postNorm.Forward(x)))
	}
}

// attentionCache returns c as an attention cache.
func attentionCache(i int, c cache.Cache) cache.Attention {
	ac, ok := c.(cache.Attention)
	if !ok {
		panic(fmt.Sprintf("qwen3: layer %d's cache must be *cache.KVCache or *cache.BatchKVCache, got %T", i, c))
	}
	return ac
}

// forward maps x [B, S, H] to [B, S, H]. c is the layer's cache, or nil for a
// cache-free forward; the RoPE offsets are read from it before it is updated.
func (a *attention) forward(x, mask tensor.Array, c cache.Attention) tensor.Array {
	bsz, s := x.Dim(0), x.Dim(1)
	q := tensor.Reshape(a.q.Forward(x), bsz, s, a.nh, a.hd)
	k := tensor.Reshape(a.k.Forward(x), bsz, s, a.nkv, a.hd)
	v := tensor.Reshape(a.v.Forward(x), bsz, s, a.nkv, a.hd)
	q = tensor.Transpose(a.qNorm.Forward(q), 0, 2, 1, 3) // [B, nh, S, hd]
	k = tensor.Transpose(a.kNorm.Forward(k), 0, 2, 1, 3)
	v = tensor.Transpose(v, 0, 2, 1, 3)
	return a.o.Forward(nn.Attend(q, k, v, a.rope, a.scale, mask, c))
}

// build assembles a model, drawing every parameter from src in a fixed order. opt
// changes nothing: the model has no recurrence and no fused per-layer kernel.
func build(cfg *Config, g *graph.Graph, src nn.Source, _ nn.Options) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b := nn.NewBuilder(g, src)
	m := draw(cfg, b)
	if b.Err() != nil {
		return nil, b.Err()
	}
	m.g = g
	return m, nil
}

// draw makes the model's layers from b's parameters, in the order a random model
// draws them. With a dry builder it makes nothing and only records (nn.Record).
func draw(cfg *Config, b *nn.Builder) *Model {
	h, nh, nkv, hd, eps := cfg.HiddenSize, cfg.NumHeads, cfg.NumKVHeads, cfg.HeadDim, cfg.RMSNormEps
	m := &Model{cfg: cfg}
	m.embed, _ = b.Embedding("model.embed_tokens", cfg.VocabSize, h)
	m.layers = make([]*layer, cfg.NumLayers)
	for i := range m.layers {
		p := fmt.Sprintf("model.layers.%d.", i)
		bias := cfg.AttentionBias
		m.layers[i] = &layer{
			inNorm:   b.Norm(p+"input_layernorm.weight", nn.KindNorm, h, eps),
			postNorm: b.Norm(p+"post_attention_layernorm.weight", nn.KindNorm, h, eps),
			attn: &attention{
				q:     b.Linear(p+"self_attn.q_proj", nh*hd, h, bias),
				k:     b.Linear(p+"self_attn.k_proj", nkv*hd, h, bias),
				v:     b.Linear(p+"self_attn.v_proj", nkv*hd, h, bias),
				o:     b.Linear(p+"self_attn.o_proj", h, nh*hd, bias),
				qNorm: b.Norm(p+"self_attn.q_norm.weight", nn.KindNorm, hd, eps),
				kNorm: b.Norm(p+"self_attn.k_norm.weight", nn.KindNorm, hd, eps),
				rope:  nn.RoPE{Dims: hd, Base: cfg.RopeTheta},
				nh:    nh, nkv: nkv, hd: hd,
				scale: 1 / math.Sqrt(float64(hd)),
			},
			mlp: b.MLP(p+"mlp.", h, cfg.IntermediateSize),
		}
	}
	norm := b.Norm("model.norm.weight", nn.KindNorm, h, eps)
	m.Decoder = nn.NewDecoder(m.begin, len(m.layers), norm, b.Head(cfg.TieWordEmbeddings, m.embed, cfg.VocabSize, h), cfg.VocabSize)
	return m
}
