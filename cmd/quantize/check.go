package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ingotml/ingot/nn/checkpoint"
	"github.com/ingotml/ingot/nn/models"
	"github.com/ingotml/ingot/nn/qwen35"
)

// checkInput refuses, before anything is written, a float checkpoint that decode's
// loader would refuse or that cannot be quantized: a config.json the loader's own
// parser rejects (as qwen35.Load picks it: mlx-lm's rules for files mlx-lm wrote), a
// text-model tensor of a dtype the engine has no equivalent for (an F64 lm_head), a
// sparse layer without its experts, a missing embedding or head, or a NaN or infinite
// weight (kernels.ErrNonFinite). tensors is src in mlx-lm's layout (qwen35.MLXLayout).
//
// The structure checked here (experts, embedding, head) is what the loader needs first;
// when the loader gains a header-only check of every tensor (issue 24, item 6), it
// belongs here instead.
func checkInput(src *checkpoint.Checkpoint, tensors []checkpoint.WriteTensor) error {
	cfgPath := filepath.Join(src.Dir, "config.json")
	if _, err := models.ModelType(src.Config); err != nil {
		return fmt.Errorf("%s: %w", cfgPath, err)
	}
	parse := qwen35.ParseHFConfig
	if src.Format() == "mlx" {
		parse = qwen35.ParseModelArgs
	}
	cfg, err := parse(src.Config)
	if err != nil {
		return fmt.Errorf("%s: %w", cfgPath, err)
	}
	byName := map[string]checkpoint.WriteTensor{}
	for _, t := range tensors {
		if _, ok := checkpoint.EngineDType(t.DType); !ok {
			return fmt.Errorf("tensor %s (as mlx-lm names it): dtype %s: the engine loads only F32, F16 and BF16 weights", t.Name, t.DType)
		}
		byName[t.Name] = t
	}
	need := []string{"model.embed_tokens.weight"}
	if !cfg.TieWordEmbeddings {
		need = append(need, "lm_head.weight")
	}
	for i := range cfg.NumLayers {
		if !cfg.IsSparse(i) {
			continue
		}
		for _, proj := range []string{"gate_proj", "up_proj", "down_proj"} {
			name := fmt.Sprintf("model.layers.%d.mlp.switch_mlp.%s.weight", i, proj)
			if t, ok := byName[name]; ok && (len(t.Shape) != 3 || t.Shape[0] != cfg.NumExperts) {
				return fmt.Errorf("tensor %s (as mlx-lm names it): shape %v: want the %d experts of layer %d stacked first", name, t.Shape, cfg.NumExperts, i)
			}
			need = append(need, name)
		}
	}
	for _, name := range need {
		if _, ok := byName[name]; !ok {
			what := "the model needs it"
			if strings.Contains(name, "switch_mlp") {
				what = "config.json makes the layer sparse, but its experts are missing"
			}
			return fmt.Errorf("%s: no tensor %s (as mlx-lm names it): %s", src.Dir, name, what)
		}
	}
	// Every float matrix is checked for NaN and infinities, which quantization cannot
	// encode (and which would make any run's logits NaN).
	for _, name := range src.Names() {
		info, _, _ := src.Info(name)
		if _, float := checkpoint.EngineDType(info.DType); float && len(info.Shape) >= 2 && strings.HasSuffix(name, ".weight") {
			if err := src.CheckFinite(name); err != nil {
				return err
			}
		}
	}
	return nil
}
