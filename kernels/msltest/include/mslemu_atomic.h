// mslemu_atomic.h: MSL's atomic types and the *_explicit functions.
//
// Fibers only switch at barriers and SIMD-group functions and threadgroups
// run one at a time, so every operation here is atomic as plain code; the
// memory order is accepted and ignored.
#pragma once

namespace metal {

enum memory_order { memory_order_relaxed, memory_order_acquire, memory_order_release, memory_order_acq_rel, memory_order_seq_cst };

// msl_atomic is the storage of atomic_int, atomic_uint, atomic_bool and
// atomic_float: the bare value, as in a Metal buffer.
template <class T> struct msl_atomic {
  T value;
};
typedef msl_atomic<int> atomic_int;
typedef msl_atomic<uint> atomic_uint;
typedef msl_atomic<bool> atomic_bool;
typedef msl_atomic<float> atomic_float;

template <class T> inline void atomic_store_explicit(msl_atomic<T>* a, T v, memory_order) { a->value = v; }
template <class T> inline T atomic_load_explicit(const msl_atomic<T>* a, memory_order) { return a->value; }
template <class T> inline T atomic_exchange_explicit(msl_atomic<T>* a, T v, memory_order) {
  T old = a->value;
  a->value = v;
  return old;
}
template <class T>
inline bool atomic_compare_exchange_weak_explicit(msl_atomic<T>* a, T* expected, T desired, memory_order, memory_order) {
  if (a->value == *expected) {
    a->value = desired;
    return true;
  }
  *expected = a->value;
  return false;
}

#define MSL_ATOMIC_RMW(name, expr)                                                         \
  template <class T> inline T name(msl_atomic<T>* a, typename msl_detail::ident<T>::type v, memory_order) { \
    T old = a->value;                                                                      \
    a->value = (expr);                                                                     \
    return old;                                                                            \
  }
MSL_ATOMIC_RMW(atomic_fetch_add_explicit, T(old + v))
MSL_ATOMIC_RMW(atomic_fetch_sub_explicit, T(old - v))
MSL_ATOMIC_RMW(atomic_fetch_and_explicit, T(old & v))
MSL_ATOMIC_RMW(atomic_fetch_or_explicit, T(old | v))
MSL_ATOMIC_RMW(atomic_fetch_xor_explicit, T(old ^ v))
MSL_ATOMIC_RMW(atomic_fetch_max_explicit, max(old, v))
MSL_ATOMIC_RMW(atomic_fetch_min_explicit, min(old, v))
#undef MSL_ATOMIC_RMW

}  // namespace metal
