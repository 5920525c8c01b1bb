// mslemu.h: enough of the Metal Shading Language to compile a .metal file
// with g++ (C++17) and run its kernels on the CPU.
//
// Package msltest includes this before the kernel source; see its doc.go for
// the rules a kernel must follow. The pieces:
//   mslemu_half.h   half and bfloat
//   mslemu_vec.h    float4, uint3, ... and scalar names (uint, ushort, uchar)
//   mslemu_math.h   metal:: math, precise:: and fast::, as_type, numeric_limits
//   mslemu_sched.h  threads as fibers, threadgroup_barrier, threadgroup memory
//   mslemu_simd.h   SIMD-group functions and simdgroup_barrier
//   mslemu_atomic.h atomic_int, atomic_uint, atomic_float and their functions
// The address-space qualifiers are defined away below. `threadgroup` is not a
// macro: msltest rewrites each use, to `static` for a threadgroup variable and
// to nothing for a pointer or reference into threadgroup memory.
#pragma once

#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>
#include <algorithm>
#include <limits>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "mslemu_half.h"
#include "mslemu_vec.h"
#include "mslemu_math.h"
#include "mslemu_sched.h"
#include "mslemu_simd.h"
#include "mslemu_atomic.h"

// msl_bool is a bool in device, constant or threadgroup memory (msltest
// rewrites those declarations to it): a load keeps the byte's low bit, so a
// kernel that reads a byte other than 0 or 1 as bool sees what a GPU may.
struct msl_bool {
  unsigned char v;
  operator bool() const { return v & 1; }
  msl_bool& operator=(bool b) {
    v = b;
    return *this;
  }
};

#define device
#define constant
#define thread
#define kernel
