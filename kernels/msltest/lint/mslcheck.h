// mslcheck.h: the MSL address-space lint's view of the Metal Shading Language.
//
// Package msltest's Lint compiles a family's MSL with clang (-fsyntax-only) after
// this header. Unlike the emulation header it keeps the address spaces: device,
// constant and threadgroup are clang address spaces 1, 2 and 3, so a pointer or
// reference without one, threadgroup memory handed to a device pointer, or a
// device pointer passed where a plain one is expected does not compile. double is
// poisoned. The library is declared, not defined; half is clang's __fp16 and bfloat
// another 16-bit builtin, so that loads from any address space convert.
#pragma once

#define device __attribute__((address_space(1)))
#define constant __attribute__((address_space(2)))
#define threadgroup __attribute__((address_space(3)))
#define thread
#define kernel
#pragma GCC poison double

#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")
#define FLT_MAX 3.402823466e+38f
#define FLT_MIN 1.175494351e-38f
#define HUGE_VALF __builtin_huge_valf()

typedef __fp16 half;
typedef char16_t bfloat;
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned char uchar;
typedef unsigned long ulong;
typedef decltype(sizeof(0)) size_t;

namespace metal {
template <typename T, int N> struct vec;
template <typename T> struct vec<T, 3> { T x, y, z; vec() = default; vec(T a, T b, T c) : x(a), y(b), z(c) {} };
// 2- and 4-vectors copy from any address space, as in MSL (float4 v = devicePtr[i]).
#define MSLCHECK_VEC2_FROM(AS) \
    vec(const AS vec& o) : x(o.x), y(o.y) {}
template <typename T> struct vec<T, 2> {
    T x, y;
    vec() = default;
    vec(const vec&) = default;
    vec& operator=(const vec&) = default;
    vec(T a, T b) : x(a), y(b) {}
    MSLCHECK_VEC2_FROM(device)
    MSLCHECK_VEC2_FROM(constant)
    MSLCHECK_VEC2_FROM(threadgroup)
};
#define MSLCHECK_VEC4_FROM(AS) \
    vec(const AS vec& o) : x(o.x), y(o.y), z(o.z), w(o.w) {}
template <typename T> struct vec<T, 4> {
    T x, y, z, w;
    vec() = default;
    vec(const vec&) = default;
    vec& operator=(const vec&) = default;
    vec(T a, T b, T c, T d) : x(a), y(b), z(c), w(d) {}
    MSLCHECK_VEC4_FROM(device)
    MSLCHECK_VEC4_FROM(constant)
    MSLCHECK_VEC4_FROM(threadgroup)
};
typedef vec<uint, 2> uint2;
typedef vec<uint, 3> uint3;
typedef vec<uint, 4> uint4;
typedef vec<int, 2> int2;
typedef vec<int, 3> int3;
typedef vec<float, 2> float2;
typedef vec<float, 4> float4;

// Atomics: device memory only (the error word), so a threadgroup or plain pointer
// handed to them does not compile.
enum memory_order { memory_order_relaxed };
struct atomic_uint { uint v; };
uint atomic_fetch_max_explicit(device atomic_uint*, uint, memory_order);
void atomic_store_explicit(device atomic_uint*, uint, memory_order);
uint atomic_load_explicit(device atomic_uint*, memory_order);

enum class mem_flags { mem_none = 0, mem_device = 1, mem_threadgroup = 2 };
void threadgroup_barrier(mem_flags);
void simdgroup_barrier(mem_flags);

template <typename T> T exp(T);
template <typename T> T exp2(T);
template <typename T> T log(T);
template <typename T> T log1p(T);
template <typename T> T sqrt(T);
template <typename T> T rsqrt(T);
template <typename T> T fabs(T);
template <typename T> T abs(T);
template <typename T> T sin(T);
template <typename T> T cos(T);
template <typename T> T tanh(T);
template <typename T> T floor(T);
template <typename T> T ceil(T);
template <typename T> T round(T);
template <typename T> T trunc(T);
template <typename T> T fma(T, T, T);
template <typename T> T pow(T, T);
template <typename T> T min(T, T);
template <typename T> T max(T, T);
template <typename T> T fmin(T, T);
template <typename T> T fmax(T, T);
template <typename T> T clamp(T, T, T);
template <typename T> T select(T, T, bool);
template <typename T> bool isnan(T);
template <typename T> bool isinf(T);
template <typename T> bool isfinite(T);
template <typename T> bool signbit(T);
template <typename To, typename From> To as_type(From);

namespace precise {
template <typename T> T sin(T);
template <typename T> T cos(T);
template <typename T> T exp(T);
template <typename T> T log(T);
template <typename T> T sqrt(T);
template <typename T> T rsqrt(T);
template <typename T> T tanh(T);
}  // namespace precise
namespace fast {
template <typename T> T exp(T);
template <typename T> T log(T);
}  // namespace fast

template <typename T> T simd_sum(T);
template <typename T> T simd_product(T);
template <typename T> T simd_max(T);
template <typename T> T simd_min(T);
template <typename T> T simd_prefix_exclusive_sum(T);
template <typename T> T simd_prefix_inclusive_sum(T);
template <typename T> T simd_shuffle(T, ushort);
template <typename T> T simd_shuffle_xor(T, ushort);
template <typename T> T simd_shuffle_down(T, ushort);
template <typename T> T simd_shuffle_up(T, ushort);
template <typename T> T simd_broadcast(T, ushort);
template <typename T> T simd_broadcast_first(T);

template <typename T> struct numeric_limits {
  static constexpr T max();
  static constexpr T min();
  static constexpr T lowest();
  static constexpr T infinity();
  static constexpr T quiet_NaN();
};
}  // namespace metal
