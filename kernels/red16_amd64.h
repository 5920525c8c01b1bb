// RED16 folds a row's 16 lanes (zmm z, its ymm y and xmm x) by halves into x's lane 0:
// lanes l+8, l+4, l+2, l+1 onto l (qReduce16's order), with Z6 as the scratch. The
// 16-lane quantized rows and the half linear both end a row with it.
#define RED16(z, y, x) \
	VEXTRACTF64X4 $1, z, Y6; \
	VADDPS        Y6, y, y; \
	VEXTRACTF128  $1, y, X6; \
	VADDPS        X6, x, x; \
	VMOVHLPS      x, x, X6; \
	VADDPS        X6, x, x; \
	VMOVSHDUP     x, X6; \
	VADDSS        X6, x, x
