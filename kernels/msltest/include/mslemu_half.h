// mslemu_half.h: MSL's 16-bit float types on the CPU.
//
// half is IEEE binary16 and bfloat is the upper half of a binary32; both are
// stored as their bit patterns so that buffers keep Metal's byte layout.
// Arithmetic is done in float and rounded back after every operation; float's
// 24-bit significand makes that exactly the IEEE result for + - * / of halves.
#pragma once

namespace msl_detail {

constexpr uint32_t f32_bits(float f) { return __builtin_bit_cast(uint32_t, f); }
constexpr float f32_from_bits(uint32_t u) { return __builtin_bit_cast(float, u); }

// f32_to_f16 rounds to nearest, ties to even; overflow gives infinity and a
// NaN stays a quiet NaN.
constexpr uint16_t f32_to_f16(float f) {
  uint32_t x = f32_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xFFu;
  uint32_t man = x & 0x7FFFFFu;
  if (exp == 0xFF) {
    return uint16_t(sign | 0x7C00u | (man ? (0x200u | (man >> 13)) : 0u));
  }
  int e = int(exp) - 127 + 15;
  if (e >= 31) return uint16_t(sign | 0x7C00u);
  if (e <= 0) {
    if (e < -10) return uint16_t(sign);  // below half the smallest subnormal
    uint32_t m = man | 0x800000u;
    int shift = 14 - e;
    uint32_t r = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (r & 1u))) r++;
    return uint16_t(sign | r);  // a carry lands on the smallest normal
  }
  uint32_t r = (uint32_t(e) << 10) | (man >> 13);
  uint32_t rem = man & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) r++;  // carry may give inf
  return uint16_t(sign | r);
}

constexpr float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t man = h & 0x3FFu;
  if (exp == 0x1F) return f32_from_bits(sign | 0x7F800000u | (man << 13));
  if (exp == 0) {
    float v = float(man) * 5.9604644775390625e-8f;  // man * 2^-24, exact
    return sign ? -v : v;
  }
  return f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
}

// f32_to_bf16 rounds to nearest, ties to even; NaN stays a quiet NaN.
constexpr uint16_t f32_to_bf16(float f) {
  uint32_t x = f32_bits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((x >> 16) | 0x40u);
  x += 0x7FFFu + ((x >> 16) & 1u);
  return uint16_t(x >> 16);
}

constexpr float bf16_to_f32(uint16_t b) { return f32_from_bits(uint32_t(b) << 16); }

}  // namespace msl_detail

struct half {
  uint16_t bits;
  half() = default;
  constexpr half(float f) : bits(msl_detail::f32_to_f16(f)) {}
  constexpr half(double d) : bits(msl_detail::f32_to_f16(float(d))) {}
  template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
  constexpr half(T v) : bits(msl_detail::f32_to_f16(float(v))) {}
  constexpr operator float() const { return msl_detail::f16_to_f32(bits); }
  static constexpr half from_bits(uint16_t b) {
    half h{};
    h.bits = b;
    return h;
  }
};

struct bfloat {
  uint16_t bits;
  bfloat() = default;
  constexpr bfloat(float f) : bits(msl_detail::f32_to_bf16(f)) {}
  constexpr bfloat(double d) : bits(msl_detail::f32_to_bf16(float(d))) {}
  template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
  constexpr bfloat(T v) : bits(msl_detail::f32_to_bf16(float(v))) {}
  constexpr bfloat(half h) : bits(msl_detail::f32_to_bf16(float(h))) {}
  constexpr operator float() const { return msl_detail::bf16_to_f32(bits); }
  static constexpr bfloat from_bits(uint16_t b) {
    bfloat h{};
    h.bits = b;
    return h;
  }
};

static_assert(sizeof(half) == 2 && sizeof(bfloat) == 2, "16-bit floats must be 2 bytes");

namespace msl_detail {

template <class T> struct is_lowp : std::false_type {};
template <> struct is_lowp<half> : std::true_type {};
template <> struct is_lowp<bfloat> : std::true_type {};

// lowp_result gives the type of a binary operation with at least one 16-bit
// float operand, following C++'s usual conversions as MSL does: an integer
// operand converts to the 16-bit type, a float operand widens the result to
// float, and half mixed with bfloat computes in float.
template <class A, class B, class = void> struct lowp_result {};
template <class A, class B>
struct lowp_result<A, B,
                   std::enable_if_t<(is_lowp<A>::value || is_lowp<B>::value) &&
                                    (is_lowp<A>::value || std::is_arithmetic_v<A>) &&
                                    (is_lowp<B>::value || std::is_arithmetic_v<B>)>> {
  using type = std::conditional_t<
      std::is_same_v<A, B>, A,
      std::conditional_t<
          is_lowp<A>::value && std::is_integral_v<B>, A,
          std::conditional_t<is_lowp<B>::value && std::is_integral_v<A>, B, float>>>;
};
template <class A, class B> using lowp_result_t = typename lowp_result<A, B>::type;

// lowp_operand converts one operand to the type the operation computes in.
template <class R, class X> constexpr float lowp_operand(X x) {
  if constexpr (is_lowp<R>::value) {
    return float(R(x));
  } else {
    return float(x);
  }
}

}  // namespace msl_detail

#define MSL_LOWP_BINARY(op)                                                   \
  template <class A, class B, class R = msl_detail::lowp_result_t<A, B>>     \
  constexpr R operator op(A a, B b) {                                         \
    return R(msl_detail::lowp_operand<R>(a) op msl_detail::lowp_operand<R>(b)); \
  }                                                                           \
  template <class A, class B, class = msl_detail::lowp_result_t<A, B>,        \
            std::enable_if_t<msl_detail::is_lowp<A>::value, int> = 0>         \
  constexpr A& operator op##=(A& a, B b) {                                    \
    a = A(a op b);                                                            \
    return a;                                                                 \
  }
MSL_LOWP_BINARY(+)
MSL_LOWP_BINARY(-)
MSL_LOWP_BINARY(*)
MSL_LOWP_BINARY(/)
#undef MSL_LOWP_BINARY

#define MSL_LOWP_COMPARE(op)                                                  \
  template <class A, class B, class R = msl_detail::lowp_result_t<A, B>>     \
  constexpr bool operator op(A a, B b) {                                      \
    return msl_detail::lowp_operand<R>(a) op msl_detail::lowp_operand<R>(b);  \
  }
MSL_LOWP_COMPARE(==)
MSL_LOWP_COMPARE(!=)
MSL_LOWP_COMPARE(<)
MSL_LOWP_COMPARE(<=)
MSL_LOWP_COMPARE(>)
MSL_LOWP_COMPARE(>=)
#undef MSL_LOWP_COMPARE

constexpr half operator-(half h) { return half::from_bits(uint16_t(h.bits ^ 0x8000u)); }
constexpr half operator+(half h) { return h; }
constexpr bfloat operator-(bfloat h) { return bfloat::from_bits(uint16_t(h.bits ^ 0x8000u)); }
constexpr bfloat operator+(bfloat h) { return h; }

template <class T, std::enable_if_t<msl_detail::is_lowp<T>::value, int> = 0>
constexpr T& operator++(T& a) { return a += 1; }
template <class T, std::enable_if_t<msl_detail::is_lowp<T>::value, int> = 0>
constexpr T& operator--(T& a) { return a -= 1; }
template <class T, std::enable_if_t<msl_detail::is_lowp<T>::value, int> = 0>
constexpr T operator++(T& a, int) { T old = a; a += 1; return old; }
template <class T, std::enable_if_t<msl_detail::is_lowp<T>::value, int> = 0>
constexpr T operator--(T& a, int) { T old = a; a -= 1; return old; }
