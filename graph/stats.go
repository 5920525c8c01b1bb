package graph

// Stats are the graph's own counts, next to the allocator's.
type Stats struct {
	Nodes       int    // live nodes (evaluated or not)
	Created     uint64 // nodes ever made (kernel nodes, views, host data): a step's cost is the difference
	Handles     int    // handles not yet found dead (exact after Synchronize)
	Collections int    // garbage collections forced (by Synchronize and the reclaimer)
	Reclaims    int    // of those, forced by the allocator at the resource limit
}

// Stats returns the graph's counts.
func (g *Graph) Stats() Stats {
	return Stats{Nodes: g.nodes, Created: g.created, Handles: len(g.handles), Collections: g.collections, Reclaims: g.reclaims}
}
