package golden

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
)

// Array is one array of a case, as manifest.json lists it.
type Array struct {
	Shape []int  `json:"shape"`
	DType string `json:"dtype"`
}

// Case is one prompt of a set: its arrays are "<name>_<suffix>" files.
type Case struct {
	Name      string           `json:"-"`
	PromptLen int              `json:"prompt_len"`
	NewTokens int              `json:"new_tokens"`
	Arrays    map[string]Array `json:"arrays"`
}

// Set is one golden model folder and its cases, sorted by name.
type Set struct {
	Name, Dir string
	Cases     []*Case
}

// SetsOf returns the sets under Root whose config.json's model_type (text_config's
// when nested) is one of types, whatever their folder names and sizes. The
// repository's own root must hold one; another root (INGOT_GOLDEN_DIR) without any
// skips the test.
func SetsOf(t testing.TB, types ...string) []Set {
	t.Helper()
	dirs, err := Sets()
	require.NoError(t, err)
	var out []Set
	for _, dir := range dirs {
		if !slices.Contains(types, modelType(t, dir)) {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
		require.NoError(t, err)
		var man struct {
			Cases map[string]*Case `json:"cases"`
		}
		require.NoError(t, json.Unmarshal(raw, &man), dir)
		s := Set{Name: filepath.Base(dir), Dir: dir}
		for name, c := range man.Cases {
			c.Name = name
			s.Cases = append(s.Cases, c)
		}
		sort.Slice(s.Cases, func(i, j int) bool { return s.Cases[i].Name < s.Cases[j].Name })
		require.NotEmpty(t, s.Cases, dir)
		out = append(out, s)
	}
	if len(out) == 0 && os.Getenv(EnvVar) != "" {
		t.Skipf("no %v golden set under %s", types, os.Getenv(EnvVar))
	}
	require.NotEmpty(t, out, "no %v golden set", types)
	return out
}

// modelType is the set's config.json model_type, text_config's when nested.
func modelType(t testing.TB, dir string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	require.NoError(t, err)
	var top struct {
		ModelType  string `json:"model_type"`
		TextConfig *struct {
			ModelType string `json:"model_type"`
		} `json:"text_config"`
	}
	require.NoError(t, json.Unmarshal(raw, &top), dir)
	if top.TextConfig != nil && top.TextConfig.ModelType != "" {
		return top.TextConfig.ModelType
	}
	return top.ModelType
}

// file reads the case's array "<case>_<suffix>" and checks its size against the manifest.
func (c *Case) file(t testing.TB, dir, suffix string) ([]byte, []int) {
	t.Helper()
	key := c.Name + "_" + suffix
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

// F32 reads the case's float32 array "<case>_<suffix>" and its shape.
func (c *Case) F32(t testing.TB, dir, suffix string) ([]float32, []int) {
	t.Helper()
	b, shape := c.file(t, dir, suffix)
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, shape
}

// Tokens reads the case's int64 token array "<case>_<suffix>" as int32 ids.
func (c *Case) Tokens(t testing.TB, dir, suffix string) []int32 {
	t.Helper()
	b, _ := c.file(t, dir, suffix)
	v := make([]int32, len(b)/8)
	for i := range v {
		v[i] = int32(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return v
}

// MaxDiff is max |a - b| over equal-length slices (NaN counts as the largest).
func MaxDiff(t testing.TB, a, b []float32) float64 {
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

// Argmax returns the index of the largest value (the lowest index on ties).
func Argmax(v []float32) int32 {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return int32(best)
}

// Rows returns rows [lo, hi) of a flat [N, width] buffer.
func Rows(v []float32, width, lo, hi int) []float32 { return slices.Clone(v[lo*width : hi*width]) }
