package metal

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

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
// books: each argument has a few bytes of its own, registered with its full size.
type stepBuilder struct {
	f        *fakeBackend
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

// decodeStep lists the big launches of one decode step of cfg at 4 bits: the
// embedding, a linear-attention layer, a full-attention layer over keys cached keys,
// the MLP or the routed and shared experts of a layer, and the head.
func decodeStep(f *fakeBackend, cfg *qwen35.Config, keys int) *stepBuilder {
	s := &stepBuilder{f: f}
	H := cfg.HiddenSize
	ids := s.arg(kernels.Int32, 1)
	V := cfg.VocabSize
	s.add("embed", kernels.KQEmbed, &kernels.QEmbedParams{T: 1, V: V, D: H, Bits: 4, Group: 64},
		ids, s.arg(kernels.UInt32, V, H/8), s.arg(kernels.BFloat16, V, H/64), s.arg(kernels.BFloat16, V, H/64),
		s.arg(kernels.Float32, 1, H))

	// Linear attention: the projections and the gated delta step.
	hk, hv, dk, dv := cfg.LinearNumKeyHeads, cfg.LinearNumValueHeads, cfg.LinearKeyHeadDim, cfg.LinearValueHeadDim
	s.qmv("gdn in_proj_qkvz", H, 2*hk*dk+2*hv*dv)
	s.qmv("gdn in_proj_ba", H, 2*hv)
	s.add("gated_delta", kernels.KGatedDelta, nil,
		s.arg(kernels.Float32, 1, 1, hk, dk), s.arg(kernels.Float32, 1, 1, hk, dk), s.arg(kernels.Float32, 1, 1, hv, dv),
		s.arg(kernels.Float32, 1, 1, hv), s.arg(kernels.Float32, 1, 1, hv), s.arg(kernels.Float32, 1, hv, dv, dk),
		s.arg(kernels.Float32, hv*dv+hv*dv*dk))
	s.qmv("gdn out_proj", hv*dv, H)

	// Full attention (q with its output gate).
	hq, hkv, d := cfg.NumHeads, cfg.NumKVHeads, cfg.HeadDim
	s.qmv("attn q_proj", H, 2*hq*d)
	s.qmv("attn k_proj", H, hkv*d)
	s.qmv("attn v_proj", H, hkv*d)
	s.add(fmt.Sprintf("sdpa %d keys", keys), kernels.KSDPA, &kernels.SDPAParams{Scale: 1 / math.Sqrt(float64(d))},
		s.arg(kernels.Float32, 1, hq, 1, d), s.arg(kernels.Float32, 1, hkv, keys, d), s.arg(kernels.Float32, 1, hkv, keys, d),
		s.arg(kernels.Float32, 1, hq, 1, d))
	s.qmv("attn o_proj", hq*d, H)

	if cfg.NumExperts == 0 {
		s.qmv("mlp gate", H, cfg.IntermediateSize)
		s.qmv("mlp up", H, cfg.IntermediateSize)
		s.qmv("mlp down", cfg.IntermediateSize, H)
	} else {
		E, k, I, is := cfg.NumExperts, cfg.NumExpertsPerTok, cfg.MoEIntermediateSize, cfg.SharedExpertIntermediateSize
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
	s.qmv("head", H, V)
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
		}
		n += b
	}
	return n
}

// TestDecodeStepFillsTheGPU records one decode step of Qwen3.5-0.8B and of a
// Qwen3-Next layer (their config.json, at 4 bits and 4,096 cached keys) and checks
// that every dispatch of a launch reading more than 1 MB has at least 64
// threadgroups. A planted launch (the old one-thread-per-row qmv geometry) must fail
// the same check, so the rule is seen to bite.
func TestDecodeStepFillsTheGPU(t *testing.T) {
	for _, name := range []string{"qwen3_5_0.8b", "qwen3_next_80b"} {
		t.Run(name, func(t *testing.T) {
			cfg, err := qwen35.LoadConfig("../cmd/decode/testdata/" + name + "/config.json")
			require.NoError(t, err)
			g := &geomBackend{fakeBackend: newFake()}
			r := newRunner(g, GPUOptions{})
			s := decodeStep(g.fakeBackend, cfg, 4096)
			big := 0
			for i := range s.launches {
				l := &s.launches[i]
				g.dispatches = nil
				require.NoError(t, r.runBatch([]kernels.Launch{*l}), s.names[i])
				require.NotEmpty(t, g.dispatches, "%s dispatched nothing", s.names[i])
				if readBytes(l) <= bigRead {
					continue
				}
				big++
				for _, d := range g.dispatches {
					require.GreaterOrEqual(t, d.groups(), minGroups,
						"%s reads %d bytes in a dispatch of %d threadgroups %v x %v",
						s.names[i], readBytes(l), d.groups(), d.size, d.group)
				}
			}
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
