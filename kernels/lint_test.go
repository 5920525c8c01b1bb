package kernels_test

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/kernels/msltest"
)

// TestMSLLint runs the address-space lint over every family as Metal compiles it.
func TestMSLLint(t *testing.T) {
	msltest.RequireClang(t)
	files, err := fs.Glob(kernels.MSL, "*.metal")
	require.NoError(t, err)
	for _, f := range files {
		fam := strings.TrimSuffix(f, ".metal")
		if fam == "prelude" {
			continue
		}
		src, err := kernels.Source(fam)
		require.NoError(t, err)
		require.NoError(t, msltest.Lint(f, src), fam)
	}
}
