package checkpoint

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// WriteOptions says how WriteCheckpoint lays out the weights.
type WriteOptions struct {
	// ShardBytes splits the tensors into model-XXXXX-of-YYYYY.safetensors shards of at
	// most this many tensor bytes (a larger tensor gets a shard of its own); 0 writes
	// one model.safetensors.
	ShardBytes int64
	// NoIndex omits model.safetensors.index.json from a sharded checkpoint (mlx-lm then
	// loads every model*.safetensors).
	NoIndex bool
	// Format is the weight files' "format" metadata, which tells the loader whose
	// layout the tensors follow: "" writes "mlx" (mlx-lm's layout: norms hold 1 + w,
	// stacked switch_mlp experts); KeepFormat copies none.
	Format string
}

// KeepFormat as WriteOptions.Format writes no "format" metadata (for a source that had
// none: the loader then reads Hugging Face's layout).
const KeepFormat = "-"

// metadata is the weight files' __metadata__ for o.Format.
func (o WriteOptions) metadata() map[string]string {
	switch o.Format {
	case "":
		return map[string]string{"format": "mlx"}
	case KeepFormat:
		return nil
	}
	return map[string]string{"format": o.Format}
}

// WriteCheckpoint writes config (config.json's bytes) and tensors as a checkpoint
// directory, creating dir if needed.
func WriteCheckpoint(dir string, config []byte, tensors []WriteTensor, opt WriteOptions) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), config, 0o644); err != nil {
		return fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	sorted := append([]WriteTensor(nil), tensors...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	if opt.ShardBytes <= 0 {
		return WriteSafetensors(filepath.Join(dir, "model.safetensors"), opt.metadata(), sorted)
	}
	var shards [][]WriteTensor
	var size, total int64
	for _, t := range sorted {
		n := int64(len(t.Data))
		if len(shards) == 0 || size+n > opt.ShardBytes && size > 0 {
			shards = append(shards, nil)
			size = 0
		}
		shards[len(shards)-1] = append(shards[len(shards)-1], t)
		size += n
		total += n
	}
	weightMap := map[string]string{}
	for i, shard := range shards {
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, len(shards))
		if err := WriteSafetensors(filepath.Join(dir, name), opt.metadata(), shard); err != nil {
			return err
		}
		for _, t := range shard {
			weightMap[t.Name] = name
		}
	}
	if opt.NoIndex {
		return nil
	}
	index, err := json.MarshalIndent(map[string]any{"metadata": map[string]any{"total_size": total}, "weight_map": weightMap}, "", "  ")
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	return os.WriteFile(filepath.Join(dir, IndexFile), index, 0o644)
}

// QuantizeOptions configures QuantizeCheckpoint.
type QuantizeOptions struct {
	Default QuantSpec
	// Modules overrides Default per module (a tensor name without ".weight"); a nil
	// entry leaves the module in float. mlx-lm's Qwen3.5-MoE / Qwen3-Next recipe gives
	// every mlp.gate and mlp.shared_expert_gate 8 bits, group 64: see RouterOverrides.
	Modules map[string]*QuantSpec
	// ScaleType is the dtype of scales and biases: F32, F16 or BF16.
	ScaleType DType
	Write     WriteOptions
}

// RouterOverrides returns mlx-lm's per-module entries for a model's routers: 8 bits,
// group 64 for every "mlp.gate" and "mlp.shared_expert_gate" module among names.
func RouterOverrides(names []string) map[string]*QuantSpec {
	out := map[string]*QuantSpec{}
	for _, n := range names {
		m, ok := strings.CutSuffix(n, ".weight")
		if ok && (strings.HasSuffix(m, "mlp.gate") || strings.HasSuffix(m, "mlp.shared_expert_gate")) {
			out[m] = &QuantSpec{Bits: 8, GroupSize: 64}
		}
	}
	return out
}

// quantizable reports whether a tensor is a module weight mlx-lm would quantize: a float
// "<module>.weight" matrix (or a switch_mlp stack of them) whose input width is a
// multiple of the group size. Norms, convolutions and vectors stay in float.
func quantizable(name string, info TensorInfo, spec QuantSpec) bool {
	if !strings.HasSuffix(name, ".weight") || (info.DType != F32 && info.DType != F16 && info.DType != BF16) {
		return false
	}
	rank := len(info.Shape)
	if rank != 2 && !(rank == 3 && strings.Contains(name, "switch_mlp.")) {
		return false
	}
	return info.Shape[rank-1]%spec.GroupSize == 0
}

// QuantizeCheckpoint writes src as an mlx-community-style quantized checkpoint in dir:
// every quantizable module (see quantizable; a switch_mlp stack only when all three of
// its projections are) is quantized with MLX's rule at its spec,
// other tensors are copied unchanged, and config.json gains the "quantization" and
// "quantization_config" blocks (the default plus an entry for every module whose spec
// differs, false for modules left in float). The layout is the source's: the files
// keep its format tag, so a Hugging Face layout loads as one (only mlx-lm's layout has
// its switch_mlp expert stacks quantized; cmd/quantize converts to it first).
func QuantizeCheckpoint(src *Checkpoint, dir string, opt QuantizeOptions) error {
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal(src.Config, &cfg); err != nil {
		return fmt.Errorf("quantize %s: config.json: %w", src.Dir, err)
	}
	block := map[string]any{"group_size": opt.Default.GroupSize, "bits": opt.Default.Bits, "mode": "affine"}
	specOf := func(module string) (QuantSpec, bool) {
		if s, ok := opt.Modules[module]; ok {
			if s == nil {
				return QuantSpec{}, false
			}
			return *s, true
		}
		return opt.Default, true
	}
	// The three projections of a switch_mlp stack are quantized together or not at all
	// (the fused expert kernels take all three quantized).
	stackOK := map[string]bool{}
	for _, name := range src.Names() {
		prefix, _, ok := strings.Cut(name, "switch_mlp.")
		if !ok {
			continue
		}
		all := true
		for _, proj := range []string{"gate_proj", "up_proj", "down_proj"} {
			n := prefix + "switch_mlp." + proj + ".weight"
			info, _, found := src.Info(n)
			spec, on := specOf(strings.TrimSuffix(n, ".weight"))
			all = all && found && on && quantizable(n, info, spec)
		}
		stackOK[prefix] = all
	}
	var out []WriteTensor
	for _, name := range src.Names() {
		raw, info, err := src.Bytes(name)
		if err != nil {
			return err
		}
		module := strings.TrimSuffix(name, ".weight")
		spec, quantize := specOf(module)
		if _, listed := opt.Modules[module]; listed && !quantize {
			block[module] = false
		}
		if prefix, _, ok := strings.Cut(name, "switch_mlp."); ok && !stackOK[prefix] {
			quantize = false
		}
		if !quantize || !quantizable(name, info, spec) {
			out = append(out, WriteTensor{Name: name, DType: info.DType, Shape: info.Shape, Data: raw})
			continue
		}
		if spec != opt.Default {
			block[module] = spec
		}
		w, _, err := src.Float32(name)
		if err != nil {
			return err
		}
		qt, err := Quantize(w, info.Shape, spec.Bits, spec.GroupSize, opt.ScaleType)
		if err != nil {
			return fmt.Errorf("quantize %s: tensor %s: %w", src.Dir, name, err)
		}
		lead := info.Shape[:len(info.Shape)-1]
		cols := info.Shape[len(info.Shape)-1]
		shape := func(last int) []int { return append(append([]int(nil), lead...), last) }
		out = append(out,
			WriteTensor{Name: module + ".weight", DType: U32, Shape: shape(cols * spec.Bits / 32), Data: wordBytes(qt.Weight)},
			WriteTensor{Name: module + ".scales", DType: opt.ScaleType, Shape: shape(cols / spec.GroupSize), Data: qt.Scales},
			WriteTensor{Name: module + ".biases", DType: opt.ScaleType, Shape: shape(cols / spec.GroupSize), Data: qt.Biases})
	}
	b, err := json.Marshal(block)
	if err != nil {
		return err
	}
	cfg["quantization"], cfg["quantization_config"] = b, b
	config, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	// The tensors keep the source's layout (norms, conv and expert shapes are copied as
	// they are), so the files keep its format tag: tagging a Hugging Face layout "mlx"
	// would make the loader read its zero-centred norms as 1 + w.
	w := opt.Write
	if w.Format = src.Format(); w.Format == "" {
		w.Format = KeepFormat
	}
	return WriteCheckpoint(dir, config, out, w)
}
