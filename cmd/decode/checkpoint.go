package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"
	"github.com/ingotml/ingot/nn/models"
	"github.com/ingotml/ingot/predict"
)

// checkpointInfo is what config.json and the safetensors headers say about --model's
// checkpoint (checked exactly as the loader checks it); no weight data is read.
type checkpointInfo struct {
	dir  string
	desc *nn.Description
	// ck is the open checkpoint the description was read from: the load builds from it
	// (models.LoadCheckpoint), so a run parses config.json and the headers once. The
	// caller closes it.
	ck *checkpoint.Checkpoint
}

// inspectCheckpoint checks dir's config.json and safetensors headers as the loader
// would (models.Inspect). Every error is a usage error naming the file at fault.
func inspectCheckpoint(dir string) (*checkpointInfo, error) {
	bad := func(err error) error { return fmt.Errorf("%w: --model %s: %w", errUsage, dir, err) }
	st, err := os.Stat(dir)
	if err != nil {
		return nil, bad(unwrapPath(err))
	}
	if !st.IsDir() {
		return nil, bad(errors.New("not a directory"))
	}
	ck, err := models.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: --model: %w", errUsage, err)
	}
	d, err := models.InspectCheckpoint(ck)
	if err != nil {
		ck.Close()
		return nil, fmt.Errorf("%w: --model: %w", errUsage, err)
	}
	return &checkpointInfo{dir: dir, desc: d, ck: ck}, nil
}

// modelSummary is the [model] line's description of a checkpoint, up to the buffer
// count: type and directory, layer counts, how the weights are stored.
func (c *checkpointInfo) modelSummary(buffers int) string {
	d := c.desc
	layers, gdn := d.Layers(), nn.CountKinds(d.Kinds, nn.Recurrent)
	files := "1 file"
	if d.Files != 1 {
		files = fmt.Sprintf("%d files", d.Files)
	}
	bytes, _, _ := d.WeightBytes()
	return fmt.Sprintf("%s from %s: layers=%d (ssm=%d attn=%d; mlp sparse=%d dense=%d) weights=%s; %s buffers after load (%s in %s)",
		d.ModelType, c.dir, layers, gdn, layers-gdn, d.Sparse, layers-d.Sparse,
		d.Weights, comma(buffers), mb(bytes), files)
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

// size is n bytes in GB, or in MB below a gigabyte.
func size(n int64) string {
	if n < 1e9 {
		return mb(n)
	}
	return gb(n)
}

// estimateFor is estimate as a usage error: a model whose size overflows is bad input.
func estimateFor(o *options, spec runSpec, d *nn.Description, limit int) (memEstimate, error) {
	e, err := estimate(o, spec, d, limit)
	if err != nil {
		return e, fmt.Errorf("%w: %w", errUsage, err)
	}
	return e, nil
}

// loadCheckpoint checks that --model's checkpoint fits in memory and loads it onto a
// new graph. It returns the graph, the model, what the headers said, and the weight
// buffers the allocator holds after the load (the weights and the model's constants).
func loadCheckpoint(o *options, spec runSpec, dev graph.Device, lim limit) (*graph.Graph, nn.Model, *checkpointInfo, int, error) {
	info, err := inspectCheckpoint(o.modelDir)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	defer info.ck.Close() // weights used in place keep their mapping pinned
	est, err := estimateFor(o, spec, info.desc, lim.n)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	if err := checkFitsHint(est, alloc.New(dev.Provider(), alloc.Config{}).Stats().MemoryLimit, "use a smaller checkpoint or --tokens"); err != nil {
		return nil, nil, nil, 0, err
	}
	g := graph.New(dev, graphOptions(o, lim))
	m, err := models.LoadCheckpoint(info.ck, g, nn.Options{OpsGatedDelta: o.ops})
	if err == nil {
		err = g.Synchronize() // the weights are uploaded: a limit below them fails here
	}
	if isLimit(err) {
		return nil, nil, nil, 0, lim.belowBaseline(fmt.Sprintf("its %s weight buffers alone need more buffer objects than that", comma(info.desc.WeightBuffers())))
	}
	if err != nil {
		// The headers were sound but a tensor was not (shape, dtype, layout): bad input.
		return nil, nil, nil, 0, fmt.Errorf("%w: --model: %w", errUsage, err)
	}
	return g, m, info, g.Allocator().LiveBufferCount(), nil
}

// predictOnly prints the prediction of --model's checkpoint (or of the random model)
// from its description alone (config.json and the safetensors headers, checked as the
// loader checks them): the weight buffers the loader would make, the baseline a batch
// run would measure, the slope and the crash token.
func predictOnly(o *options, out io.Writer) error {
	dev, name, err := openDevice(o, out)
	if err != nil {
		return err
	}
	lim, err := resolveLimit(o, dev)
	if err != nil {
		return err
	}
	spec := runSpec{policy: o.cache, attentionOnly: o.attentionOnly}
	var d *nn.Description
	var info *checkpointInfo
	if o.modelDir != "" {
		if info, err = inspectCheckpoint(o.modelDir); err != nil {
			return err
		}
		info.ck.Close() // headers only: no tensor is read
		d = info.desc
	} else {
		cfg, err := modelConfig(o, spec)
		if err != nil {
			return err
		}
		if d, err = cfg.Describe(); err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
	}
	p := predict.Describe(d, o.mode, lim.n)
	if info != nil {
		fmt.Fprintf(out, "[model] %s device=%s limit=%d (%s)\n", info.modelSummary(p.Loaded), name, lim.n, lim.source)
	} else {
		p.WriteRandomModel(out, d, name, lim.source)
	}
	est, err := estimateFor(o, spec, d, lim.n)
	if err != nil {
		return err
	}
	memLimit := alloc.New(dev.Provider(), alloc.Config{}).Stats().MemoryLimit
	fits := "fits"
	if est.Total() > memLimit {
		fits = "does NOT fit"
	}
	fmt.Fprintf(out, "[memory] a run needs ~%s (weights %s); this machine's memory limit is %s: it %s\n", size(est.Total()), size(est.Weights), size(memLimit), fits)
	// The prediction is the stock (lazy) path's, whatever --cache says: when would it die?
	p.WriteBaseline(out)
	if p.Baseline > lim.n {
		return lim.belowBaseline(fmt.Sprintf("it needs ~%s buffer objects before its first token", comma(p.Baseline)))
	}
	p.WritePredict(out)
	return nil
}
