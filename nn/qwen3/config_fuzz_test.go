package qwen3

import (
	"encoding/json"
	"strings"
	"testing"
)

// maxErrorLen bounds an error message, whatever the config holds.
const maxErrorLen = 1024

// FuzzParseHFConfig checks that no config.json makes the parser panic, and that a
// config it accepts writes back (MarshalHF) to an equal Config and describes a model.
func FuzzParseHFConfig(f *testing.F) {
	base, _ := json.Marshal(baseConfig())
	f.Add(base)
	f.Add([]byte(`{"text_config":{"model_type":"qwen3","vocab_size":8,"hidden_size":4,"intermediate_size":4,"num_hidden_layers":1,"num_attention_heads":1,"head_dim":2}}`))
	f.Add([]byte(`{"rope_parameters":{"rope_theta":1e308,"rope_type":"default"},"head_dim":null,"layer_types":[1]}`))
	// Audit 3: a long model_type, key or string value is quoted short in the error.
	long := strings.Repeat("x", 4096)
	f.Add([]byte(`{"model_type":"` + long + `"}`))
	f.Add([]byte(`{"model_type":"qwen3","hidden_act":"` + long + `"}`))
	f.Add([]byte(`{"model_type":"qwen3","layer_types":["` + long + `"]}`))
	f.Add([]byte(`{"model_type":"qwen3","rope_scaling":{"rope_type":"` + long + `"}}`))
	f.Add([]byte(`{"model_type":"qwen3","vocab_size":"` + long + `"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseHFConfig(data)
		if err != nil {
			if len(err.Error()) > maxErrorLen {
				t.Fatalf("a %d-byte error message", len(err.Error()))
			}
			return
		}
		raw, err := c.MarshalHF()
		if err != nil {
			t.Fatalf("MarshalHF of an accepted config: %v", err)
		}
		back, err := ParseHFConfig(raw)
		if err != nil || *back != *c {
			t.Fatalf("round trip: %v, %+v != %+v", err, back, c)
		}
		if c.NumLayers <= 64 {
			if _, err := Describe(c); err != nil {
				t.Fatalf("Describe of an accepted config: %v", err)
			}
		}
	})
}
