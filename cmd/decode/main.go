// Command decode reproduces MLX's "[metal::malloc] Resource limit (499000) exceeded."
// crash of hybrid Qwen3.5 models, and its fix, from first principles.
//
// This is a placeholder until the decode issue lands: it says so and exits 0.
package main

import "fmt"

func main() {
	fmt.Println("ingot decode: not built yet. The engine core (alloc, graph, tensor) is in;")
	fmt.Println("the model, caches and batch generator come next. Run `go test ./...` meanwhile.")
}
