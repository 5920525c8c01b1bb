package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/ingotml/ingot/kernels"
)

// IndexFile is the name of a sharded checkpoint's index.
const IndexFile = "model.safetensors.index.json"

// CheckpointError reports a checkpoint that cannot be used: Path is the file at fault
// (config, index or shard), Tensor the tensor involved (empty if none), Reason what is
// wrong and Err the underlying error (either may be empty).
type CheckpointError struct {
	Path   string
	Tensor string
	Reason string
	Err    error // the underlying error, if any
}

// Error formats the error as "checkpoint <path>: tensor <name>: <reason>", with
// anything unprintable escaped (see Printable): names come from the files.
func (e *CheckpointError) Error() string {
	s := "checkpoint " + e.Path + ": "
	if e.Tensor != "" {
		s += "tensor " + e.Tensor + ": "
	}
	switch {
	case e.Reason == "" && e.Err != nil:
		s += e.Err.Error()
	case e.Err != nil:
		s += e.Reason + ": " + e.Err.Error()
	default:
		s += e.Reason
	}
	return Printable(s)
}

// Unwrap returns the underlying error.
func (e *CheckpointError) Unwrap() error { return e.Err }

// Checkpoint is a model directory as Hugging Face and mlx-lm write it: config.json and
// the weights in model.safetensors, in shards listed by model.safetensors.index.json,
// or in every model*.safetensors (what mlx-lm loads). Every file is memory-mapped, so
// opening a checkpoint reads headers only. Close releases the files.
type Checkpoint struct {
	Dir    string
	Config []byte       // config.json as read
	Quant  *QuantConfig // nil when config.json has no quantization block
	files  []*Safetensors
	where  map[string]*Safetensors
	names  []string
}

// OpenCheckpoint opens the checkpoint directory dir and validates its structure: the
// index's shards exist and hold the tensors it names, no tensor is in two files, the
// quantization block is affine, and every quantized module's tensors fit it.
func OpenCheckpoint(dir string) (*Checkpoint, error) {
	cfg, err := ReadConfig(dir)
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "config.json")
	q, err := ParseQuantConfig(cfg)
	if err != nil {
		return nil, &CheckpointError{Path: cfgPath, Err: err}
	}
	c := &Checkpoint{Dir: dir, Config: cfg, Quant: q, where: map[string]*Safetensors{}}
	if err := c.open(); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.checkQuantized(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// ReadConfig reads dir's config.json; the error is a *CheckpointError naming it.
func ReadConfig(dir string) ([]byte, error) {
	path := filepath.Join(dir, "config.json")
	cfg, err := ReadMetadataFile(path)
	if err != nil {
		return nil, &CheckpointError{Path: path, Reason: "cannot read the model config", Err: err}
	}
	return cfg, nil
}

// open maps the weight files and builds the name index.
func (c *Checkpoint) open() error {
	indexPath := filepath.Join(c.Dir, IndexFile)
	var index map[string]string
	var shards []string
	switch raw, err := ReadMetadataFile(indexPath); {
	case err == nil:
		var idx struct {
			WeightMap map[string]string `json:"weight_map"`
		}
		if err := json.Unmarshal(raw, &idx); err != nil || len(idx.WeightMap) == 0 {
			return &CheckpointError{Path: indexPath, Reason: "not an index with a non-empty weight_map", Err: err}
		}
		index = idx.WeightMap
		for name, file := range index {
			if file != filepath.Base(file) || !strings.HasSuffix(file, ".safetensors") {
				return &CheckpointError{Path: indexPath, Tensor: name, Reason: fmt.Sprintf("shard %q is not a .safetensors file in the directory", file)}
			}
			if !slices.Contains(shards, file) {
				shards = append(shards, file)
			}
		}
	case errors.Is(err, os.ErrNotExist):
		matches, _ := filepath.Glob(filepath.Join(c.Dir, "model*.safetensors"))
		for _, m := range matches {
			shards = append(shards, filepath.Base(m))
		}
		if len(shards) == 0 {
			return &CheckpointError{Path: c.Dir, Reason: "no " + IndexFile + " and no model*.safetensors"}
		}
	default:
		return &CheckpointError{Path: indexPath, Reason: "cannot read the index", Err: err}
	}
	sort.Strings(shards)
	for _, shard := range shards {
		path := filepath.Join(c.Dir, shard)
		st, err := ReadSafetensors(path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && index != nil {
				return &CheckpointError{Path: path, Tensor: firstMapped(index, shard), Reason: "shard named by " + IndexFile + " is missing", Err: os.ErrNotExist}
			}
			return err
		}
		c.files = append(c.files, st)
		if len(c.where) == 0 {
			c.where = make(map[string]*Safetensors, len(st.names)) // sized once, not grown
		}
		for _, name := range st.names {
			if prev, dup := c.where[name]; dup {
				return &CheckpointError{Path: path, Tensor: name, Reason: "also in " + prev.File()}
			}
			c.where[name] = st
		}
	}
	for name, shard := range index {
		st, ok := c.where[name]
		if !ok || filepath.Base(st.File()) != shard {
			return &CheckpointError{Path: filepath.Join(c.Dir, shard), Tensor: name, Reason: IndexFile + " places the tensor here, but the file does not hold it", Err: ErrTensorNotFound}
		}
	}
	for name := range c.where {
		c.names = append(c.names, name)
	}
	sort.Strings(c.names)
	return nil
}

// firstMapped is the alphabetically first tensor the index places in shard.
func firstMapped(index map[string]string, shard string) string {
	first := ""
	for name, f := range index {
		if f == shard && (first == "" || name < first) {
			first = name
		}
	}
	return first
}

// Close releases every file of the checkpoint.
func (c *Checkpoint) Close() error {
	var errs []error
	for _, f := range c.files {
		errs = append(errs, f.Close())
	}
	c.files = nil
	return errors.Join(errs...)
}

// Names returns every tensor name in sorted order.
func (c *Checkpoint) Names() []string { return slices.Clone(c.names) }

// Info describes the named tensor and returns the file holding it.
func (c *Checkpoint) Info(name string) (TensorInfo, string, bool) {
	st, ok := c.where[name]
	if !ok {
		return TensorInfo{}, "", false
	}
	t, _ := st.Info(name)
	return t, st.File(), true
}

// Bytes returns the named tensor's raw bytes (aliasing the mapping; see Safetensors.Bytes).
func (c *Checkpoint) Bytes(name string) ([]byte, TensorInfo, error) {
	st, ok := c.where[name]
	if !ok {
		return nil, TensorInfo{}, &CheckpointError{Path: c.Dir, Tensor: name, Reason: "not in any weight file", Err: ErrTensorNotFound}
	}
	return st.Bytes(name)
}

// AppendBytes appends a copy of the named tensor's raw bytes to dst. Unlike reading
// Bytes' slice, the copy is guarded: a file that shrank under its mapping gives an
// error naming the file and tensor (see CatchFault).
func (c *Checkpoint) AppendBytes(dst []byte, name string) ([]byte, error) {
	b, _, err := c.Bytes(name)
	if err != nil {
		return dst, err
	}
	err = CatchTensorFault(name, func() error {
		dst = append(dst, b...)
		return nil
	})
	return dst, err
}

// Float32 returns the named tensor converted to float32 (F32, F16 or BF16 files).
func (c *Checkpoint) Float32(name string) ([]float32, []int, error) {
	st, ok := c.where[name]
	if !ok {
		return nil, nil, &CheckpointError{Path: c.Dir, Tensor: name, Reason: "not in any weight file", Err: ErrTensorNotFound}
	}
	return st.Float32(name)
}

// Files returns the paths of the checkpoint's weight files, sorted.
func (c *Checkpoint) Files() []string {
	out := make([]string, len(c.files))
	for i, f := range c.files {
		out[i] = f.File()
	}
	return out
}

// Format returns the "format" entry of the weight files' __metadata__ when they all
// agree ("mlx" for files mlx-lm wrote, "pt" for PyTorch's), else "".
func (c *Checkpoint) Format() string {
	format := ""
	for i, f := range c.files {
		v := f.Metadata()["format"]
		if i > 0 && v != format {
			return ""
		}
		format = v
	}
	return format
}

// KernelDType maps a safetensors dtype to the engine's (the float dtypes, U32 and I32).
func KernelDType(d DType) (kernels.DType, error) {
	switch d {
	case F32:
		return kernels.Float32, nil
	case F16:
		return kernels.Float16, nil
	case BF16:
		return kernels.BFloat16, nil
	case U32:
		return kernels.UInt32, nil
	case I32:
		return kernels.Int32, nil
	}
	return 0, fmt.Errorf("dtype %s has no engine equivalent", d)
}
