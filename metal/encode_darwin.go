//go:build darwin

package metal

/*
#cgo CFLAGS: -x objective-c
#cgo LDFLAGS: -framework Metal -framework Foundation
#import <Metal/Metal.h>

// The messages of every dispatch, sent from Objective-C: objc.Call reflects over
// its arguments and prepares a libffi call interface on every send, several
// microseconds each, and a dispatch sends about n+3 of them (pipeline, n buffers,
// the constant block, the dispatch itself). A cgo call costs tens of nanoseconds.

static void ingot_set_pipeline(void *enc, void *pso) {
	[(id<MTLComputeCommandEncoder>)enc setComputePipelineState:(id<MTLComputePipelineState>)pso];
}

static void ingot_set_buffer(void *enc, void *buf, unsigned long offset, unsigned long index) {
	[(id<MTLComputeCommandEncoder>)enc setBuffer:(id<MTLBuffer>)buf offset:offset atIndex:index];
}

static void ingot_set_bytes(void *enc, const void *bytes, unsigned long length, unsigned long index) {
	[(id<MTLComputeCommandEncoder>)enc setBytes:bytes length:length atIndex:index];
}

static void ingot_dispatch(void *enc, int groups, unsigned long w, unsigned long h, unsigned long d,
                           unsigned long gw, unsigned long gh, unsigned long gd) {
	id<MTLComputeCommandEncoder> e = (id<MTLComputeCommandEncoder>)enc;
	if (groups) {
		[e dispatchThreadgroups:MTLSizeMake(w, h, d) threadsPerThreadgroup:MTLSizeMake(gw, gh, gd)];
	} else {
		[e dispatchThreads:MTLSizeMake(w, h, d) threadsPerThreadgroup:MTLSizeMake(gw, gh, gd)];
	}
}
static void ingot_barrier(void *enc) {
	[(id<MTLComputeCommandEncoder>)enc memoryBarrierWithScope:MTLBarrierScopeBuffers];
}
*/
import "C"

import "unsafe"

func encSetPipeline(enc, pso unsafe.Pointer) { C.ingot_set_pipeline(enc, pso) }

func encBarrier(enc unsafe.Pointer) { C.ingot_barrier(enc) }

func encSetBuffer(enc, buf unsafe.Pointer, offset, index int) {
	C.ingot_set_buffer(enc, buf, C.ulong(offset), C.ulong(index))
}

// encSetBytes passes b's address: Metal copies the bytes before returning, and
// b holds no Go pointers, so cgo's rules allow it.
func encSetBytes(enc unsafe.Pointer, b []byte, index int) {
	C.ingot_set_bytes(enc, unsafe.Pointer(&b[0]), C.ulong(len(b)), C.ulong(index))
}

func encDispatch(enc unsafe.Pointer, groups bool, size, group [3]int) {
	g := C.int(0)
	if groups {
		g = 1
	}
	C.ingot_dispatch(enc, g, C.ulong(size[0]), C.ulong(size[1]), C.ulong(size[2]),
		C.ulong(group[0]), C.ulong(group[1]), C.ulong(group[2]))
}
