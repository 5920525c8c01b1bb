// mslemu_vec.h: MSL vector types (float4, uint2, half4, ...).
//
// Sizes and alignments follow Metal: a 3-vector takes the room of a 4-vector.
// Components are read and written as .x .y .z .w (or v[i]), plus .xy of 3-
// and 4-vectors and .zw of 4-vectors; other swizzles (.xyz, .yx, ...) are
// not emulated.
#pragma once

namespace msl_detail {

template <class T, int N> struct vstore;
template <class T> struct alignas(2 * sizeof(T)) vstore<T, 2> {
  T x, y;
  constexpr T& at(int i) { return i == 0 ? x : y; }
  constexpr const T& at(int i) const { return i == 0 ? x : y; }
};

}  // namespace msl_detail

template <class T, int N> struct vec;

namespace msl_detail {

// The 3- and 4-vectors overlay .xy (and .zw) on their components, so those
// two swizzles read and write like MSL's; the anonymous struct in a union is
// a GNU extension that g++ accepts.
template <class T> struct alignas(4 * sizeof(T)) vstore<T, 3> {
  union {
    struct {
      T x, y, z;
    };
    vec<T, 2> xy;
  };
  constexpr T& at(int i) { return i == 0 ? x : i == 1 ? y : z; }
  constexpr const T& at(int i) const { return i == 0 ? x : i == 1 ? y : z; }
};
template <class T> struct alignas(4 * sizeof(T)) vstore<T, 4> {
  union {
    struct {
      T x, y, z, w;
    };
    struct {
      vec<T, 2> xy, zw;
    };
  };
  constexpr T& at(int i) { return i == 0 ? x : i == 1 ? y : i == 2 ? z : w; }
  constexpr const T& at(int i) const { return i == 0 ? x : i == 1 ? y : i == 2 ? z : w; }
};

template <class T> struct is_scalar : std::integral_constant<bool, std::is_arithmetic_v<T> || is_lowp<T>::value> {};

template <class T> struct vec_traits { static constexpr int n = 1; };
template <class T, int N> struct vec_traits<vec<T, N>> { static constexpr int n = N; };
template <class... A> constexpr int total_components() { return (0 + ... + vec_traits<A>::n); }
}  // namespace msl_detail

template <class T, int N> struct vec : msl_detail::vstore<T, N> {
  using value_type = T;
  static constexpr int size = N;

  vec() = default;
  // A scalar fills every component, as MSL's float4(x) does.
  template <class S, std::enable_if_t<msl_detail::is_scalar<S>::value, int> = 0>
  constexpr vec(S s) : msl_detail::vstore<T, N>{} {
    for (int i = 0; i < N; i++) this->at(i) = T(s);
  }
  // Scalars and vectors concatenated, e.g. float4(float2, float, float).
  template <class A0, class A1, class... A,
            std::enable_if_t<msl_detail::total_components<A0, A1, A...>() == N, int> = 0>
  constexpr vec(const A0& a0, const A1& a1, const A&... a) : msl_detail::vstore<T, N>{} {
    int i = 0;
    fill(i, a0);
    fill(i, a1);
    (fill(i, a), ...);
  }
  // Element type conversion must be spelled out, as in MSL: float4(int4).
  template <class U, std::enable_if_t<!std::is_same_v<U, T>, int> = 0>
  constexpr explicit vec(const vec<U, N>& o) : msl_detail::vstore<T, N>{} {
    for (int i = 0; i < N; i++) this->at(i) = T(o.at(i));
  }

  constexpr T& operator[](int i) { return this->at(i); }
  constexpr const T& operator[](int i) const { return this->at(i); }

 private:
  template <class S> constexpr void fill(int& i, const S& s) {
    if constexpr (msl_detail::vec_traits<S>::n == 1) {
      this->at(i++) = T(s);
    } else {
      for (int k = 0; k < msl_detail::vec_traits<S>::n; k++) this->at(i++) = T(s.at(k));
    }
  }
};

namespace msl_detail {
template <class T> struct ident { using type = T; };
}

#define MSL_VEC_BINARY(op)                                                              \
  template <class T, int N>                                                             \
  constexpr vec<T, N> operator op(const vec<T, N>& a, const vec<T, N>& b) {             \
    vec<T, N> r{};                                                                      \
    for (int i = 0; i < N; i++) r[i] = T(a[i] op b[i]);                                 \
    return r;                                                                           \
  }                                                                                     \
  template <class T, int N>                                                             \
  constexpr vec<T, N> operator op(const vec<T, N>& a, typename msl_detail::ident<T>::type s) { \
    vec<T, N> r{};                                                                      \
    for (int i = 0; i < N; i++) r[i] = T(a[i] op s);                                    \
    return r;                                                                           \
  }                                                                                     \
  template <class T, int N>                                                             \
  constexpr vec<T, N> operator op(typename msl_detail::ident<T>::type s, const vec<T, N>& b) { \
    vec<T, N> r{};                                                                      \
    for (int i = 0; i < N; i++) r[i] = T(s op b[i]);                                    \
    return r;                                                                           \
  }                                                                                     \
  template <class T, int N>                                                             \
  constexpr vec<T, N>& operator op##=(vec<T, N>& a, const vec<T, N>& b) {               \
    a = a op b;                                                                         \
    return a;                                                                           \
  }                                                                                     \
  template <class T, int N>                                                             \
  constexpr vec<T, N>& operator op##=(vec<T, N>& a, typename msl_detail::ident<T>::type s) { \
    a = a op s;                                                                         \
    return a;                                                                           \
  }
MSL_VEC_BINARY(+)
MSL_VEC_BINARY(-)
MSL_VEC_BINARY(*)
MSL_VEC_BINARY(/)
MSL_VEC_BINARY(%)
MSL_VEC_BINARY(&)
MSL_VEC_BINARY(|)
MSL_VEC_BINARY(^)
MSL_VEC_BINARY(<<)
MSL_VEC_BINARY(>>)
#undef MSL_VEC_BINARY

#define MSL_VEC_COMPARE(op)                                                             \
  template <class T, int N>                                                             \
  constexpr vec<bool, N> operator op(const vec<T, N>& a, const vec<T, N>& b) {          \
    vec<bool, N> r{};                                                                   \
    for (int i = 0; i < N; i++) r[i] = a[i] op b[i];                                    \
    return r;                                                                           \
  }                                                                                     \
  template <class T, int N>                                                             \
  constexpr vec<bool, N> operator op(const vec<T, N>& a, typename msl_detail::ident<T>::type s) { \
    vec<bool, N> r{};                                                                   \
    for (int i = 0; i < N; i++) r[i] = a[i] op s;                                       \
    return r;                                                                           \
  }                                                                                     \
  template <class T, int N>                                                             \
  constexpr vec<bool, N> operator op(typename msl_detail::ident<T>::type s, const vec<T, N>& b) { \
    vec<bool, N> r{};                                                                   \
    for (int i = 0; i < N; i++) r[i] = s op b[i];                                       \
    return r;                                                                           \
  }
MSL_VEC_COMPARE(==)
MSL_VEC_COMPARE(!=)
MSL_VEC_COMPARE(<)
MSL_VEC_COMPARE(<=)
MSL_VEC_COMPARE(>)
MSL_VEC_COMPARE(>=)
MSL_VEC_COMPARE(&&)
MSL_VEC_COMPARE(||)
#undef MSL_VEC_COMPARE

template <class T, int N> constexpr vec<T, N> operator-(const vec<T, N>& a) {
  vec<T, N> r{};
  for (int i = 0; i < N; i++) r[i] = T(-a[i]);
  return r;
}
template <class T, int N> constexpr vec<T, N> operator+(const vec<T, N>& a) { return a; }
template <class T, int N> constexpr vec<T, N> operator~(const vec<T, N>& a) {
  vec<T, N> r{};
  for (int i = 0; i < N; i++) r[i] = T(~a[i]);
  return r;
}
template <class T, int N> constexpr vec<bool, N> operator!(const vec<T, N>& a) {
  vec<bool, N> r{};
  for (int i = 0; i < N; i++) r[i] = !a[i];
  return r;
}

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;

#define MSL_VEC_NAMES(T, name) \
  typedef vec<T, 2> name##2;   \
  typedef vec<T, 3> name##3;   \
  typedef vec<T, 4> name##4;
MSL_VEC_NAMES(float, float)
MSL_VEC_NAMES(half, half)
MSL_VEC_NAMES(bfloat, bfloat)
MSL_VEC_NAMES(int, int)
MSL_VEC_NAMES(uint, uint)
MSL_VEC_NAMES(short, short)
MSL_VEC_NAMES(ushort, ushort)
MSL_VEC_NAMES(char, char)
MSL_VEC_NAMES(uchar, uchar)
MSL_VEC_NAMES(bool, bool)
MSL_VEC_NAMES(long, long)
MSL_VEC_NAMES(ulong, ulong)
#undef MSL_VEC_NAMES

static_assert(sizeof(float3) == 16 && alignof(float3) == 16, "float3 must use Metal's layout");
static_assert(sizeof(half4) == 8 && sizeof(float2) == 8, "vector sizes must match Metal");
