package qwen3

import (
	"fmt"
	"strings"

	"github.com/ingotml/ingot/nn/checkpoint"
)

// MLXLayout returns ck's tensors as mlx-lm's qwen3 sanitize leaves them before it
// quantizes: Hugging Face's names and values unchanged (Qwen3's norms are used as
// stored by both), lm_head dropped when the embeddings are tied, and anything outside
// "model." and "lm_head." dropped. The tensors alias ck's mappings: write them before
// closing ck.
func MLXLayout(ck *checkpoint.Checkpoint) ([]checkpoint.WriteTensor, error) {
	cfg, err := ParseHFConfig(ck.Config)
	if err != nil {
		return nil, err
	}
	var out []checkpoint.WriteTensor
	for _, name := range ck.Names() {
		head := strings.HasPrefix(name, "lm_head.")
		if (head && cfg.TieWordEmbeddings) || (!head && !strings.HasPrefix(name, "model.")) {
			continue
		}
		raw, info, err := ck.Bytes(name)
		if err != nil {
			return nil, fmt.Errorf("qwen3: %w", err)
		}
		out = append(out, checkpoint.WriteTensor{Name: name, DType: info.DType, Shape: info.Shape, Data: raw})
	}
	return out, nil
}
