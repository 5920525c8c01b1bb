package checkpoint_test

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/ingotml/ingot/internal/golden"
	"github.com/ingotml/ingot/nn/checkpoint"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Helpers are prefixed "st" because other files of package nn_test are
// written by other people and share this namespace.

// stTensor is one tensor for stBuild: raw little-endian bytes plus header fields.
type stTensor struct {
	name  string
	dtype checkpoint.DType
	shape []int
	data  []byte
}

// stBuild lays the tensors out back to back in the given order and returns a
// complete safetensors file.
func stBuild(t testing.TB, meta map[string]string, tensors ...stTensor) []byte {
	t.Helper()
	header := map[string]any{}
	if meta != nil {
		header["__metadata__"] = meta
	}
	var data []byte
	for _, x := range tensors {
		begin := len(data)
		data = append(data, x.data...)
		header[x.name] = map[string]any{
			"dtype": x.dtype, "shape": x.shape, "data_offsets": []int{begin, len(data)},
		}
	}
	h, err := json.Marshal(header)
	require.NoError(t, err)
	return stRaw(string(h), data)
}

// stRaw assembles a file from a literal header and data section.
func stRaw(header string, data []byte) []byte {
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	out = append(out, header...)
	return append(out, data...)
}

func stF32(v ...float32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

func stU16(v ...uint16) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint16(b, x)
	}
	return b
}

func stI32(v ...int32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, uint32(x))
	}
	return b
}

func stI64(v ...int64) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, uint64(x))
	}
	return b
}

// stWrite stores data in a temporary file and returns its path.
func stWrite(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

func TestSafetensorsRoundTrip(t *testing.T) {
	f32 := []float32{1.5, -2.25, 0, float32(math.Inf(-1)), 3.1415927, 1e-30}
	// F16 bit patterns and their exact values: 1, -2, max finite, smallest
	// subnormal (2^-24), nearest half to 1/3.
	f16Bits := []uint16{0x3C00, 0xC000, 0x7BFF, 0x0001, 0x3555}
	f16Want := []float32{1, -2, 65504, float32(math.Ldexp(1, -24)), 0.333251953125}
	// BF16 bit patterns: 1, -2, 3.140625, +Inf, smallest subnormal (2^-133).
	bf16Bits := []uint16{0x3F80, 0xC000, 0x4049, 0x7F80, 0x0001}
	bf16Want := []float32{1, -2, 3.140625, float32(math.Inf(1)), float32(math.Ldexp(1, -133))}
	i32 := []int32{-1, 0, math.MaxInt32, math.MinInt32}
	i64 := []int64{-1, 0, math.MaxInt64, math.MinInt64, 1 << 40, 7}

	file := stBuild(t, map[string]string{"format": "pt", "note": "x"},
		stTensor{"a.f32", checkpoint.F32, []int{2, 3}, stF32(f32...)},
		stTensor{"b.f16", checkpoint.F16, []int{5}, stU16(f16Bits...)},
		stTensor{"c.bf16", checkpoint.BF16, []int{5, 1}, stU16(bf16Bits...)},
		stTensor{"d.i32", checkpoint.I32, []int{2, 2}, stI32(i32...)},
		stTensor{"e.i64", checkpoint.I64, []int{3, 2}, stI64(i64...)},
		stTensor{"f.scalar", checkpoint.F32, []int{}, stF32(42)},
		stTensor{"g.empty", checkpoint.F32, []int{0, 4}, nil},
		stTensor{"h.u8", checkpoint.U8, []int{3}, []byte{1, 2, 3}},
	)
	path := stWrite(t, "round.safetensors", file)
	fromFile, err := checkpoint.ReadSafetensors(path)
	require.NoError(t, err)
	fromMem, err := checkpoint.ParseSafetensors("mem", file)
	require.NoError(t, err)

	assert.Equal(t, path, fromFile.File())
	assert.Equal(t, "mem", fromMem.File())
	for _, s := range []*checkpoint.Safetensors{fromFile, fromMem} {
		assert.Equal(t, []string{"a.f32", "b.f16", "c.bf16", "d.i32", "e.i64", "f.scalar", "g.empty", "h.u8"}, s.Names())
		assert.Equal(t, map[string]string{"format": "pt", "note": "x"}, s.Metadata())

		got, shape, err := s.Float32("a.f32")
		require.NoError(t, err)
		assert.Equal(t, f32, got)
		assert.Equal(t, []int{2, 3}, shape)

		got, shape, err = s.Float32("b.f16")
		require.NoError(t, err)
		assert.Equal(t, f16Want, got)
		assert.Equal(t, []int{5}, shape)

		got, shape, err = s.Float32("c.bf16")
		require.NoError(t, err)
		assert.Equal(t, bf16Want, got)
		assert.Equal(t, []int{5, 1}, shape)

		ints, shape, err := s.Int64("d.i32")
		require.NoError(t, err)
		assert.Equal(t, []int64{-1, 0, math.MaxInt32, math.MinInt32}, ints)
		assert.Equal(t, []int{2, 2}, shape)

		ints, shape, err = s.Int64("e.i64")
		require.NoError(t, err)
		assert.Equal(t, i64, ints)
		assert.Equal(t, []int{3, 2}, shape)

		got, shape, err = s.Float32("f.scalar")
		require.NoError(t, err)
		assert.Equal(t, []float32{42}, got)
		assert.Equal(t, []int{}, shape)

		got, shape, err = s.Float32("g.empty")
		require.NoError(t, err)
		assert.Empty(t, got)
		assert.Equal(t, []int{0, 4}, shape)

		info, ok := s.Info("e.i64")
		require.True(t, ok)
		// Offsets follow stBuild's back-to-back layout: 24+10+10+16 bytes precede it.
		assert.Equal(t, checkpoint.TensorInfo{Name: "e.i64", DType: checkpoint.I64, Shape: []int{3, 2}, Begin: 60, End: 108}, info)
		info.Shape[0] = 99 // Info hands out a copy
		again, _ := s.Info("e.i64")
		assert.Equal(t, []int{3, 2}, again.Shape)
		_, ok = s.Info("nope")
		assert.False(t, ok)
	}
}

func TestSafetensorsLookupErrors(t *testing.T) {
	file := stBuild(t, nil,
		stTensor{"w", checkpoint.F32, []int{1}, stF32(1)},
		stTensor{"ids", checkpoint.I64, []int{1}, stI64(1)},
		stTensor{"flags", checkpoint.Bool, []int{2}, []byte{0, 1}},
	)
	s, err := checkpoint.ParseSafetensors("lookup.st", file)
	require.NoError(t, err)
	assert.Empty(t, s.Metadata())

	_, _, err = s.Float32("missing")
	require.ErrorIs(t, err, checkpoint.ErrTensorNotFound)
	assert.EqualError(t, err, "safetensors lookup.st: tensor missing: tensor not found")
	_, _, err = s.Int64("missing")
	require.ErrorIs(t, err, checkpoint.ErrTensorNotFound)

	_, _, err = s.Float32("ids")
	require.ErrorIs(t, err, checkpoint.ErrDTypeMismatch)
	assert.EqualError(t, err, "safetensors lookup.st: tensor ids: I64 to float32: dtype not convertible")
	_, _, err = s.Int64("w")
	require.ErrorIs(t, err, checkpoint.ErrDTypeMismatch)
	assert.EqualError(t, err, "safetensors lookup.st: tensor w: F32 to int64: dtype not convertible")
	_, _, err = s.Float32("flags")
	require.ErrorIs(t, err, checkpoint.ErrDTypeMismatch)

	_, err = checkpoint.ReadSafetensors(filepath.Join(t.TempDir(), "absent.safetensors"))
	require.ErrorIs(t, err, os.ErrNotExist)
	assert.Contains(t, err.Error(), "absent.safetensors")
}

// TestSafetensorsAcceptsConformantLayouts: what the reference implementation accepts
// parses here too.
func TestSafetensorsAcceptsConformantLayouts(t *testing.T) {
	cases := map[string][]byte{
		// The format allows space padding of the header for alignment.
		"space padded header": stRaw(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}    `, make([]byte, 4)),
		"empty header object": stRaw(`{}`, nil),
		// Zero-byte tensors at the same offset do not overlap.
		"empty tensors share an offset": stRaw(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"b":{"dtype":"I64","shape":[3,0],"data_offsets":[0,0]}}`, nil),
		"empty tensor between two":      stRaw(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"e":{"dtype":"U8","shape":[0],"data_offsets":[1,1]},"b":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, make([]byte, 2)),
		"unknown entry fields ignored":  stRaw(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"extra":[1]}}`, make([]byte, 4)),
		"names in UTF-8":                stRaw(`{"ä.😀":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, make([]byte, 1)),
		"escaped names":                 stRaw(`{"\ud83d\ude00\u00e4\\u0041\"":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, make([]byte, 1)),
	}
	for name, file := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := checkpoint.ParseSafetensors("ok.st", file)
			require.NoError(t, err)
		})
	}
}

// stCorruption is a hostile file and the exact FormatError it must produce.
type stCorruption struct {
	name   string
	file   []byte
	tensor string
	reason string
}

// stCorruptions lists hostile inputs; the fuzz test uses them as seeds.
func stCorruptions(t testing.TB) []stCorruption {
	valid := stBuild(t, map[string]string{"format": "pt"},
		stTensor{"w", checkpoint.F32, []int{2, 2}, stF32(1, 2, 3, 4)},
		stTensor{"b", checkpoint.BF16, []int{2}, stU16(0x3F80, 0x4000)},
	)
	hugeLen := binary.LittleEndian.AppendUint64(nil, 1<<40)
	capLen := append(binary.LittleEndian.AppendUint64(nil, checkpoint.MaxHeaderSize+1), "{}"...)
	entry := func(body string) []byte { return stRaw(`{"w":`+body+`}`, make([]byte, 16)) }
	return []stCorruption{
		{"empty file", nil, "", "file too short for the 8-byte header length (0 bytes)"},
		{"short prefix", []byte{1, 0, 0}, "", "file too short for the 8-byte header length (3 bytes)"},
		{"header longer than file", append(binary.LittleEndian.AppendUint64(nil, 100), "{}"...), "",
			"header length 100 exceeds the 2 bytes after the length prefix (truncated file?)"},
		{"absurd header length", hugeLen, "", "header length 1099511627776 exceeds the 100000000-byte limit"},
		{"header length over cap", capLen, "", "header length 100000001 exceeds the 100000000-byte limit"},
		{"truncated data", valid[:len(valid)-3], "b",
			"data_offsets [16, 20] outside the 17-byte data section"},
		{"truncated header", valid[:40], "", "header length 144 exceeds the 32 bytes after the length prefix (truncated file?)"},
		{"empty header", stRaw("", nil), "", "header is not valid JSON: header ends early"},
		{"not an object", stRaw(`[1,2]`, nil), "", "header is not a JSON object"},
		{"string header", stRaw(`"x"`, nil), "", "header is not a JSON object"},
		{"broken JSON", stRaw(`{"w":`, nil), "w", "header is not valid JSON: header ends early"},
		{"missing close", stRaw(`{"w":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}`, nil), "",
			"header is not valid JSON: header ends early"},
		{"garbage after object", stRaw(`{} x`, nil), "", "unexpected bytes after the header's JSON object"},
		{"entry not object", entry(`5`), "w", "entry is not a JSON object of dtype/shape/data_offsets"},
		{"entry null", entry(`null`), "w", "missing dtype"},
		{"dtype not string", entry(`{"dtype":3,"shape":[4],"data_offsets":[0,16]}`), "w",
			"dtype is not a string"},
		{"shape not array", entry(`{"dtype":"F32","shape":"4","data_offsets":[0,16]}`), "w",
			"shape is not an array of integers"},
		{"shape element string", entry(`{"dtype":"F32","shape":["4"],"data_offsets":[0,16]}`), "w",
			"shape is not an array of integers"},
		{"fractional dim", entry(`{"dtype":"F32","shape":[2.5],"data_offsets":[0,16]}`), "w",
			"shape value 2.5 is not a 64-bit integer"},
		{"offsets not numbers", entry(`{"dtype":"F32","shape":[4],"data_offsets":[true,16]}`), "w",
			"data_offsets is not an array of integers"},
		{"missing dtype", entry(`{"shape":[4],"data_offsets":[0,16]}`), "w", "missing dtype"},
		{"missing shape", entry(`{"dtype":"F32","data_offsets":[0,16]}`), "w", "missing shape"},
		{"missing offsets", entry(`{"dtype":"F32","shape":[4]}`), "w", "missing data_offsets"},
		{"unknown dtype", entry(`{"dtype":"F128","shape":[1],"data_offsets":[0,16]}`), "w", `unknown dtype "F128"`},
		{"lowercase dtype", entry(`{"dtype":"f32","shape":[4],"data_offsets":[0,16]}`), "w", `unknown dtype "f32"`},
		{"negative dim", entry(`{"dtype":"F32","shape":[-4],"data_offsets":[0,16]}`), "w",
			"negative dimension -4 in shape [-4]"},
		{"element count overflow", entry(`{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,16]}`), "w",
			"shape [4294967296 4294967296] overflows the element count"},
		{"byte count overflow", entry(`{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,16]}`), "w",
			"shape [2305843009213693952] overflows the byte count"},
		{"nested shape", entry(`{"dtype":"F32","shape":[[4]],"data_offsets":[0,16]}`), "w", "shape is not an array of integers"},
		{"dim beyond int64", entry(`{"dtype":"F32","shape":[9223372036854775808],"data_offsets":[0,16]}`), "w",
			"shape value 9223372036854775808 is not a 64-bit integer"},
		{"rank too large", entry(`{"dtype":"F32","shape":[` + strings.Repeat("1,", checkpoint.MaxRank) + `4],"data_offsets":[0,16]}`), "w",
			"shape has more than 64 values"},
		{"three offsets", entry(`{"dtype":"F32","shape":[4],"data_offsets":[0,16,16]}`), "w", "data_offsets has more than 2 values"},
		{"one offset", entry(`{"dtype":"F32","shape":[4],"data_offsets":[0]}`), "w", "data_offsets has 1 values, want 2"},
		{"negative begin", entry(`{"dtype":"F32","shape":[4],"data_offsets":[-16,0]}`), "w", "negative begin offset -16"},
		{"end before begin", entry(`{"dtype":"F32","shape":[4],"data_offsets":[16,0]}`), "w", "end offset 0 before begin offset 16"},
		{"end past data", entry(`{"dtype":"F32","shape":[8],"data_offsets":[0,32]}`), "w",
			"data_offsets [0, 32] outside the 16-byte data section"},
		{"huge offsets", entry(`{"dtype":"U8","shape":[1],"data_offsets":[9223372036854775806,9223372036854775807]}`), "w",
			"data_offsets [9223372036854775806, 9223372036854775807] outside the 16-byte data section"},
		{"length mismatch", entry(`{"dtype":"F32","shape":[3],"data_offsets":[0,16]}`), "w",
			"data_offsets span 16 bytes, but F32 shape [3] needs 12"},
		{"overlap", stRaw(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, make([]byte, 12)),
			"b", "data_offsets [4, 12] overlap tensor a [0, 8]"},
		{"identical ranges", stRaw(`{"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}}`, make([]byte, 4)),
			"b", "data_offsets [0, 4] overlap tensor a [0, 4]"},
		{"duplicate name", stRaw(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, make([]byte, 2)),
			"a", "duplicate tensor name"},
		{"metadata not object", stRaw(`{"__metadata__":[1]}`, nil), "", "__metadata__ is not a JSON object"},
		{"metadata null", stRaw(`{"__metadata__":null}`, nil), "", "__metadata__ is not a JSON object"},
		{"metadata value number", stRaw(`{"__metadata__":{"format":1}}`, nil), "", `__metadata__ value for key "format" is not a string`},
		{"metadata value null", stRaw(`{"__metadata__":{"format":null}}`, nil), "", `__metadata__ value for key "format" is not a string`},
		{"duplicate metadata", stRaw(`{"__metadata__":{},"__metadata__":{}}`, nil), "", "duplicate __metadata__ entry"},
		// The reference's layout rules: UTF-8 header starting with '{', tensors back to
		// back from offset 0 to the end of the file.
		{"name not UTF-8", stRaw("{\"w\xff\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", make([]byte, 1)), "",
			"header is not valid UTF-8 (at byte 3)"},
		{"leading space", stRaw(` {}`, nil), "", "header is not a JSON object"},
		{"lone surrogate in a name", stRaw(`{"w\ud800":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, make([]byte, 1)), "",
			`header is not valid UTF-8 (the \u escape at byte 3 is half a surrogate pair)`},
		{"lone low surrogate", stRaw(`{"__metadata__":{"k":"\\\udc00"}}`, nil), "",
			`header is not valid UTF-8 (the \u escape at byte 24 is half a surrogate pair)`},
		{"gap between tensors", stRaw(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"U8","shape":[2],"data_offsets":[3,5]}}`, make([]byte, 5)),
			"b", "data_offsets [3, 5] leave bytes [1, 3] after tensor a unused (tensors must be contiguous)"},
		{"gap at the start", stRaw(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[4,5]}}`, make([]byte, 5)),
			"a", "data_offsets [4, 5] leave bytes [0, 4] after the start of the data section unused (tensors must be contiguous)"},
		{"trailing bytes", stRaw(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, make([]byte, 9)), "",
			"7 bytes after the last tensor's data (tensors end at 2 of the 9-byte data section)"},
		{"bytes but no tensor", stRaw(`{}`, make([]byte, 3)), "",
			"3 bytes after the last tensor's data (tensors end at 0 of the 3-byte data section)"},
		{"empty tensor inside another", stRaw(`{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"e":{"dtype":"U8","shape":[0],"data_offsets":[2,2]}}`, make([]byte, 4)),
			"e", "data_offsets [2, 2] overlap tensor a [0, 4]"},
	}
}

func TestSafetensorsCorruptions(t *testing.T) {
	for _, c := range stCorruptions(t) {
		t.Run(c.name, func(t *testing.T) {
			path := stWrite(t, "bad.safetensors", c.file)
			for file, parse := range map[string]func() (*checkpoint.Safetensors, error){
				"mem.st": func() (*checkpoint.Safetensors, error) { return checkpoint.ParseSafetensors("mem.st", c.file) },
				path:     func() (*checkpoint.Safetensors, error) { return checkpoint.ReadSafetensors(path) },
			} {
				s, err := parse()
				require.Error(t, err)
				assert.Nil(t, s)
				var fe *checkpoint.FormatError
				require.ErrorAs(t, err, &fe, "error %v", err)
				assert.Equal(t, checkpoint.FormatError{File: file, Tensor: c.tensor, Reason: c.reason}, *fe)
				want := "safetensors " + file + ": " + c.reason
				if c.tensor != "" {
					want = "safetensors " + file + ": tensor " + c.tensor + ": " + c.reason
				}
				assert.EqualError(t, err, want)
			}
		})
	}
}

// stGoldenDir returns the golden-data root: $INGOT_GOLDEN_DIR, else
// the repository's testdata/golden.
func stGoldenDir(t *testing.T) string {
	t.Helper()
	dir, err := golden.Root()
	require.NoError(t, err)
	return dir
}

// stGoldenSets maps each golden set's folder name to its path (see golden.Sets).
func stGoldenSets(t *testing.T) map[string]string {
	t.Helper()
	dirs, err := golden.Sets()
	require.NoError(t, err)
	sets := map[string]string{}
	for _, dir := range dirs {
		sets[filepath.Base(dir)] = dir
	}
	return sets
}

func TestSafetensorsGolden(t *testing.T) {
	for set, dir := range stGoldenSets(t) {
		t.Run(set, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
			require.NoError(t, err)
			var manifest struct {
				StateDict map[string][]int `json:"state_dict"`
			}
			require.NoError(t, json.Unmarshal(raw, &manifest))
			require.NotEmpty(t, manifest.StateDict)

			s, err := checkpoint.ReadSafetensors(filepath.Join(dir, "model.safetensors"))
			require.NoError(t, err)
			defer s.Close()
			want := make([]string, 0, len(manifest.StateDict))
			for name := range manifest.StateDict {
				want = append(want, name)
			}
			sort.Strings(want)
			require.Equal(t, want, s.Names())
			for name, shape := range manifest.StateDict {
				info, ok := s.Info(name)
				require.True(t, ok, name)
				assert.Equal(t, shape, info.Shape, name)
				assert.Equal(t, checkpoint.F32, info.DType, name)
				vals, got, err := s.Float32(name)
				require.NoError(t, err, name)
				assert.Equal(t, shape, got, name)
				assert.Len(t, vals, info.NumElements(), name)
			}
			assert.Equal(t, map[string]string{"format": "pt"}, s.Metadata())
		})
	}
}

// TestSafetensorsGoldenExpertsMatchSavePretrained checks tensor contents, not
// just shapes: HF's save_pretrained file stores every MoE expert separately,
// and its bytes must equal the matching slices of the fused runtime tensors.
// Layers, experts and widths come from the files, so any set of the format works.
func TestSafetensorsGoldenExpertsMatchSavePretrained(t *testing.T) {
	for set, dir := range stGoldenSets(t) {
		t.Run(set, func(t *testing.T) {
			fused, err := checkpoint.ReadSafetensors(filepath.Join(dir, "model.safetensors"))
			require.NoError(t, err)
			defer fused.Close()
			split, err := checkpoint.ReadSafetensors(filepath.Join(dir, "hf_save_pretrained", "model.safetensors"))
			require.NoError(t, err)
			defer split.Close()
			load := func(s *checkpoint.Safetensors, name string) ([]float32, []int) {
				v, shape, err := s.Float32(name)
				require.NoError(t, err, name)
				return v, shape
			}
			// Every tensor of the split file is either stored unchanged by both
			// writers (and must agree exactly) or one expert of a fused tensor.
			perExpert := 0
			for _, name := range fused.Names() {
				p, ok := strings.CutSuffix(name, "experts.gate_up_proj")
				if !ok {
					if _, both := split.Info(name); both {
						a, _ := load(fused, name)
						b, _ := load(split, name)
						require.Equal(t, a, b, name)
					}
					continue
				}
				gateUp, gs := load(fused, name)
				down, ds := load(fused, p+"experts.down_proj")
				require.Len(t, gs, 3, name)
				experts, width, hidden := gs[0], gs[1]/2, gs[2]
				require.Equal(t, []int{experts, 2 * width, hidden}, gs, name)
				require.Equal(t, []int{experts, hidden, width}, ds, p+"experts.down_proj")
				for e := 0; e < experts; e++ {
					q := p + "experts." + strconv.Itoa(e) + "."
					gate, _ := load(split, q+"gate_proj.weight")
					up, _ := load(split, q+"up_proj.weight")
					dn, _ := load(split, q+"down_proj.weight")
					base := e * 2 * width * hidden
					require.Equal(t, gate, gateUp[base:base+width*hidden], q+"gate_proj")
					require.Equal(t, up, gateUp[base+width*hidden:base+2*width*hidden], q+"up_proj")
					require.Equal(t, dn, down[e*hidden*width:(e+1)*hidden*width], q+"down_proj")
					perExpert += 3
				}
			}
			shared := 0
			for _, name := range split.Names() {
				if _, ok := fused.Info(name); ok {
					shared++
				}
			}
			require.Equal(t, len(split.Names()), shared+perExpert, "split tensors that are neither shared nor experts")
		})
	}
}

func TestFormatErrorWithoutTensor(t *testing.T) {
	err := &checkpoint.FormatError{File: "f", Reason: "r"}
	assert.Equal(t, "safetensors f: r", err.Error())
	err.Tensor = "t"
	assert.Equal(t, "safetensors f: tensor t: r", err.Error())
}
