package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/nn/checkpoint"
	"github.com/ingotml/ingot/nn/models"
)

// rewrite copies the checkpoint src into a new directory, passing its config and every
// tensor through edit (which may change them, or drop a tensor by returning false).
func rewrite(t *testing.T, src string, editConfig func([]byte) []byte, edit func(*checkpoint.WriteTensor) bool) string {
	t.Helper()
	ck, err := checkpoint.OpenCheckpoint(src)
	require.NoError(t, err)
	defer ck.Close()
	var tensors []checkpoint.WriteTensor
	for _, name := range ck.Names() {
		raw, info, err := ck.Bytes(name)
		require.NoError(t, err)
		wt := checkpoint.WriteTensor{Name: name, DType: info.DType, Shape: info.Shape, Data: slices.Clone(raw)}
		if edit == nil || edit(&wt) {
			tensors = append(tensors, wt)
		}
	}
	cfg := ck.Config
	if editConfig != nil {
		cfg = editConfig(slices.Clone(cfg))
	}
	format := ck.Format()
	if format == "" {
		format = checkpoint.KeepFormat
	}
	dir := filepath.Join(t.TempDir(), "in")
	require.NoError(t, checkpoint.WriteCheckpoint(dir, cfg, tensors, checkpoint.WriteOptions{Format: format}))
	return dir
}

// firstWeight is the alphabetically first float matrix of the checkpoint in dir.
func firstWeight(t *testing.T, dir string) string {
	ck, err := checkpoint.OpenCheckpoint(dir)
	require.NoError(t, err)
	defer ck.Close()
	for _, name := range ck.Names() {
		info, _, _ := ck.Info(name)
		if strings.HasSuffix(name, ".weight") && len(info.Shape) == 2 {
			return name
		}
	}
	t.Fatalf("%s has no weight matrix", dir)
	return ""
}

// refused runs quantize on in and requires exit 64 with want as the whole message, and
// that nothing was left beside out (no output, no scratch copy).
func refused(t *testing.T, in, want string, extra ...string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "q")
	code, stdout, stderr := cmd(append([]string{"-in", in, "-out", out}, extra...)...)
	require.Equal(t, exitUsage, code, "%s%s", stdout, stderr)
	require.Equal(t, "quantize: usage: "+want+"\n", stderr)
	entries, err := os.ReadDir(filepath.Dir(out))
	require.NoError(t, err)
	require.Empty(t, entries, "nothing written beside -out")
}

// TestQuantizeRefusesNonFinite: a NaN or infinite weight is refused with its file,
// tensor and element named, before anything is written (it used to panic in putBits).
func TestQuantizeRefusesNonFinite(t *testing.T) {
	src := goldenSets(t)[0]
	name := firstWeight(t, src)
	for _, v := range []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())} {
		var shape []int
		in := rewrite(t, src, nil, func(wt *checkpoint.WriteTensor) bool {
			if wt.Name == name {
				// Element 1 becomes v in the tensor's own dtype.
				switch wt.DType {
				case checkpoint.F32:
					binary.LittleEndian.PutUint32(wt.Data[4:], math.Float32bits(v))
				case checkpoint.BF16:
					binary.LittleEndian.PutUint16(wt.Data[2:], kernels.F32ToBF16(v))
				case checkpoint.F16:
					binary.LittleEndian.PutUint16(wt.Data[2:], kernels.F32ToF16(v))
				default:
					require.Failf(t, "not a float weight", "%s: %s", name, wt.DType)
				}
				shape = wt.Shape
			}
			return true
		})
		refused(t, in, fmt.Sprintf("-in: checkpoint %s: tensor %s: element [0 1] of %v holds %v: non-finite weight",
			filepath.Join(in, "model.safetensors"), name, shape, v))
	}
}

// moeSet is the first golden set whose model has experts, and the index of a sparse
// layer (one whose description has a stacked expert bank).
func moeSet(t *testing.T) (string, int) {
	for _, dir := range goldenSets(t) {
		d, err := models.Inspect(dir)
		require.NoError(t, err)
		for _, p := range d.Params {
			var layer int
			if _, err := fmt.Sscanf(p.Name, "model.layers.%d.mlp.experts.", &layer); err == nil {
				return dir, layer
			}
		}
	}
	t.Skip("no golden set with experts under the golden root")
	return "", 0
}

// refusedAsLoader requires quantize to refuse in with the loader's own error
// (models.Inspect's, which decode prints too), which must mention each of want.
func refusedAsLoader(t *testing.T, in string, want ...string) {
	t.Helper()
	_, err := models.Inspect(in)
	require.Error(t, err, "the loader refuses it")
	for _, w := range want {
		require.Contains(t, err.Error(), w)
	}
	refused(t, in, "-in: "+err.Error())
}

// TestQuantizeValidatesLikeTheLoader: inputs decode's loader refuses are refused here
// too, before anything is written (each used to be quantized, exit 0).
func TestQuantizeValidatesLikeTheLoader(t *testing.T) {
	src := goldenSets(t)[0]
	t.Run("quoted hidden_size", func(t *testing.T) {
		in := rewrite(t, src, func(c []byte) []byte {
			var m map[string]any
			require.NoError(t, json.Unmarshal(c, &m))
			m["hidden_size"] = "64"
			b, err := json.Marshal(m)
			require.NoError(t, err)
			return b
		}, nil)
		refusedAsLoader(t, in, "hidden_size", `"64"`)
	})
	t.Run("F64 lm_head", func(t *testing.T) {
		// The head, or the embedding of a set that ties them: stored as F64.
		d, err := models.Inspect(src)
		require.NoError(t, err)
		suffix := "embed_tokens.weight"
		for _, p := range d.Params {
			if p.Name == "lm_head.weight" {
				suffix = "lm_head.weight"
			}
		}
		in := rewrite(t, src, nil, func(wt *checkpoint.WriteTensor) bool {
			if strings.HasSuffix(wt.Name, suffix) && !strings.HasPrefix(wt.Name, "mtp.") {
				n := 1
				for _, d := range wt.Shape {
					n *= d
				}
				wt.DType, wt.Data = checkpoint.F64, make([]byte, 8*n)
			}
			return true
		})
		refusedAsLoader(t, in, suffix, "F64")
	})
	t.Run("experts missing", func(t *testing.T) {
		moe, layer := moeSet(t)
		prefix := fmt.Sprintf("model.layers.%d.mlp.", layer)
		in := rewrite(t, moe, nil, func(wt *checkpoint.WriteTensor) bool {
			rest, ok := strings.CutPrefix(wt.Name, prefix)
			return !ok || !(strings.HasPrefix(rest, "experts.") || strings.HasPrefix(rest, "switch_mlp."))
		})
		refusedAsLoader(t, in, prefix+"experts", "not found")
	})
}

// TestQuantizeRemovesOnlyWhatItMade: a failing run leaves an empty -out directory it
// was given, and refuses a -out symlink (dangling or not) without touching it.
func TestQuantizeRemovesOnlyWhatItMade(t *testing.T) {
	tmp := t.TempDir()
	missing := filepath.Join(tmp, "no-such-checkpoint")
	empty := filepath.Join(tmp, "empty")
	require.NoError(t, os.Mkdir(empty, 0o755))
	code, _, stderr := cmd("-in", missing, "-out", empty)
	require.Equal(t, exitUsage, code, stderr)
	st, err := os.Stat(empty)
	require.NoError(t, err, "the empty -out directory it was given is kept")
	require.True(t, st.IsDir())

	for _, target := range []string{filepath.Join(tmp, "nowhere"), empty} {
		link := filepath.Join(tmp, "link")
		require.NoError(t, os.Symlink(target, link))
		code, _, stderr = cmd("-in", goldenSets(t)[0], "-out", link)
		require.Equal(t, exitUsage, code, stderr)
		require.Equal(t, "quantize: usage: -out "+link+" is a symbolic link: give the directory itself\n", stderr)
		got, err := os.Readlink(link)
		require.NoError(t, err, "the link is kept")
		require.Equal(t, target, got)
		require.NoError(t, os.Remove(link))
	}

	// An empty -out directory receives the output (replaced in one rename).
	code, _, stderr = cmd("-in", goldenSets(t)[0], "-out", empty)
	require.Equal(t, exitOK, code, stderr)
	require.FileExists(t, filepath.Join(empty, "config.json"))

	// Missing parents of -out are created.
	deep := filepath.Join(tmp, "a", "b", "q")
	code, _, stderr = cmd("-in", goldenSets(t)[0], "-out", deep)
	require.Equal(t, exitOK, code, stderr)
	require.DirExists(t, deep)
}

// TestShardSizeWhole: -shard-size must be a whole number of bytes.
func TestShardSizeWhole(t *testing.T) {
	src := goldenSets(t)[0]
	for _, v := range []string{"NaN", "nan", "Inf", "-Inf", "0.5", "1.0005KB", "-1", "1e20GB"} {
		out := filepath.Join(t.TempDir(), "q")
		code, _, stderr := cmd("-in", src, "-out", out, "-shard-size", v)
		require.Equal(t, exitUsage, code, v)
		require.Equal(t, "quantize: usage: -shard-size: "+strconv.Quote(v)+": want a whole number of bytes, such as 5GB, 500MB or 0\n", stderr)
	}
	n, err := parseSize("0.5GB")
	require.NoError(t, err)
	require.Equal(t, int64(500_000_000), n)
}

// TestFileStringsEscaped: a tensor name holding terminal escapes reaches the terminal
// escaped, on one line.
func TestFileStringsEscaped(t *testing.T) {
	dir := t.TempDir()
	cfg, err := os.ReadFile(filepath.Join(goldenSets(t)[0], "config.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644))
	header := `{"\u001b[2J\u001b[32m[verdict] FLAT\u001b[0m\n":{"dtype":"F128","shape":[1],"data_offsets":[0,1]}}`
	file := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	file = append(append(file, header...), 0)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "model.safetensors"), file, 0o644))
	refused(t, dir, `-in: safetensors `+filepath.Join(dir, "model.safetensors")+`: tensor \x1b[2J\x1b[32m[verdict] FLAT\x1b[0m\n: unknown dtype "F128"`)
}
