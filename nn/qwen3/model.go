package qwen3

import (
	"fmt"

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
	attn             *nn.SelfAttention
	mlp              *nn.MLP
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
		x = tensor.Add(x, l.attn.Forward(l.inNorm.Forward(x), mask, c))
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
	h, eps := cfg.HiddenSize, cfg.RMSNormEps
	m := &Model{cfg: cfg}
	m.embed, _ = b.Embedding("model.embed_tokens", cfg.VocabSize, h)
	m.layers = make([]*layer, cfg.NumLayers)
	for i := range m.layers {
		p := fmt.Sprintf("model.layers.%d.", i)
		m.layers[i] = &layer{
			inNorm:   b.Norm(p+"input_layernorm.weight", nn.KindNorm, h, eps),
			postNorm: b.Norm(p+"post_attention_layernorm.weight", nn.KindNorm, h, eps),
			attn: b.SelfAttention(p+"self_attn.", nn.AttentionShape{Hidden: h, Heads: cfg.NumHeads, KVHeads: cfg.NumKVHeads,
				HeadDim: cfg.HeadDim, Bias: cfg.AttentionBias, Norm: nn.KindNorm, Eps: eps,
				RoPE: nn.RoPE{Dims: cfg.HeadDim, Base: cfg.RopeTheta}}),
			mlp: b.MLP(p+"mlp.", h, cfg.IntermediateSize),
		}
	}
	norm := b.Norm("model.norm.weight", nn.KindNorm, h, eps)
	m.Decoder = nn.NewDecoder(m.begin, len(m.layers), norm, b.Head(cfg.TieWordEmbeddings, m.embed, cfg.VocabSize, h), cfg.VocabSize)
	return m
}
