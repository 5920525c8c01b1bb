package nn

import (
	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/tensor"
)

// LayerStep runs decoder layer i on its input x [B, S, H] and returns its output.
type LayerStep func(i int, x tensor.Array) tensor.Array

// Decoder is the frame of a decoder-only model, the same for every family: the tokens
// are embedded, run through the layers in order, normed and projected to logits. A
// family embeds a Decoder in its model, which gives the model Forward, ForwardHidden
// and VocabSize, and makes it with NewDecoder when it builds.
type Decoder struct {
	begin  func(tokens tensor.Array, caches []cache.Cache) (tensor.Array, LayerStep)
	layers int
	norm   RMSNorm
	head   LinearLayer
	vocab  int
}

// NewDecoder returns the frame of a model of n layers and vocab token ids. begin
// checks a forward's arguments (CheckForward), embeds the tokens and returns them with
// the step that runs each layer: what the layers share (the masks) is made there,
// once, after the embedding. norm is the final norm and head the output head
// (Builder.Head).
func NewDecoder(begin func(tokens tensor.Array, caches []cache.Cache) (tensor.Array, LayerStep), n int, norm RMSNorm, head LinearLayer, vocab int) Decoder {
	return Decoder{begin: begin, layers: n, norm: norm, head: head, vocab: vocab}
}

// VocabSize is the number of token ids (the logits' last axis).
func (d *Decoder) VocabSize() int { return d.vocab }

// Forward maps int32 tokens [B, S] to float32 logits [B, S, vocab], reading and updating
// caches (one per layer, as MakeCache or cache.Merge make them; nil runs without any
// cache). A wrong token array or cache list is a programming error and panics.
func (d *Decoder) Forward(tokens tensor.Array, caches []cache.Cache) tensor.Array {
	logits, _ := d.forward(tokens, caches, false)
	return logits
}

// ForwardHidden is Forward that also returns the hidden states as transformers reports
// them: L+1 arrays [B, S, H], the embeddings, then the output of layers 0 .. L-2, and
// last the output of layer L-1 after the final norm.
func (d *Decoder) ForwardHidden(tokens tensor.Array, caches []cache.Cache) (logits tensor.Array, hidden []tensor.Array) {
	return d.forward(tokens, caches, true)
}

func (d *Decoder) forward(tokens tensor.Array, caches []cache.Cache, keep bool) (tensor.Array, []tensor.Array) {
	x, step := d.begin(tokens, caches)
	var hidden []tensor.Array
	if keep {
		hidden = append(hidden, x)
	}
	for i := range d.layers {
		x = step(i, x)
		if keep && i < d.layers-1 {
			hidden = append(hidden, x)
		}
	}
	x = d.norm.Forward(x)
	if keep {
		hidden = append(hidden, x)
	}
	return d.head.Forward(x), hidden
}

// TiedHead is an output head tied to the embedding: it projects onto the table.
type TiedHead struct{ Embedding EmbeddingLayer }

// Forward maps x [..., dim] to [..., vocab].
func (t TiedHead) Forward(x tensor.Array) tensor.Array { return t.Embedding.AsLinear(x) }
