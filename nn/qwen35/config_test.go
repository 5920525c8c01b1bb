package qwen35_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ingotml/ingot/internal/golden"
	"github.com/ingotml/ingot/nn"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/nn/qwen35"
)

// Helpers are prefixed "cfg" because other files of package qwen35_test are
// written by other people and share this namespace.

// cfgGoldenDir returns the golden-data root: $INGOT_GOLDEN_DIR, else
// the repository's testdata/golden.
func cfgGoldenDir(t *testing.T) string {
	t.Helper()
	dir, err := golden.Root()
	require.NoError(t, err)
	return dir
}

const (
	cfgG = qwen35.GatedDeltaNet
	cfgA = qwen35.FullAttention
)

// cfgGoldenMoE is what testdata/qwen3_5_moe_text.json (a copy of the transformers
// golden set's config.json, kept beside the tests so that INGOT_GOLDEN_DIR cannot
// change it) describes.
func cfgGoldenMoE() qwen35.Config {
	return qwen35.Config{
		ModelType: "qwen3_5_moe_text",
		VocabSize: 128, HiddenSize: 64, NumLayers: 4, NumHeads: 4, NumKVHeads: 2, HeadDim: 32,
		LinearNumKeyHeads: 2, LinearNumValueHeads: 4, LinearKeyHeadDim: 16, LinearValueHeadDim: 16, LinearConvKernel: 4,
		RMSNormEps: 1e-6, TieWordEmbeddings: false, AttentionBias: false,
		LayerTypes: []qwen35.LayerType{cfgG, cfgG, cfgG, cfgA},
		RopeTheta:  10000, PartialRotaryFactor: 0.25,
		IntermediateSize: 0,
		NumExperts:       8, NumExpertsPerTok: 2, MoEIntermediateSize: 32, SharedExpertIntermediateSize: 48,
		NormTopKProb: true,
	}
}

// cfgGoldenDense is what testdata/qwen3_5_text.json describes.
func cfgGoldenDense() qwen35.Config {
	c := cfgGoldenMoE()
	c.ModelType = "qwen3_5_text"
	c.IntermediateSize = 96
	c.NumExperts, c.NumExpertsPerTok, c.MoEIntermediateSize, c.SharedExpertIntermediateSize = 0, 0, 0, 0
	c.NormTopKProb = false
	return c
}

// cfgGoldenNext is what testdata/qwen3_next.json describes: layer 1 dense.
func cfgGoldenNext() qwen35.Config {
	c := cfgGoldenMoE()
	c.ModelType = "qwen3_next"
	c.IntermediateSize = 96
	c.MLPOnlyLayers = []int{1}
	c.DecoderSparseStep = 1
	return c
}

func TestLoadConfigFixtures(t *testing.T) {
	for file, want := range map[string]qwen35.Config{
		"qwen3_5_moe_text.json": cfgGoldenMoE(),
		"qwen3_5_text.json":     cfgGoldenDense(),
		"qwen3_next.json":       cfgGoldenNext(),
	} {
		t.Run(file, func(t *testing.T) {
			c, err := qwen35.LoadConfig(filepath.Join("testdata", file))
			require.NoError(t, err)
			assert.Equal(t, want, *c)
			assert.Equal(t, 3, c.NumGDN())
			assert.Equal(t, 3, c.FirstAttention())
			assert.Equal(t, 8, c.RotaryDims())
			assert.Equal(t, want.NumExperts > 0, c.IsMoE())
			assert.Equal(t, []bool{false, false, false, true, false},
				[]bool{c.IsAttention(0), c.IsAttention(1), c.IsAttention(2), c.IsAttention(3), c.IsAttention(4)})
			assert.False(t, c.IsAttention(-1))
			sparse := []bool{c.IsSparse(0), c.IsSparse(1), c.IsSparse(2), c.IsSparse(3)}
			switch file {
			case "qwen3_5_moe_text.json":
				assert.Equal(t, []bool{true, true, true, true}, sparse)
			case "qwen3_5_text.json":
				assert.Equal(t, []bool{false, false, false, false}, sparse)
			default:
				assert.Equal(t, []bool{true, false, true, true}, sparse)
			}
		})
	}
}

// TestLoadConfigGolden: every set under the golden root (any names, any sizes) parses,
// and the Config holds what its config.json says.
func TestLoadConfigGolden(t *testing.T) {
	root := cfgGoldenDir(t)
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	n := 0
	for _, e := range entries {
		path := filepath.Join(root, e.Name(), "config.json")
		raw, err := os.ReadFile(path)
		if !e.IsDir() || err != nil {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal(raw, &m), path)
		if typ, _ := m["model_type"].(string); !slices.Contains(qwen35.ModelTypes, typ) {
			continue // another family's set
		}
		n++
		t.Run(e.Name(), func(t *testing.T) {
			c, err := qwen35.LoadConfig(path)
			require.NoError(t, err)
			num := func(k string) int { return int(m[k].(float64)) }
			assert.Equal(t, m["model_type"], c.ModelType)
			assert.Equal(t, num("vocab_size"), c.VocabSize)
			assert.Equal(t, num("hidden_size"), c.HiddenSize)
			assert.Equal(t, num("num_hidden_layers"), c.NumLayers)
			assert.Equal(t, num("head_dim"), c.HeadDim)
			assert.Equal(t, num("linear_key_head_dim"), c.LinearKeyHeadDim)
			assert.Equal(t, num("linear_value_head_dim"), c.LinearValueHeadDim)
			if _, ok := m["num_experts"]; ok {
				assert.Equal(t, num("num_experts"), c.NumExperts)
				assert.Equal(t, num("num_experts_per_tok"), c.NumExpertsPerTok)
			}
			types := m["layer_types"].([]any)
			require.Len(t, c.LayerTypes, len(types))
			gdn := 0
			for i, lt := range types {
				assert.Equal(t, lt, c.LayerTypes[i].String())
				if lt == "linear_attention" {
					gdn++
				}
			}
			assert.Equal(t, gdn, c.NumGDN())
		})
	}
	require.NotZero(t, n, "no sets under %s", root)
}

// cfgJSON renders a map as config.json bytes.
func cfgJSON(t *testing.T, m map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return b
}

// cfgGoldenMap returns testdata/qwen3_5_moe_text.json as a mutable map.
func cfgGoldenMap(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "qwen3_5_moe_text.json"))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

func TestParseHFConfigTextConfigNesting(t *testing.T) {
	text := cfgGoldenMap(t)
	delete(text, "tie_word_embeddings")
	// A multimodal checkpoint: the top level has its own model_type and
	// stray keys; text_config wins wherever both define a key.
	top := map[string]any{
		"model_type":          "qwen3_5_moe",
		"hidden_size":         999,
		"tie_word_embeddings": true,
		"vision_config":       map[string]any{"hidden_size": 1152},
		"text_config":         text,
	}
	c, err := qwen35.ParseHFConfig(cfgJSON(t, top))
	require.NoError(t, err)
	want := cfgGoldenMoE()
	want.TieWordEmbeddings = true // only at the top level, so it is inherited
	assert.Equal(t, want, *c)
}

func TestParseHFConfigIntervalAndRopeForms(t *testing.T) {
	m := cfgGoldenMap(t)
	delete(m, "layer_types")
	m["num_hidden_layers"] = 6
	m["full_attention_interval"] = 2
	c, err := qwen35.ParseHFConfig(cfgJSON(t, m))
	require.NoError(t, err)
	assert.Equal(t, []qwen35.LayerType{cfgG, cfgA, cfgG, cfgA, cfgG, cfgA}, c.LayerTypes)
	assert.Equal(t, 3, c.NumGDN())
	assert.Equal(t, 1, c.FirstAttention())

	// Without an interval HF uses 4.
	delete(m, "full_attention_interval")
	m["num_hidden_layers"] = 8
	c, err = qwen35.ParseHFConfig(cfgJSON(t, m))
	require.NoError(t, err)
	assert.Equal(t, []qwen35.LayerType{cfgG, cfgG, cfgG, cfgA, cfgG, cfgG, cfgG, cfgA}, c.LayerTypes)

	// Flat rope keys are used when rope_parameters is absent...
	delete(m, "rope_parameters")
	m["rope_theta"] = 5e6
	m["partial_rotary_factor"] = 0.5
	c, err = qwen35.ParseHFConfig(cfgJSON(t, m))
	require.NoError(t, err)
	assert.Equal(t, 5e6, c.RopeTheta)
	assert.Equal(t, 0.5, c.PartialRotaryFactor)
	assert.Equal(t, 16, c.RotaryDims())

	// ...and rope_parameters wins over them, key by key.
	m["rope_parameters"] = map[string]any{"rope_theta": 1e6}
	c, err = qwen35.ParseHFConfig(cfgJSON(t, m))
	require.NoError(t, err)
	assert.Equal(t, 1e6, c.RopeTheta)
	assert.Equal(t, 0.5, c.PartialRotaryFactor)
}

func TestParseHFConfigDefaults(t *testing.T) {
	m := cfgGoldenMap(t)
	for _, k := range []string{"head_dim", "rope_parameters", "rope_theta", "partial_rotary_factor", "rms_norm_eps", "attention_bias", "tie_word_embeddings"} {
		delete(m, k)
	}
	m["norm_topk_prob"] = false // ignored: Qwen3.5-MoE always renormalises
	m["intermediate_size"] = 512
	m["head_dim"] = nil // null counts as absent
	c, err := qwen35.ParseHFConfig(cfgJSON(t, m))
	require.NoError(t, err)
	want := cfgGoldenMoE()
	want.HeadDim = 256 // HF's default, not hidden/heads = 16
	want.IntermediateSize = 512
	assert.Equal(t, want, *c)
	assert.Equal(t, 64, c.RotaryDims())

	// Other model types honour norm_topk_prob.
	m["model_type"] = "qwen3_next"
	c, err = qwen35.ParseHFConfig(cfgJSON(t, m))
	require.NoError(t, err)
	assert.False(t, c.NormTopKProb)
	delete(m, "norm_topk_prob")
	c, err = qwen35.ParseHFConfig(cfgJSON(t, m))
	require.NoError(t, err)
	assert.True(t, c.NormTopKProb)

	// Integral floats are integers.
	raw, err := os.ReadFile(filepath.Join("testdata", "qwen3_5_moe_text.json"))
	require.NoError(t, err)
	edited := strings.Replace(string(raw), `"hidden_size": 64,`, `"hidden_size": 64.0,`, 1)
	require.NotEqual(t, string(raw), edited)
	c, err = qwen35.ParseHFConfig([]byte(edited))
	require.NoError(t, err)
	assert.Equal(t, 64, c.HiddenSize)
}

func TestParseHFConfigTypeErrors(t *testing.T) {
	cases := []struct {
		name string
		edit func(m map[string]any)
		raw  string // used instead of the edited map when set
		want string
	}{
		{name: "not JSON", raw: `{"vocab_size":`, want: "qwen35 config: config: not a JSON object"},
		{name: "array", raw: `[1,2]`, want: "qwen35 config: config: not a JSON object"},
		{name: "null", raw: `null`, want: "qwen35 config: config: not a JSON object"},
		{name: "float out of range", raw: `{"rms_norm_eps": 1e400}`, want: "qwen35 config: rms_norm_eps: number out of range: 1e400"},
		{name: "quoted int", edit: func(m map[string]any) { m["hidden_size"] = "64" },
			want: `qwen35 config: hidden_size: want a number, got "64"`},
		{name: "fractional int", edit: func(m map[string]any) { m["num_attention_heads"] = 4.5 },
			want: "qwen35 config: num_attention_heads: want an integer, got 4.5"},
		{name: "huge int", edit: func(m map[string]any) { m["vocab_size"] = 1e300 },
			want: "qwen35 config: vocab_size: want an integer, got 1e+300"},
		{name: "bool as string", edit: func(m map[string]any) { m["tie_word_embeddings"] = "yes" },
			want: `qwen35 config: tie_word_embeddings: want true or false, got "yes"`},
		{name: "model_type number", edit: func(m map[string]any) { m["model_type"] = 5 },
			want: "qwen35 config: model_type: want a string, got 5"},
		{name: "eps string", edit: func(m map[string]any) { m["rms_norm_eps"] = "1e-6" },
			want: `qwen35 config: rms_norm_eps: want a number, got "1e-6"`},
		{name: "layer_types not array", edit: func(m map[string]any) { m["layer_types"] = "full_attention" },
			want: `qwen35 config: layer_types: want an array of strings, got "full_attention"`},
		{name: "layer_types entry", edit: func(m map[string]any) { m["layer_types"] = []any{"linear_attention", 3} },
			want: "qwen35 config: layer_types[1]: want a string, got 3"},
		{name: "unknown layer type", edit: func(m map[string]any) {
			m["layer_types"] = []any{"linear_attention", "linear_attention", "sliding_attention", "full_attention"}
		}, want: `qwen35 config: layer_types[2]: unknown layer type "sliding_attention"`},
		{name: "text_config not object", edit: func(m map[string]any) { m["text_config"] = []any{1} },
			want: "qwen35 config: text_config: want a JSON object, got [1]"},
		{name: "rope_parameters not object", edit: func(m map[string]any) { m["rope_parameters"] = 10000 },
			want: "qwen35 config: rope_parameters: want a JSON object, got 10000"},
		{name: "nested rope type", edit: func(m map[string]any) { m["rope_parameters"] = map[string]any{"rope_theta": "big"} },
			want: `qwen35 config: rope_parameters.rope_theta: want a number, got "big"`},
		{name: "long value shortened", edit: func(m map[string]any) { m["hidden_size"] = strings.Repeat("x", 60) },
			want: `qwen35 config: hidden_size: want a number, got "` + strings.Repeat("x", 39) + `... (62 bytes)`},
		{name: "interval zero", edit: func(m map[string]any) { delete(m, "layer_types"); m["full_attention_interval"] = 0 },
			want: "qwen35 config: full_attention_interval: must be positive, got 0"},
		{name: "too many layers", edit: func(m map[string]any) { delete(m, "layer_types"); m["num_hidden_layers"] = 1 << 40 },
			want: "qwen35 config: num_hidden_layers: 1099511627776 exceeds the limit of 65536"},
		{name: "validation runs", edit: func(m map[string]any) { m["num_key_value_heads"] = 3 },
			want: "qwen35 config: num_key_value_heads: 3 does not divide num_attention_heads 4"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := []byte(c.raw)
			if c.raw == "" {
				m := cfgGoldenMap(t)
				c.edit(m)
				data = cfgJSON(t, m)
			}
			cfg, err := qwen35.ParseHFConfig(data)
			assert.Nil(t, cfg)
			var ce *qwen35.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.EqualError(t, err, c.want)
		})
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		edit func(c *qwen35.Config)
		want string // empty: valid
	}{
		{"golden moe", func(c *qwen35.Config) {}, ""},
		{"vocab", func(c *qwen35.Config) { c.VocabSize = 0 }, "vocab_size: must be positive, got 0"},
		{"hidden", func(c *qwen35.Config) { c.HiddenSize = -64 }, "hidden_size: must be positive, got -64"},
		{"layers", func(c *qwen35.Config) { c.NumLayers = 0 }, "num_hidden_layers: must be positive, got 0"},
		{"heads", func(c *qwen35.Config) { c.NumHeads = 0 }, "num_attention_heads: must be positive, got 0"},
		{"kv heads", func(c *qwen35.Config) { c.NumKVHeads = 0 }, "num_key_value_heads: must be positive, got 0"},
		{"head dim", func(c *qwen35.Config) { c.HeadDim = 0 }, "head_dim: must be positive, got 0"},
		{"huge dim", func(c *qwen35.Config) { c.VocabSize = 1 << 30 }, "vocab_size: 1073741824 exceeds the limit of 16777216"},
		{"gqa", func(c *qwen35.Config) { c.NumKVHeads = 3 }, "num_key_value_heads: 3 does not divide num_attention_heads 4"},
		{"layer count", func(c *qwen35.Config) { c.NumLayers = 5 }, "layer_types: has 4 entries for 5 layers"},
		{"unset layer type", func(c *qwen35.Config) { c.LayerTypes[1] = 0 }, "layer_types[1]: unknown layer type LayerKind(0)"},
		{"no attention", func(c *qwen35.Config) { c.LayerTypes[3] = cfgG }, "layer_types: no full_attention layer among 4 layers"},
		{"Hk", func(c *qwen35.Config) { c.LinearNumKeyHeads = 0 }, "linear_num_key_heads: must be positive, got 0"},
		{"Hv", func(c *qwen35.Config) { c.LinearNumValueHeads = 0 }, "linear_num_value_heads: must be positive, got 0"},
		{"Dk", func(c *qwen35.Config) { c.LinearKeyHeadDim = -1 }, "linear_key_head_dim: must be positive, got -1"},
		{"Dv", func(c *qwen35.Config) { c.LinearValueHeadDim = 0 }, "linear_value_head_dim: must be positive, got 0"},
		{"K", func(c *qwen35.Config) { c.LinearConvKernel = 0 }, "linear_conv_kernel_dim: must be positive, got 0"},
		{"Hv % Hk", func(c *qwen35.Config) { c.LinearNumValueHeads = 6; c.LinearNumKeyHeads = 4 },
			"linear_num_value_heads: 6 is not a multiple of linear_num_key_heads 4"},
		{"no GDN layers need no linear sizes", func(c *qwen35.Config) {
			c.LayerTypes = []qwen35.LayerType{cfgA, cfgA, cfgA, cfgA}
			c.LinearNumKeyHeads, c.LinearNumValueHeads, c.LinearKeyHeadDim, c.LinearValueHeadDim, c.LinearConvKernel = 0, 0, 0, 0, 0
		}, ""},
		{"eps zero", func(c *qwen35.Config) { c.RMSNormEps = 0 }, "rms_norm_eps: must be positive and finite, got 0"},
		{"eps NaN", func(c *qwen35.Config) { c.RMSNormEps = math.NaN() }, "rms_norm_eps: must be positive and finite, got NaN"},
		{"eps Inf", func(c *qwen35.Config) { c.RMSNormEps = math.Inf(1) }, "rms_norm_eps: must be positive and finite, got +Inf"},
		{"theta", func(c *qwen35.Config) { c.RopeTheta = -1 }, "rope_theta: must be positive and finite, got -1"},
		{"factor zero", func(c *qwen35.Config) { c.PartialRotaryFactor = 0 }, "partial_rotary_factor: must be in (0, 1], got 0"},
		{"factor above one", func(c *qwen35.Config) { c.PartialRotaryFactor = 1.5 }, "partial_rotary_factor: must be in (0, 1], got 1.5"},
		{"factor one", func(c *qwen35.Config) { c.PartialRotaryFactor = 1 }, ""},
		{"odd rotary dims", func(c *qwen35.Config) { c.PartialRotaryFactor = 0.15625 },
			"partial_rotary_factor: head_dim 32 * 0.15625 gives 5 rotary dims; need a positive even number"},
		{"no rotary dims", func(c *qwen35.Config) { c.PartialRotaryFactor = 0.01 },
			"partial_rotary_factor: head_dim 32 * 0.01 gives 0 rotary dims; need a positive even number"},
		{"negative experts", func(c *qwen35.Config) { c.NumExperts = -1 }, "num_experts: must not be negative, got -1"},
		{"too many experts", func(c *qwen35.Config) { c.NumExperts = 1 << 25 }, "num_experts: 33554432 exceeds the limit of 16777216"},
		{"top-k zero", func(c *qwen35.Config) { c.NumExpertsPerTok = 0 }, "num_experts_per_tok: must be in [1, num_experts=8], got 0"},
		{"top-k above experts", func(c *qwen35.Config) { c.NumExpertsPerTok = 9 }, "num_experts_per_tok: must be in [1, num_experts=8], got 9"},
		{"top-k all", func(c *qwen35.Config) { c.NumExpertsPerTok = 8 }, ""},
		{"expert width", func(c *qwen35.Config) { c.MoEIntermediateSize = 0 }, "moe_intermediate_size: must be positive, got 0"},
		{"shared width", func(c *qwen35.Config) { c.SharedExpertIntermediateSize = 0 }, "shared_expert_intermediate_size: must be positive, got 0"},
		{"dense needs width", func(c *qwen35.Config) { c.NumExperts = 0 }, "intermediate_size: must be positive, got 0"},
		{"dense ok", func(c *qwen35.Config) { c.NumExperts = 0; c.IntermediateSize = 96 }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := cfgGoldenMoE()
			tc.edit(&c)
			err := c.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			var ce *qwen35.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.EqualError(t, err, "qwen35 config: "+tc.want)
		})
	}
}

func TestParseModelArgs(t *testing.T) {
	// The leak repro's arguments as mlx-lm takes them; head_dim, rope and
	// eps are left to mlx-lm's defaults, and layer_types is ignored.
	args := `{"model_type": "qwen3_5_moe", "hidden_size": 64, "intermediate_size": 128,
		"num_hidden_layers": 8, "num_attention_heads": 4, "num_key_value_heads": 2,
		"vocab_size": 128, "linear_num_value_heads": 4, "linear_num_key_heads": 2,
		"linear_key_head_dim": 16, "linear_value_head_dim": 16, "linear_conv_kernel_dim": 4,
		"num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
		"shared_expert_intermediate_size": 32, "layer_types": ["full_attention"]}`
	c, err := qwen35.ParseModelArgs([]byte(args))
	require.NoError(t, err)
	assert.Equal(t, qwen35.Config{
		ModelType: "qwen3_5_moe",
		VocabSize: 128, HiddenSize: 64, NumLayers: 8, NumHeads: 4, NumKVHeads: 2, HeadDim: 16,
		LinearNumKeyHeads: 2, LinearNumValueHeads: 4, LinearKeyHeadDim: 16, LinearValueHeadDim: 16, LinearConvKernel: 4,
		RMSNormEps: 1e-6,
		LayerTypes: []qwen35.LayerType{cfgG, cfgG, cfgG, cfgA, cfgG, cfgG, cfgG, cfgA},
		RopeTheta:  100000, PartialRotaryFactor: 0.25,
		IntermediateSize: 128,
		NumExperts:       8, NumExpertsPerTok: 2, MoEIntermediateSize: 32, SharedExpertIntermediateSize: 32,
		NormTopKProb: true,
	}, *c)

	// Explicit values override the defaults.
	explicit := strings.Replace(args, `"hidden_size": 64,`,
		`"hidden_size": 64, "head_dim": 32, "full_attention_interval": 8, "rope_theta": 10000, "rms_norm_eps": 1e-5,`, 1)
	c, err = qwen35.ParseModelArgs([]byte(explicit))
	require.NoError(t, err)
	assert.Equal(t, 32, c.HeadDim)
	assert.Equal(t, []qwen35.LayerType{cfgG, cfgG, cfgG, cfgG, cfgG, cfgG, cfgG, cfgA}, c.LayerTypes)
	assert.Equal(t, 10000.0, c.RopeTheta)
	assert.Equal(t, 1e-5, c.RMSNormEps)

	// mlx-lm's qwen3_next defaults norm_topk_prob to false.
	c, err = qwen35.ParseModelArgs([]byte(strings.Replace(args, `"qwen3_5_moe"`, `"qwen3_next"`, 1)))
	require.NoError(t, err)
	assert.False(t, c.NormTopKProb)

	_, err = qwen35.ParseModelArgs([]byte(strings.Replace(args, `"num_attention_heads": 4`, `"num_attention_heads": 0`, 1)))
	assert.EqualError(t, err, "qwen35 config: num_attention_heads: must be positive, got 0")
}

func TestLoadConfigErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.json")
	_, err := qwen35.LoadConfig(missing)
	require.ErrorIs(t, err, os.ErrNotExist)
	assert.Contains(t, err.Error(), "qwen35: load config "+missing+": ")

	bad := filepath.Join(dir, "config.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"vocab_size": 128}`), 0o644))
	c, err := qwen35.LoadConfig(bad)
	assert.Nil(t, c)
	var ce *qwen35.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, qwen35.ConfigError{Field: "hidden_size", Reason: "must be positive, got 0"}, *ce)
	assert.EqualError(t, err, "qwen35: load config "+bad+": qwen35 config: hidden_size: must be positive, got 0")
}

func TestReproConfig(t *testing.T) {
	c, err := qwen35.ReproConfig(nn.ReproOptions{})
	require.NoError(t, err)
	types := make([]qwen35.LayerType, 50)
	for i := range types {
		types[i] = cfgG
	}
	types[49] = cfgA
	assert.Equal(t, qwen35.Config{
		ModelType: "qwen3_5_moe",
		VocabSize: 128, HiddenSize: 64, NumLayers: 50, NumHeads: 4, NumKVHeads: 2, HeadDim: 16,
		LinearNumKeyHeads: 2, LinearNumValueHeads: 4, LinearKeyHeadDim: 16, LinearValueHeadDim: 16, LinearConvKernel: 4,
		RMSNormEps: 1e-6,
		LayerTypes: types,
		RopeTheta:  10000, PartialRotaryFactor: 0.25,
		NumExperts: 8, NumExpertsPerTok: 2, MoEIntermediateSize: 32, SharedExpertIntermediateSize: 32,
		NormTopKProb: true,
	}, *c)
	assert.Equal(t, 49, c.NumGDN())
	assert.Equal(t, 49, c.FirstAttention())
	assert.Equal(t, 4, c.RotaryDims())

	c, err = qwen35.ReproConfig(nn.ReproOptions{Layers: 48, Interval: 4, Experts: 16, Hidden: 128})
	require.NoError(t, err)
	assert.Equal(t, 48, c.NumLayers)
	assert.Equal(t, 36, c.NumGDN())
	assert.Equal(t, 3, c.FirstAttention())
	for i := 0; i < 48; i++ {
		assert.Equal(t, (i+1)%4 == 0, c.IsAttention(i), "layer %d", i)
	}
	assert.Equal(t, 16, c.NumExperts)
	assert.Equal(t, 128, c.HiddenSize)

	c, err = qwen35.ReproConfig(nn.ReproOptions{Layers: 10, Interval: 5, AttentionOnly: true})
	require.NoError(t, err)
	assert.Equal(t, 0, c.NumGDN())
	assert.Equal(t, 0, c.FirstAttention())
	assert.Len(t, c.LayerTypes, 10)

	for _, tc := range []struct {
		o    nn.ReproOptions
		want string
	}{
		{nn.ReproOptions{Layers: -1}, "Layers: must not be negative, got -1"},
		{nn.ReproOptions{Interval: -4}, "Interval: must not be negative, got -4"},
		{nn.ReproOptions{Experts: -8}, "Experts: must not be negative, got -8"},
		{nn.ReproOptions{Hidden: -64}, "Hidden: must not be negative, got -64"},
		{nn.ReproOptions{Layers: 1 << 20}, "Layers: 1048576 exceeds the limit of 65536"},
		{nn.ReproOptions{Layers: 10, Interval: 20}, "layer_types: no full_attention layer among 10 layers"},
		{nn.ReproOptions{Experts: 1}, "num_experts_per_tok: must be in [1, num_experts=1], got 2"},
	} {
		c, err := qwen35.ReproConfig(tc.o)
		assert.Nil(t, c)
		var ce *qwen35.ConfigError
		require.ErrorAs(t, err, &ce, "%+v", tc.o)
		assert.EqualError(t, err, "qwen35 config: "+tc.want)
	}
}

func TestLayerTypeString(t *testing.T) {
	assert.Equal(t, "linear_attention", qwen35.GatedDeltaNet.String())
	assert.Equal(t, "full_attention", qwen35.FullAttention.String())
	assert.Equal(t, "LayerKind(7)", qwen35.LayerType(7).String())
}

// cfgNextMap returns testdata/qwen3_next.json as a mutable map.
func cfgNextMap(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "qwen3_next.json"))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

// TestParseUnknownFields: a key the model type does not know is an error naming it,
// never silently dropped; inert keys and nulls pass.
func TestParseUnknownFields(t *testing.T) {
	for _, tc := range []struct {
		name string
		base func(*testing.T) map[string]any
		edit func(m map[string]any)
		want string // empty: accepted
	}{
		{"mlp_only_layers on qwen3_5", cfgGoldenMap, func(m map[string]any) { m["mlp_only_layers"] = []int{1} },
			`mlp_only_layers: unknown to model type "qwen3_5_moe_text" (the family cannot honour it)`},
		{"decoder_sparse_step on qwen3_5", cfgGoldenMap, func(m map[string]any) { m["decoder_sparse_step"] = 2 },
			`decoder_sparse_step: unknown to model type "qwen3_5_moe_text" (the family cannot honour it)`},
		{"unknown key", cfgNextMap, func(m map[string]any) { m["sliding_window_pattern"] = 4; m["zeta"] = 1 },
			`sliding_window_pattern: unknown to model type "qwen3_next" (the family cannot honour it)`},
		{"rope_scaling set", cfgNextMap, func(m map[string]any) { m["rope_scaling"] = map[string]any{"type": "yarn"} },
			`rope_scaling: unknown to model type "qwen3_next" (the family cannot honour it)`},
		{"rope_scaling null", cfgNextMap, func(m map[string]any) { m["rope_scaling"] = nil }, ""},
		{"inert keys", cfgNextMap, func(m map[string]any) {
			m["architectures"] = []string{"Qwen3NextForCausalLM"}
			m["_name_or_path"] = "x"
			m["use_sliding_window"] = false
		}, ""},
		{"gelu", cfgNextMap, func(m map[string]any) { m["hidden_act"] = "gelu" }, "hidden_act: only silu is supported, got gelu"},
		{"sliding window on", cfgNextMap, func(m map[string]any) { m["use_sliding_window"] = true },
			"use_sliding_window: only false is supported, got true"},
		{"dense layer out of range", cfgNextMap, func(m map[string]any) { m["mlp_only_layers"] = []int{4} },
			"mlp_only_layers[0]: layer 4 outside [0, 4)"},
		{"dense layer not an index", cfgNextMap, func(m map[string]any) { m["mlp_only_layers"] = []any{"1"} },
			`mlp_only_layers[0]: want a layer index, got "1"`},
		{"dense layers need a width", cfgNextMap, func(m map[string]any) { delete(m, "intermediate_size") },
			"intermediate_size: must be positive, got 0"},
		{"unknown model type", cfgNextMap, func(m map[string]any) { m["model_type"] = "qwen3_moe" },
			`model_type: unknown model type "qwen3_moe" (this package builds [qwen3_5 qwen3_5_text qwen3_5_moe qwen3_5_moe_text qwen3_next])`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.base(t)
			tc.edit(m)
			c, err := qwen35.ParseHFConfig(cfgJSON(t, m))
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			assert.Nil(t, c)
			var ce *qwen35.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.EqualError(t, err, "qwen35 config: "+tc.want)
		})
	}
}

// TestSparseRule: a layer is sparse iff the model has experts, the layer is not in
// mlp_only_layers and (i+1) % decoder_sparse_step == 0.
func TestSparseRule(t *testing.T) {
	m := cfgNextMap(t)
	m["num_hidden_layers"] = 8
	m["layer_types"] = []string{"linear_attention", "linear_attention", "linear_attention", "full_attention",
		"linear_attention", "linear_attention", "linear_attention", "full_attention"}
	m["decoder_sparse_step"] = 2
	m["mlp_only_layers"] = []int{5}
	c, err := qwen35.ParseHFConfig(cfgJSON(t, m))
	require.NoError(t, err)
	var got []bool
	for i := 0; i < 8; i++ {
		got = append(got, c.IsSparse(i))
	}
	assert.Equal(t, []bool{false, true, false, true, false, false, false, true}, got)
	assert.Equal(t, 3, c.NumSparse())
	m["num_experts"] = 0
	c, err = qwen35.ParseHFConfig(cfgJSON(t, m))
	require.NoError(t, err)
	assert.Equal(t, 0, c.NumSparse())
}

// TestMarshalHFRoundTrip: MarshalHF writes what ParseHFConfig reads back unchanged, for
// the repro's three model types and the fixtures.
func TestMarshalHFRoundTrip(t *testing.T) {
	var cfgs []*qwen35.Config
	for _, typ := range []string{"", "qwen3_5", "qwen3_next"} {
		c, err := qwen35.ReproConfig(nn.ReproOptions{ModelType: typ, Layers: 8, Interval: 4})
		require.NoError(t, err)
		cfgs = append(cfgs, c)
	}
	for _, f := range []string{"qwen3_5_moe_text.json", "qwen3_5_text.json", "qwen3_next.json"} {
		c, err := qwen35.LoadConfig(filepath.Join("testdata", f))
		require.NoError(t, err)
		cfgs = append(cfgs, c)
	}
	for _, c := range cfgs {
		raw, err := c.MarshalHF()
		require.NoError(t, err)
		back, err := qwen35.ParseHFConfig(raw)
		require.NoError(t, err, string(raw))
		assert.Equal(t, c, back, string(raw))
	}
	bad := cfgGoldenMoE()
	bad.VocabSize = 0
	_, err := bad.MarshalHF()
	assert.EqualError(t, err, "qwen35 config: vocab_size: must be positive, got 0")
}

func TestReproConfigModelTypes(t *testing.T) {
	dense, err := qwen35.ReproConfig(nn.ReproOptions{ModelType: "qwen3_5", Layers: 8, Interval: 4})
	require.NoError(t, err)
	assert.Equal(t, 0, dense.NumExperts)
	assert.Equal(t, 64, dense.IntermediateSize)
	assert.Equal(t, 0, dense.NumSparse())
	next, err := qwen35.ReproConfig(nn.ReproOptions{ModelType: "qwen3_next", Layers: 8, Interval: 4})
	require.NoError(t, err)
	assert.True(t, next.FusedGDNProjections())
	assert.Equal(t, 8, next.NumSparse())
	assert.Equal(t, 6, next.NumGDN())
	_, err = qwen35.ReproConfig(nn.ReproOptions{ModelType: "llama"})
	assert.EqualError(t, err, `qwen35 config: ModelType: the repro builds qwen3_5_moe, qwen3_5 or qwen3_next, not "llama"`)
}
