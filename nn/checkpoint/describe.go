package checkpoint

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// DescribeStorage names how the named tensors (those a model reads; duplicates count
// once) are stored: "float (bfloat16)", or the quantization, e.g. "4-bit g32 affine,
// routers 8-bit g64, 4 modules float".
func (ck *Checkpoint) DescribeStorage(names []string) string {
	used := slices.Compact(slices.Sorted(slices.Values(names)))
	var quantized []string
	floats := map[string]int{}
	floatModules := 0
	for _, name := range used {
		if module, ok := strings.CutSuffix(name, ".scales"); ok && ck.Quantized(module) {
			quantized = append(quantized, module)
			continue
		}
		module, isWeight := strings.CutSuffix(name, ".weight")
		if isWeight && ck.Quantized(module) {
			continue // the packed codes
		}
		t, _, _ := ck.Info(name)
		if d := dtypeName(t.DType); d != "" {
			floats[d]++
			// A matrix that is neither a norm nor the convolution: a module left in float.
			if isWeight && len(t.Shape) >= 2 && !strings.Contains(name, "norm") && !strings.Contains(name, "conv1d") {
				floatModules++
			}
		}
	}
	if len(quantized) == 0 {
		kinds := make([]string, 0, len(floats))
		for d := range floats {
			kinds = append(kinds, d)
		}
		// Most common first: the checkpoint's dtype, then any odd ones out.
		sort.Slice(kinds, func(i, j int) bool {
			if floats[kinds[i]] != floats[kinds[j]] {
				return floats[kinds[i]] > floats[kinds[j]]
			}
			return kinds[i] < kinds[j]
		})
		return "float (" + strings.Join(kinds, ", ") + ")"
	}
	def := ck.Quant.Default
	s := fmt.Sprintf("%d-bit g%d affine", def.Bits, def.GroupSize)
	routers, others := map[QuantSpec]int{}, map[QuantSpec]int{}
	for _, m := range quantized {
		spec, _ := ck.Quant.For(m)
		switch {
		case spec == def:
		case strings.HasSuffix(m, "mlp.gate") || strings.HasSuffix(m, "mlp.shared_expert_gate"):
			routers[spec]++
		default:
			others[spec]++
		}
	}
	spec := func(q QuantSpec) string {
		if q.GroupSize == def.GroupSize {
			return fmt.Sprintf("%d-bit", q.Bits)
		}
		return fmt.Sprintf("%d-bit g%d", q.Bits, q.GroupSize)
	}
	for _, q := range sortedSpecs(routers) {
		s += ", routers " + spec(q)
	}
	for _, q := range sortedSpecs(others) {
		s += fmt.Sprintf(", %d modules %s", others[q], spec(q))
	}
	if floatModules > 0 {
		s += fmt.Sprintf(", %d modules float", floatModules)
	}
	return s
}

func sortedSpecs(m map[QuantSpec]int) []QuantSpec {
	out := make([]QuantSpec, 0, len(m))
	for q := range m {
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Bits != out[j].Bits {
			return out[i].Bits < out[j].Bits
		}
		return out[i].GroupSize < out[j].GroupSize
	})
	return out
}

// dtypeName is a float dtype's name as MLX prints it ("" for other dtypes).
func dtypeName(d DType) string {
	return map[DType]string{F32: "float32", F16: "float16", BF16: "bfloat16"}[d]
}
