//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/internal/childtest"
)

// TestInterrupt builds the command, interrupts a long run once it has printed a few
// samples, and checks that it reports the run so far, writes the JSON and the plot,
// and exits 130.
func TestInterrupt(t *testing.T) {
	dir := t.TempDir()
	bin := childtest.Build(t, ".")
	for _, sig := range childtest.Stops {
		js, svg := filepath.Join(dir, sig.String()+".json"), filepath.Join(dir, sig.String()+".svg")
		c := childtest.Start(t, false, nil, bin, "--layers", "6", "--tokens", "10000000", "--report-every", "20",
			"--json-out", js, "--plot", svg)
		samples := 0
		c.Until(t, time.Minute, func(l string) bool {
			if strings.HasPrefix(l, "tok ") {
				samples++
			}
			return samples == 10
		})
		require.Equal(t, 10, samples, c.Output())
		c.Signal(t, sig)
		code, o := c.Exit(t, 30*time.Second)
		require.Equal(t, exitInterrupt, code, "%v\n%s", sig, o)
		require.Contains(t, o, "[interrupted] stopped at token ", sig)
		require.Contains(t, o, "[verdict] LEAKING: +4.0 LIVE buffer objects/token", sig)
		require.Contains(t, o, "[run] ", sig)
		require.Contains(t, o, "[plot] wrote "+svg, sig)
		b, err := os.ReadFile(js)
		require.NoError(t, err, sig)
		var j map[string]any
		require.NoError(t, json.Unmarshal(b, &j))
		require.Equal(t, true, j["interrupted"], sig)
		require.Equal(t, "leaking", j["verdict"], sig)
		require.GreaterOrEqual(t, len(j["tokens"].([]any)), 200, sig)
		_, err = os.Stat(svg)
		require.NoError(t, err, sig)
	}
}
