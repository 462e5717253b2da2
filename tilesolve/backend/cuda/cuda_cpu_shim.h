// tilesolve's CUDA-on-CPU shim: compile generated CUDA C kernels, unmodified, with g++.
//
// Runs generated CUDA C on the CPU: each thread a fiber, __syncthreads() yields.
// Each CUDA thread of a block is a ucontext fiber; __syncthreads() yields to a scheduler
// that resumes every other thread of the block before any passes the barrier.  Blocks
// run one after another, so __shared__ can be function-static storage.  Kernels that
// never call __syncthreads() run their threads as plain calls (no fibers: much faster).
//
// Differences from the original: errors (a barrier reached by only some threads of a
// block) are reported through cudasim::launch's return value and cudasim::last_error()
// instead of abort(), so a test can fail cleanly; fiber stacks are not zero-filled; only
// light C headers are included.
#pragma once
// Only light C headers (compile time matters: g++ runs once per program in the tests);
// the math functions CUDA code may call are declared here, as libm defines them.
#include <ucontext.h>
#include <stdio.h>
#include <stdlib.h>

extern "C" {
float sqrtf(float) noexcept; float expf(float) noexcept; float logf(float) noexcept;
float powf(float, float) noexcept; float sinf(float) noexcept; float cosf(float) noexcept;
float tanf(float) noexcept; float atan2f(float, float) noexcept; float floorf(float) noexcept;
float ceilf(float) noexcept; float rintf(float) noexcept; float fabsf(float) noexcept;
double sqrt(double) noexcept; double exp(double) noexcept; double log(double) noexcept;
double pow(double, double) noexcept; double sin(double) noexcept; double cos(double) noexcept;
double tan(double) noexcept; double atan2(double, double) noexcept; double floor(double) noexcept;
double ceil(double) noexcept; double rint(double) noexcept; double fabs(double) noexcept;
#define TS_MATH1(n) float n##f(float) noexcept; double n(double) noexcept;
TS_MATH1(atan) TS_MATH1(asin) TS_MATH1(acos) TS_MATH1(sinh) TS_MATH1(cosh) TS_MATH1(tanh)
TS_MATH1(asinh) TS_MATH1(acosh) TS_MATH1(atanh) TS_MATH1(trunc)
#undef TS_MATH1
}

struct dim3 { unsigned x, y, z; dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1): x(x_), y(y_), z(z_) {} };
struct uint3 { unsigned x, y, z; };

namespace cudasim {
struct Fiber { ucontext_t ctx; uint3 tid; bool done; char* stack; };
inline thread_local uint3 g_tid, g_bid;
inline thread_local dim3 g_bdim, g_gdim;
inline thread_local ucontext_t g_sched;
inline thread_local Fiber* g_cur = nullptr;
inline thread_local void (*g_call)(void*) = nullptr;   // the kernel call, type-erased
inline thread_local void* g_ctx = nullptr;
inline thread_local char g_error[256] = {0};

inline const char* last_error() { return g_error; }

inline void trampoline() { g_call(g_ctx); g_cur->done = true; swapcontext(&g_cur->ctx, &g_sched); }

inline void syncthreads() {                    // yield back to the block's scheduler
    if (!g_cur) return;                        // threads run without fibers: no barrier needed
    swapcontext(&g_cur->ctx, &g_sched);
}

struct Fibers {                                // owns the fibers and their stacks
    Fiber* f; unsigned n;
    Fibers(unsigned n_, size_t stack): f(new Fiber[n_]), n(n_) {
        for (unsigned i = 0; i < n; ++i) f[i].stack = (char*)malloc(stack);   // not touched
    }
    ~Fibers() { for (unsigned i = 0; i < n; ++i) free(f[i].stack); delete[] f; }
};

#ifdef TS_COUNT_SECTORS
// ---- the sector counter (built only with -DTS_COUNT_SECTORS) ----------------------------
// Each global buffer parameter is a Global<T>; each load or store through it is recorded
// with its 32-byte sector (offset from the buffer's start / 32) and grouped into warp-level
// memory instructions: the threads of a warp (32 consecutive threads of the block, x fastest)
// executing the same access site (its code address) for the same time.  Per buffer and
// direction (load, store) the counters are: instructions, sectors summed over instructions,
// sectors distinct within each block (summed over blocks), sectors distinct within the
// launch, and bytes accessed.
}  // namespace cudasim
#include <stdint.h>
#include <string.h>
#include <unordered_map>
#include <unordered_set>
namespace cudasim {
enum { SECTOR_BYTES = 32, MAX_BUFFERS = 256, FIELDS = 5 };
enum { F_REQUESTS, F_SECTORS, F_BLOCK_SECTORS, F_LAUNCH_SECTORS, F_BYTES };
struct InstrKey {
    uint64_t site; uint32_t warp, occurrence;
    bool operator==(const InstrKey& o) const {
        return site == o.site && warp == o.warp && occurrence == o.occurrence; }
};
struct InstrKeyHash {
    size_t operator()(const InstrKey& k) const {
        return (size_t)(k.site * 0x9E3779B97F4A7C15ull ^ ((uint64_t)k.warp << 40) ^ k.occurrence); }
};
struct Instr { unsigned buf, kind, n; uint64_t sector[32]; };
struct Recorder {
    unsigned long long counts[MAX_BUFFERS][2][FIELDS];
    std::unordered_map<uint64_t, uint32_t> occurrences;          // (thread, site) -> times
    std::unordered_map<InstrKey, Instr, InstrKeyHash> instrs;    // this block's instructions
    std::unordered_set<uint64_t> block_sectors, launch_sectors;  // (kind, buffer, sector)
};
inline Recorder g_rec;
inline uint64_t sector_key(unsigned kind, unsigned buf, uint64_t sector) {
    return ((uint64_t)kind << 63) | ((uint64_t)buf << 48) | (sector & 0xFFFFFFFFFFFFull);
}
__attribute__((noinline)) inline void record(unsigned buf, unsigned kind, long long offset,
                                            unsigned bytes);
inline void block_done() {
    Recorder& r = g_rec;
    for (auto& kv : r.instrs) {
        r.counts[kv.second.buf][kv.second.kind][F_REQUESTS] += 1;
        r.counts[kv.second.buf][kv.second.kind][F_SECTORS] += kv.second.n;
    }
    for (uint64_t k : r.block_sectors)
        r.counts[(k >> 48) & 0x7FFF][k >> 63][F_BLOCK_SECTORS] += 1;
    r.instrs.clear(); r.occurrences.clear(); r.block_sectors.clear();
}
inline void launch_done() {
    Recorder& r = g_rec;
    for (uint64_t k : r.launch_sectors)
        r.counts[(k >> 48) & 0x7FFF][k >> 63][F_LAUNCH_SECTORS] += 1;
    r.launch_sectors.clear();
}
template <class T> struct Ref {                // one element of a global buffer
    typedef T value;
    T* p; unsigned buf; long long offset;
    __attribute__((always_inline)) operator T() const {
        record(buf, 0, offset * (long long)sizeof(T), sizeof(T)); return *p; }
    __attribute__((always_inline)) Ref& operator=(T v) {
        record(buf, 1, offset * (long long)sizeof(T), sizeof(T)); *p = v; return *this; }
    __attribute__((always_inline)) Ref& operator=(const Ref& o) { return *this = (T)o; }
};
template <class T> struct Global {             // a global buffer parameter
    T* base; unsigned buf;
    __attribute__((always_inline)) Ref<T> operator[](long long i) const {
        return Ref<T>{base + i, buf, i}; }
};
#define TS_BLOCK_DONE() cudasim::block_done()
#define TS_LAUNCH_DONE() cudasim::launch_done()
#else
#define TS_BLOCK_DONE() ((void)0)
#define TS_LAUNCH_DONE() ((void)0)
#endif

// Run kernel_call for every thread of every block.  Returns 0, or 1 with last_error() set.
template <class F> int launch(dim3 grid, dim3 block, F kernel_call, bool uses_barrier,
                              size_t stack = 256 * 1024) {
    g_error[0] = 0;
    g_gdim = grid; g_bdim = block;
    g_ctx = &kernel_call;
    g_call = [](void* p) { (*(F*)p)(); };
    const unsigned nt = block.x * block.y * block.z;
    if (!uses_barrier) {                        // no barrier: each thread runs to completion
        for (unsigned bz = 0; bz < grid.z; ++bz) for (unsigned by = 0; by < grid.y; ++by)
        for (unsigned bx = 0; bx < grid.x; ++bx) {
            g_bid = {bx, by, bz};
            for (unsigned tz = 0; tz < block.z; ++tz) for (unsigned ty = 0; ty < block.y; ++ty)
            for (unsigned tx = 0; tx < block.x; ++tx) { g_tid = {tx, ty, tz}; kernel_call(); }
            TS_BLOCK_DONE();
        }
        TS_LAUNCH_DONE();
        return 0;
    }
    Fibers fibers(nt, stack);
    for (unsigned bz = 0; bz < grid.z; ++bz) for (unsigned by = 0; by < grid.y; ++by)
    for (unsigned bx = 0; bx < grid.x; ++bx) {
        g_bid = {bx, by, bz};
        unsigned i = 0;
        for (unsigned tz = 0; tz < block.z; ++tz) for (unsigned ty = 0; ty < block.y; ++ty)
        for (unsigned tx = 0; tx < block.x; ++tx, ++i) {
            Fiber& f = fibers.f[i]; f.tid = {tx, ty, tz}; f.done = false;
            getcontext(&f.ctx); f.ctx.uc_stack.ss_sp = f.stack; f.ctx.uc_stack.ss_size = stack;
            f.ctx.uc_link = nullptr;
            makecontext(&f.ctx, trampoline, 0);
        }
        for (;;) {                              // run every thread to its next barrier (or exit)
            unsigned at_barrier = 0, finished = 0;
            for (unsigned k = 0; k < nt; ++k) {
                Fiber& f = fibers.f[k];
                if (f.done) { ++finished; continue; }
                g_cur = &f; g_tid = f.tid;
                swapcontext(&g_sched, &f.ctx);
                if (f.done) ++finished; else ++at_barrier;
            }
            g_cur = nullptr;
            if (finished == nt) break;
            if (at_barrier != 0 && finished != 0) {   // divergent barrier: UB on a GPU
                snprintf(g_error, sizeof g_error,
                         "__syncthreads() reached by %u of %u threads of block (%u, %u, %u)",
                         at_barrier, nt, bx, by, bz);
                return 1;
            }
        }
        TS_BLOCK_DONE();
    }
    TS_LAUNCH_DONE();
    return 0;
}

#ifdef TS_COUNT_SECTORS
// The site of an access is the address its inlined Ref operator calls record() from.
__attribute__((noinline)) inline void record(unsigned buf, unsigned kind, long long offset,
                                            unsigned bytes) {
    Recorder& r = g_rec;
    const uint64_t site = (uint64_t)(uintptr_t)__builtin_return_address(0) & 0xFFFFFFFFFFFFull;
    const unsigned tid = g_tid.x + g_bdim.x * (g_tid.y + g_bdim.y * g_tid.z);
    const uint32_t occurrence = r.occurrences[((uint64_t)tid << 48) | site]++;
    const uint64_t sector = (uint64_t)(offset >> 5);
    Instr& in = r.instrs[InstrKey{site, tid / 32, occurrence}];
    if (in.n == 0) { in.buf = buf; in.kind = kind; }
    bool seen = false;
    for (unsigned i = 0; i < in.n; ++i) seen |= in.sector[i] == sector;
    if (!seen && in.n < 32) in.sector[in.n++] = sector;
    r.block_sectors.insert(sector_key(kind, buf, sector));
    r.launch_sectors.insert(sector_key(kind, buf, sector));
    r.counts[buf][kind][F_BYTES] += bytes;
}
#endif
} // namespace cudasim

#ifdef TS_COUNT_SECTORS
// a reinterpret of a buffer element reads the element first (the prelude's template
// would copy the Ref itself)
template <class D, class S> inline D ts_reinterpret(cudasim::Ref<S> r) {
    typename cudasim::Ref<S>::value v = r; D d; memcpy(&d, &v, sizeof d); return d; }
// vector accesses (the prelude's ts_vload/ts_vstore) through a counted buffer: an aligned
// run of N elements, one access of all its bytes (one sector: it never straddles two);
// the other elements, one access each
namespace cudasim {
template <int N, int O, int END, int M, class T> __attribute__((always_inline)) inline void vwin(
        T* w, Global<const T> g, long long i) {
    if constexpr (O < END) {
        if constexpr ((((M + O) % N) + N) % N == 0 && O + N <= END) {
            record(g.buf, 0, (i + O) * (long long)sizeof(T), N * sizeof(T));
            for (int j = 0; j < N; ++j) w[j] = g.base[i + O + j];
            vwin<N, O + N, END, M>(w + N, g, i);
        } else {
            w[0] = g[i + O];
            vwin<N, O + 1, END, M>(w + 1, g, i);
        }
    } }
}
template <int N, int LEN, class T> __attribute__((always_inline)) inline void ts_vload(
        T* w, cudasim::Global<const T> g, long long i) {
    switch ((int)(((uintptr_t)(g.base + i) / sizeof(T)) % N)) {
        case 0: cudasim::vwin<N, 0, LEN, 0>(w, g, i); break;
        case 1: cudasim::vwin<N, 0, LEN, 1>(w, g, i); break;
        case 2: cudasim::vwin<N, 0, LEN, 2>(w, g, i); break;
        default: cudasim::vwin<N, 0, LEN, 3>(w, g, i); break;
    } }
template <int N, int LEN, class T> __attribute__((always_inline)) inline void ts_vload(
        T* w, cudasim::Global<T> g, long long i) {
    ts_vload<N, LEN>(w, cudasim::Global<const T>{g.base, g.buf}, i); }
template <int N, class T> __attribute__((always_inline)) inline void ts_vstore(
        cudasim::Global<T> g, long long i, const T* in) {
    if (((uintptr_t)(g.base + i) & (sizeof(T) * N - 1)) == 0) {
        cudasim::record(g.buf, 1, i * (long long)sizeof(T), N * sizeof(T));
        for (int k = 0; k < N; ++k) g.base[i + k] = in[k];
    } else {
        for (int k = 0; k < N; ++k) g[i + k] = in[k];
    } }
extern "C" void ts_sector_counts(unsigned long long* out, unsigned n) {
    memcpy(out, cudasim::g_rec.counts, sizeof(unsigned long long) * n * 2 * cudasim::FIELDS);
    memset(cudasim::g_rec.counts, 0, sizeof cudasim::g_rec.counts);
}
#endif

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static            // blocks execute one at a time
#define __syncthreads() cudasim::syncthreads()
#define threadIdx (cudasim::g_tid)
#define blockIdx  (cudasim::g_bid)
#define blockDim  (cudasim::g_bdim)
#define gridDim   (cudasim::g_gdim)
