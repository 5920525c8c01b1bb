package msltest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// wantAttrs computes, the way Metal defines them, the 16 values the attrs
// kernel writes for every thread of a 2-D dispatch: edge threadgroups of a
// dispatchThreads grid are smaller, and their threads are numbered (and
// split into simdgroups) within that smaller size.
func wantAttrs(grid, group [2]int, threadsMode bool) map[[2]int][16]uint32 {
	ngroups := grid
	if threadsMode {
		for i := range 2 {
			ngroups[i] = (grid[i] + group[i] - 1) / group[i]
		}
	} else {
		grid = [2]int{grid[0] * group[0], grid[1] * group[1]}
	}
	out := map[[2]int][16]uint32{}
	for gy := range ngroups[1] {
		for gx := range ngroups[0] {
			size := group
			if threadsMode {
				size = [2]int{min(group[0], grid[0]-gx*group[0]), min(group[1], grid[1]-gy*group[1])}
			}
			n := size[0] * size[1]
			for ly := range size[1] {
				for lx := range size[0] {
					l := ly*size[0] + lx
					x, y := gx*group[0]+lx, gy*group[1]+ly
					out[[2]int{x, y}] = [16]uint32{
						uint32(x), uint32(y), uint32(lx), uint32(ly),
						uint32(gx), uint32(gy), uint32(size[0]), uint32(size[1]),
						uint32(ngroups[0]), uint32(l), uint32(l % 32), uint32(l / 32),
						uint32((n + 31) / 32), 32, uint32(group[0]*1000 + group[1]), 1,
					}
				}
			}
		}
	}
	return out
}

func TestThreadAttributes(t *testing.T) {
	RequireCompiler(t)
	t.Parallel()
	cases := []struct {
		d           Dispatch
		grid, group [2]int
		threads     bool
	}{
		{Dispatch{Threads: [3]int{37, 5, 1}, Group: [3]int{16, 4, 1}}, [2]int{37, 5}, [2]int{16, 4}, true},
		{Dispatch{Threads: [3]int{70, 1, 1}, Group: [3]int{48, 1, 1}}, [2]int{70, 1}, [2]int{48, 1}, true},
		{Dispatch{Groups: [3]int{2, 3, 1}, Group: [3]int{8, 8, 1}}, [2]int{2, 3}, [2]int{8, 8}, false},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%v", c.d), func(t *testing.T) {
			want := wantAttrs(c.grid, c.group, c.threads)
			w, h := c.grid[0], c.grid[1]
			if !c.threads {
				w, h = w*c.group[0], h*c.group[1]
			}
			require.Len(t, want, w*h)
			// Exactly one row per grid thread: a thread outside the grid
			// would write past the end and fault.
			bufs := []Buffer{{Index: 0, Data: make([]byte, 4*16*w*h)}}
			require.NoError(t, Run("testdata/attrs.metal", "attrs", c.d, bufs))
			got, err := Values[uint32](bufs[0].Data)
			require.NoError(t, err)
			for pos, row := range want {
				i := (pos[1]*w + pos[0]) * 16
				require.Equalf(t, row[:], got[i:i+16], "thread %v", pos)
			}
		})
	}
}
