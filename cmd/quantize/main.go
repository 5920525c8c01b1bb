// Command quantize writes an mlx-community-style quantized copy of a float checkpoint,
// as mlx-lm's convert does: the text model's tensors in mlx-lm's layout, as the model
// family of its model_type gives it (models.MLXLayout: for Qwen3.5 and Qwen3-Next,
// experts stacked as switch_mlp, norms holding 1 + w, conv1d [C, K, 1]; for Qwen3, the
// tensors as they are), every module whose
// input width is a multiple of the group size quantized with MLX's affine rule
// (checkpoint.QuantizeCheckpoint), the routers (mlp.gate, mlp.shared_expert_gate) at
// -router-bits with group 64, and config.json's quantization block.
//
//	quantize -in DIR -out DIR [-bits 4] [-group 64] [-router-bits 8] [-shard-size 5GB] [-scale-dtype auto]
//	quantize -random CONFIG.json -out DIR [-dtype bfloat16] [-seed 0] [-shard-size 5GB]
//
// With -random it quantizes nothing: it writes a float checkpoint of CONFIG.json's
// structure with deterministic random weights (models.Config.RandomCheckpoint) in Hugging
// Face's layout, a real-size test model made without any download; quantize that
// with -in for the quantized formats.
//
// The output is written under a hidden name beside -out and renamed to -out when
// complete, so a partial output never carries the name; a failed or interrupted run
// leaves neither it nor the scratch copy behind, and removes nothing it did not create.
//
// Exit codes: 0 written, 64 bad command line or unusable input checkpoint, 70 any
// other failure (such as a write error), 128+n when stopped by signal n (130 for
// SIGINT, 143 for SIGTERM).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ingotml/ingot/nn/checkpoint"

	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/nn/models"
)

const (
	exitOK      = 0
	exitUsage   = 64
	exitFailure = 70
	// routerGroup is the group size mlx-lm's recipe gives the 8-bit routers.
	routerGroup = 64
)

// beforeScratch runs before the scratch copy is written, afterScratch once it is; the
// tests truncate the input and signal there.
var (
	beforeScratch = func(*checkpoint.Checkpoint) {}
	afterScratch  = func() {}
)

// errUsage marks a bad command line or input (exit 64).
var errUsage = errors.New("usage")

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// options are the command's flags.
type options struct {
	in, out    string
	random     string // a config.json: write a random float checkpoint of its structure
	dtype      string // -random's weight dtype
	seed       int64
	bits       int
	group      int
	routerBits int
	shardBytes int64
	scaleType  string
}

// run is the command, testable: it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	g := newGuard(stderr)
	defer g.close()
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err == nil && o.random != "" {
		err = writeRandom(g, o, stdout)
	} else if err == nil {
		// The input and scratch files are mapped and read in this goroutine: one that
		// shrinks meanwhile becomes an error naming it, not SIGBUS (exit 2).
		err = checkpoint.CatchFault(func() error { return quantize(g, o, stdout) })
	}
	if errors.Is(err, checkpoint.ErrFileChanged) && !errors.Is(err, errUsage) {
		err = fmt.Errorf("%w: -in: %w", errUsage, err) // bad input, as decode says
	}
	if err != nil {
		fmt.Fprintf(stderr, "quantize: %v\n", err)
		if errors.Is(err, errUsage) {
			return exitUsage
		}
		return exitFailure
	}
	return exitOK
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("quantize", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.in, "in", "", "the float checkpoint directory (HF or mlx-lm layout)")
	fs.StringVar(&o.out, "out", "", "the directory to write (must not exist, or be empty)")
	fs.StringVar(&o.random, "random", "", "instead of -in: write a float checkpoint with random weights of this config.json's structure")
	fs.StringVar(&o.dtype, "dtype", "bfloat16", "-random's weight dtype: float32, float16 or bfloat16")
	fs.Int64Var(&o.seed, "seed", 0, "-random's seed")
	fs.IntVar(&o.bits, "bits", 4, "bits per weight: 2, 3, 4, 5, 6 or 8")
	fs.IntVar(&o.group, "group", 64, "weights per scale and bias: 32, 64 or 128")
	fs.IntVar(&o.routerBits, "router-bits", 8, "bits of the MoE routers (mlp.gate, mlp.shared_expert_gate; group 64); 0: like every other module")
	shard := fs.String("shard-size", "5GB", "largest weight file (e.g. 5GB, 500MB); 0: one model.safetensors")
	fs.StringVar(&o.scaleType, "scale-dtype", "auto", "dtype of scales and biases: float32, float16, bfloat16, or auto (the weights' dtype, as mx.quantize)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	bad := func(f string, args ...any) error { return fmt.Errorf("%w: "+f, append([]any{errUsage}, args...)...) }
	switch {
	case fs.NArg() > 0:
		return nil, bad("unexpected arguments %q", strings.Join(fs.Args(), " "))
	case o.random != "" && o.in != "":
		return nil, bad("-random and -in exclude each other")
	case o.random != "" && o.dtype != "float32" && o.dtype != "float16" && o.dtype != "bfloat16":
		return nil, bad("-dtype must be float32, float16 or bfloat16, not %q", o.dtype)
	case (o.in == "" && o.random == "") || o.out == "":
		return nil, bad("-in (or -random) and -out are required")
	case !kernels.QuantBits(o.bits):
		return nil, bad("-bits must be 2, 3, 4, 5, 6 or 8, not %d", o.bits)
	case !kernels.QuantGroup(o.group):
		return nil, bad("-group must be 32, 64 or 128, not %d", o.group)
	case o.routerBits != 0 && !kernels.QuantBits(o.routerBits):
		return nil, bad("-router-bits must be 0, 2, 3, 4, 5, 6 or 8, not %d", o.routerBits)
	}
	n, err := parseSize(*shard)
	if err != nil {
		return nil, bad("-shard-size: %v", err)
	}
	o.shardBytes = n
	if _, err := scaleDType(o.scaleType, nil); err != nil {
		return nil, bad("%v", err)
	}
	return o, nil
}

// parseSize reads a byte count with an optional KB, MB or GB suffix (powers of 1000,
// as mlx-lm's --max-file-size-gb counts).
func parseSize(s string) (int64, error) {
	num, unit := strings.TrimSpace(s), int64(1)
	for _, u := range []struct {
		suffix string
		mul    int64
	}{{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}} {
		if v, ok := strings.CutSuffix(strings.ToUpper(num), u.suffix); ok {
			num, unit = strings.TrimSpace(v), u.mul
			break
		}
	}
	n, err := strconv.ParseFloat(num, 64)
	bytes := n * float64(unit)
	// !(bytes >= 0) also refuses NaN; a fraction of a byte (0.5) is no size.
	if err != nil || !(bytes >= 0) || bytes > 1<<50 || bytes != math.Trunc(bytes) {
		return 0, fmt.Errorf("%q: want a whole number of bytes, such as 5GB, 500MB or 0", s)
	}
	return int64(bytes), nil
}

// scaleDType maps -scale-dtype to a dtype; "auto" takes the float weights' most common
// dtype in ck (nil ck: only the name is checked).
func scaleDType(name string, ck *checkpoint.Checkpoint) (checkpoint.DType, error) {
	switch name {
	case "float32":
		return checkpoint.F32, nil
	case "float16":
		return checkpoint.F16, nil
	case "bfloat16":
		return checkpoint.BF16, nil
	case "auto":
	default:
		return "", fmt.Errorf("-scale-dtype must be float32, float16, bfloat16 or auto, not %q", name)
	}
	if ck == nil {
		return checkpoint.F32, nil
	}
	count := map[checkpoint.DType]int{}
	best := checkpoint.F32
	for _, n := range ck.Names() {
		t, _, _ := ck.Info(n)
		if t.DType == checkpoint.F32 || t.DType == checkpoint.F16 || t.DType == checkpoint.BF16 {
			count[t.DType]++
			if count[t.DType] > count[best] {
				best = t.DType
			}
		}
	}
	return best, nil
}

// quantize converts o.in into mlx-lm's layout in a hidden work directory next to o.out,
// quantizes that into the work directory too, and renames the result to o.out only
// when it is complete: an interrupted or failed run leaves no -out and no scratch copy
// (see workDir), and nothing that was there before is removed.
func quantize(g *guard, o *options, stdout io.Writer) (err error) {
	if err := checkOut(o.out); err != nil {
		return err
	}
	src, err := checkpoint.OpenCheckpoint(o.in)
	if err != nil {
		return fmt.Errorf("%w: -in: %w", errUsage, err)
	}
	defer src.Close()
	sizes := fileSizes(src)
	if src.Quant != nil {
		return fmt.Errorf("%w: -in %s is already quantized (its config.json has a quantization block)", errUsage, o.in)
	}
	st, err := scaleDType(o.scaleType, src)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if err := checkInput(src); err != nil {
		return fmt.Errorf("%w: -in: %w", errUsage, err)
	}
	tensors, err := models.MLXLayout(src)
	if err != nil {
		return fmt.Errorf("%w: -in: %w", errUsage, err)
	}
	work, err := g.newWork(o.out)
	if err != nil {
		return err
	}
	defer func() { work.remove(err != nil) }()
	scratch, done := filepath.Join(work.dir, "mlx"), filepath.Join(work.dir, "out")
	write := checkpoint.WriteOptions{ShardBytes: o.shardBytes}
	beforeScratch(src)
	if err := checkpoint.WriteCheckpoint(scratch, src.Config, tensors, write); err != nil {
		return inputChanged(src, sizes, err)
	}
	afterScratch()
	mlx, err := checkpoint.OpenCheckpoint(scratch)
	if err != nil {
		return err
	}
	defer mlx.Close()
	opt := checkpoint.QuantizeOptions{Default: checkpoint.QuantSpec{Bits: o.bits, GroupSize: o.group}, ScaleType: st, Write: write}
	if o.routerBits != 0 {
		opt.Modules = map[string]*checkpoint.QuantSpec{}
		for m := range checkpoint.RouterOverrides(mlx.Names()) {
			opt.Modules[m] = &checkpoint.QuantSpec{Bits: o.routerBits, GroupSize: routerGroup}
		}
	}
	if err := checkpoint.QuantizeCheckpoint(mlx, done, opt); err != nil {
		return err
	}
	// The one step that makes -out appear, whole (replacing it if it was an empty
	// directory): a partial output never carries the name.
	if err := g.publish(done, o.out); err != nil {
		return fmt.Errorf("-out %s: %w", o.out, err)
	}
	return summarize(o.out, stdout)
}

// writeRandom writes o.random's structure with random o.dtype weights into o.out, as
// quantize writes its output: in a work directory beside it, renamed when complete.
// The config is read as decode reads --config (bounded, never waiting on a FIFO), and
// a model that cannot fit this machine's memory is refused before any weight is drawn.
func writeRandom(g *guard, o *options, stdout io.Writer) (err error) {
	if err := checkOut(o.out); err != nil {
		return err
	}
	raw, err := checkpoint.ReadMetadataFile(o.random)
	if err != nil {
		return fmt.Errorf("%w: -random: %v", errUsage, err)
	}
	cfg, err := models.ParseConfig(raw)
	if err != nil {
		return fmt.Errorf("%w: -random: %s: %v", errUsage, o.random, err)
	}
	if err := checkRandomFits(cfg); err != nil {
		return fmt.Errorf("%w: -random: %s: %w", errUsage, o.random, err)
	}
	dt, _ := scaleDType(o.dtype, nil)
	tensors, err := cfg.RandomCheckpoint(o.seed, dt)
	if err != nil {
		return fmt.Errorf("%w: -random: %v", errUsage, err)
	}
	work, err := g.newWork(o.out)
	if err != nil {
		return err
	}
	defer func() { work.remove(err != nil) }()
	done := filepath.Join(work.dir, "out")
	beforeScratch(nil)
	write := checkpoint.WriteOptions{ShardBytes: o.shardBytes, Format: checkpoint.KeepFormat}
	if err := checkpoint.WriteCheckpoint(done, raw, tensors, write); err != nil {
		return err
	}
	if err := g.publish(done, o.out); err != nil {
		return fmt.Errorf("-out %s: %w", o.out, err)
	}
	var bytes int64
	for _, t := range tensors {
		bytes += int64(len(t.Data))
	}
	fmt.Fprintf(stdout, "quantize: wrote %s: %d random %s tensors, %.1f MB\n", o.out, len(tensors), o.dtype, float64(bytes)/1e6)
	return nil
}

// checkOut refuses an output that holds anything (nothing is overwritten) or that is a
// symbolic link (the rename that publishes the output would replace the link).
func checkOut(dir string) error {
	st, err := os.Lstat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("%w: -out %s: %v", errUsage, dir, err)
	case st.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("%w: -out %s is a symbolic link: give the directory itself", errUsage, dir)
	case !st.IsDir():
		return fmt.Errorf("%w: -out %s exists and is not a directory", errUsage, dir)
	}
	entries, err := os.ReadDir(dir)
	switch {
	case err != nil:
		return fmt.Errorf("%w: -out %s: %v", errUsage, dir, err)
	case len(entries) > 0:
		return fmt.Errorf("%w: -out %s is not empty", errUsage, dir)
	}
	return nil
}

// summarize prints what was written: quantized and float tensors, files and bytes.
func summarize(dir string, out io.Writer) error {
	ck, err := checkpoint.OpenCheckpoint(dir)
	if err != nil {
		return fmt.Errorf("reopening the output: %w", err)
	}
	defer ck.Close()
	quantized, float := 0, 0
	var bytes int64
	for _, n := range ck.Names() {
		t, _, _ := ck.Info(n)
		bytes += t.End - t.Begin
		switch {
		case strings.HasSuffix(n, ".scales"):
			quantized++
		case strings.HasSuffix(n, ".biases") || (strings.HasSuffix(n, ".weight") && ck.Quantized(strings.TrimSuffix(n, ".weight"))):
		default:
			float++
		}
	}
	fmt.Fprintf(out, "quantize: wrote %s: %d modules quantized (%d-bit g%d affine), %d tensors in float, %d files, %.1f MB\n",
		dir, quantized, ck.Quant.Default.Bits, ck.Quant.Default.GroupSize, float, len(ck.Files()), float64(bytes)/1e6)
	return nil
}
