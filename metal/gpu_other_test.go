//go:build !darwin

package metal

import (
	"errors"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
)

func TestNewGPUUnavailable(t *testing.T) {
	g, err := NewGPU(GPUOptions{})
	require.Nil(t, g)
	require.True(t, errors.Is(err, ErrUnavailable), "got %v", err)
	require.EqualError(t, err, "metal: no Metal device: this build is not for macOS (GOOS="+runtime.GOOS+")")

	_, err = NewGPU(GPUOptions{CommitEvery: -1})
	require.EqualError(t, err, "metal: GPUOptions.CommitEvery is -1; want 0 (for 50) or more")
}

func TestGPUStub(t *testing.T) {
	var g GPU
	assert.Equal(t, "metal", g.Name())
	assert.Nil(t, g.Provider())
	assert.Nil(t, g.Device())
	err := g.Run([]kernels.Launch{{Kernel: kernels.KArange}})
	require.True(t, errors.Is(err, ErrUnavailable), "got %v", err)
}
