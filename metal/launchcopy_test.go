package metal

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
)

// copyLaunch copies l's argument data into buffers that alloc makes (arguments sharing
// a buffer still share one) and gives the copy's outputs the second poison, so an
// element neither twin writes differs between the two runs. It returns the copy and the
// buffers to release.
func copyLaunch[B interface{ Bytes() []byte }](t *testing.T, alloc func(n int) (B, error), l *kernels.Launch) (kernels.Launch, []B) {
	t.Helper()
	c := *l
	made := map[*byte][]byte{}
	var bufs []B
	for j := 0; j < c.NArgs; j++ {
		d := l.Args[j].Data
		if len(d) == 0 {
			continue
		}
		if m, ok := made[&d[0]]; ok {
			c.Args[j].Data = m
			continue
		}
		b, err := alloc(len(d))
		require.NoError(t, err)
		copy(b.Bytes(), d)
		made[&d[0]] = b.Bytes()
		bufs = append(bufs, b)
		c.Args[j].Data = b.Bytes()
	}
	kernels.SwapPoison(&c)
	return c, bufs
}
