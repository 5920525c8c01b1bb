package nn

import (
	"fmt"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// LayerKind is a decoder layer's token mixer, which decides the cache it keeps.
type LayerKind int

// The zero LayerKind is deliberately invalid so an unset entry fails validation.
const (
	// Recurrent is a linear-attention layer (Gated DeltaNet) with a fixed-size
	// recurrent state: a *cache.ArraysCache. HF calls it "linear_attention".
	Recurrent LayerKind = iota + 1
	// Attention is a causal softmax-attention layer with a growing KV cache. HF calls
	// it "full_attention".
	Attention
)

// String returns the HF config spelling ("linear_attention", "full_attention").
func (k LayerKind) String() string {
	switch k {
	case Recurrent:
		return "linear_attention"
	case Attention:
		return "full_attention"
	}
	return fmt.Sprintf("LayerKind(%d)", int(k))
}

// Model is a causal language model as generate drives it: the boundary between the
// model packages and the generation loops. A model holds no per-sequence state (that
// is in the caches) and is used from one goroutine at a time (its graph's rule).
type Model interface {
	// Forward maps int32 tokens [B, S] to logits [B, S, vocab], reading and updating
	// caches (one per layer, as MakeCache or cache.Merge make them; nil runs without a
	// cache).
	Forward(tokens tensor.Array, caches []cache.Cache) tensor.Array
	// MakeCache returns fresh caches, one per layer, recurrent ones with policy p.
	MakeCache(p cache.Policy) []cache.Cache
	// VocabSize is the number of token ids (the logits' last axis).
	VocabSize() int
	// LayerKinds returns each layer's mixer kind, in layer order (a fresh slice).
	LayerKinds() []LayerKind
	// Graph is the graph the weights live on; tokens must be made there.
	Graph() *graph.Graph
}

// CountKinds returns how many of kinds are k.
func CountKinds(kinds []LayerKind, k LayerKind) int {
	n := 0
	for _, x := range kinds {
		if x == k {
			n++
		}
	}
	return n
}

// CheckForward panics unless tokens are int32 [B, S] on g and caches is nil or holds
// one cache per layer: what a family's Forward checks first (a wrong call is a
// programming error). family prefixes the message.
func CheckForward(family string, g *graph.Graph, tokens tensor.Array, caches []cache.Cache, layers int) {
	if !tokens.Valid() || tokens.NDim() != 2 || tokens.DType() != tensor.Int32 {
		panic(fmt.Sprintf("%s: Forward wants int32 tokens [B, S], got %v", family, tokens))
	}
	if tokens.Graph() != g {
		panic(family + ": Forward: tokens are on another graph than the model")
	}
	if caches != nil && len(caches) != layers {
		panic(fmt.Sprintf("%s: Forward: %d caches for %d layers", family, len(caches), layers))
	}
}
