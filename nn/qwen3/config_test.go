package qwen3

import (
	"encoding/json"
	"errors"
	"maps"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/nn"
)

// baseConfig is a valid flat config.json as a map, for tests to modify.
func baseConfig() map[string]any {
	return map[string]any{
		"model_type": "qwen3", "vocab_size": 128, "hidden_size": 64, "intermediate_size": 96,
		"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
	}
}

func parseMap(t *testing.T, m map[string]any) (*Config, error) {
	t.Helper()
	raw, err := json.Marshal(m)
	require.NoError(t, err)
	return ParseHFConfig(raw)
}

func TestParseDefaultsAndNesting(t *testing.T) {
	c, err := parseMap(t, baseConfig())
	require.NoError(t, err)
	require.Equal(t, &Config{ModelType: "qwen3", VocabSize: 128, HiddenSize: 64, IntermediateSize: 96, NumLayers: 2,
		NumHeads: 4, NumKVHeads: 2, HeadDim: 32, RMSNormEps: 1e-6, RopeTheta: 10000}, c)

	m := baseConfig()
	delete(m, "num_key_value_heads")
	delete(m, "head_dim")
	m["rope_theta"] = 5e5
	m["tie_word_embeddings"] = true
	c, err = parseMap(t, m)
	require.NoError(t, err)
	require.Equal(t, 4, c.NumKVHeads, "num_key_value_heads defaults to num_attention_heads")
	require.Equal(t, 128, c.HeadDim, "transformers' Qwen3Config default")
	require.Equal(t, 5e5, c.RopeTheta)
	require.True(t, c.TieWordEmbeddings)

	// text_config's keys win over the top level's; rope_parameters over rope_theta.
	nested := map[string]any{"model_type": "x", "hidden_size": 1, "text_config": baseConfig(),
		"rope_theta": 1.0, "rope_parameters": map[string]any{"rope_type": "default", "rope_theta": 1e6}}
	c, err = parseMap(t, nested)
	require.NoError(t, err)
	require.Equal(t, 64, c.HiddenSize)
	require.Equal(t, 1e6, c.RopeTheta)

	// MarshalHF reads back to an equal Config.
	raw, err := c.MarshalHF()
	require.NoError(t, err)
	back, err := ParseHFConfig(raw)
	require.NoError(t, err)
	require.Equal(t, c, back)
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		set  map[string]any
		drop string
		want string
	}{
		{drop: "vocab_size", want: "qwen3 config: vocab_size: missing"},
		{set: map[string]any{"hidden_size": 64.5}, want: "qwen3 config: hidden_size: want an integer, got 64.5"},
		{set: map[string]any{"hidden_size": "64"}, want: `qwen3 config: hidden_size: want a number, got "64"`},
		{set: map[string]any{"num_hidden_layers": 0}, want: "qwen3 config: num_hidden_layers: must be in [1, 65536], got 0"},
		{set: map[string]any{"num_key_value_heads": 3}, want: "qwen3 config: num_key_value_heads: must divide num_attention_heads=4, got 3"},
		{set: map[string]any{"head_dim": 15}, want: "qwen3 config: head_dim: must be even (rotary pairs), got 15"},
		{set: map[string]any{"rms_norm_eps": -1}, want: "qwen3 config: rms_norm_eps: must be a finite number > 0, got -1"},
		{set: map[string]any{"model_type": "llama"}, want: `qwen3 config: model_type: this package builds "qwen3", not "llama"`},
		{set: map[string]any{"use_sliding_window": true}, want: "qwen3 config: use_sliding_window: sliding-window attention is not built"},
		{set: map[string]any{"hidden_act": "gelu"}, want: `qwen3 config: hidden_act: only silu is built, got "gelu"`},
		{set: map[string]any{"rope_scaling": map[string]any{"rope_type": "yarn"}}, want: `qwen3 config: rope_scaling.rope_type: only the default rope is built, got "yarn"`},
		{set: map[string]any{"layer_types": []string{"full_attention", "linear_attention"}}, want: `qwen3 config: layer_types[1]: a Qwen3 layer is "full_attention", got "linear_attention"`},
		{set: map[string]any{"layer_types": []string{"full_attention"}}, want: "qwen3 config: layer_types: has 1 entries for num_hidden_layers=2"},
		{set: map[string]any{"tie_word_embeddings": "yes"}, want: `qwen3 config: tie_word_embeddings: want true or false, got "yes"`},
	} {
		m := baseConfig()
		delete(m, tc.drop)
		maps.Copy(m, tc.set)
		_, err := parseMap(t, m)
		require.EqualError(t, err, tc.want)
		var ce *ConfigError
		require.True(t, errors.As(err, &ce), tc.want)
		require.ErrorIs(t, err, ErrConfig)
	}
	_, err := ParseHFConfig([]byte(`[1]`))
	require.ErrorIs(t, err, ErrConfig)
}

func TestReproConfig(t *testing.T) {
	c, err := ReproConfig(nn.ReproOptions{})
	require.NoError(t, err)
	require.Equal(t, &Config{ModelType: "qwen3", VocabSize: 128, HiddenSize: 64, IntermediateSize: 64, NumLayers: 50,
		NumHeads: 4, NumKVHeads: 2, HeadDim: 16, RMSNormEps: 1e-6, RopeTheta: 10000}, c)
	c, err = ReproConfig(nn.ReproOptions{ModelType: "qwen3", Layers: 3, Hidden: 32, Experts: 8, Interval: 2, AttentionOnly: true})
	require.NoError(t, err)
	require.Equal(t, 3, c.NumLayers)
	require.Equal(t, 32, c.HiddenSize)
	d, err := Describe(c)
	require.NoError(t, err)
	require.Equal(t, []nn.LayerKind{nn.Attention, nn.Attention, nn.Attention}, d.Kinds)
	require.Zero(t, d.Experts)
	require.Equal(t, 3*11+3, len(d.Params), "11 per layer, the embedding, the final norm and lm_head")

	_, err = ReproConfig(nn.ReproOptions{ModelType: "qwen3_5"})
	require.EqualError(t, err, `qwen3 config: ModelType: this package builds "qwen3", not "qwen3_5"`)
	_, err = ReproConfig(nn.ReproOptions{Layers: -1})
	require.EqualError(t, err, "qwen3 config: Layers: must not be negative, got -1")
}
