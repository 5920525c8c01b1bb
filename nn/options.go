package nn

// Options choose between equivalent implementations of a model's ops; every model
// family takes the same options (a family without the op ignores the field).
type Options struct {
	// OpsGatedDelta runs recurrences as compositions of tensor ops, one step per token
	// (the --ops path), instead of the fused kernels. Same result within float32 noise.
	OpsGatedDelta bool
	// Unfused runs every layer op by op: the reference the fused per-layer kernels are
	// tested against. By default a layer uses its fused kernels where the weights allow.
	Unfused bool
}

// ReproOptions are the knobs of the leak repro's random model (decode's --model-type,
// --layers, --interval, --experts, --hidden and --attention-only flags). Zero values
// select the repro's defaults; a family ignores what does not apply to it.
type ReproOptions struct {
	ModelType     string // the model type to build; "" means the registry's default
	Layers        int    // decoder layers; 0 means 50
	Interval      int    // one attention layer every Interval; 0 means Layers (one, last)
	Experts       int    // routed experts; 0 means 8
	Hidden        int    // hidden size; 0 means 64
	AttentionOnly bool   // every layer attends, no recurrent layers (the control run)
}
