package qwen35

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ingotml/ingot/internal/golden"
)

// FuzzParseHFConfig checks that no config.json makes the parsers panic, that
// every failure is a *ConfigError, and that Validate and the accessors cope
// with whatever the unvalidated parser accepts.
func FuzzParseHFConfig(f *testing.F) {
	root, _ := golden.Root()
	for _, model := range []string{"qwen3_5_moe_text", "qwen3_5_text"} {
		if data, err := os.ReadFile(filepath.Join(root, model, "config.json")); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"text_config":{"hidden_size":64,"num_hidden_layers":2,"full_attention_interval":2},"model_type":"qwen3_5_moe"}`))
	f.Add([]byte(`{"num_hidden_layers":3,"layer_types":["full_attention","linear_attention"],"head_dim":null}`))
	f.Add([]byte(`{"rope_parameters":{"rope_theta":1e308,"partial_rotary_factor":-0.5},"num_experts":-3}`))
	f.Add([]byte(`{"hidden_size":1e300,"num_attention_heads":0,"num_key_value_heads":0}`))
	f.Add([]byte(`[]`))
	// Issue 24's hostile configs: a quoted size, 2^24 heads of a 2^14 hidden size, a
	// name with terminal escapes.
	f.Add([]byte(`{"model_type":"qwen3_5","hidden_size":"64","num_hidden_layers":2}`))
	f.Add([]byte(`{"model_type":"qwen3_5_moe","hidden_size":16384,"num_attention_heads":16777216,"num_key_value_heads":16777216,"num_hidden_layers":4}`))
	f.Add([]byte("{\"model_type\":\"\u001b[2J\u001b[32m[verdict] FLAT\",\"hidden_size\":64}"))
	// Audit 3: a long model_type, key or string value is quoted short in the error.
	long := strings.Repeat("x", 4096)
	f.Add([]byte(`{"model_type":"` + long + `"}`))
	f.Add([]byte(`{"model_type":"qwen3_5","` + long + `":1}`))
	f.Add([]byte(`{"model_type":"qwen3_5","hidden_act":"` + long + `"}`))
	f.Add([]byte(`{"model_type":"qwen3_5","num_hidden_layers":1,"layer_types":["` + long + `"]}`))
	f.Add([]byte(`{"model_type":"qwen3_next","hidden_size":"` + long + `"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, hf := range []bool{true, false} {
			c, err := parse(data, hf)
			if err != nil {
				cfgFuzzConfigError(t, err)
				continue
			}
			// The unvalidated result may be nonsense; nothing here may panic.
			verr := c.Validate()
			if verr != nil {
				cfgFuzzConfigError(t, verr)
			}
			_ = c.IsMoE()
			_ = c.RotaryDims()
			first, gdn := c.FirstAttention(), c.NumGDN()
			for i := -1; i <= len(c.LayerTypes); i++ {
				_ = c.IsAttention(i)
			}
			if verr == nil {
				if first < 0 || !c.IsAttention(first) || gdn >= c.NumLayers || len(c.LayerTypes) != c.NumLayers {
					t.Fatalf("valid config with inconsistent layers: first=%d gdn=%d %+v", first, gdn, c)
				}
			}
		}
	})
}

func cfgFuzzConfigError(t *testing.T, err error) {
	t.Helper()
	if len(err.Error()) > 1024 {
		t.Fatalf("a %d-byte error message", len(err.Error()))
	}
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("error is not a *ConfigError: %v", err)
	}
}
