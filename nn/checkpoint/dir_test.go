package checkpoint_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/internal/golden"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"
	"github.com/ingotml/ingot/tensor"
)

func ckMLXDir() string { return filepath.Join(golden.MLXRoot(), "mlx_q4g32_12l") }

func ckOpen(t *testing.T, dir string) *checkpoint.Checkpoint {
	t.Helper()
	c, err := checkpoint.OpenCheckpoint(dir)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestCheckpointMLXWritten opens the mlx-lm-written checkpoint: its quantization block
// with per-module router entries, and every quantized module (iff .scales exists).
func TestCheckpointMLXWritten(t *testing.T) {
	c := ckOpen(t, ckMLXDir())
	require.NotNil(t, c.Quant)
	g := graph.NewCPU(graph.Options{})
	quantized := 0
	for _, name := range c.Names() {
		module, ok := strings.CutSuffix(name, ".scales")
		if !ok {
			continue
		}
		quantized++
		spec, ok := c.Quant.For(module)
		require.True(t, ok, module)
		if strings.HasSuffix(module, "mlp.gate") || strings.HasSuffix(module, "shared_expert_gate") {
			assert.Equal(t, checkpoint.QuantSpec{Bits: 8, GroupSize: 64}, spec, module)
		} else {
			assert.Equal(t, c.Quant.Default, spec, module)
		}
		if strings.Contains(module, "switch_mlp") {
			continue // stacked experts: loaded as QuantizedSwitchGLU below
		}
		l, err := nn.LoadLinear(g, c, module)
		require.NoError(t, err, module)
		ql, ok := l.(*nn.QuantizedLinear)
		require.True(t, ok, module)
		assert.Equal(t, spec.Bits, ql.Bits, module)
	}
	assert.Positive(t, quantized)
	for _, name := range c.Names() {
		if strings.HasSuffix(name, "norm.weight") {
			l, err := nn.LoadLinear(g, c, strings.TrimSuffix(name, ".weight"))
			require.NoError(t, err)
			_, float := l.(*nn.Linear)
			assert.True(t, float, "%s has no .scales, so it is not quantized", name)
			break
		}
	}
	e, err := nn.LoadEmbedding(g, c, "language_model.model.embed_tokens")
	require.NoError(t, err)
	_, ok := e.(*nn.QuantizedEmbedding)
	assert.True(t, ok)
	x, err := nn.LoadExperts(g, c, "language_model.model.layers.0.mlp.switch_mlp")
	require.NoError(t, err)
	_, ok = x.(*nn.QuantizedSwitchGLU)
	assert.True(t, ok)
}

// ckCopies writes the MLX checkpoint again as one file, as shards with an index, and as
// shards without one.
func ckCopies(t *testing.T, src *checkpoint.Checkpoint) map[string]string {
	t.Helper()
	var ts []checkpoint.WriteTensor
	for _, name := range src.Names() {
		b, info, err := src.Bytes(name)
		require.NoError(t, err)
		ts = append(ts, checkpoint.WriteTensor{Name: name, DType: info.DType, Shape: info.Shape, Data: b})
	}
	root := t.TempDir()
	dirs := map[string]string{}
	for kind, opt := range map[string]checkpoint.WriteOptions{
		"single": {}, "sharded": {ShardBytes: 400_000}, "sharded-no-index": {ShardBytes: 300_000, NoIndex: true},
	} {
		dir := filepath.Join(root, kind)
		require.NoError(t, checkpoint.WriteCheckpoint(dir, src.Config, ts, opt))
		dirs[kind] = dir
	}
	return dirs
}

// TestCheckpointShardedEqualsSingle: the same tensors, bit for bit, and the same layer
// outputs whichever way the checkpoint is split.
func TestCheckpointShardedEqualsSingle(t *testing.T) {
	src := ckOpen(t, ckMLXDir())
	dirs := ckCopies(t, src)
	shards, _ := filepath.Glob(filepath.Join(dirs["sharded"], "model-*-of-*.safetensors"))
	assert.Greater(t, len(shards), 2)
	_, err := os.Stat(filepath.Join(dirs["sharded-no-index"], checkpoint.IndexFile))
	require.ErrorIs(t, err, os.ErrNotExist)
	g := graph.NewCPU(graph.Options{})
	xv := make([]float32, 3*128)
	for i := range xv {
		xv[i] = float32(i%7) - 3
	}
	x := tensor.FromFloat32(g, xv, 3, 128)
	const module = "language_model.model.layers.0.linear_attn.in_proj_qkv"
	want := func(c *checkpoint.Checkpoint) []float32 {
		l, err := nn.LoadLinear(g, c, module)
		require.NoError(t, err)
		return qtValues(t, l.Forward(x))
	}(src)
	assert.Equal(t, "mlx", src.Format(), "mlx-lm's save_model marks its files")
	assert.Equal(t, []string{filepath.Join(ckMLXDir(), "model.safetensors")}, src.Files())
	for kind, dir := range dirs {
		c := ckOpen(t, dir)
		require.Equal(t, src.Names(), c.Names(), kind)
		assert.Equal(t, "mlx", c.Format(), kind)
		files, _ := filepath.Glob(filepath.Join(dir, "model*.safetensors"))
		assert.Equal(t, files, c.Files(), kind)
		for _, name := range src.Names() {
			a, _, err := src.Bytes(name)
			require.NoError(t, err)
			b, _, err := c.Bytes(name)
			require.NoError(t, err)
			require.Equal(t, a, b, "%s: %s", kind, name)
		}
		l, err := nn.LoadLinear(g, c, module)
		require.NoError(t, err)
		require.Equal(t, want, qtValues(t, l.Forward(x)), kind)
	}
}

// TestCheckpointErrors: each fault names the file and the tensor, and nothing panics.
func TestCheckpointErrors(t *testing.T) {
	src := ckOpen(t, ckMLXDir())
	const gate = "language_model.model.layers.0.mlp.gate"
	for _, c := range []struct {
		name  string
		edit  func(t *testing.T, dir string)
		match []string
	}{
		{"missing shard", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, ckShardOf(t, dir, gate+".weight"))))
		}, []string{"shard named by model.safetensors.index.json is missing: file does not exist"}},
		{"index names a missing tensor", func(t *testing.T, dir string) {
			shard := ckShardOf(t, dir, gate+".weight")
			ckEdit(t, filepath.Join(dir, checkpoint.IndexFile), `"weight_map": {`, `"weight_map": {"language_model.model.ghost.weight": "`+shard+`", `)
		}, []string{"tensor language_model.model.ghost.weight: model.safetensors.index.json places the tensor here, but the file does not hold it"}},
		{"scales without weight", func(t *testing.T, dir string) {
			ckRewrite(t, dir, func(ts []checkpoint.WriteTensor) []checkpoint.WriteTensor { return ckDrop(ts, gate+".weight") })
		}, []string{"tensor " + gate + ".scales: quantized module has scales but no " + gate + ".weight"}},
		{"shapes do not fit bits", func(t *testing.T, dir string) {
			ckQuantBlock(t, dir, func(q map[string]any) { q[gate] = map[string]any{"group_size": 64, "bits": 6} })
		}, []string{"tensor " + gate + ".weight: weight [8 32] and scales [8 2] do not fit 6 bits, group 64 (from config.json)"}},
		{"unsupported mode", func(t *testing.T, dir string) {
			ckQuantBlock(t, dir, func(q map[string]any) { q["mode"] = "mxfp4" })
		}, []string{"config.json: quantization: mode \"mxfp4\": unsupported quantization (only affine)"}},
		{"scales but config not quantized", func(t *testing.T, dir string) {
			ckQuantBlock(t, dir, func(q map[string]any) { q[gate] = false })
		}, []string{"tensor " + gate + ".scales: stored quantized, but config.json does not quantize the module"}},
		{"no weights at all", func(t *testing.T, dir string) {
			matches, _ := filepath.Glob(filepath.Join(dir, "model*"))
			for _, m := range matches {
				require.NoError(t, os.Remove(m))
			}
		}, []string{": no model.safetensors.index.json and no model*.safetensors"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := ckCopies(t, src)["sharded"]
			c.edit(t, dir)
			ck, err := checkpoint.OpenCheckpoint(dir)
			require.Error(t, err)
			assert.Nil(t, ck)
			var ce *checkpoint.CheckpointError
			require.True(t, errors.As(err, &ce), "%T %v", err, err)
			for _, m := range c.match {
				assert.Contains(t, err.Error(), m)
			}
			assert.True(t, strings.HasPrefix(err.Error(), "checkpoint "+dir), err.Error())
		})
	}
}

// ckShardOf is the shard the index places name in.
func ckShardOf(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, checkpoint.IndexFile))
	require.NoError(t, err)
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	require.NoError(t, json.Unmarshal(b, &idx))
	require.Contains(t, idx.WeightMap, name)
	return idx.WeightMap[name]
}

// ckQuantBlock edits both quantization blocks of dir's config.json.
func ckQuantBlock(t *testing.T, dir string, edit func(map[string]any)) {
	t.Helper()
	path := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, json.Unmarshal(b, &cfg))
	for _, key := range []string{"quantization", "quantization_config"} {
		edit(cfg[key].(map[string]any))
	}
	b, err = json.Marshal(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

func ckEdit(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	s := string(b)
	require.Contains(t, s, old)
	require.NoError(t, os.WriteFile(path, []byte(strings.ReplaceAll(s, old, new)), 0o644))
}

func ckDrop(ts []checkpoint.WriteTensor, name string) []checkpoint.WriteTensor {
	out := ts[:0]
	for _, x := range ts {
		if x.Name != name {
			out = append(out, x)
		}
	}
	return out
}

// ckRewrite rewrites dir as one model.safetensors after edit.
func ckRewrite(t *testing.T, dir string, edit func([]checkpoint.WriteTensor) []checkpoint.WriteTensor) {
	t.Helper()
	c := ckOpen(t, dir)
	var ts []checkpoint.WriteTensor
	for _, name := range c.Names() {
		b, info, err := c.Bytes(name)
		require.NoError(t, err)
		ts = append(ts, checkpoint.WriteTensor{Name: name, DType: info.DType, Shape: info.Shape, Data: append([]byte(nil), b...)})
	}
	cfg := c.Config
	require.NoError(t, c.Close())
	matches, _ := filepath.Glob(filepath.Join(dir, "model*"))
	for _, m := range matches {
		require.NoError(t, os.Remove(m))
	}
	require.NoError(t, checkpoint.WriteCheckpoint(dir, cfg, edit(ts), checkpoint.WriteOptions{}))
}

func TestParseQuantConfig(t *testing.T) {
	for _, c := range []struct {
		name, config string
		want         *checkpoint.QuantConfig
		err          string
	}{
		{"none", `{"model_type": "x"}`, nil, ""},
		{"top level", `{"quantization": {"group_size": 64, "bits": 6, "mode": "affine", "m.gate": {"group_size": 64, "bits": 8}, "m.skip": false}}`,
			&checkpoint.QuantConfig{Default: checkpoint.QuantSpec{Bits: 6, GroupSize: 64}, Modules: map[string]*checkpoint.QuantSpec{"m.gate": {Bits: 8, GroupSize: 64}, "m.skip": nil}}, ""},
		{"quantization_config only", `{"quantization_config": {"group_size": 32, "bits": 4}}`,
			&checkpoint.QuantConfig{Default: checkpoint.QuantSpec{Bits: 4, GroupSize: 32}, Modules: map[string]*checkpoint.QuantSpec{}}, ""},
		{"inside text_config", `{"text_config": {"quantization": {"group_size": 128, "bits": 3}}}`,
			&checkpoint.QuantConfig{Default: checkpoint.QuantSpec{Bits: 3, GroupSize: 128}, Modules: map[string]*checkpoint.QuantSpec{}}, ""},
		{"mxfp4", `{"quantization": {"group_size": 32, "bits": 4, "mode": "mxfp4"}}`, nil,
			`quantization: mode "mxfp4": unsupported quantization (only affine)`},
		{"nvfp4 module", `{"quantization": {"group_size": 32, "bits": 4, "a": {"group_size": 16, "bits": 4, "mode": "nvfp4"}}}`, nil,
			`quantization entry "a": mode "nvfp4": unsupported quantization (only affine)`},
		{"hf method", `{"quantization_config": {"quant_method": "gptq", "bits": 4}}`, nil,
			`quantization method "gptq": unsupported quantization (only MLX affine)`},
		{"bad bits", `{"quantization": {"group_size": 64, "bits": 7}}`, nil,
			"quantization: bits 7, group_size 64: want bits 2, 3, 4, 5, 6 or 8 and group_size 32, 64 or 128"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := checkpoint.ParseQuantConfig([]byte(c.config))
			if c.err != "" {
				require.EqualError(t, err, c.err)
				if strings.Contains(c.err, "unsupported") {
					require.ErrorIs(t, err, checkpoint.ErrUnsupportedQuantization)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
	q := &checkpoint.QuantConfig{Default: checkpoint.QuantSpec{Bits: 4, GroupSize: 32}, Modules: map[string]*checkpoint.QuantSpec{
		"language_model.model.layers.0.mlp.gate": {Bits: 8, GroupSize: 64}, "model.norm": nil}}
	s, ok := q.For("model.layers.0.mlp.gate") // HF names match mlx-lm's prefixed entries
	assert.Equal(t, checkpoint.QuantSpec{Bits: 8, GroupSize: 64}, s)
	assert.True(t, ok)
	_, ok = q.For("language_model.model.norm")
	assert.False(t, ok)
	s, ok = q.For("lm_head")
	assert.Equal(t, q.Default, s)
	assert.True(t, ok)
}

// TestCheckpointMapping: every tensor's mapped bytes lie within its file's mapping,
// which starts on a page and spans the file (what Metal wraps once per file); the
// count of tensors 16-byte aligned there is how many Metal binds in place.
func TestCheckpointMapping(t *testing.T) {
	c := ckOpen(t, ckMLXDir())
	aligned, total := 0, 0
	for _, name := range c.Names() {
		b, info, release, err := c.Mapped(name)
		require.NoError(t, err)
		m := c.Mapping(name)
		require.NotNil(t, m, name)
		base := uintptr(unsafe.Pointer(&m[0]))
		require.Zero(t, base%uintptr(os.Getpagesize()), "the mapping starts on a page")
		_, file, _ := c.Info(name)
		st, err := os.Stat(file)
		require.NoError(t, err)
		require.Equal(t, int(st.Size()), len(m), "the mapping spans the file")
		if len(b) > 0 {
			p := uintptr(unsafe.Pointer(&b[0]))
			require.True(t, p >= base && p+uintptr(len(b)) <= base+uintptr(len(m)), name)
			require.Equal(t, int(info.End-info.Begin), len(b))
			total++
			if p%16 == 0 {
				aligned++
			}
		}
		if release != nil {
			release()
		}
	}
	t.Logf("%d of %d tensors 16-byte aligned in their file", aligned, total)
	require.Nil(t, c.Mapping("no.such.tensor"))
}
