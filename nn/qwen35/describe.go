package qwen35

import (
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"
)

// cacheBuffersPerLayer is what a batch run holds per layer besides the weights once one
// request decodes: the layer's cache state and batch metadata (the KV cache's keys,
// values, offset and left padding and its mask's source, or the GDN cache's conv and
// recurrent states, lengths and left padding). Measured on random models of every type
// and layer mix; nn/models' TestDescriptionMatchesBuild pins it.
const cacheBuffersPerLayer = 5

// plainCacheBuffersPerLayer is the same on the plain path: the KV cache's keys and
// values, or the GDN cache's conv and recurrent states (the metadata stays unset).
const plainCacheBuffersPerLayer = 2

// Describe returns what the random model of cfg is made of (float32 parameters), from
// a dry run of the build: nothing is allocated.
func Describe(cfg *Config) (*nn.Description, error) { return describe(cfg, &nn.RandomSource{}) }

// InspectCheckpoint checks an open checkpoint exactly as LoadCheckpoint would
// (config.json, then every tensor the model reads: name, shape, dtype and
// quantization) from the safetensors headers alone, reading no tensor data, and
// describes the model it holds: a checkpoint LoadCheckpoint refuses,
// InspectCheckpoint refuses with the same error. ck stays open.
func InspectCheckpoint(ck *checkpoint.Checkpoint) (*nn.Description, error) {
	cfg, src, err := open(ck)
	if err != nil {
		return nil, err
	}
	d, err := describe(cfg, src)
	if err != nil {
		return nil, err
	}
	d.SetStorage(ck)
	return d, nil
}

// describe runs build's parameter draws dry over src.
func describe(cfg *Config, src nn.Source) (*nn.Description, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return nn.Record(&nn.Description{
		ModelType:                 cfg.ModelType,
		Kinds:                     append([]nn.LayerKind(nil), cfg.LayerTypes...),
		Sparse:                    cfg.NumSparse(),
		Experts:                   cfg.NumExperts,
		Hidden:                    cfg.HiddenSize,
		Vocab:                     cfg.VocabSize,
		KVWidth:                   cfg.NumKVHeads * cfg.HeadDim,
		Constants:                 constantArrays(cfg),
		CacheBuffersPerLayer:      cacheBuffersPerLayer,
		PlainCacheBuffersPerLayer: plainCacheBuffersPerLayer,
	}, src, func(b *nn.Builder) { draw(cfg, b) })
}
