// mslemu_simd.h: SIMD-group functions over 32-lane simdgroups.
//
// A call blocks its fiber; when the scheduler finds every fiber blocked it
// completes, per simdgroup, the call at the lowest source line among those
// lanes wait at, for the lanes waiting there (see mslemu_sched.h). Reductions
// combine those lanes pairwise in lane order. A shuffle from a lane that does
// not take part yields zero; simd_shuffle_down/up leave the lanes whose
// source falls outside the 32 lanes unchanged, as Metal documents.
#pragma once

namespace msl_detail {

template <class T> inline T lane_in(const Fiber* f) {
  T v;
  std::memcpy(&v, f->in, sizeof(T));
  return v;
}
template <class T> inline void lane_out(Fiber* f, const T& v) { std::memcpy(f->out, &v, sizeof(T)); }

// collective hands x to the scheduler and returns the lane's result, of
// type R (the type of x unless given).
template <class R = void, class T, class Out = std::conditional_t<std::is_void_v<R>, T, R>>
inline Out collective(const T& x, int arg, SimdExec exec, unsigned site) {
  static_assert(sizeof(T) <= kSimdSlot && sizeof(Out) <= kSimdSlot, "SIMD-group function value too large");
  static_assert(std::is_trivially_copyable_v<T>, "SIMD-group function argument must be trivially copyable");
  Fiber* f = g_current;
  if (!f) fatal("SIMD-group function called outside a kernel");
  std::memcpy(f->in, &x, sizeof(T));
  f->arg = arg;
  f->exec = exec;
  f->site = site;
  block(State::simd);
  Out r;
  std::memcpy(&r, f->out, sizeof(Out));
  return r;
}

struct OpSum { template <class T> static T apply(const T& a, const T& b) { return T(a + b); } };
struct OpProduct { template <class T> static T apply(const T& a, const T& b) { return T(a * b); } };
struct OpMax { template <class T> static T apply(const T& a, const T& b) { return metal::max(a, b); } };
struct OpMin { template <class T> static T apply(const T& a, const T& b) { return metal::min(a, b); } };
struct OpAnd { template <class T> static T apply(const T& a, const T& b) { return T(a & b); } };
struct OpOr { template <class T> static T apply(const T& a, const T& b) { return T(a | b); } };
struct OpXor { template <class T> static T apply(const T& a, const T& b) { return T(a ^ b); } };

template <class T, class Op> inline void exec_reduce(Fiber* const* lanes) {
  T v[kSimdWidth];
  int m = 0;
  for (int i = 0; i < kSimdWidth; i++)
    if (lanes[i]) v[m++] = lane_in<T>(lanes[i]);
  for (int stride = 1; stride < m; stride *= 2)
    for (int i = 0; i + stride < m; i += 2 * stride) v[i] = Op::apply(v[i], v[i + stride]);
  for (int i = 0; i < kSimdWidth; i++)
    if (lanes[i]) lane_out(lanes[i], v[0]);
}

template <class T, class Op, bool Inclusive> inline void exec_prefix(Fiber* const* lanes) {
  bool started = false;
  T acc{};
  for (int i = 0; i < kSimdWidth; i++) {
    if (!lanes[i]) continue;
    T x = lane_in<T>(lanes[i]);
    T before = started ? acc : T(0);
    acc = started ? Op::apply(acc, x) : x;
    started = true;
    lane_out(lanes[i], Inclusive ? acc : before);
  }
}

enum class Shuffle { index, down, up, xor_, rotate_down, rotate_up, broadcast_first };

template <class T, Shuffle K> inline void exec_shuffle(Fiber* const* lanes) {
  int first = -1;
  for (int i = 0; i < kSimdWidth && first < 0; i++)
    if (lanes[i]) first = i;
  for (int i = 0; i < kSimdWidth; i++) {
    if (!lanes[i]) continue;
    int a = lanes[i]->arg;
    int src = i;
    switch (K) {
      case Shuffle::index: src = a; break;
      case Shuffle::down: src = i + a < kSimdWidth ? i + a : i; break;
      case Shuffle::up: src = i - a >= 0 ? i - a : i; break;
      case Shuffle::xor_: src = i ^ a; break;
      case Shuffle::rotate_down: src = (i + a) % kSimdWidth; break;
      case Shuffle::rotate_up: src = ((i - a) % kSimdWidth + kSimdWidth) % kSimdWidth; break;
      case Shuffle::broadcast_first: src = first; break;
    }
    T v{};
    if (src >= 0 && src < kSimdWidth && lanes[src]) v = lane_in<T>(lanes[src]);
    lane_out(lanes[i], v);
  }
}

// Broadcast reads the source lane from the first taking part, since every
// lane must pass the same one.
template <class T> inline void exec_broadcast(Fiber* const* lanes) {
  int src = -1;
  for (int i = 0; i < kSimdWidth && src < 0; i++)
    if (lanes[i]) src = lanes[i]->arg;
  T v{};
  if (src >= 0 && src < kSimdWidth && lanes[src]) v = lane_in<T>(lanes[src]);
  for (int i = 0; i < kSimdWidth; i++)
    if (lanes[i]) lane_out(lanes[i], v);
}

inline void exec_vote(Fiber* const* lanes) {
  uint64_t mask = 0;
  for (int i = 0; i < kSimdWidth; i++)
    if (lanes[i] && lane_in<bool>(lanes[i])) mask |= uint64_t(1) << i;
  for (int i = 0; i < kSimdWidth; i++)
    if (lanes[i]) lane_out(lanes[i], mask);
}

inline void exec_active(Fiber* const* lanes) {
  uint64_t mask = 0;
  for (int i = 0; i < kSimdWidth; i++)
    if (lanes[i]) mask |= uint64_t(1) << i;
  for (int i = 0; i < kSimdWidth; i++)
    if (lanes[i]) lane_out(lanes[i], mask);
}

inline void exec_nothing(Fiber* const*) {}

}  // namespace msl_detail

namespace metal {

// simd_vote holds one bit per lane, as returned by simd_ballot.
struct simd_vote {
  using vote_t = uint64_t;
  vote_t v;
  explicit constexpr operator vote_t() const { return v; }
  constexpr bool all() const { return v == active; }
  constexpr bool any() const { return v != 0; }
  vote_t active;
};

#define MSL_SIMD_REDUCE(name, Op)                                                              \
  template <class T> inline T name(T x, unsigned site = __builtin_LINE()) {                    \
    return msl_detail::collective(x, 0, &msl_detail::exec_reduce<T, msl_detail::Op>, site);    \
  }
MSL_SIMD_REDUCE(simd_sum, OpSum)
MSL_SIMD_REDUCE(simd_product, OpProduct)
MSL_SIMD_REDUCE(simd_max, OpMax)
MSL_SIMD_REDUCE(simd_min, OpMin)
MSL_SIMD_REDUCE(simd_and, OpAnd)
MSL_SIMD_REDUCE(simd_or, OpOr)
MSL_SIMD_REDUCE(simd_xor, OpXor)
#undef MSL_SIMD_REDUCE

#define MSL_SIMD_PREFIX(name, Op, inclusive)                                                              \
  template <class T> inline T name(T x, unsigned site = __builtin_LINE()) {                               \
    return msl_detail::collective(x, 0, &msl_detail::exec_prefix<T, msl_detail::Op, inclusive>, site);    \
  }
MSL_SIMD_PREFIX(simd_prefix_exclusive_sum, OpSum, false)
MSL_SIMD_PREFIX(simd_prefix_inclusive_sum, OpSum, true)
MSL_SIMD_PREFIX(simd_prefix_exclusive_product, OpProduct, false)
MSL_SIMD_PREFIX(simd_prefix_inclusive_product, OpProduct, true)
#undef MSL_SIMD_PREFIX

#define MSL_SIMD_SHUFFLE(name, kind)                                                                  \
  template <class T> inline T name(T x, ushort a, unsigned site = __builtin_LINE()) {                 \
    return msl_detail::collective(x, int(a), &msl_detail::exec_shuffle<T, msl_detail::Shuffle::kind>, site); \
  }
MSL_SIMD_SHUFFLE(simd_shuffle, index)
MSL_SIMD_SHUFFLE(simd_shuffle_down, down)
MSL_SIMD_SHUFFLE(simd_shuffle_up, up)
MSL_SIMD_SHUFFLE(simd_shuffle_xor, xor_)
MSL_SIMD_SHUFFLE(simd_shuffle_rotate_down, rotate_down)
MSL_SIMD_SHUFFLE(simd_shuffle_rotate_up, rotate_up)
#undef MSL_SIMD_SHUFFLE

template <class T> inline T simd_broadcast(T x, ushort lane, unsigned site = __builtin_LINE()) {
  return msl_detail::collective(x, int(lane), &msl_detail::exec_broadcast<T>, site);
}
template <class T> inline T simd_broadcast_first(T x, unsigned site = __builtin_LINE()) {
  return msl_detail::collective(x, 0, &msl_detail::exec_shuffle<T, msl_detail::Shuffle::broadcast_first>, site);
}

inline simd_vote simd_active_threads_mask(unsigned site = __builtin_LINE()) {
  uint64_t m = msl_detail::collective(uint64_t(0), 0, &msl_detail::exec_active, site);
  return simd_vote{m, m};
}
inline simd_vote simd_ballot(bool b, unsigned site = __builtin_LINE()) {
  uint64_t active = msl_detail::collective(uint64_t(0), 0, &msl_detail::exec_active, site);
  uint64_t m = msl_detail::collective<uint64_t>(b, 0, &msl_detail::exec_vote, site);
  return simd_vote{m, active};
}
inline bool simd_all(bool b, unsigned site = __builtin_LINE()) { return simd_ballot(b, site).all(); }
inline bool simd_any(bool b, unsigned site = __builtin_LINE()) { return simd_ballot(b, site).any(); }
inline bool simd_is_first(unsigned site = __builtin_LINE()) {
  uint64_t m = msl_detail::collective(uint64_t(0), 0, &msl_detail::exec_active, site);
  return (m & (~m + 1)) == (uint64_t(1) << msl_detail::g_current->info.thread_index_in_simdgroup);
}

inline void simdgroup_barrier(mem_flags, unsigned site = __builtin_LINE()) {
  (void)msl_detail::collective(0, 0, &msl_detail::exec_nothing, site);
}

}  // namespace metal
