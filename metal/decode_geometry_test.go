package metal

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/nn/qwen35"
)

// The launch geometry of one decode step at the real models' sizes, recorded on the
// recording backend: the Encode functions run as GPU.Run runs them, against buffers
// that exist only in the recorder's books (no weights are made). A launch that reads
// more than 1 MB must spread over at least 64 threadgroups: an M-series Max has 32 to
// 40 GPU cores, an H200 132 SMs, and fewer groups leave most of them idle (issue 21).

// bigRead and minGroups are the rule's figures.
const (
	bigRead   = 1_000_000
	minGroups = 64
)

// geomBackend is the recorder, keeping each dispatch's geometry.
type geomBackend struct {
	*fakeBackend
	dispatches []geomDispatch
}

type geomDispatch struct {
	kind        dispatchKind
	size, group [3]int
}

func (g *geomBackend) dispatch(kind dispatchKind, size, group [3]int) {
	g.dispatches = append(g.dispatches, geomDispatch{kind, size, group})
	g.fakeBackend.dispatch(kind, size, group)
}

// groups is the number of threadgroups of a dispatch.
func (d geomDispatch) groups() int {
	n := 1
	for i := range 3 {
		if d.kind == dispatchThreads {
			n *= (d.size[i] + d.group[i] - 1) / d.group[i]
		} else {
			n *= d.size[i]
		}
	}
	return n
}

// stepBuilder makes the launches of a decode step over buffers of the recorder's
// books: each argument has a few bytes of its own, registered with its full size. bits
// is the weights' (4, or 0 for float32); gpu makes the fused-block choice the model's
// build makes on the GPU (graph.TakesFused).
type stepBuilder struct {
	f        *fakeBackend
	bits     int
	gpu      *GPU
	launches []kernels.Launch
	names    []string
}

func (s *stepBuilder) arg(dt kernels.DType, shape ...int) kernels.Arg {
	a := kernels.Arg{Layout: kernels.Contiguous(dt, shape...), Data: make([]byte, 8)}
	s.f.bufs[&a.Data[0]] = &fakeBuf{id: len(s.f.bufs) + 1, n: a.Size() * dt.Size()}
	return a
}

func (s *stepBuilder) add(name string, k *kernels.Kernel, p any, args ...kernels.Arg) {
	l := kernels.Launch{Kernel: k, Params: p, NArgs: len(args)}
	copy(l.Args[:], args)
	s.launches = append(s.launches, l)
	s.names = append(s.names, name)
}

// qmv is a 4-bit, group-64 projection in -> out of one token (bfloat16 scales, as
// mlx-lm's checkpoints).
func (s *stepBuilder) qmv(name string, in, out int) {
	s.add(fmt.Sprintf("%s %d->%d", name, in, out), kernels.KQMV,
		&kernels.QuantParams{M: 1, N: out, K: in, Bits: 4, Group: 64},
		s.arg(kernels.Float32, 1, in), s.arg(kernels.UInt32, out, in/8),
		s.arg(kernels.BFloat16, out, in/64), s.arg(kernels.BFloat16, out, in/64), s.arg(kernels.Float32, 1, out))
}

// linear is a float32 projection in -> out of one token.
func (s *stepBuilder) linear(name string, in, out int) {
	s.add(fmt.Sprintf("%s %d->%d", name, in, out), kernels.KLinear, &kernels.MatmulParams{Batch: 1, M: 1, N: out, K: in},
		s.arg(kernels.Float32, 1, in), s.arg(kernels.Float32, out, in), s.arg(kernels.Float32, 1, out))
}

// proj is a projection at the step's weight format.
func (s *stepBuilder) proj(name string, in, out int) {
	if s.bits == 0 {
		s.linear(name, in, out)
		return
	}
	s.qmv(name, in, out)
}

// takes reports whether the model's build gives the step fused block k at p's sizes:
// float32 weights and the GPU's choice (graph.TakesFused).
func (s *stepBuilder) takes(k *kernels.Kernel, p any) bool {
	return s.bits == 0 && graph.TakesFused(s.gpu, k, p)
}

// f32 makes float32 arguments of the given shapes.
func (s *stepBuilder) f32(shapes ...[]int) []kernels.Arg {
	var out []kernels.Arg
	for _, sh := range shapes {
		out = append(out, s.arg(kernels.Float32, sh...))
	}
	return out
}

// decodeStep lists the big launches of one decode step of cfg with weights of bits
// (4, or 0 for float32): the embedding, a linear-attention layer, a full-attention
// layer over keys cached keys, the MLP or the routed and shared experts of a layer,
// and the head. With float32 weights a block is one fused kernel where the GPU takes
// it (GPU.TakesFused), as the model builds it.
func decodeStep(f *fakeBackend, cfg *qwen35.Config, keys, bits int) *stepBuilder {
	s := &stepBuilder{f: f, bits: bits, gpu: new(GPU)}
	H := cfg.HiddenSize
	ids := s.arg(kernels.Int32, 1)
	V := cfg.VocabSize
	if bits == 0 {
		s.add("embed", kernels.KTake, &kernels.TakeParams{Outer: 1, Axis: V, Inner: H, NIdx: 1},
			s.arg(kernels.Float32, V, H), ids, s.arg(kernels.Float32, 1, H))
	} else {
		s.add("embed", kernels.KQEmbed, &kernels.QEmbedParams{T: 1, V: V, D: H, Bits: bits, Group: 64},
			ids, s.arg(kernels.UInt32, V, H/8), s.arg(kernels.BFloat16, V, H/64), s.arg(kernels.BFloat16, V, H/64),
			s.arg(kernels.Float32, 1, H))
	}

	// Linear attention: the projections and the gated delta step, or the fused pair.
	hk, hv, dk, dv := cfg.LinearNumKeyHeads, cfg.LinearNumValueHeads, cfg.LinearKeyHeadDim, cfg.LinearValueHeadDim
	K, C, vd := cfg.LinearConvKernel, 2*hk*dk+hv*dv, hv*dv
	gp := &kernels.GDNBlockParams{B: 1, H: H, Hk: hk, Hv: hv, Dk: dk, Dv: dv, K: K, Grouped: cfg.ModelType == qwen35.TypeQwen3Next}
	if s.takes(kernels.KGDNBlock, gp) {
		s.add("gdn_conv_step", kernels.KGDNConvStep, gp,
			s.f32([]int{1, H}, []int{H}, []int{C + vd, H}, []int{1, K - 1, C}, []int{1, K, C})...)
		s.add("gdn_block", kernels.KGDNBlock, gp, s.f32([]int{1, H}, []int{H}, []int{1, K, C}, []int{C, K},
			[]int{C + vd, H}, []int{2 * hv, H}, []int{2 * hv, H}, []int{hv}, []int{hv}, []int{1, hv, dv, dk},
			[]int{dv}, []int{H, vd}, []int{H + hv*dv*dk})...)
	} else {
		s.proj("gdn in_proj_qkvz", H, 2*hk*dk+2*hv*dv)
		s.proj("gdn in_proj_ba", H, 2*hv)
		s.add("gated_delta", kernels.KGatedDelta, nil,
			s.arg(kernels.Float32, 1, 1, hk, dk), s.arg(kernels.Float32, 1, 1, hk, dk), s.arg(kernels.Float32, 1, 1, hv, dv),
			s.arg(kernels.Float32, 1, 1, hv), s.arg(kernels.Float32, 1, 1, hv), s.arg(kernels.Float32, 1, hv, dv, dk),
			s.arg(kernels.Float32, hv*dv+hv*dv*dk))
		s.proj("gdn out_proj", hv*dv, H)
	}

	// Full attention (q with its output gate).
	hq, hkv, d := cfg.NumHeads, cfg.NumKVHeads, cfg.HeadDim
	s.proj("attn q_proj", H, 2*hq*d)
	s.proj("attn k_proj", H, hkv*d)
	s.proj("attn v_proj", H, hkv*d)
	s.add(fmt.Sprintf("sdpa %d keys", keys), kernels.KSDPA, &kernels.SDPAParams{Scale: 1 / math.Sqrt(float64(d))},
		s.arg(kernels.Float32, 1, hq, 1, d), s.arg(kernels.Float32, 1, hkv, keys, d), s.arg(kernels.Float32, 1, hkv, keys, d),
		s.arg(kernels.Float32, 1, hq, 1, d))
	s.proj("attn o_proj", hq*d, H)

	I := cfg.IntermediateSize
	E, k, is := cfg.NumExperts, cfg.NumExpertsPerTok, cfg.SharedExpertIntermediateSize
	mlp := &kernels.MLPBlockParams{T: 1, H: H, I: I}
	moe := &kernels.MoEBlockParams{T: 1, H: H, E: E, K: k, I: cfg.MoEIntermediateSize, Is: is}
	switch {
	case E == 0 && s.takes(kernels.KMLPBlock, mlp):
		s.add("mlp_block", kernels.KMLPBlock, mlp,
			s.f32([]int{1, H}, []int{1, H}, []int{H}, []int{I, H}, []int{I, H}, []int{H, I}, []int{1, H})...)
	case E == 0:
		s.proj("mlp gate", H, I)
		s.proj("mlp up", H, I)
		s.proj("mlp down", I, H)
	case s.takes(kernels.KMoEBlock, moe):
		I := moe.I
		s.add("moe_block", kernels.KMoEBlock, moe, s.f32([]int{1, H}, []int{1, H}, []int{H}, []int{E, H},
			[]int{E, I, H}, []int{E, I, H}, []int{E, H, I}, []int{is, H}, []int{is, H}, []int{H, is}, []int{1, H},
			[]int{1, H})...)
	case s.bits == 0:
		I := cfg.MoEIntermediateSize
		s.linear("router", H, E)
		s.add("switch_glu", kernels.KSwitchGLU, &kernels.SwitchGLUParams{T: 1, H: H, K: k, E: E, I: I},
			append(s.f32([]int{1, H}, []int{E, I, H}, []int{E, I, H}, []int{E, H, I}),
				s.arg(kernels.Int32, 1, k), s.arg(kernels.Float32, 1, k), s.arg(kernels.Float32, 1, H))...)
		s.linear("shared gate", H, is)
		s.linear("shared up", H, is)
		s.linear("shared down", is, H)
	default:
		I := cfg.MoEIntermediateSize
		s.qmv("router", H, E)
		q := func(rows, cols int) []kernels.Arg {
			return []kernels.Arg{s.arg(kernels.UInt32, rows, cols/8), s.arg(kernels.BFloat16, rows, cols/64),
				s.arg(kernels.BFloat16, rows, cols/64)}
		}
		args := []kernels.Arg{s.arg(kernels.Float32, 1, H)}
		args = append(args, q(E*I, H)...)
		args = append(args, q(E*I, H)...)
		args = append(args, q(E*H, I)...)
		args = append(args, s.arg(kernels.Int32, 1, k), s.arg(kernels.Float32, 1, k), s.arg(kernels.Float32, 1, H))
		s.add("qswitch_glu", kernels.KQSwitchGLU, &kernels.QSwitchGLUParams{T: 1, H: H, K: k, E: E, I: I,
			GateBits: 4, UpBits: 4, DownBits: 4, GateGroup: 64, UpGroup: 64, DownGroup: 64}, args...)
		s.qmv("shared gate", H, is)
		s.qmv("shared up", H, is)
		s.qmv("shared down", is, H)
	}
	s.proj("head", H, V)
	return s
}

// readBytes is what a launch reads: every argument but the output, whole, except the
// tables a gather kernel reads a few rows of: qembed reads T of V rows, qswitch_glu the
// k routed of E experts.
func readBytes(l *kernels.Launch) int {
	n := 0
	for i := 0; i < l.NArgs-1; i++ {
		b := l.Args[i].Size() * l.Args[i].DType.Size()
		switch p := l.Params.(type) {
		case *kernels.QEmbedParams:
			if i >= 1 && i <= 3 {
				b = b / p.V * p.T
			}
		case *kernels.QSwitchGLUParams:
			if i >= 1 && i <= 9 {
				b = b / p.E * min(p.E, p.T*p.K)
			}
		case *kernels.SwitchGLUParams:
			if i >= 1 && i <= 3 {
				b = b / p.E * min(p.E, p.T*p.K)
			}
		case *kernels.MoEBlockParams:
			if i >= 4 && i <= 6 {
				b = b / p.E * min(p.E, p.T*p.K)
			}
		case *kernels.TakeParams:
			if i == 0 {
				b = b / p.Axis * p.NIdx
			}
		}
		n += b
	}
	return n
}

// launchGeom is one recorded launch of a step: its name, kernel, the bytes it reads
// and its dispatches.
type launchGeom struct {
	name       string
	kernel     string
	bytes      int
	dispatches []geomDispatch
}

// threads is the launch's threads over all its dispatches.
func (l *launchGeom) threads() int {
	n := 0
	for _, d := range l.dispatches {
		n += d.groups() * d.group[0] * d.group[1] * d.group[2]
	}
	return n
}

// recordStep runs decodeStep's launches one by one through GPU.Run's code on the
// recorder and returns each launch's geometry.
func recordStep(t *testing.T, cfg *qwen35.Config, keys, bits int) []launchGeom {
	return record(t, func(f *fakeBackend) *stepBuilder { return decodeStep(f, cfg, keys, bits) })
}

// record runs the launches build makes one by one through GPU.Run's code on the
// recorder and returns each launch's geometry.
func record(t *testing.T, build func(*fakeBackend) *stepBuilder) []launchGeom {
	g := &geomBackend{fakeBackend: newFake()}
	r := newRunner(g, GPUOptions{})
	s := build(g.fakeBackend)
	var out []launchGeom
	for i := range s.launches {
		l := &s.launches[i]
		g.dispatches = nil
		require.NoError(t, r.runBatch([]kernels.Launch{*l}), s.names[i])
		require.NotEmpty(t, g.dispatches, "%s dispatched nothing", s.names[i])
		out = append(out, launchGeom{s.names[i], l.Kernel.Name, readBytes(l), g.dispatches})
	}
	return out
}

// format names a weight format: "4-bit", or "float32" for bits 0.
func format(bits int) string {
	if bits == 0 {
		return "float32"
	}
	return fmt.Sprintf("%d-bit", bits)
}

// realConfig loads a real model's config.json from cmd/decode's testdata.
func realConfig(t *testing.T, name string) *qwen35.Config {
	cfg, err := qwen35.LoadConfig("../cmd/decode/testdata/" + name + "/config.json")
	require.NoError(t, err)
	return cfg
}

// fusedBlocks are the kernels that run a whole block in one threadgroup per row.
var fusedBlocks = map[string]bool{"moe_block": true, "mlp_block": true, "gdn_block": true, "gdn_conv_step": true}

// TestDecodeStepFillsTheGPU records one decode step of Qwen3.5-0.8B and of a
// Qwen3-Next layer (their config.json, at 4,096 cached keys, with 4-bit and with
// float32 weights) and checks that every dispatch of a launch reading more than 1 MB
// has at least 64 threadgroups, and that no fused block runs at these sizes (the GPU
// takes the unfused kernels: GPU.TakesFused). No launch breaks the rule (float32
// switch_glu, once one threadgroup per token, 17 ms at Qwen3-Next's size on the H200,
// now splits its rows among threadgroups as qswitch_glu does).
func TestDecodeStepFillsTheGPU(t *testing.T) {
	for _, c := range []struct {
		name   string
		bits   int
		breaks []string
	}{
		{"qwen3_5_0.8b", 4, nil},
		{"qwen3_next_80b", 4, nil},
		{"qwen3_5_0.8b", 0, nil},
		{"qwen3_next_80b", 0, nil},
	} {
		t.Run(c.name+"/"+format(c.bits), func(t *testing.T) {
			big := 0
			var breaks []string
			for _, l := range recordStep(t, realConfig(t, c.name), 4096, c.bits) {
				require.False(t, fusedBlocks[l.kernel], "%s: a fused block at a real size", l.name)
				if l.bytes <= bigRead {
					continue
				}
				big++
				for _, d := range l.dispatches {
					if d.groups() < minGroups {
						t.Logf("%s reads %d bytes in a dispatch of %d threadgroups %v x %v",
							l.name, l.bytes, d.groups(), d.size, d.group)
						breaks = append(breaks, l.name)
						break
					}
				}
			}
			require.Equal(t, c.breaks, breaks, "launches reading over 1 MB in fewer than %d threadgroups", minGroups)
			// The projections, the experts, attention and the head are the big ones.
			require.GreaterOrEqual(t, big, 8, "launches reading over 1 MB")
		})
	}
}

// TestDecodeStepCheckBites: the rule fails a launch that reads 4 MB in 16 threadgroups.
func TestDecodeStepCheckBites(t *testing.T) {
	d := geomDispatch{kind: dispatchThreads, size: [3]int{1024, 1, 1}, group: [3]int{64, 1, 1}}
	require.Equal(t, 16, d.groups())
	require.Less(t, d.groups(), minGroups)
	d = geomDispatch{kind: dispatchThreadgroups, size: [3]int{128, 2, 1}, group: [3]int{128, 1, 1}}
	require.Equal(t, 256, d.groups())
}
