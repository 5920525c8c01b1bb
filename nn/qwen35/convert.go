package qwen35

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ingotml/ingot/nn/checkpoint"

	"github.com/ingotml/ingot/nn"
)

// zeroCentredNorms are the RMSNorm weights HF stores as w (the model uses 1 + w) and
// mlx-lm's sanitize rewrites as 1 + w. linear_attn.norm is used as stored by both.
var zeroCentredNorms = []string{".input_layernorm.weight", ".post_attention_layernorm.weight", ".q_norm.weight", ".k_norm.weight"}

func zeroCentred(rest string) bool {
	if rest == "norm.weight" {
		return true
	}
	for _, s := range zeroCentredNorms {
		if strings.HasSuffix(rest, s) {
			return true
		}
	}
	return false
}

// MLXLayout returns ck's text-model tensors as mlx-lm's sanitize leaves them before it
// quantizes: experts stacked as "<mlp>.switch_mlp.<proj>.weight" [E, out, in] (from
// save_pretrained's per-expert tensors or HF's fused gate_up_proj / down_proj),
// conv1d weights as [C, K, 1], zero-centred norms holding 1 + w (computed wider and
// rounded to the stored dtype, as MLX adds), names under "model." and "lm_head.weight".
// An MTP head and a vision tower are dropped. A checkpoint already in mlx-lm's layout
// has its text-model tensors returned unchanged. Unchanged tensors alias ck's
// mappings: write them before closing ck.
func MLXLayout(ck *checkpoint.Checkpoint) ([]checkpoint.WriteTensor, error) {
	s := newFileSource(ck)
	var out []checkpoint.WriteTensor
	// Per-expert tensors, by output name, then expert index.
	stacks := map[string]map[int]checkpoint.WriteTensor{}
	for _, name := range ck.Names() {
		rest, ok := strings.CutPrefix(name, s.body)
		target := "model." + rest
		// The head module's tensors: its weight, and its scales and biases if quantized.
		head, isHead := strings.CutPrefix(name, strings.TrimSuffix(s.head, "weight"))
		switch {
		case isHead:
			target = "lm_head." + head
		case !ok || !(strings.HasPrefix(rest, "embed_tokens.") || strings.HasPrefix(rest, "layers.") || strings.HasPrefix(rest, "norm.")):
			continue // not the text model (mtp.*, model.visual.*)
		}
		raw, info, err := ck.Bytes(name)
		if err != nil {
			return nil, fmt.Errorf("qwen35: %w", err)
		}
		t := checkpoint.WriteTensor{Name: target, DType: info.DType, Shape: slices.Clone(info.Shape), Data: raw}
		if s.mlx {
			out = append(out, t)
			continue
		}
		switch {
		case strings.HasSuffix(rest, "conv1d.weight") && len(t.Shape) == 3 && t.Shape[1] == 1:
			t.Shape = []int{t.Shape[0], t.Shape[2], 1} // the same values in the same order
		case zeroCentred(rest):
			dt, ok := checkpoint.EngineDType(info.DType)
			if !ok {
				return nil, s.Fail(name, checkpoint.ErrDTypeMismatch, "unsupported dtype %s (want F32, F16 or BF16)", info.DType)
			}
			t.Data = nn.Host{DType: dt, Shape: t.Shape, Data: raw}.Map(func(w float64) float64 { return 1 + w }).Data
		case strings.HasSuffix(rest, "experts.gate_up_proj"):
			if len(t.Shape) != 3 || t.Shape[1]%2 != 0 {
				return nil, s.Fail(name, nn.ErrShape, "shape %v, want [experts, 2 x intermediate, hidden]", t.Shape)
			}
			gate, up := splitGateUp(t)
			base := strings.TrimSuffix(target, "experts.gate_up_proj") + "switch_mlp."
			gate.Name, up.Name = base+"gate_proj.weight", base+"up_proj.weight"
			out = append(out, gate, up)
			continue
		case strings.HasSuffix(rest, "experts.down_proj"):
			t.Name = strings.TrimSuffix(target, "experts.down_proj") + "switch_mlp.down_proj.weight"
		default:
			if stack, e, ok := perExpert(target); ok {
				if stacks[stack] == nil {
					stacks[stack] = map[int]checkpoint.WriteTensor{}
				}
				stacks[stack][e] = t
				continue
			}
		}
		out = append(out, t)
	}
	names := make([]string, 0, len(stacks))
	for n := range stacks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t, err := stackExperts(n, stacks[n])
		if err != nil {
			return nil, s.Fail(n, nn.ErrShape, "%v", err)
		}
		out = append(out, t)
	}
	return out, nil
}

// perExpert recognises "<mlp>.experts.<e>.<proj>.weight" and returns the stack's name
// "<mlp>.switch_mlp.<proj>.weight" and e.
func perExpert(name string) (string, int, bool) {
	i := strings.LastIndex(name, ".experts.")
	if i < 0 {
		return "", 0, false
	}
	num, proj, ok := strings.Cut(name[i+len(".experts."):], ".")
	e, err := strconv.Atoi(num)
	if !ok || err != nil || e < 0 {
		return "", 0, false
	}
	return name[:i] + ".switch_mlp." + proj, e, true
}

// stackExperts stacks experts 0..E-1 (each [out, in], one dtype) into [E, out, in].
func stackExperts(name string, experts map[int]checkpoint.WriteTensor) (checkpoint.WriteTensor, error) {
	first, ok := experts[0]
	if !ok {
		return checkpoint.WriteTensor{}, fmt.Errorf("%d experts but no expert 0", len(experts))
	}
	t := checkpoint.WriteTensor{Name: name, DType: first.DType, Shape: append([]int{len(experts)}, first.Shape...)}
	for e := range len(experts) {
		x, ok := experts[e]
		switch {
		case !ok:
			return t, fmt.Errorf("%d experts but no expert %d", len(experts), e)
		case x.DType != first.DType || !slices.Equal(x.Shape, first.Shape) || len(first.Shape) != 2:
			return t, fmt.Errorf("expert %d is %s %v, expert 0 %s %v: want one dtype and one [out, in] shape", e, x.DType, x.Shape, first.DType, first.Shape)
		}
		t.Data = append(t.Data, x.Data...)
	}
	return t, nil
}

// splitGateUp splits HF's fused [E, 2I, H] gate_up_proj (each expert's gate rows,
// then its up rows) into the [E, I, H] gate and up stacks.
func splitGateUp(t checkpoint.WriteTensor) (gate, up checkpoint.WriteTensor) {
	e, two, h := t.Shape[0], t.Shape[1], t.Shape[2]
	half := two / 2 * h * t.DType.Size()
	gate = checkpoint.WriteTensor{DType: t.DType, Shape: []int{e, two / 2, h}, Data: make([]byte, 0, e*half)}
	up = checkpoint.WriteTensor{DType: t.DType, Shape: []int{e, two / 2, h}, Data: make([]byte, 0, e*half)}
	for x := range e {
		gate.Data = append(gate.Data, t.Data[2*x*half:(2*x+1)*half]...)
		up.Data = append(up.Data, t.Data[(2*x+1)*half:(2*x+2)*half]...)
	}
	return gate, up
}
