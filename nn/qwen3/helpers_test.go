package qwen3

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/internal/golden"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/tensor"
)

// tol is the agreement required with the transformers reference: nn/qwen35's.
const tol = 1e-4

type goldenArray struct {
	Shape []int  `json:"shape"`
	DType string `json:"dtype"`
}

type goldenCase struct {
	name      string
	PromptLen int                    `json:"prompt_len"`
	NewTokens int                    `json:"new_tokens"`
	Arrays    map[string]goldenArray `json:"arrays"`
}

type goldenModel struct {
	name, dir string
	cases     []*goldenCase // sorted by name
}

// goldenModels lists the golden sets under the root whose config.json names this
// package's model type, whatever their folder names and sizes. The repository's own
// root must hold one; another root (INGOT_GOLDEN_DIR) without any skips the test.
func goldenModels(t *testing.T) []goldenModel {
	t.Helper()
	dirs, err := golden.Sets()
	require.NoError(t, err)
	var out []goldenModel
	for _, dir := range dirs {
		raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
		require.NoError(t, err)
		var top struct {
			ModelType string `json:"model_type"`
		}
		require.NoError(t, json.Unmarshal(raw, &top), dir)
		if top.ModelType != TypeQwen3 {
			continue
		}
		raw, err = os.ReadFile(filepath.Join(dir, "manifest.json"))
		require.NoError(t, err)
		var man struct {
			Cases map[string]*goldenCase `json:"cases"`
		}
		require.NoError(t, json.Unmarshal(raw, &man), dir)
		gm := goldenModel{name: filepath.Base(dir), dir: dir}
		for name, c := range man.Cases {
			c.name = name
			gm.cases = append(gm.cases, c)
		}
		sort.Slice(gm.cases, func(i, j int) bool { return gm.cases[i].name < gm.cases[j].name })
		require.NotEmpty(t, gm.cases, dir)
		out = append(out, gm)
	}
	if len(out) == 0 && os.Getenv(golden.EnvVar) != "" {
		t.Skipf("no %s golden set under %s", TypeQwen3, os.Getenv(golden.EnvVar))
	}
	require.NotEmpty(t, out, "no %s golden set", TypeQwen3)
	return out
}

// file reads the case's array "<case>_<suffix>" and checks its size against the manifest.
func (c *goldenCase) file(t *testing.T, dir, suffix string) ([]byte, []int) {
	t.Helper()
	key := c.name + "_" + suffix
	a, ok := c.Arrays[key]
	require.True(t, ok, "manifest lacks %s", key)
	ext := map[string]string{"float32": ".f32", "int64": ".i64"}[a.DType]
	require.NotEmpty(t, ext, "dtype %s of %s", a.DType, key)
	b, err := os.ReadFile(filepath.Join(dir, key+ext))
	require.NoError(t, err)
	n := 1
	for _, d := range a.Shape {
		n *= d
	}
	require.Equal(t, n*map[string]int{".f32": 4, ".i64": 8}[ext], len(b), key)
	return b, a.Shape
}

func (c *goldenCase) f32(t *testing.T, dir, suffix string) ([]float32, []int) {
	b, shape := c.file(t, dir, suffix)
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, shape
}

func (c *goldenCase) tokens(t *testing.T, dir, suffix string) []int32 {
	b, _ := c.file(t, dir, suffix)
	v := make([]int32, len(b)/8)
	for i := range v {
		v[i] = int32(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return v
}

func loadModel(t testing.TB, g *graph.Graph, dir string) *Model {
	t.Helper()
	m, err := Load(dir, g, nn.Options{})
	require.NoError(t, err)
	return m
}

// run feeds rows of equal length (a [B, S] batch) and returns the logits on the host.
func run(t testing.TB, m *Model, rows [][]int32, caches []cache.Cache) []float32 {
	t.Helper()
	s := len(rows[0])
	flat := make([]int32, 0, len(rows)*s)
	for _, r := range rows {
		require.Len(t, r, s)
		flat = append(flat, r...)
	}
	out, err := m.Forward(tensor.FromInt32(m.g, flat, len(rows), s), caches).Float32s()
	require.NoError(t, err)
	return out
}

// maxDiff is max |a - b| over equal-length slices (NaN counts as the largest).
func maxDiff(t testing.TB, a, b []float32) float64 {
	t.Helper()
	require.Equal(t, len(a), len(b))
	d := 0.0
	for i := range a {
		x := math.Abs(float64(a[i]) - float64(b[i]))
		if x > d || math.IsNaN(x) {
			d = x
		}
	}
	return d
}

// argmax returns the index of the largest value (the lowest index on ties).
func argmax(v []float32) int32 {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return int32(best)
}

// rows returns rows [lo, hi) of a flat [N, width] buffer.
func rows(v []float32, width, lo, hi int) []float32 { return slices.Clone(v[lo*width : hi*width]) }
