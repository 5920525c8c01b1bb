package qwen35

import "github.com/ingotml/ingot/nn"

// Family is this package as the model registry (nn/models) takes it.
var Family = nn.Family[Config, *Model]{Parse: ParseHFConfig, Repro: ReproConfig, Describe: Describe,
	Random: NewRandom, RandomCheckpoint: RandomCheckpoint, JSON: (*Config).MarshalHF, Resize: (*Config).Resize,
	Load: LoadCheckpoint, Inspect: InspectCheckpoint, MLXLayout: MLXLayout}
