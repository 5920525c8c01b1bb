package graph

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"strings"
)

// The census answers "which line of the program builds the nodes nobody evaluates?" in
// one run. When it is on, every new node records its creation site: the first frame of
// its call stack outside the engine packages below. Census then groups the live pending
// nodes by site and op, so a dead chain shows up as one row whose Nodes grow with every
// step, named by the line that extends it (for the GDN leak, the cache's advance).

// modulePath is ingot's module; the engine packages are the ones under it that build
// nodes on a caller's behalf, so their frames are never the site.
const modulePath = "github.com/ingotml/ingot"

var enginePkgs = map[string]bool{
	modulePath + "/graph":   true,
	modulePath + "/tensor":  true,
	modulePath + "/kernels": true,
	modulePath + "/alloc":   true,
	modulePath + "/nn":      true, // the layers; models (nn/qwen35) and caches are sites
}

// A site lookup captures the shortFrames frames above newNode: enough to pass an op, its
// helpers and a layer and reach the caller, and cheap, since stack unwinding dominates
// the census's cost. When all of them are engine frames, the node's stack is captured
// again to longFrames; a stack with no frame outside the engine even then is attributed
// to its outermost captured frame.
const (
	shortFrames = 8
	longFrames  = 32
)

// deepSite marks a short stack whose site lies further up.
const deepSite = -1

// census is the per-graph record. It is touched only on the graph's goroutine (node
// creation and freeing both happen there), so it needs no lock.
type census struct {
	short  map[[shortFrames]uintptr]int32 // captured stack -> site index, or deepSite
	long   map[[longFrames]uintptr]int32  // the same for the deep stacks
	byName map[string]int32               // site text -> index: stacks reaching one site share it
	names  []string                       // index -> site text; 0 means "not recorded"
	live   map[*Node]struct{}             // nodes created while on and not yet freed
	prev   map[censusKey]int              // Nodes per row at the previous report
	pcs    [longFrames]uintptr            // capture scratch (a local would escape to the heap)
}

// censusKey is one row of the report: a site and the op of its pending nodes.
type censusKey struct {
	site int32
	op   string
}

// EnableCensus starts recording creation sites for nodes created from now on (nodes that
// already exist are never counted). It costs a short stack capture and three map
// operations per node; with the census off, node creation and freeing pay one nil
// check. Enabling it twice is a no-op.
func (g *Graph) EnableCensus() {
	if g.cen != nil {
		return
	}
	g.cen = &census{
		short:  make(map[[shortFrames]uintptr]int32),
		long:   make(map[[longFrames]uintptr]int32),
		byName: make(map[string]int32),
		names:  []string{""},
		live:   make(map[*Node]struct{}),
		prev:   make(map[censusKey]int),
	}
}

// CensusEnabled reports whether EnableCensus was called.
func (g *Graph) CensusEnabled() bool { return g.cen != nil }

// created records n's site. Called from newNode, before the caller sets n's recipe.
func (c *census) created(n *Node) {
	pcs := (*[shortFrames]uintptr)(c.pcs[:shortFrames])
	clear(pcs[:]) // the key is the whole array: no stale frames from a longer capture
	// Skip runtime.Callers, created and newNode; an error in the count would only move
	// where the engine walk in resolveSite starts.
	k := runtime.Callers(3, pcs[:])
	s, ok := c.short[*pcs]
	if !ok {
		s = c.resolve(pcs[:k], k == shortFrames)
		c.short[*pcs] = s
	}
	if s == deepSite {
		s = c.deep()
	}
	n.site = s
	c.live[n] = struct{}{}
}

// deep resolves a site beyond the short capture.
func (c *census) deep() int32 {
	clear(c.pcs[:])
	k := runtime.Callers(4, c.pcs[:]) // also skip deep itself
	s, ok := c.long[c.pcs]
	if !ok {
		s = c.resolve(c.pcs[:k], false)
		c.long[c.pcs] = s
	}
	return s
}

// freed forgets n. Called from decRef just before n is reset and pooled.
func (c *census) freed(n *Node) { delete(c.live, n) }

// resolve interns the site of pcs. When no frame is outside the engine and the capture
// may have cut the stack short (truncated), it returns deepSite instead of guessing.
func (c *census) resolve(pcs []uintptr, truncated bool) int32 {
	site, found := resolveSite(pcs)
	if !found && truncated {
		return deepSite
	}
	return c.intern(site)
}

func (c *census) intern(site string) int32 {
	if i, ok := c.byName[site]; ok {
		return i
	}
	i := int32(len(c.names))
	c.names = append(c.names, site)
	c.byName[site] = i
	return i
}

// resolveSite names the first frame outside the engine packages (and the runtime), and
// reports whether there was one; if not, it names the outermost engine frame. A frame
// in a _test.go file always counts as outside, so an engine package's own tests name
// their lines.
func resolveSite(pcs []uintptr) (site string, found bool) {
	frames := runtime.CallersFrames(pcs)
	var last runtime.Frame
	for {
		f, more := frames.Next()
		if f.Function != "" {
			pkg, _ := splitFunc(f.Function)
			if strings.HasSuffix(f.File, "_test.go") || (!enginePkgs[pkg] && pkg != "runtime") {
				return formatSite(f), true
			}
			if pkg != "runtime" {
				last = f
			}
		}
		if !more {
			break
		}
	}
	if last.Function == "" {
		return "?", false
	}
	return formatSite(last), false
}

// splitFunc splits a frame's function name ("example.com/a/pkg.(*T).M") into the
// package path and the rest. Type arguments of generic functions may hold slashes and
// dots, so the search stops at the first '['.
func splitFunc(fn string) (pkg, rest string) {
	end := len(fn)
	if i := strings.IndexByte(fn, '['); i >= 0 {
		end = i
	}
	slash := strings.LastIndexByte(fn[:end], '/')
	dot := strings.IndexByte(fn[slash+1:end], '.')
	if dot < 0 {
		return fn, ""
	}
	cut := slash + 1 + dot
	return fn[:cut], fn[cut+1:]
}

// formatSite writes "dir/file.go:123 pkg.Func": the file's last directory keeps sites in
// different packages apart without printing machine-specific paths.
func formatSite(f runtime.Frame) string {
	file := f.File
	if i := strings.LastIndexByte(file, '/'); i >= 0 {
		if j := strings.LastIndexByte(file[:i], '/'); j >= 0 {
			file = file[j+1:]
		}
	}
	fn := f.Function
	end := len(fn)
	if i := strings.IndexByte(fn, '['); i >= 0 {
		end = i
	}
	fn = fn[strings.LastIndexByte(fn[:end], '/')+1:]
	return fmt.Sprintf("%s:%d %s", file, f.Line, fn)
}

// CensusSite is one row of a census: the live pending nodes created at one site with
// one op.
type CensusSite struct {
	// Site is "dir/file.go:123 pkg.Func", the first caller outside ingot's engine
	// packages (graph, tensor, kernels, alloc, nn; a frame in a _test.go file is always
	// outside) on the stack that created the nodes.
	Site string
	// Op is the nodes' op: a kernel name or "view". Pending nodes keep the recipe they
	// were created with, so this is their op at creation; evaluated nodes and host data
	// ("data") are never pending and never reported.
	Op string
	// Nodes is the number of live unevaluated nodes created at Site with Op: each still
	// holds its input edges.
	Nodes int
	// Buffers is the number of distinct buffers held by evaluated nodes (host data such
	// as scalars, or results already computed) that are direct inputs of those pending
	// nodes: what they pin beyond themselves. Pending inputs hold no buffer yet and are
	// counted at their own row. A dead chain of k `x - 1` links on an evaluated origin
	// pins k+1: one scalar per link, plus the origin. A buffer that also has a live
	// handle, or that rows at two sites consume, is counted in every such row.
	Buffers int
	// Growth is Nodes minus this row's Nodes at the previous Census call (0 if absent).
	Growth int
}

// Census reports where the live pending nodes were created, grouped by site and op,
// sorted by Nodes (most first), then Site, then Op. Call it after Synchronize, so that
// handles the program dropped have released their nodes. A row whose nodes were all
// evaluated or freed since the previous call is reported once more with Nodes 0 and a
// negative Growth. Each call is a report: it becomes the baseline of the next Growth.
// It returns nil when the census is off, and an empty slice when nothing is pending.
func (g *Graph) Census() []CensusSite {
	c := g.cen
	if c == nil {
		return nil
	}
	type pin struct {
		k censusKey
		d dataID
	}
	type row struct{ nodes, bufs int }
	rows := make(map[censusKey]*row)
	pinned := make(map[pin]struct{})
	for n := range c.live {
		if n.state != statePending {
			continue
		}
		k := censusKey{n.site, n.Op()}
		r := rows[k]
		if r == nil {
			r = &row{}
			rows[k] = r
		}
		r.nodes++
		for _, id := range g.inputs(n) {
			// Identity of the shared data, not the buffer: a data stays valid for as
			// long as a node owns it.
			in := g.ns.get(uint32(id))
			if in.state != stateScheduled || in.data == 0 {
				continue
			}
			p := pin{k, in.data}
			if _, ok := pinned[p]; !ok {
				pinned[p] = struct{}{}
				r.bufs++
			}
		}
	}
	out := make([]CensusSite, 0, len(rows))
	next := make(map[censusKey]int, len(rows))
	for k, r := range rows {
		out = append(out, CensusSite{
			Site: c.names[k.site], Op: k.op, Nodes: r.nodes, Buffers: r.bufs,
			Growth: r.nodes - c.prev[k],
		})
		next[k] = r.nodes
	}
	for k, p := range c.prev {
		if rows[k] == nil {
			out = append(out, CensusSite{Site: c.names[k.site], Op: k.op, Growth: -p})
		}
	}
	c.prev = next
	slices.SortFunc(out, func(a, b CensusSite) int {
		if c := cmp.Compare(b.Nodes, a.Nodes); c != 0 {
			return c
		}
		if c := strings.Compare(a.Site, b.Site); c != 0 {
			return c
		}
		return strings.Compare(a.Op, b.Op)
	})
	return out
}

// CensusTracker follows census reports across a run and finds the sites whose pending
// nodes grow linearly with tokens: the signature of a dead chain.
type CensusTracker struct {
	tokens  []int
	samples []map[siteOp]int // Nodes per row, one map per Add
}

type siteOp struct{ site, op string }

// GrowingSite is a row whose Nodes grow with tokens.
type GrowingSite struct {
	Site, Op string
	Slope    float64 // least-squares Nodes per token over the slope window
	Nodes    int     // Nodes in the latest sample
}

// NewCensusTracker returns an empty tracker.
func NewCensusTracker() *CensusTracker { return &CensusTracker{} }

// Add records a census taken at token. A row missing from a sample counts as 0 nodes.
func (t *CensusTracker) Add(token int, sites []CensusSite) {
	m := make(map[siteOp]int, len(sites))
	for _, s := range sites {
		m[siteOp{s.Site, s.Op}] += s.Nodes
	}
	t.tokens = append(t.tokens, token)
	t.samples = append(t.samples, m)
}

// Growing returns the rows whose least-squares slope of Nodes against token is at least
// minSlope, sorted by slope (steepest first), then Site, then Op. The slope is taken
// over samples[len/4 : len-1], the repro's window: it skips the warm-up and the last
// sample. With fewer than two samples in the window, or all at one token, it returns nil.
func (t *CensusTracker) Growing(minSlope float64) []GrowingSite {
	lo, hi := len(t.samples)/4, len(t.samples)-1
	if hi-lo < 2 {
		return nil
	}
	tokens, samples := t.tokens[lo:hi], t.samples[lo:hi]
	var mt float64
	for _, x := range tokens {
		mt += float64(x)
	}
	mt /= float64(len(tokens))
	var sxx float64
	for _, x := range tokens {
		sxx += (float64(x) - mt) * (float64(x) - mt)
	}
	if sxx == 0 {
		return nil
	}
	keys := make(map[siteOp]struct{}) // every row seen; absent ones are 0 in the window
	for _, m := range t.samples {
		for k := range m {
			keys[k] = struct{}{}
		}
	}
	var out []GrowingSite
	last := t.samples[len(t.samples)-1]
	for k := range keys {
		var my float64
		for _, m := range samples {
			my += float64(m[k])
		}
		my /= float64(len(samples))
		var sxy float64
		for i, m := range samples {
			sxy += (float64(tokens[i]) - mt) * (float64(m[k]) - my)
		}
		if slope := sxy / sxx; slope >= minSlope {
			out = append(out, GrowingSite{Site: k.site, Op: k.op, Slope: slope, Nodes: last[k]})
		}
	}
	slices.SortFunc(out, func(a, b GrowingSite) int {
		if c := cmp.Compare(b.Slope, a.Slope); c != 0 {
			return c
		}
		if c := strings.Compare(a.Site, b.Site); c != 0 {
			return c
		}
		return strings.Compare(a.Op, b.Op)
	})
	return out
}
