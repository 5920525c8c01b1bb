//go:build darwin

package metal

/*
#cgo CFLAGS: -x objective-c
// CoreGraphics is linked on purpose: without it a command-line tool's
// MTLCreateSystemDefaultDevice may find no device.
#cgo LDFLAGS: -framework Metal -framework Foundation -framework CoreGraphics
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysctl.h>
#import <Metal/Metal.h>

// The bindings have no MTLCreateSystemDefaultDevice (a C function, not a
// message). The result is owned by the caller (+1), or NULL.
static void *ingot_default_device(void) {
	return (void *)MTLCreateSystemDefaultDevice();
}

// ingot_macos_major is the running macOS's major version.
static long ingot_macos_major(void) {
	return (long)[[NSProcessInfo processInfo] operatingSystemVersion].majorVersion;
}

// ingot_gpu_arch copies the device's architecture name (e.g. "applegpu_g13s")
// into buf, or leaves it empty where the OS has none (before macOS 14).
static void ingot_gpu_arch(void *dev, char *buf, size_t n) {
	buf[0] = 0;
	@autoreleasepool {
		id d = (id)dev;
		if (![d respondsToSelector:@selector(architecture)]) {
			return;
		}
		id arch = [d performSelector:@selector(architecture)];
		NSString *name = [arch performSelector:@selector(name)];
		const char *s = [name UTF8String];
		if (s != NULL) {
			strlcpy(buf, s, n);
		}
	}
}

// ingot_sysctl_int reads an integer sysctl of 4 or 8 bytes; 0 on success.
static int ingot_sysctl_int(const char *name, int64_t *out) {
	unsigned char buf[8];
	size_t len = sizeof(buf);
	if (sysctlbyname(name, buf, &len, NULL, 0) != 0) {
		return -1;
	}
	if (len == sizeof(int32_t)) {
		int32_t v;
		memcpy(&v, buf, sizeof(v));
		*out = v;
		return 0;
	}
	if (len == sizeof(int64_t)) {
		memcpy(out, buf, sizeof(*out));
		return 0;
	}
	return -1;
}
*/
import "C"

import (
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/ingotml/ingot/alloc"
	"github.com/progrium/macdriver/macos/metal"
	"github.com/progrium/macdriver/objc"
)

// Device is a Metal GPU: the system's default device, opened once per
// process and never closed.
type Device struct {
	mtl           metal.DeviceWrapper
	name          string
	maxBuffer     int64
	workingSet    int64
	resourceLimit int
	provider      *bufferProvider
	host          *hostMaps // weights bound in place (GPU.MapHost)
	heaps         bool      // small buffers come from MTLHeaps (not on a paravirtual GPU)
	arch          string    // architecture name, e.g. "applegpu_g13s"; its last letter is the chip class

	acceptOnce sync.Once     // NewGPU's checks (Accept), once a process
	acceptErr  error         // why the device was refused, or nil
	builds     *familyBuilds // every family's compile, started once Accept passed
}

// Available reports whether Open can succeed.
func Available() bool {
	_, err := Open()
	return err == nil
}

// Open returns the system's default Metal device. Every call returns the
// same Device. Without one the error wraps ErrUnavailable.
func Open() (*Device, error) { return openDefault() }

var openDefault = sync.OnceValues(func() (*Device, error) {
	ptr := C.ingot_default_device()
	if ptr == nil {
		return nil, fmt.Errorf("%w: MTLCreateSystemDefaultDevice returned nil", ErrUnavailable)
	}
	d := &Device{mtl: metal.DeviceWrapper{Object: objc.ObjectFrom(unsafe.Pointer(ptr))}}
	// name hands back an autoreleased NSString; drain it here rather than
	// leak it into whatever pool the calling thread has (often none).
	objc.WithAutoreleasePool(func() {
		d.name = d.mtl.Name()
		d.maxBuffer = int64(d.mtl.MaxBufferLength())
		d.workingSet = int64(d.mtl.RecommendedMaxWorkingSetSize())
	})
	d.resourceLimit = resourceLimitFrom(sysctlInt("iogpu.rsrc_limit"))
	d.heaps = heapsUsable(d.name)
	var arch [64]C.char
	C.ingot_gpu_arch(ptr, &arch[0], C.size_t(len(arch)))
	d.arch = C.GoString(&arch[0])
	d.provider = &bufferProvider{dev: d, policy: heapPolicy{usable: d.heaps}}
	d.host = &hostMaps{page: os.Getpagesize(), maxLen: int(d.maxBuffer), wrap: d.wrapNoCopy, free: releaseWrapped}
	return d, nil
})

// sysctlInt reads an integer sysctl by name; ok is false if it is absent.
func sysctlInt(name string) (v int64, ok bool) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var out C.int64_t
	if C.ingot_sysctl_int(cname, &out) != 0 {
		return 0, false
	}
	return int64(out), true
}

// Name is the device's name, e.g. "Apple M2 Max".
func (d *Device) Name() string { return d.name }

// MaxBufferLength is the largest buffer the device accepts, in bytes.
func (d *Device) MaxBufferLength() int64 { return d.maxBuffer }

// RecommendedWorkingSet is the device's recommendedMaxWorkingSetSize in bytes.
func (d *Device) RecommendedWorkingSet() int64 { return d.workingSet }

// ResourceLimit is the most buffer objects that may be live at once: the
// iogpu.rsrc_limit sysctl, or DefaultResourceLimit when it is absent or 0.
func (d *Device) ResourceLimit() int { return d.resourceLimit }

// SmallHeapBytes is the memory of the small-buffer heap (0 until the first
// buffer under 256 bytes, or on a device without heaps). The allocator's
// active memory counts each buffer's own bytes, heap sub-allocations
// included; add this for the device's whole footprint, as MLX's heap also
// holds its full size from the start.
func (d *Device) SmallHeapBytes() int64 { return d.provider.heapBytes() }

// macOSMajor is the running macOS's major version.
func macOSMajor() int { return int(C.ingot_macos_major()) }

// Provider makes the device's buffers for an alloc.Allocator. Every call
// returns the same provider, which is safe for concurrent use.
func (d *Device) Provider() alloc.Provider { return d.provider }
