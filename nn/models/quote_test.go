package models_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/models"
)

// longConfigs are configs holding one long string of n bytes: a model_type, a key or
// a string value, in an otherwise valid config of each model type (audit 3: a 50 MB
// model_type gave a 52 MB error message).
func longConfigs(t *testing.T, n int) map[string][]byte {
	long := strings.Repeat("\u00e9", n/2) // two bytes a rune
	out := map[string][]byte{
		"model_type":             []byte(`{"model_type": "` + long + `"}`),
		"text_config.model_type": []byte(`{"model_type": "qwen3_5", "text_config": {"model_type": "` + long + `"}}`),
	}
	for _, typ := range models.Types() {
		cfg, err := models.ReproConfig(nn.ReproOptions{ModelType: typ, Layers: 2})
		require.NoError(t, err)
		raw, err := cfg.JSON()
		require.NoError(t, err)
		for name, edit := range map[string]func(map[string]any){
			"hidden_act":  func(m map[string]any) { m["hidden_act"] = long },
			"layer_types": func(m map[string]any) { m["layer_types"] = []string{long, long} },
			"rope key":    func(m map[string]any) { m["rope_scaling"] = map[string]any{long: 1} },
			"rope value":  func(m map[string]any) { m["rope_scaling"] = map[string]any{"rope_type": long} },
			"hidden_size": func(m map[string]any) { m["hidden_size"] = long },
			"key":         func(m map[string]any) { m[long] = 1 },
		} {
			var m map[string]any
			require.NoError(t, json.Unmarshal(raw, &m))
			edit(m)
			b, err := json.Marshal(m)
			require.NoError(t, err)
			out[typ+" "+name] = b
		}
	}
	return out
}

// TestLongStringsQuotedShort: whatever the string, an error quotes at most a short
// prefix of it (nn.Short: 40 runes and an ellipsis).
func TestLongStringsQuotedShort(t *testing.T) {
	for name, cfg := range longConfigs(t, 1<<20) {
		_, err := models.ParseConfig(cfg)
		if err == nil {
			continue // a key or value the parser does not read
		}
		require.Less(t, len(err.Error()), 400, "%s: %.300s", name, err.Error())
	}
	_, err := models.ParseConfig(longConfigs(t, 1<<20)["model_type"])
	require.ErrorContains(t, err, `unknown model type "`+strings.Repeat("\u00e9", 40)+`..." (known: `)
}

// TestLayerLimitCited: num_hidden_layers 1e9 is refused citing the layer limit,
// 65,536, not the size limit of 16,777,216 (audit 3 item 13).
func TestLayerLimitCited(t *testing.T) {
	for _, typ := range models.Types() {
		cfg, err := models.ReproConfig(nn.ReproOptions{ModelType: typ, Layers: 2})
		require.NoError(t, err)
		raw, err := cfg.JSON()
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(raw, &m))
		m["num_hidden_layers"] = 1e9
		delete(m, "layer_types")
		raw, err = json.Marshal(m)
		require.NoError(t, err)
		_, err = models.ParseConfig(raw)
		require.ErrorContains(t, err, "num_hidden_layers", typ)
		require.ErrorContains(t, err, "65536", typ)
		require.NotContains(t, err.Error(), "16777216", typ)
	}
}
