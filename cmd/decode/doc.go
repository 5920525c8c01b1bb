// Command decode reproduces, from first principles, the crash MLX servers hit when a
// hybrid Qwen3.5 / Qwen3-Next model decodes long completions:
//
//	[metal::malloc] Resource limit (499000) exceeded.
//
// It builds a random Qwen3.5-MoE model (50 layers: 49 Gated-DeltaNet + 1 attention by
// default; --model-type qwen3_5 or qwen3_next for the others, qwen3 for a dense
// Qwen3 whose every layer attends (the control: no leak), --config for a real
// config.json's layer structure), through the model registry as a checkpoint would be,
// or loads a real checkpoint (--model DIR), decodes greedily through mlx-lm's batch path (or the plain path), and
// samples the allocator's live buffer objects every --report-every tokens. With the
// stock lazy cache bookkeeping (--cache lazy; the mechanism is told at cache.Lazy) the
// count grows by GDN layers - 1 per token until the limit is hit; with --cache eager
// it stays flat. The flags, printed lines, JSON keys and exit codes follow the seed
// repro (repro_leak.py):
//
//	0  flat (survived)       1  leak detected      2  resource-limit crash reproduced
//	64 bad command line      69 --device metal without a Metal device
//	70 any other failure     130 interrupted (SIGINT, SIGTERM): the report so far is
//	                             still printed and written
//
// Exit 64 also covers what the command line makes impossible before decoding: an
// output path that cannot be written, a model that cannot fit in memory, a resource
// limit below the model's own baseline, or a --model checkpoint that cannot be read or
// loaded. --predict-only reads config.json and the safetensors headers only, prints the
// predicted slope and crash token, and exits 0. These are the built binary's codes; `go run`
// turns any non-zero code into 1.
package main
