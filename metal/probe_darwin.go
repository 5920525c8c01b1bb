//go:build darwin

package metal

/*
#cgo CFLAGS: -x objective-c
#cgo LDFLAGS: -framework Metal -framework Foundation
#include <stdlib.h>
#include <string.h>
#import <Metal/Metal.h>

// ingot_supports_family is [dev supportsFamily:family] as an int (the BOOL is
// widened in C, not through libffi).
static int ingot_supports_family(void *dev, long family) {
	return [(id<MTLDevice>)dev supportsFamily:(MTLGPUFamily)family] ? 1 : 0;
}

// ingot_probe_simd compiles a one-line kernel that stores its threads_per_simdgroup,
// runs it on one thread and reports the pipeline's threadExecutionWidth and what the
// kernel stored. 0 on success; else the error's text is copied to err.
static int ingot_probe_simd(void *devp, const char *src, long *width, long *wrote, char *err, size_t n) {
	*width = 0;
	*wrote = 0;
	err[0] = 0;
	@autoreleasepool {
		id<MTLDevice> dev = (id<MTLDevice>)devp;
		NSError *e = nil;
		MTLCompileOptions *opts = [MTLCompileOptions new];
		opts.languageVersion = (MTLLanguageVersion)((3 << 16) | 1);
		id<MTLLibrary> lib = [dev newLibraryWithSource:[NSString stringWithUTF8String:src] options:opts error:&e];
		[opts release];
		if (lib == nil) {
			strlcpy(err, e ? [[e localizedDescription] UTF8String] : "no library and no error", n);
			return -1;
		}
		id<MTLFunction> fn = [lib newFunctionWithName:@"ingot_probe"];
		[lib release];
		if (fn == nil) {
			strlcpy(err, "the probe library has no ingot_probe", n);
			return -1;
		}
		id<MTLComputePipelineState> pso = [dev newComputePipelineStateWithFunction:fn error:&e];
		[fn release];
		if (pso == nil) {
			strlcpy(err, e ? [[e localizedDescription] UTF8String] : "no pipeline and no error", n);
			return -1;
		}
		*width = (long)pso.threadExecutionWidth;
		id<MTLBuffer> buf = [dev newBufferWithLength:16 options:MTLResourceStorageModeShared];
		id<MTLCommandQueue> q = [dev newCommandQueue];
		if (buf == nil || q == nil) {
			[pso release];
			[buf release];
			[q release];
			strlcpy(err, "no buffer or command queue for the probe", n);
			return -1;
		}
		memset([buf contents], 0, 16);
		id<MTLCommandBuffer> cb = [q commandBuffer];
		id<MTLComputeCommandEncoder> enc = [cb computeCommandEncoder];
		[enc setComputePipelineState:pso];
		[enc setBuffer:buf offset:0 atIndex:0];
		[enc dispatchThreads:MTLSizeMake(1, 1, 1) threadsPerThreadgroup:MTLSizeMake(1, 1, 1)];
		[enc endEncoding];
		[cb commit];
		[cb waitUntilCompleted];
		int rc = 0;
		if (cb.status != MTLCommandBufferStatusCompleted) {
			strlcpy(err, cb.error ? [[cb.error localizedDescription] UTF8String] : "the probe's command buffer failed", n);
			rc = -1;
		} else {
			*wrote = (long)((const unsigned int *)[buf contents])[0];
		}
		[pso release];
		[buf release];
		[q release];
		return rc;
	}
}
*/
import "C"

import (
	"unsafe"
)

// mtlGPUFamilyApple7 is MTLGPUFamilyApple7 (M1, A14 and later).
const mtlGPUFamilyApple7 = 1007

// probeSource is the SIMD probe: one thread stores its SIMD-group width.
const probeSource = `#include <metal_stdlib>
using namespace metal;
kernel void ingot_probe(device uint* out [[buffer(0)]], uint w [[threads_per_simdgroup]]) { out[0] = w; }
`

// darwinProbe answers Accept's questions about the system's default device.
type darwinProbe struct{ d *Device }

func (p darwinProbe) MacOSMajor() int    { return macOSMajor() }
func (p darwinProbe) DeviceName() string { return p.d.name }

func (p darwinProbe) SupportsApple7() bool {
	return C.ingot_supports_family(p.d.mtl.Ptr(), mtlGPUFamilyApple7) != 0
}

func (p darwinProbe) ProbeSIMD() (width, wrote int, err error) {
	src := C.CString(probeSource)
	defer C.free(unsafe.Pointer(src))
	var w, o C.long
	var msg [512]C.char
	if C.ingot_probe_simd(p.d.mtl.Ptr(), src, &w, &o, &msg[0], C.size_t(len(msg))) != 0 {
		return int(w), int(o), &probeError{C.GoString(&msg[0])}
	}
	return int(w), int(o), nil
}

// probeError is the SIMD probe's failure, as Metal described it.
type probeError struct{ msg string }

func (e *probeError) Error() string { return e.msg }
