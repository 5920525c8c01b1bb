// mslemu_sched.h: threads of a threadgroup as cooperative fibers.
//
// Each thread of a threadgroup is a ucontext fiber. The scheduler runs every
// ready fiber, round robin in thread_index_in_threadgroup order, until it
// finishes or blocks in threadgroup_barrier, simdgroup_barrier or a SIMD-group
// function. When all fibers of the group are blocked it first completes the
// SIMD-group functions (each simdgroup's waiting lanes meet; lanes at another
// call site or at a barrier do not take part, like inactive lanes on a GPU),
// and only when none is pending it releases the barrier. When a simdgroup's
// lanes wait at different call sites (divergent code), the call at the
// lowest source line goes first: code after a branch comes later in the
// file, so lanes that left the branch wait there for the others, as they
// reconverge on a GPU (helpers holding SIMD calls should be defined above
// their callers, as C++ needs anyway). Threads that already
// returned do not hold a barrier up. Threadgroups run one after another, so
// threadgroup variables live in static storage that each group reuses.
#pragma once

namespace msl_detail {

constexpr int kSimdWidth = 32;
constexpr int kMaxThreadsPerGroup = 1024;
constexpr size_t kThreadgroupMemoryLimit = 32768;
constexpr size_t kFiberStack = 256 * 1024;

struct ThreadInfo {
  uint3 thread_position_in_grid;
  uint3 thread_position_in_threadgroup;
  uint3 threadgroup_position_in_grid;
  uint3 threads_per_threadgroup;
  uint3 dispatch_threads_per_threadgroup;
  uint3 threadgroups_per_grid;
  uint3 threads_per_grid;
  uint thread_index_in_threadgroup;
  uint thread_index_in_simdgroup;
  uint simdgroup_index_in_threadgroup;
  uint simdgroups_per_threadgroup;
};

enum class State { ready, barrier, simd, done };

struct Fiber;
// A SimdExec completes one SIMD-group function: lanes[i] is lane i's fiber,
// or null when lane i does not take part.
using SimdExec = void (*)(Fiber* const* lanes);

constexpr size_t kSimdSlot = 64;

struct Fiber {
  ucontext_t ctx;  // used once, to start the fiber on its own stack
  jmp_buf jb;      // where it continues after blocking
  bool started;
  ThreadInfo info;
  State state;
  SimdExec exec;
  unsigned site;  // source line of the SIMD call, to keep call sites apart
  int arg;
  alignas(16) unsigned char in[kSimdSlot];
  alignas(16) unsigned char out[kSimdSlot];
};

using EntryFn = void (*)(const ThreadInfo&);

inline Fiber* g_current = nullptr;
inline ucontext_t g_sched_ctx;
// Switches after a fiber's start use _setjmp/_longjmp, which (unlike
// swapcontext) make no signal-mask system call: a dispatch may switch
// millions of times. g_sched_jb is where the scheduler waits.
inline jmp_buf g_sched_jb;
inline EntryFn g_entry = nullptr;
inline const char* g_kernel_name = "";

// g_order is the order in which the scheduler resumes ready fibers between
// barriers: 0 by thread index, 1 reversed, 2 shuffled afresh each round
// (next_random, defined by the driver); 3 and 4 run one SIMD group at a time,
// forward or reversed, each alone until all its lanes wait at a threadgroup
// barrier or are done (run_group_serial). A kernel whose result depends on it
// has a race that a GPU may or may not show.
inline uint32_t g_order = 0;
inline uint64_t next_random();

// fatal reports a broken kernel (with the running thread) and exits.
[[noreturn]] inline void fatal(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(stderr, "msltest: kernel %s: ", g_kernel_name);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  if (g_current) {
    const uint3& p = g_current->info.thread_position_in_grid;
    std::fprintf(stderr, " (thread_position_in_grid %u,%u,%u)", p.x, p.y, p.z);
  }
  std::fprintf(stderr, "\n");
  std::fflush(stderr);
  std::_Exit(3);
}

inline void block(State s) {
  Fiber* f = g_current;
  if (!f) fatal("barrier or SIMD-group function called outside a kernel");
  f->state = s;
  if (!_setjmp(f->jb)) _longjmp(g_sched_jb, 1);
}

// Threadgroup variables are registered by the rewritten declaration each time
// a thread passes it; the first thread of a group fills the storage with 0xFF
// bytes (NaN for floats) so that reading memory no thread wrote shows up, and
// the total is checked against Metal's 32 KiB.
struct TgRegion {
  void* p;
  size_t n;
  unsigned epoch;
};
inline TgRegion g_tg[256];
inline int g_tg_count = 0;
inline unsigned g_epoch = 0;
inline size_t g_tg_bytes = 0;

inline void tg_register(void* p, size_t n) {
  TgRegion* r = nullptr;
  for (int i = 0; i < g_tg_count; i++)
    if (g_tg[i].p == p) r = &g_tg[i];
  if (!r) {
    if (g_tg_count == int(sizeof(g_tg) / sizeof(g_tg[0]))) fatal("too many threadgroup variables");
    r = &g_tg[g_tg_count++];
    *r = TgRegion{p, n, 0};
  }
  if (r->epoch == g_epoch) return;
  r->epoch = g_epoch;
  std::memset(p, 0xFF, n);
  g_tg_bytes += n;
  if (g_tg_bytes > kThreadgroupMemoryLimit)
    fatal("threadgroup memory of %zu bytes exceeds Metal's %zu", g_tg_bytes, kThreadgroupMemoryLimit);
}

// Fiber stacks come from one mapping with a PROT_NONE guard page below each
// stack, so an overflow faults instead of corrupting a neighbour.
struct StackPool {
  unsigned char* base = nullptr;
  size_t page = 0;
  int count = 0;
  size_t slot() const { return kFiberStack + page; }
  unsigned char* stack(int i) const { return base + size_t(i) * slot() + page; }
  bool is_guard(const void* a) const {
    if (!base) return false;
    const unsigned char* p = static_cast<const unsigned char*>(a);
    if (p < base || p >= base + size_t(count) * slot()) return false;
    return size_t(p - base) % slot() < page;
  }
  void reserve(int n) {
    if (n <= count) return;
    page = size_t(sysconf(_SC_PAGESIZE));
    if (base) munmap(base, size_t(count) * slot());
    void* m = mmap(nullptr, size_t(n) * slot(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) fatal("cannot map %d fiber stacks", n);
    base = static_cast<unsigned char*>(m);
    count = n;
    for (int i = 0; i < n; i++) mprotect(base + size_t(i) * slot(), page, PROT_NONE);
  }
};
inline StackPool g_stacks;

inline void fiber_main() {
  Fiber* f = g_current;
  g_entry(f->info);
  f->state = State::done;
  _longjmp(g_sched_jb, 1);  // never return: uc_link's context is stale by now
}

// complete_simd runs the pending SIMD-group functions of every simdgroup and
// reports whether there was one.
inline bool complete_simd(Fiber* fibers, int n) {
  bool any = false;
  for (int s = 0; s * kSimdWidth < n; s++) {
    int lo = s * kSimdWidth;
    int hi = std::min(n, lo + kSimdWidth);
    Fiber* first = nullptr;
    for (int i = lo; i < hi; i++)
      if (fibers[i].state == State::simd && (!first || fibers[i].site < first->site)) first = &fibers[i];
    if (!first) continue;
    any = true;
    Fiber* lanes[kSimdWidth] = {};
    for (int i = lo; i < hi; i++) {
      Fiber& f = fibers[i];
      if (f.state == State::simd && f.exec == first->exec && f.site == first->site) lanes[i - lo] = &f;
    }
    first->exec(lanes);
    for (Fiber* f : lanes)
      if (f) f->state = State::ready;
  }
  return any;
}

// resume runs fiber f until it blocks or finishes, and reports whether it finished.
inline bool resume(Fiber& f) {
  g_current = &f;
  if (!_setjmp(g_sched_jb)) {
    if (f.started) _longjmp(f.jb, 1);
    f.started = true;
    swapcontext(&g_sched_ctx, &f.ctx);
  }
  g_current = nullptr;
  return f.state == State::done;
}

// run_group_serial is the SIMD-group-serial order: between two releases of the
// threadgroup barrier, each SIMD group in turn (forward, or reversed when reverse)
// runs alone, its lanes by index, its SIMD-group functions completed as they meet,
// until every lane waits at the barrier or is done. One group then runs a whole
// phase before the next starts the same phase, so a write after a read that a
// missing barrier should have kept apart lands before the other groups' read: the
// round-robin orders, which run every lane to each SIMD call together, cannot show
// that.
inline void run_group_serial(Fiber* fibers, int n, bool reverse) {
  int nsg = (n + kSimdWidth - 1) / kSimdWidth;
  int live = n;
  while (live > 0) {
    for (int k = 0; k < nsg; k++) {
      int s = reverse ? nsg - 1 - k : k;
      int lo = s * kSimdWidth;
      int hi = std::min(n, lo + kSimdWidth);
      for (;;) {
        for (int i = lo; i < hi; i++)
          if (fibers[i].state == State::ready && resume(fibers[i])) live--;
        if (!complete_simd(fibers, n)) break;  // only this group can have a call pending
      }
    }
    for (int i = 0; i < n; i++)
      if (fibers[i].state == State::barrier) fibers[i].state = State::ready;
  }
}

// run_group runs one threadgroup whose fibers have their ThreadInfo set.
inline void run_group(Fiber* fibers, int n) {
  g_stacks.reserve(n);
  g_epoch++;
  g_tg_bytes = 0;
  for (int i = 0; i < n; i++) {
    Fiber& f = fibers[i];
    static ucontext_t tmpl;
    static bool have_tmpl = false;
    if (!have_tmpl) {
      getcontext(&tmpl);
      have_tmpl = true;
    }
    f.ctx = tmpl;  // a copy of the template: no system call per fiber
#if defined(__x86_64__) && defined(__GLIBC__)
    f.ctx.uc_mcontext.fpregs = &f.ctx.__fpregs_mem;  // glibc points it into the struct itself
#endif
    f.started = false;
    f.ctx.uc_stack.ss_sp = g_stacks.stack(i);
    f.ctx.uc_stack.ss_size = kFiberStack;
    f.ctx.uc_link = &g_sched_ctx;
    makecontext(&f.ctx, fiber_main, 0);
    f.state = State::ready;
  }
  if (g_order >= 3) {
    run_group_serial(fibers, n, g_order == 4);
    return;
  }
  int live = n;
  static std::vector<int> perm;
  perm.resize(size_t(n));
  for (int i = 0; i < n; i++) perm[size_t(i)] = g_order == 1 ? n - 1 - i : i;
  while (live > 0) {
    if (g_order == 2)
      for (int i = n - 1; i > 0; i--) std::swap(perm[size_t(i)], perm[size_t(next_random() % uint64_t(i + 1))]);
    for (int pi = 0; pi < n; pi++) {
      Fiber& f = fibers[perm[size_t(pi)]];
      if (f.state != State::ready) continue;
      if (resume(f)) live--;
    }
    if (live == 0 || complete_simd(fibers, n)) continue;
    for (int i = 0; i < n; i++)
      if (fibers[i].state == State::barrier) fibers[i].state = State::ready;
  }
}

}  // namespace msl_detail

namespace metal {

enum class mem_flags : unsigned { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4 };
constexpr mem_flags operator|(mem_flags a, mem_flags b) { return mem_flags(unsigned(a) | unsigned(b)); }

// All memory is coherent on the CPU, so the flags only document intent.
inline void threadgroup_barrier(mem_flags) { msl_detail::block(msl_detail::State::barrier); }

}  // namespace metal
