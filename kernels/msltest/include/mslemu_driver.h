// mslemu_driver.h: the executable around a .metal file's kernels.
//
// Included after the kernels and before the generated entry table. The Go
// side (package msltest) writes a request file: kernel name, dispatch and
// buffers; this program runs the dispatch and writes every buffer back.
// Buffers sit against a PROT_NONE page, so reading or writing past the end
// faults and is reported with the buffer index and offset; read-only buffers
// (constant or const parameters) are mapped read-only.
#pragma once
#undef device
#undef constant
#undef thread
#undef kernel

namespace msl_detail {

template <class F> struct fn_params;
template <class R, class... A> struct fn_params<R (*)(A...)> {
  static constexpr size_t count = sizeof...(A);
  template <size_t I> using type = std::tuple_element_t<I, std::tuple<A...>>;
};
template <class F, size_t I> using param_t = typename fn_params<F>::template type<I>;

inline void* g_buffer_ptr[31];

template <class T> struct always_false : std::false_type {};

template <class T> inline T buffer_arg(int index) {
  if constexpr (std::is_pointer_v<T>) {
    return static_cast<T>(g_buffer_ptr[index]);
  } else if constexpr (std::is_reference_v<T>) {
    return *static_cast<std::remove_reference_t<T>*>(g_buffer_ptr[index]);
  } else {
    static_assert(always_false<T>::value, "a [[buffer(n)]] parameter must be a pointer or a reference");
  }
}

template <class T> inline T attr_arg(const uint3& v) {
  using U = std::remove_cv_t<std::remove_reference_t<T>>;
  if constexpr (is_scalar<U>::value) {
    return U(v.x);
  } else if constexpr (U::size == 2) {
    return U(v.x, v.y);
  } else {
    static_assert(U::size == 3, "a thread position attribute must be a scalar, 2- or 3-vector");
    return U(v.x, v.y, v.z);
  }
}

template <class T> inline T attr_arg(uint v) {
  using U = std::remove_cv_t<std::remove_reference_t<T>>;
  static_assert(is_scalar<U>::value, "this thread attribute must be a scalar");
  return U(v);
}

struct KernelEntry {
  const char* name;
  EntryFn fn;
};

struct BufferMap {
  int index;
  bool read_only;
  unsigned char* map;
  size_t map_len;
  unsigned char* data;
  size_t len;
};
inline BufferMap g_buffer_maps[31];
inline int g_buffer_count = 0;

inline void on_fault(int sig, siginfo_t* si, void*) {
  char msg[512];
  const unsigned char* a = static_cast<const unsigned char*>(si->si_addr);
  int n = 0;
  if (sig == SIGFPE) {
    n = std::snprintf(msg, sizeof msg, "arithmetic fault (integer division by zero?)");
  } else if (g_stacks.is_guard(a)) {
    n = std::snprintf(msg, sizeof msg, "stack overflow in a kernel thread (fiber stacks are %zu KiB)", kFiberStack / 1024);
  } else {
    n = std::snprintf(msg, sizeof msg, "invalid memory access at address %p", si->si_addr);
    for (int i = 0; i < g_buffer_count; i++) {
      const BufferMap& b = g_buffer_maps[i];
      if (a < b.map || a >= b.map + b.map_len) continue;
      long off = long(a - b.data);
      if (b.read_only && off >= 0 && size_t(off) < b.len) {
        n = std::snprintf(msg, sizeof msg, "write to read-only buffer(%d) at byte %ld", b.index, off);
      } else {
        n = std::snprintf(msg, sizeof msg, "out-of-bounds access to buffer(%d) at byte offset %ld (buffer is %zu bytes)",
                          b.index, off, b.len);
      }
    }
  }
  if (g_current) {
    const uint3& p = g_current->info.thread_position_in_grid;
    n += std::snprintf(msg + n, sizeof msg - size_t(n), " (thread_position_in_grid %u,%u,%u)", p.x, p.y, p.z);
  }
  std::fprintf(stderr, "msltest: kernel %s: %s\n", g_kernel_name, msg);
  std::fflush(stderr);
  std::_Exit(3);
}

inline void install_fault_handlers() {
  static unsigned char alt[64 * 1024];
  stack_t ss{};
  ss.ss_sp = alt;
  ss.ss_size = sizeof alt;
  sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigaction(SIGSEGV, &sa, nullptr);
  sigaction(SIGBUS, &sa, nullptr);
  sigaction(SIGFPE, &sa, nullptr);
}

[[noreturn]] inline void bad_request(const char* why) {
  std::fprintf(stderr, "msltest: bad request: %s\n", why);
  std::_Exit(2);
}

struct Reader {
  const unsigned char* p;
  const unsigned char* end;
  template <class T> T get() {
    if (size_t(end - p) < sizeof(T)) bad_request("truncated");
    T v;
    std::memcpy(&v, p, sizeof(T));
    p += sizeof(T);
    return v;
  }
  const unsigned char* bytes(size_t n) {
    if (size_t(end - p) < n) bad_request("truncated");
    const unsigned char* r = p;
    p += n;
    return r;
  }
};

inline bool read_full(int fd, void* p, size_t n) {
  unsigned char* b = static_cast<unsigned char*>(p);
  while (n > 0) {
    ssize_t got = ::read(fd, b, n);
    if (got <= 0) return false;
    b += got;
    n -= size_t(got);
  }
  return true;
}

inline void write_full(int fd, const void* p, size_t n) {
  const unsigned char* b = static_cast<const unsigned char*>(p);
  while (n > 0) {
    ssize_t put = ::write(fd, b, n);
    if (put <= 0) std::_Exit(4);  // the Go side went away
    b += put;
    n -= size_t(put);
  }
}

// map_buffer places len bytes so that they end where a PROT_NONE page
// begins; the start keeps the largest power-of-two alignment (up to 16) that
// divides len, enough for any element type the bytes can hold.
inline BufferMap map_buffer(int index, bool read_only, const unsigned char* src, size_t len) {
  size_t page = size_t(sysconf(_SC_PAGESIZE));
  size_t body = (len + page - 1) / page * page;
  if (body == 0) body = page;
  size_t map_len = page + body + page;
  void* m = mmap(nullptr, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) bad_request("cannot map buffer");
  unsigned char* map = static_cast<unsigned char*>(m);
  mprotect(map, page, PROT_NONE);
  mprotect(map + page + body, page, PROT_NONE);
  unsigned char* data = map + page + body - len;
  if (len) std::memcpy(data, src, len);
  if (read_only) mprotect(map + page, body, PROT_READ);
  return BufferMap{index, read_only, map, map_len, data, len};
}

// map_shared maps a buffer that lives in a file shared with the Go side (its
// whole page-rounded file, then a PROT_NONE page): the kernel works on the
// same bytes the host sees, as on unified memory. The buffer is len bytes at
// data_off in the file, and the kernel's pointer is a binding offset into it.
inline BufferMap map_shared(int index, bool read_only, const std::string& path, size_t file_len, size_t data_off,
                            size_t len) {
  size_t page = size_t(sysconf(_SC_PAGESIZE));
  if (file_len == 0 || file_len % page != 0 || data_off > file_len || len > file_len - data_off)
    bad_request("bad shared buffer size");
  void* m = mmap(nullptr, file_len + page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) bad_request("cannot reserve shared buffer");
  int fd = ::open(path.c_str(), read_only ? O_RDONLY : O_RDWR);
  if (fd < 0) bad_request("cannot open shared buffer");
  void* body = mmap(m, file_len, read_only ? PROT_READ : PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
  ::close(fd);
  if (body == MAP_FAILED) bad_request("cannot map shared buffer");
  unsigned char* map = static_cast<unsigned char*>(m);
  return BufferMap{index, read_only, map, file_len + page, map + data_off, len};
}

// order_seed drives the shuffled thread order: xorshift64, fixed per request.
inline uint64_t g_order_state = 1;
inline uint64_t next_random() {
  g_order_state ^= g_order_state << 13;
  g_order_state ^= g_order_state >> 7;
  g_order_state ^= g_order_state << 17;
  return g_order_state;
}

// serve runs requests from stdin until it closes. Each request (little
// endian): u32 length, then "MSLQ", version 2, name, mode, grid[3], group[3],
// thread order, u64 seed, and per buffer: index, flags (bit 0: read-only,
// bit 1: shared), then for an inline buffer its length and bytes, for a
// shared one its path, file length, data offset, length and binding offset. The
// reply is "MSLA", a count, then each inline buffer's index, length and
// bytes. A fault ends the process with a report on stderr.
inline int serve(const KernelEntry* table, int count) {
  install_fault_handlers();
  std::vector<unsigned char> req;
  std::vector<Fiber> fibers;
  for (;;) {
    uint32_t total;
    if (!read_full(0, &total, 4)) return 0;
    req.resize(total);
    if (!read_full(0, req.data(), total)) bad_request("truncated request");
    Reader r{req.data(), req.data() + req.size()};
    if (std::memcmp(r.bytes(4), "MSLQ", 4) != 0 || r.get<uint32_t>() != 2) bad_request("wrong magic or version");
    uint32_t name_len = r.get<uint32_t>();
    std::string name(reinterpret_cast<const char*>(r.bytes(name_len)), name_len);
    uint32_t mode = r.get<uint32_t>();
    uint32_t grid[3], group[3];
    for (auto& g : grid) g = r.get<uint32_t>();
    for (auto& g : group) g = r.get<uint32_t>();
    g_order = r.get<uint32_t>();
    g_order_state = r.get<uint64_t>() | 1;
    uint32_t nbuf = r.get<uint32_t>();
    if (nbuf > 31) bad_request("more than 31 buffers");
    g_buffer_count = 0;
    for (auto& p : g_buffer_ptr) p = nullptr;
    bool is_shared[31] = {};
    for (uint32_t i = 0; i < nbuf; i++) {
      uint32_t index = r.get<uint32_t>();
      uint32_t flags = r.get<uint32_t>();
      if (index > 30) bad_request("buffer index above 30");
      BufferMap b;
      size_t offset = 0;
      if (flags & 2) {
        uint32_t path_len = r.get<uint32_t>();
        std::string path(reinterpret_cast<const char*>(r.bytes(path_len)), path_len);
        uint64_t file_len = r.get<uint64_t>();
        uint64_t data_off = r.get<uint64_t>();
        uint64_t len = r.get<uint64_t>();
        offset = size_t(r.get<uint64_t>());
        if (offset > len) bad_request("binding offset past the buffer");
        b = map_shared(int(index), flags & 1, path, size_t(file_len), size_t(data_off), size_t(len));
      } else {
        uint64_t len = r.get<uint64_t>();
        b = map_buffer(int(index), flags & 1, r.bytes(size_t(len)), size_t(len));
      }
      is_shared[g_buffer_count] = flags & 2;
      g_buffer_maps[g_buffer_count++] = b;
      g_buffer_ptr[index] = b.data + offset;
    }

    g_entry = nullptr;
    for (int i = 0; i < count; i++)
      if (name == table[i].name) {
        g_entry = table[i].fn;
        g_kernel_name = table[i].name;
      }
    if (!g_entry) bad_request("no such kernel");

    uint3 tg(group[0], group[1], group[2]);
    uint3 ngroups, tpg;
    if (mode == 0) {
      tpg = uint3(grid[0], grid[1], grid[2]);
      ngroups = (tpg + tg - 1u) / tg;
    } else {
      ngroups = uint3(grid[0], grid[1], grid[2]);
      tpg = ngroups * tg;
    }
    uint32_t per_group = tg.x * tg.y * tg.z;
    if (per_group == 0 || per_group > uint32_t(kMaxThreadsPerGroup)) bad_request("threadgroup size out of range");
    if (fibers.size() < per_group) fibers.resize(per_group);
    for (uint32_t gz = 0; gz < ngroups.z; gz++)
      for (uint32_t gy = 0; gy < ngroups.y; gy++)
        for (uint32_t gx = 0; gx < ngroups.x; gx++) {
          uint3 gpos(gx, gy, gz);
          uint3 size = tg;
          if (mode == 0) size = metal::min(tg, tpg - gpos * tg);  // edge groups are partial
          int n = int(size.x * size.y * size.z);
          uint simdgroups = uint((n + kSimdWidth - 1) / kSimdWidth);
          for (int l = 0; l < n; l++) {
            ThreadInfo& t = fibers[size_t(l)].info;
            uint3 lpos(uint(l) % size.x, (uint(l) / size.x) % size.y, uint(l) / (size.x * size.y));
            t.thread_position_in_threadgroup = lpos;
            t.thread_position_in_grid = gpos * tg + lpos;
            t.threadgroup_position_in_grid = gpos;
            t.threads_per_threadgroup = size;
            t.dispatch_threads_per_threadgroup = tg;
            t.threadgroups_per_grid = ngroups;
            t.threads_per_grid = tpg;
            t.thread_index_in_threadgroup = uint(l);
            t.thread_index_in_simdgroup = uint(l) % kSimdWidth;
            t.simdgroup_index_in_threadgroup = uint(l) / kSimdWidth;
            t.simdgroups_per_threadgroup = simdgroups;
          }
          run_group(fibers.data(), n);
        }

    std::vector<unsigned char> out;
    auto put = [&out](const void* p, size_t n) {
      const unsigned char* b = static_cast<const unsigned char*>(p);
      out.insert(out.end(), b, b + n);
    };
    uint32_t inline_count = 0;
    for (int i = 0; i < g_buffer_count; i++) inline_count += is_shared[i] ? 0 : 1;
    put("MSLA", 4);
    put(&inline_count, 4);
    for (int i = 0; i < g_buffer_count; i++) {
      const BufferMap& b = g_buffer_maps[i];
      if (!is_shared[i]) {
        uint32_t idx = uint32_t(b.index);
        uint64_t len = b.len;
        put(&idx, 4);
        put(&len, 8);
        put(b.data, b.len);
      }
      munmap(b.map, b.map_len);
    }
    g_buffer_count = 0;
    uint32_t total_out = uint32_t(out.size());
    write_full(1, &total_out, 4);
    write_full(1, out.data(), out.size());
  }
}

inline int driver_main(int argc, char** argv, const KernelEntry* table, int count) {
  if (argc != 2 || std::strcmp(argv[1], "serve") != 0) {
    std::fprintf(stderr, "usage: %s serve\n", argv[0]);
    return 2;
  }
  return serve(table, count);
}

}  // namespace msl_detail
