// Package walkthrough holds the runnable examples behind the walkthrough pages in
// docs/. Every figure a page shows is printed by one of these Example functions, and
// `go test ./docs/...` checks both sides: each example's output against its
// `// Output:` comment, and each page's quoted output and code against the examples
// (TestPagesQuoteExamples).
//
// The pages, in reading order:
//
//   - 01-lazy-arrays.md: lazy arrays and what eval does (lazy_test.go)
//   - 02-allocator.md: the allocator counts objects, not bytes (allocator_test.go)
//   - 03-dead-chain.md: a dead chain meets the resource limit (deadchain_test.go)
//   - 04-qwen35-caches.md: Qwen3.5's cache bookkeeping, why only layer 0 is read,
//     and the size-class histogram (qwen35_test.go)
//   - 05-eager-fix.md: the fix, eager host integers (eager_test.go)
//   - 06-churn.md: the churn variant, continuous batching (churn_test.go)
//   - 07-census.md: finding dead chains in your own code (census_test.go)
//   - 08-cache-growth.md: flat live buffers, growing memory: the allocator cache
//     (cachegrowth_test.go)
//   - 09-upstream.md: where mlx-lm stands, and the shape of its issue #1845
//     (upstream_test.go)
//
// The examples read allocator counts only after Graph.Synchronize, so their output is
// the same on every run. The package has no exported API.
package walkthrough
