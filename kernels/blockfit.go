package kernels

// The fused blocks (moe_block, mlp_block, gdn_conv_step + gdn_block) as a device sees
// them when it chooses between a block and the unfused kernels (graph.TakesFused): the
// sizes their twins take, and what one token row of a block reads.

// FusedBlockFits reports whether fused block kernel k (KMoEBlock, KMLPBlock or
// KGDNBlock, which stands for the GDN pair) takes the sizes of params p (its parameter
// struct, a pointer): the limits of the Metal twin, which the Go twin checks too. It is
// false for any other kernel.
func FusedBlockFits(k *Kernel, p any) bool {
	switch k {
	case KMoEBlock:
		q := p.(*MoEBlockParams)
		return MoEBlockFits(q.H, q.E, q.K, q.I, q.Is)
	case KMLPBlock:
		q := p.(*MLPBlockParams)
		return MLPBlockFits(q.H, q.I)
	case KGDNBlock:
		return GDNBlockFits(p.(*GDNBlockParams))
	}
	return false
}

// FusedBlockReads is the bytes one token row of fused block k reads from memory: the
// weights it uses (only the K routed experts' of moe_block) and, for the GDN pair, the
// recurrent state it reads and writes. The Metal twins stream all of it through one
// threadgroup per row, so this sets their time (see the GPU's choice in metal/). It is
// 0 for a kernel that is not a fused block.
func FusedBlockReads(k *Kernel, p any) int {
	const f = 4 // float32
	switch k {
	case KMoEBlock:
		q := p.(*MoEBlockParams)
		return f * (q.E*q.H + q.K*3*q.I*q.H + 3*q.Is*q.H + 3*q.H)
	case KMLPBlock:
		q := p.(*MLPBlockParams)
		return f * (3*q.I*q.H + q.H)
	case KGDNBlock:
		q := p.(*GDNBlockParams)
		c, vd := q.conC(), q.valueDim()
		proj := c*q.H + vd*q.H + 2*q.Hv*q.H + q.H*vd // qkv, z, b and a, out
		return f * (proj + c*q.K + 2*q.Hv*q.Dv*q.Dk + 2*q.H + 2*q.Hv + q.Dv)
	}
	return 0
}
