package qwen35

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/internal/golden"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"
)

// stTensor is one tensor to write: raw little-endian data of dtype.
type stTensor struct {
	dtype string
	shape []int
	data  []byte
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// writeSafetensors writes tensors (sorted by name) as a safetensors file.
func writeSafetensors(t *testing.T, path string, ts map[string]stTensor) {
	t.Helper()
	names := make([]string, 0, len(ts))
	for n := range ts {
		names = append(names, n)
	}
	slices.Sort(names)
	header := map[string]any{}
	var data []byte
	for _, n := range names {
		x := ts[n]
		header[n] = map[string]any{"dtype": x.dtype, "shape": x.shape, "data_offsets": []int{len(data), len(data) + len(x.data)}}
		data = append(data, x.data...)
	}
	h, err := json.Marshal(header)
	require.NoError(t, err)
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	out = append(append(out, h...), data...)
	require.NoError(t, os.WriteFile(path, out, 0o644))
}

// readAll reads every tensor of a golden checkpoint as float32.
func readAll(t *testing.T, path string) map[string]stTensor {
	t.Helper()
	st, err := checkpoint.ReadSafetensors(path)
	require.NoError(t, err)
	out := map[string]stTensor{}
	for _, n := range st.Names() {
		v, shape, err := st.Float32(n)
		require.NoError(t, err)
		out[n] = stTensor{dtype: "F32", shape: shape, data: f32Bytes(v)}
	}
	return out
}

// checkpoint writes config.json (copied from src) and tensors into a fresh directory.
func writeCheckpoint(t *testing.T, src string, ts map[string]stTensor) string {
	t.Helper()
	dir := t.TempDir()
	cfg, err := os.ReadFile(filepath.Join(src, "config.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644))
	writeSafetensors(t, filepath.Join(dir, "model.safetensors"), ts)
	return dir
}

func isZeroCentredNorm(name string) bool {
	for _, s := range []string{".input_layernorm.weight", ".post_attention_layernorm.weight", "model.norm.weight", ".q_norm.weight", ".k_norm.weight"} {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

func f32s(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// mlxLayout rewrites an HF checkpoint as mlx-lm saves it: language_model.* names,
// switch_mlp experts, conv1d [C, K, 1] and zero-centred norms holding 1 + w.
func mlxLayout(hf map[string]stTensor) map[string]stTensor {
	out := map[string]stTensor{}
	for n, x := range hf {
		switch {
		case strings.HasSuffix(n, "conv1d.weight"):
			x.shape = []int{x.shape[0], x.shape[2], 1}
		case isZeroCentredNorm(n):
			v := f32s(x.data)
			for i := range v {
				v[i]++
			}
			x.data = f32Bytes(v)
		case strings.HasSuffix(n, "experts.gate_up_proj"):
			e, two, h := x.shape[0], x.shape[1], x.shape[2]
			gate, up := []byte{}, []byte{}
			row := two / 2 * h * 4
			for i := 0; i < e; i++ {
				gate = append(gate, x.data[i*2*row:i*2*row+row]...)
				up = append(up, x.data[i*2*row+row:(i+1)*2*row]...)
			}
			base := strings.TrimSuffix(n, "experts.gate_up_proj")
			out["language_model."+base+"switch_mlp.gate_proj.weight"] = stTensor{"F32", []int{e, two / 2, h}, gate}
			out["language_model."+base+"switch_mlp.up_proj.weight"] = stTensor{"F32", []int{e, two / 2, h}, up}
			continue
		case strings.HasSuffix(n, "experts.down_proj"):
			n = strings.TrimSuffix(n, "experts.down_proj") + "switch_mlp.down_proj.weight"
		}
		out["language_model."+n] = x
	}
	return out
}

// TestLoadLayouts loads the golden weights renamed as published checkpoints (with mtp
// and vision tensors to ignore) and as mlx-lm's layout: the same logits bit for bit.
func TestLoadLayouts(t *testing.T) {
	for _, gm := range goldenModels(t) {
		t.Run(gm.Name, func(t *testing.T) {
			hf := readAll(t, filepath.Join(gm.Dir, "model.safetensors"))
			published := map[string]stTensor{
				"mtp.fc.weight":                   {"F32", []int{2, 3}, f32Bytes(make([]float32, 6))},
				"model.visual.patch_embed.weight": {"I64", []int{2}, make([]byte, 16)},
			}
			for n, x := range hf {
				published[strings.Replace(n, "model.", "model.language_model.", 1)] = x
			}
			g := graph.NewCPU(graph.Options{})
			ref := loadModel(t, g, gm.Dir, nn.Options{})
			c := gm.Cases[0]
			ids := c.Tokens(t, gm.Dir, "input_ids")
			want := golden.Forward(t, ref, [][]int32{ids}, ref.MakeCache(cache.Eager))
			for name, ts := range map[string]map[string]stTensor{"published": published, "mlx": mlxLayout(hf)} {
				m := loadModel(t, g, writeCheckpoint(t, gm.Dir, ts), nn.Options{})
				require.Equal(t, want, golden.Forward(t, m, [][]int32{ids}, m.MakeCache(cache.Eager)), name)
			}
		})
	}
}

// TestLoadErrors: bad input gives an error naming the file (and the tensor).
func TestLoadErrors(t *testing.T) {
	// A Qwen3.5-MoE set of any sizes; tensor names and shapes derive from its config.
	var moe golden.Set
	var cfg *Config
	for _, gm := range goldenModels(t) {
		c, err := LoadConfig(filepath.Join(gm.Dir, "config.json"))
		require.NoError(t, err)
		if c.NumSparse() > 0 && !c.FusedGDNProjections() && moe.Dir == "" {
			moe, cfg = gm, c
		}
	}
	if moe.Dir == "" {
		t.Skip("no Qwen3.5-MoE set under the golden root")
	}
	var gdn, sparse []int
	for i := 0; i < cfg.NumLayers; i++ {
		if !cfg.IsAttention(i) {
			gdn = append(gdn, i)
		}
		if cfg.IsSparse(i) {
			sparse = append(sparse, i)
		}
	}
	layer := func(i int) string { return fmt.Sprintf("model.layers.%d.", i) }
	g0, gLast, s0, sLast := layer(gdn[0]), layer(gdn[len(gdn)-1]), layer(sparse[0]), layer(sparse[len(sparse)-1])
	h, vd := cfg.HiddenSize, cfg.LinearNumValueHeads*cfg.LinearValueHeadDim
	convC := 2*cfg.LinearNumKeyHeads*cfg.LinearKeyHeadDim + vd
	e, ei := cfg.NumExperts, cfg.MoEIntermediateSize
	hf := readAll(t, filepath.Join(moe.Dir, "model.safetensors"))
	g := graph.NewCPU(graph.Options{})
	load := func(dir string) error {
		m, err := loadDir(dir, g, nn.Options{})
		require.Nil(t, m)
		require.Error(t, err)
		return err
	}
	edit := func(f func(ts map[string]stTensor)) string {
		ts := map[string]stTensor{}
		for n, x := range hf {
			ts[n] = x
		}
		f(ts)
		return writeCheckpoint(t, moe.Dir, ts)
	}

	t.Run("missing config", func(t *testing.T) {
		dir := t.TempDir()
		err := load(dir)
		require.ErrorIs(t, err, fs.ErrNotExist)
		require.Contains(t, err.Error(), filepath.Join(dir, "config.json"))
	})
	t.Run("bad config", func(t *testing.T) {
		dir := edit(func(map[string]stTensor) {})
		path := filepath.Join(dir, "config.json")
		require.NoError(t, os.WriteFile(path, []byte(`{"hidden_size": "64"`), 0o644))
		// Not JSON at all: opening the checkpoint refuses it (nn/models' Load reads
		// config.json for its model_type first), naming the file.
		err := load(dir)
		var cke *checkpoint.CheckpointError
		require.ErrorAs(t, err, &cke)
		require.Equal(t, path, cke.Path)
		var ce *ConfigError
		_, err = ParseHFConfig([]byte(`{"hidden_size": "64"`))
		require.ErrorAs(t, err, &ce)
		require.EqualError(t, err, "qwen35 config: config: not a JSON object")
		require.NoError(t, os.WriteFile(path, []byte(`{"hidden_size": "64"}`), 0o644))
		require.EqualError(t, load(dir), "qwen35: load config "+path+": qwen35 config: hidden_size: want a number, got \"64\"")
	})
	t.Run("corrupt safetensors", func(t *testing.T) {
		dir := edit(func(map[string]stTensor) {})
		path := filepath.Join(dir, "model.safetensors")
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, b[:len(b)/2], 0o644))
		err = load(dir)
		var fe *checkpoint.FormatError
		require.ErrorAs(t, err, &fe)
		require.Equal(t, path, fe.File)
		require.True(t, strings.HasPrefix(err.Error(), "safetensors "+path+": "), err.Error())
	})
	cases := []struct {
		name   string
		edit   func(ts map[string]stTensor)
		tensor string
		reason string
		is     error
	}{
		{"missing tensor", func(ts map[string]stTensor) { delete(ts, gLast+"linear_attn.A_log") },
			gLast + "linear_attn.A_log", "not found", checkpoint.ErrTensorNotFound},
		{"missing lm_head", func(ts map[string]stTensor) { delete(ts, "lm_head.weight") },
			"lm_head.weight", "not found", checkpoint.ErrTensorNotFound},
		{"missing experts", func(ts map[string]stTensor) { delete(ts, s0+"mlp.experts.gate_up_proj") },
			s0 + "mlp.experts.gate_up_proj",
			fmt.Sprintf("not found (nor %smlp.switch_mlp.gate_proj.weight, %smlp.experts.0.gate_proj.weight)", s0, s0),
			checkpoint.ErrTensorNotFound},
		{"wrong shape", func(ts map[string]stTensor) {
			x := ts[g0+"linear_attn.in_proj_z.weight"]
			ts[g0+"linear_attn.in_proj_z.weight"] = stTensor{"F32", []int{vd / 2, h}, x.data[:len(x.data)/2]}
		}, g0 + "linear_attn.in_proj_z.weight", fmt.Sprintf("shape [%d %d], want [%d %d]", vd/2, h, vd, h), nn.ErrShape},
		{"wrong conv shape", func(ts map[string]stTensor) {
			x := ts[g0+"linear_attn.conv1d.weight"]
			ts[g0+"linear_attn.conv1d.weight"] = stTensor{"F32", []int{convC, cfg.LinearConvKernel}, x.data}
		}, g0 + "linear_attn.conv1d.weight", fmt.Sprintf("shape [%d %d], want [%d 1 %d] or [%d %d 1]",
			convC, cfg.LinearConvKernel, convC, cfg.LinearConvKernel, convC, cfg.LinearConvKernel), nn.ErrShape},
		{"wrong experts shape", func(ts map[string]stTensor) {
			x := ts[sLast+"mlp.experts.down_proj"]
			ts[sLast+"mlp.experts.down_proj"] = stTensor{"F32", []int{e, ei, h}, x.data}
		}, sLast + "mlp.experts.down_proj", fmt.Sprintf("shape [%d %d %d], want [%d %d %d]", e, ei, h, e, h, ei), nn.ErrShape},
		{"unsupported dtype", func(ts map[string]stTensor) {
			n := cfg.LinearNumValueHeads
			ts[g0+"linear_attn.dt_bias"] = stTensor{"I32", []int{n}, make([]byte, 4*n)}
		}, g0 + "linear_attn.dt_bias", "unsupported dtype I32 (want F32, F16 or BF16)", checkpoint.ErrDTypeMismatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := edit(tc.edit)
			err := load(dir)
			file := filepath.Join(dir, "model.safetensors")
			require.EqualError(t, err, fmt.Sprintf("qwen35: %s: tensor %s: %s", file, tc.tensor, tc.reason))
			require.ErrorIs(t, err, tc.is)
			var we *nn.WeightError
			require.ErrorAs(t, err, &we)
			require.Equal(t, tc.tensor, we.Tensor)
			require.Equal(t, file, we.File)
		})
	}
}

// withConfig writes a checkpoint whose config.json has the given keys overridden.
func withConfig(t *testing.T, src string, ts map[string]stTensor, set map[string]any) string {
	t.Helper()
	dir := writeCheckpoint(t, src, ts)
	path := filepath.Join(dir, "config.json")
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, json.Unmarshal(raw, &cfg))
	for k, v := range set {
		cfg[k] = v
	}
	raw, err = json.Marshal(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, raw, 0o644))
	return dir
}

// TestLoadTiedAndBias: a tied checkpoint (no lm_head) projects onto the embedding, as an
// untied one whose lm_head is a copy of it; attention biases load by name (zero biases
// leave the logits unchanged).
func TestLoadTiedAndBias(t *testing.T) {
	gm := goldenModels(t)[0]
	hf := readAll(t, filepath.Join(gm.Dir, "model.safetensors"))
	copied := map[string]stTensor{}
	tied := map[string]stTensor{}
	biased := map[string]stTensor{}
	for n, x := range hf {
		copied[n], tied[n], biased[n] = x, x, x
	}
	copied["lm_head.weight"] = hf["model.embed_tokens.weight"]
	delete(tied, "lm_head.weight")
	ref := loadModel(t, graph.NewCPU(graph.Options{}), gm.Dir, nn.Options{})
	cfg := ref.Config()
	for i := 0; i < cfg.NumLayers; i++ {
		if !cfg.IsAttention(i) {
			continue
		}
		p := fmt.Sprintf("model.layers.%d.self_attn.", i)
		for proj, n := range map[string]int{"q_proj": 2 * cfg.NumHeads * cfg.HeadDim, "k_proj": cfg.NumKVHeads * cfg.HeadDim,
			"v_proj": cfg.NumKVHeads * cfg.HeadDim, "o_proj": cfg.HiddenSize} {
			biased[p+proj+".bias"] = stTensor{"F32", []int{n}, make([]byte, 4*n)}
		}
	}
	g := graph.NewCPU(graph.Options{})
	ids := gm.Cases[0].Tokens(t, gm.Dir, "input_ids")
	logits := func(dir string) []float32 {
		m := loadModel(t, g, dir, nn.Options{})
		return golden.Forward(t, m, [][]int32{ids}, m.MakeCache(cache.Eager))
	}
	want := logits(writeCheckpoint(t, gm.Dir, copied))
	require.Equal(t, want, logits(withConfig(t, gm.Dir, tied, map[string]any{"tie_word_embeddings": true})))
	require.Greater(t, golden.MaxDiff(t, want, logits(gm.Dir)), 1e-2, "the golden lm_head is not the embedding")

	plain := logits(gm.Dir)
	require.Equal(t, plain, logits(withConfig(t, gm.Dir, biased, map[string]any{"attention_bias": true})))
	_, err := loadDir(withConfig(t, gm.Dir, hf, map[string]any{"attention_bias": true}), g, nn.Options{})
	require.ErrorIs(t, err, checkpoint.ErrTensorNotFound)
	require.Contains(t, err.Error(), "self_attn.q_proj.bias: not found")
}

// TestLoadPerExpertHugeConfig: a config within the validator's limits whose experts are
// far larger than the per-expert tensors in the file fails on the first expert's shape,
// before anything of the config's size is allocated (it used to allocate E*I*H floats
// first: a fatal out-of-memory).
func TestLoadPerExpertHugeConfig(t *testing.T) {
	for _, gm := range goldenModels(t) {
		saved := filepath.Join(gm.Dir, "hf_save_pretrained")
		ts := readAll(t, filepath.Join(saved, "model.safetensors"))
		var expert string
		for n := range ts {
			if strings.HasSuffix(n, ".mlp.experts.0.gate_proj.weight") && (expert == "" || n < expert) {
				expert = n
			}
		}
		if expert == "" {
			continue // a dense set
		}
		t.Run(gm.Name, func(t *testing.T) {
			dir := withConfig(t, saved, ts, map[string]any{"moe_intermediate_size": 1 << 24})
			_, err := loadDir(dir, graph.NewCPU(graph.Options{}), nn.Options{})
			require.ErrorIs(t, err, nn.ErrShape)
			var we *nn.WeightError
			require.ErrorAs(t, err, &we)
			require.True(t, strings.HasSuffix(we.Tensor, ".mlp.experts.0.gate_proj.weight"), we.Tensor)
		})
	}
}
