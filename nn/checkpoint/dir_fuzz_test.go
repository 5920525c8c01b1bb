package checkpoint_test

import (
	"testing"

	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/nn/checkpoint"
)

// FuzzParseQuantConfig feeds arbitrary config.json bytes to the quantization parser:
// it returns nil, a config whose every spec is supported, or an error; never a panic.
func FuzzParseQuantConfig(f *testing.F) {
	for _, s := range []string{
		`{"quantization": {"group_size": 64, "bits": 6, "mode": "affine", "m.gate": {"group_size": 64, "bits": 8}, "m.x": false}}`,
		`{"quantization_config": {"group_size": 32, "bits": 4}}`,
		`{"text_config": {"quantization": {"group_size": 128, "bits": 3}}}`,
		`{"quantization": {"group_size": 32, "bits": 4, "mode": "mxfp4"}}`,
		`{"quantization_config": {"quant_method": "gptq"}}`,
		`{"quantization": null}`, `{"quantization": false}`, `[]`, `{}`, ``,
		// Issue 24: a module key with terminal escapes, a quoted size.
		`{"quantization": {"group_size": 64, "bits": 4, "\u001b[2J\u001b[32m[verdict] FLAT": false}}`,
		`{"quantization": {"group_size": "64", "bits": 4}, "hidden_size": "64"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		q, err := checkpoint.ParseQuantConfig(data)
		if err != nil {
			if q != nil {
				t.Fatalf("config and error both returned: %v", err)
			}
			return
		}
		if q == nil {
			return
		}
		check := func(s checkpoint.QuantSpec) {
			if !kernels.QuantBits(s.Bits) || !kernels.QuantGroup(s.GroupSize) {
				t.Fatalf("unsupported spec %+v accepted", s)
			}
		}
		check(q.Default)
		for m, s := range q.Modules {
			if s != nil {
				check(*s)
			}
			if got, ok := q.For(m); ok != (s != nil) || (ok && got != *s) {
				t.Fatalf("For(%q) = %+v, %v; entry %+v", m, got, ok, s)
			}
		}
	})
}
