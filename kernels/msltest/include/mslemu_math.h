// mslemu_math.h: the part of MSL's metal namespace that kernels call for
// arithmetic: math functions for float, half, bfloat and their vectors,
// integer helpers, geometric helpers, as_type and numeric_limits.
//
// Results come from the C library in float (16-bit types round once at the
// end); they are accurate, unlike Metal's fast-math defaults, so compare with
// a tolerance where a kernel leans on exp/log/tanh.
#pragma once

namespace metal {

// MSL_MATH1 defines one float function for float, half, bfloat and vectors.
#define MSL_MATH1(name, expr)                                               \
  inline float name(float x) { return (expr); }                            \
  inline half name(half h) {                                               \
    float x = h;                                                            \
    return half(expr);                                                      \
  }                                                                         \
  inline bfloat name(bfloat h) {                                           \
    float x = h;                                                            \
    return bfloat(expr);                                                    \
  }                                                                         \
  template <class T, int N> inline vec<T, N> name(const vec<T, N>& v) {    \
    vec<T, N> r{};                                                          \
    for (int i = 0; i < N; i++) r[i] = name(v[i]);                          \
    return r;                                                               \
  }

MSL_MATH1(exp, std::exp(x))
MSL_MATH1(exp2, std::exp2(x))
MSL_MATH1(exp10, std::pow(10.0f, x))
MSL_MATH1(expm1, std::expm1(x))
MSL_MATH1(log, std::log(x))
MSL_MATH1(log2, std::log2(x))
MSL_MATH1(log10, std::log10(x))
MSL_MATH1(log1p, std::log1p(x))
MSL_MATH1(sqrt, std::sqrt(x))
MSL_MATH1(rsqrt, 1.0f / std::sqrt(x))
MSL_MATH1(fabs, std::fabs(x))
MSL_MATH1(floor, std::floor(x))
MSL_MATH1(ceil, std::ceil(x))
MSL_MATH1(round, std::round(x))
MSL_MATH1(rint, std::rint(x))
MSL_MATH1(trunc, std::trunc(x))
MSL_MATH1(sin, std::sin(x))
MSL_MATH1(cos, std::cos(x))
MSL_MATH1(tan, std::tan(x))
MSL_MATH1(asin, std::asin(x))
MSL_MATH1(acos, std::acos(x))
MSL_MATH1(atan, std::atan(x))
MSL_MATH1(sinh, std::sinh(x))
MSL_MATH1(cosh, std::cosh(x))
MSL_MATH1(tanh, std::tanh(x))
MSL_MATH1(asinh, std::asinh(x))
MSL_MATH1(acosh, std::acosh(x))
MSL_MATH1(atanh, std::atanh(x))
MSL_MATH1(fract, std::fmin(x - std::floor(x), 0x1.fffffep-1f))
MSL_MATH1(saturate, std::fmin(std::fmax(x, 0.0f), 1.0f))
MSL_MATH1(sign, (x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : std::isnan(x) ? 0.0f : x))
#undef MSL_MATH1

// MSL_MATH2 defines a two-argument float function the same way.
#define MSL_MATH2(name, expr)                                                      \
  inline float name(float x, float y) { return (expr); }                          \
  inline half name(half a, half b) {                                              \
    float x = a, y = b;                                                            \
    return half(expr);                                                             \
  }                                                                                \
  inline bfloat name(bfloat a, bfloat b) {                                        \
    float x = a, y = b;                                                            \
    return bfloat(expr);                                                           \
  }                                                                                \
  template <class T, int N>                                                        \
  inline vec<T, N> name(const vec<T, N>& a, const vec<T, N>& b) {                 \
    vec<T, N> r{};                                                                 \
    for (int i = 0; i < N; i++) r[i] = name(a[i], b[i]);                           \
    return r;                                                                      \
  }                                                                                \
  template <class T, int N>                                                        \
  inline vec<T, N> name(const vec<T, N>& a, typename msl_detail::ident<T>::type b) { \
    vec<T, N> r{};                                                                 \
    for (int i = 0; i < N; i++) r[i] = name(a[i], b);                              \
    return r;                                                                      \
  }

MSL_MATH2(pow, std::pow(x, y))
MSL_MATH2(powr, std::pow(x, y))
MSL_MATH2(atan2, std::atan2(x, y))
MSL_MATH2(fmod, std::fmod(x, y))
MSL_MATH2(copysign, std::copysign(x, y))
MSL_MATH2(fdim, std::fdim(x, y))
MSL_MATH2(fmax, std::fmax(x, y))
MSL_MATH2(fmin, std::fmin(x, y))
MSL_MATH2(step, (y < x ? 0.0f : 1.0f))
#undef MSL_MATH2

// max and min exist for every scalar type; on floats they ignore a NaN
// operand like fmax/fmin.
#define MSL_MINMAX(T)                                                  \
  inline T max(T a, T b) { return a < b ? b : a; }                     \
  inline T min(T a, T b) { return b < a ? b : a; }
MSL_MINMAX(char)
MSL_MINMAX(uchar)
MSL_MINMAX(short)
MSL_MINMAX(ushort)
MSL_MINMAX(int)
MSL_MINMAX(uint)
MSL_MINMAX(long)
MSL_MINMAX(ulong)
#undef MSL_MINMAX
inline float max(float a, float b) { return fmax(a, b); }
inline float min(float a, float b) { return fmin(a, b); }
inline half max(half a, half b) { return fmax(a, b); }
inline half min(half a, half b) { return fmin(a, b); }
inline bfloat max(bfloat a, bfloat b) { return fmax(a, b); }
inline bfloat min(bfloat a, bfloat b) { return fmin(a, b); }
template <class T, int N> inline vec<T, N> max(const vec<T, N>& a, const vec<T, N>& b) {
  vec<T, N> r{};
  for (int i = 0; i < N; i++) r[i] = max(a[i], b[i]);
  return r;
}
template <class T, int N> inline vec<T, N> min(const vec<T, N>& a, const vec<T, N>& b) {
  vec<T, N> r{};
  for (int i = 0; i < N; i++) r[i] = min(a[i], b[i]);
  return r;
}
template <class T, int N> inline vec<T, N> max(const vec<T, N>& a, typename msl_detail::ident<T>::type b) {
  return max(a, vec<T, N>(b));
}
template <class T, int N> inline vec<T, N> min(const vec<T, N>& a, typename msl_detail::ident<T>::type b) {
  return min(a, vec<T, N>(b));
}

template <class T> inline T clamp(T x, typename msl_detail::ident<T>::type lo, typename msl_detail::ident<T>::type hi) {
  return min(max(x, lo), hi);
}

// abs: the C library's int abs is reused so that abs(int) is not ambiguous
// after `using namespace metal`.
using ::abs;
inline float abs(float x) { return std::fabs(x); }
inline half abs(half x) { return half::from_bits(uint16_t(x.bits & 0x7FFFu)); }
inline bfloat abs(bfloat x) { return bfloat::from_bits(uint16_t(x.bits & 0x7FFFu)); }
inline short abs(short x) { return short(x < 0 ? -x : x); }
inline char abs(char x) { return char(x < 0 ? -x : x); }
inline long abs(long x) { return x < 0 ? -x : x; }
template <class T, int N> inline vec<T, N> abs(const vec<T, N>& v) {
  vec<T, N> r{};
  for (int i = 0; i < N; i++) r[i] = abs(v[i]);
  return r;
}

inline float fma(float a, float b, float c) { return std::fma(a, b, c); }
inline half fma(half a, half b, half c) { return half(std::fma(float(a), float(b), float(c))); }
template <class T, int N> inline vec<T, N> fma(const vec<T, N>& a, const vec<T, N>& b, const vec<T, N>& c) {
  vec<T, N> r{};
  for (int i = 0; i < N; i++) r[i] = fma(a[i], b[i], c[i]);
  return r;
}

template <class T> inline T mix(T x, T y, typename msl_detail::ident<T>::type a) { return x + (y - x) * a; }

inline bool isnan(float x) { return std::isnan(x); }
inline bool isinf(float x) { return std::isinf(x); }
inline bool isfinite(float x) { return std::isfinite(x); }
inline bool signbit(float x) { return std::signbit(x); }
inline bool isnan(half x) { return std::isnan(float(x)); }
inline bool isinf(half x) { return std::isinf(float(x)); }
inline bool isfinite(half x) { return std::isfinite(float(x)); }
inline bool isnan(bfloat x) { return std::isnan(float(x)); }
inline bool isinf(bfloat x) { return std::isinf(float(x)); }
inline bool isfinite(bfloat x) { return std::isfinite(float(x)); }
template <class T, int N> inline vec<bool, N> isnan(const vec<T, N>& v) {
  vec<bool, N> r{};
  for (int i = 0; i < N; i++) r[i] = isnan(v[i]);
  return r;
}
template <class T, int N> inline vec<bool, N> isinf(const vec<T, N>& v) {
  vec<bool, N> r{};
  for (int i = 0; i < N; i++) r[i] = isinf(v[i]);
  return r;
}

// select(a, b, c) is c ? b : a, per component for vectors.
template <class T> inline T select(T a, T b, bool c) { return c ? b : a; }
template <class T, int N> inline vec<T, N> select(const vec<T, N>& a, const vec<T, N>& b, const vec<bool, N>& c) {
  vec<T, N> r{};
  for (int i = 0; i < N; i++) r[i] = c[i] ? b[i] : a[i];
  return r;
}

template <int N> inline bool all(const vec<bool, N>& v) {
  for (int i = 0; i < N; i++)
    if (!v[i]) return false;
  return true;
}
template <int N> inline bool any(const vec<bool, N>& v) {
  for (int i = 0; i < N; i++)
    if (v[i]) return true;
  return false;
}
inline bool all(bool b) { return b; }
inline bool any(bool b) { return b; }

template <class T, int N> inline T dot(const vec<T, N>& a, const vec<T, N>& b) {
  T s = a[0] * b[0];
  for (int i = 1; i < N; i++) s = T(s + a[i] * b[i]);
  return s;
}
template <class T, int N> inline T length(const vec<T, N>& a) { return sqrt(dot(a, a)); }
template <class T, int N> inline vec<T, N> normalize(const vec<T, N>& a) { return a * rsqrt(dot(a, a)); }
template <class T, int N> inline T distance(const vec<T, N>& a, const vec<T, N>& b) { return length(a - b); }
template <class T> inline vec<T, 3> cross(const vec<T, 3>& a, const vec<T, 3>& b) {
  return vec<T, 3>(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}

// as_type reinterprets the bits of a value of the same size.
template <class To, class From> inline To as_type(const From& f) {
  static_assert(sizeof(To) == sizeof(From), "as_type needs types of the same size");
  To t;
  std::memcpy(&t, &f, sizeof(To));
  return t;
}

// precise:: and fast:: carry the same functions; the emulation is always precise.
namespace precise {
using metal::acos; using metal::asin; using metal::atan; using metal::atan2;
using metal::ceil; using metal::cos; using metal::cosh; using metal::exp;
using metal::exp10; using metal::exp2; using metal::fabs; using metal::floor;
using metal::fmax; using metal::fmin; using metal::fmod; using metal::fract;
using metal::log; using metal::log10; using metal::log2; using metal::pow;
using metal::powr; using metal::rint; using metal::round; using metal::rsqrt;
using metal::sin; using metal::sinh; using metal::sqrt; using metal::tan;
using metal::tanh; using metal::trunc; using metal::max; using metal::min;
using metal::clamp; using metal::log1p; using metal::expm1; using metal::abs;
}  // namespace precise
namespace fast {
using namespace metal::precise;
}  // namespace fast

template <class T> struct numeric_limits : std::numeric_limits<T> {};
template <> struct numeric_limits<half> {
  static constexpr bool is_specialized = true;
  static constexpr int digits = 11;
  static constexpr half min() { return half::from_bits(0x0400); }
  static constexpr half max() { return half::from_bits(0x7BFF); }
  static constexpr half lowest() { return half::from_bits(0xFBFF); }
  static constexpr half epsilon() { return half::from_bits(0x1400); }
  static constexpr half infinity() { return half::from_bits(0x7C00); }
  static constexpr half quiet_NaN() { return half::from_bits(0x7E00); }
  static constexpr half denorm_min() { return half::from_bits(0x0001); }
};
template <> struct numeric_limits<bfloat> {
  static constexpr bool is_specialized = true;
  static constexpr int digits = 8;
  static constexpr bfloat min() { return bfloat::from_bits(0x0080); }
  static constexpr bfloat max() { return bfloat::from_bits(0x7F7F); }
  static constexpr bfloat lowest() { return bfloat::from_bits(0xFF7F); }
  static constexpr bfloat epsilon() { return bfloat::from_bits(0x3C00); }
  static constexpr bfloat infinity() { return bfloat::from_bits(0x7F80); }
  static constexpr bfloat quiet_NaN() { return bfloat::from_bits(0x7FC0); }
  static constexpr bfloat denorm_min() { return bfloat::from_bits(0x0001); }
};

// The type traits MSL re-exports from its <metal_type_traits>.
template <class T> struct is_floating_point
    : std::integral_constant<bool, std::is_floating_point_v<T> || msl_detail::is_lowp<T>::value> {};
template <class T> constexpr bool is_floating_point_v = is_floating_point<T>::value;
using std::conditional; using std::conditional_t; using std::enable_if;
using std::enable_if_t; using std::is_integral;
using std::is_same; using std::is_same_v; using std::is_signed;
using std::is_unsigned; using std::remove_const_t; using std::remove_cv_t;
using std::is_convertible_v; using std::is_integral_v; using std::integral_constant;

}  // namespace metal

#define M_PI_F 3.14159265358979323846f
#define M_E_F 2.71828182845904523536f
#define M_LN2_F 0.693147180559945309417f
#define M_LOG2E_F 1.44269504088896340736f
#define M_SQRT2_F 1.41421356237309504880f
#ifndef MAXFLOAT
#define MAXFLOAT FLT_MAX
#endif
#define HALF_MAX 65504.0f
#define HALF_MIN 6.103515625e-05f
