package main

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// countsOf is what a run counted: each sample's position and live buffers, the tokens,
// the baseline, the live histograms and where it crashed. (Not the allocator's cached
// buffers: how many a run keeps depends on how far the host runs ahead of the device,
// a matter of timing, in any mode.)
func countsOf(j map[string]any) []any {
	var c []any
	for _, s := range j["samples"].([]any) {
		p := s.([]any)
		m := p[1].(map[string]any)
		c = append(c, p[0], m["live"])
	}
	return append(c, j["tokens"], j["baseline_live"], j["hist_first"], j["hist_last"], j["crash_token"], j["crashed"])
}

// TestExplicitReleaseChangesNoCount runs each loop of the command twice: with the
// graph's explicit releases (the default: no collection at a sample, none in the
// reclaimer) and with a forced collection at every sample and at the limit. Every
// count, token and crash token must be the same. That holds only if the loops release
// every array they drop: one dropped without a release would keep its buffers live
// under explicit releases until a natural collection, and a sample would differ.
func TestExplicitReleaseChangesNoCount(t *testing.T) {
	t.Cleanup(func() { explicitRelease = true })
	_, _, probe := decode(t, "--layers", "12", "--tokens", "8", "--report-every", "8")
	crashAt := strconv.Itoa(int(probe["baseline_live"].(float64)) + 10*150) // ~token 150 at 10 links a token
	for _, args := range [][]string{
		{"--layers", "12", "--tokens", "300", "--report-every", "25"},
		{"--layers", "12", "--tokens", "300", "--report-every", "25", "--cache", "eager"},
		{"--layers", "12", "--tokens", "300", "--report-every", "25", "--limit", crashAt},
		{"--layers", "12", "--tokens", "300", "--report-every", "25", "--mode", "plain"},
		{"--layers", "12", "--tokens", "300", "--report-every", "25", "--eval-cache-every", "25"},
		{"--layers", "12", "--tokens", "300", "--report-every", "25", "--census"},
		{"--layers", "8", "--mode", "server", "--requests", "12", "--request-tokens", "30", "--concurrency", "3"},
		{"--layers", "8", "--mode", "server", "--requests", "12", "--request-tokens", "30", "--concurrency", "3", "--cache", "eager"},
		{"--model", filepath.Join("..", "..", "testdata", "mlx", "mlx_q4g32_12l"), "--tokens", "60", "--report-every", "20"},
	} {
		explicitRelease = true
		code, out, j := decode(t, args...)
		explicitRelease = false
		codeGC, outGC, jGC := decode(t, args...)
		require.Equal(t, codeGC, code, "%v\n%s\n%s", args, out, outGC)
		require.Equal(t, countsOf(jGC), countsOf(j), "%v\n%s\n%s", args, out, outGC)
	}
}
