package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ingotml/ingot/kernels"
)

// QuantSpec is the quantization of one module: affine, Bits per code, GroupSize values
// per scale/bias.
type QuantSpec struct {
	Bits      int `json:"bits"`
	GroupSize int `json:"group_size"`
}

// QuantConfig is config.json's quantization block (mlx-lm's "quantization", also
// written as "quantization_config", at the top level or inside "text_config"): a
// default and per-module entries, where a nil entry is a module left in float (false).
type QuantConfig struct {
	Default QuantSpec
	Modules map[string]*QuantSpec
}

// ErrUnsupportedQuantization is wrapped by errors for quantization modes or methods
// other than MLX's affine one.
var ErrUnsupportedQuantization = errors.New("unsupported quantization")

// ParseQuantConfig reads the quantization block of a config.json; nil when there is none.
func ParseQuantConfig(config []byte) (*QuantConfig, error) {
	var top struct {
		Q    json.RawMessage `json:"quantization"`
		QC   json.RawMessage `json:"quantization_config"`
		Text struct {
			Q  json.RawMessage `json:"quantization"`
			QC json.RawMessage `json:"quantization_config"`
		} `json:"text_config"`
	}
	if err := json.Unmarshal(config, &top); err != nil {
		return nil, fmt.Errorf("config is not a JSON object: %w", err)
	}
	var block json.RawMessage
	for _, b := range []json.RawMessage{top.Q, top.QC, top.Text.Q, top.Text.QC} {
		if !isNull(b) {
			block = b
			break
		}
	}
	if block == nil {
		return nil, nil
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(block, &entries); err != nil {
		return nil, fmt.Errorf("quantization block is not a JSON object")
	}
	if m, ok := entries["quant_method"]; ok {
		return nil, fmt.Errorf("quantization method %s: %w (only MLX affine)", bytes.TrimSpace(m), ErrUnsupportedQuantization)
	}
	cfg := &QuantConfig{Modules: map[string]*QuantSpec{}}
	if err := parseSpec("", block, &cfg.Default); err != nil {
		return nil, err
	}
	for key, raw := range entries {
		switch key {
		case "bits", "group_size", "mode":
			continue
		}
		if bytes.Equal(bytes.TrimSpace(raw), []byte("false")) {
			cfg.Modules[key] = nil
			continue
		}
		var s QuantSpec
		if err := parseSpec(key, raw, &s); err != nil {
			return nil, err
		}
		cfg.Modules[key] = &s
	}
	return cfg, nil
}

// parseSpec reads {"bits", "group_size", "mode"} for module ("" for the default).
func parseSpec(module string, raw json.RawMessage, s *QuantSpec) error {
	where := "quantization"
	if module != "" {
		where = fmt.Sprintf("quantization entry %q", module)
	}
	var v struct {
		QuantSpec
		Mode *string `json:"mode"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("%s is not an object of bits and group_size (or false)", where)
	}
	if v.Mode != nil && *v.Mode != "affine" {
		return fmt.Errorf("%s: mode %q: %w (only affine)", where, *v.Mode, ErrUnsupportedQuantization)
	}
	if !kernels.QuantBits(v.Bits) || !kernels.QuantGroup(v.GroupSize) {
		return fmt.Errorf("%s: bits %d, group_size %d: want bits 2, 3, 4, 5, 6 or 8 and group_size 32, 64 or 128", where, v.Bits, v.GroupSize)
	}
	*s = v.QuantSpec
	return nil
}

// For returns the quantization of module (a tensor name without ".weight"): its own
// entry if the block has one (also matched without or with mlx-lm's "language_model."
// prefix), else the default; ok is false for a module left in float.
func (q *QuantConfig) For(module string) (QuantSpec, bool) {
	if q == nil {
		return QuantSpec{}, false
	}
	for _, key := range []string{module, strings.TrimPrefix(module, "language_model."), "language_model." + module} {
		if s, ok := q.Modules[key]; ok {
			if s == nil {
				return QuantSpec{}, false
			}
			return *s, true
		}
	}
	return q.Default, true
}

// Quantized reports whether module is stored quantized: <module>.scales exists.
func (c *Checkpoint) Quantized(module string) bool {
	_, ok := c.where[module+".scales"]
	return ok
}

// checkQuantized validates every quantized module against the config: weight, scales
// and biases all present, the config quantizes the module, and the shapes fit.
func (c *Checkpoint) checkQuantized() error {
	for _, name := range c.names {
		module, ok := strings.CutSuffix(name, ".scales")
		if !ok {
			continue
		}
		if _, err := c.QuantSpecOf(module); err != nil {
			return err
		}
	}
	return nil
}

// QuantSpecOf validates the quantized module's tensors and returns its quantization.
func (c *Checkpoint) QuantSpecOf(module string) (QuantSpec, error) {
	_, file, _ := c.Info(module + ".scales")
	fail := func(tensor, format string, args ...any) error {
		return &CheckpointError{Path: file, Tensor: tensor, Reason: fmt.Sprintf(format, args...)}
	}
	w, wfile, ok := c.Info(module + ".weight")
	if !ok {
		return QuantSpec{}, fail(module+".scales", "quantized module has scales but no %s.weight", module)
	}
	b, _, ok := c.Info(module + ".biases")
	if !ok {
		return QuantSpec{}, fail(module+".scales", "quantized module has scales but no %s.biases (only affine quantization is supported)", module)
	}
	spec, ok := c.Quant.For(module)
	if !ok {
		return QuantSpec{}, fail(module+".scales", "stored quantized, but config.json does not quantize the module")
	}
	s, _, _ := c.Info(module + ".scales")
	ws, ss := w.Shape, s.Shape
	switch {
	case w.DType != U32:
		return spec, &CheckpointError{Path: wfile, Tensor: module + ".weight", Reason: fmt.Sprintf("quantized weight has dtype %s, want U32", w.DType)}
	case s.DType != b.DType || (s.DType != F32 && s.DType != F16 && s.DType != BF16):
		return spec, fail(module+".scales", "scales %s and biases %s: want one of F32, F16, BF16", s.DType, b.DType)
	case len(ws) < 2 || len(ss) != len(ws) || !slices.Equal(ss, b.Shape) || !slices.Equal(ws[:len(ws)-1], ss[:len(ss)-1]):
		return spec, fail(module+".scales", "weight %v, scales %v, biases %v: want [..., rows, words] and [..., rows, groups]", ws, ss, b.Shape)
	}
	if cols, whole := kernels.QuantCols(ws[len(ws)-1], spec.Bits, spec.GroupSize); !whole || cols/spec.GroupSize != ss[len(ss)-1] {
		return spec, fail(module+".weight", "weight %v and scales %v do not fit %d bits, group %d (from config.json)", ws, ss, spec.Bits, spec.GroupSize)
	}
	return spec, nil
}
