// The host harness: CUDA C kernels compiled by the system C++ compiler and
// run on the CPU. A launch runs its blocks one after another; the threads
// of a block are fibers on the calling thread, switched only at barriers
// (__syncthreads, and the warp barriers inside shuffles and votes), so a
// kernel's threads interleave as a GPU's may, deterministically. A
// barrier that can never be passed (a thread waiting while the others
// have finished or wait at another barrier) fails the launch.
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <mutex>

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __shared__ static
#define warpSize 32

struct dim3 { unsigned x, y, z; };
struct pt_fiber { void* sp; dim3 tid; int done; };
struct pt_state {
  dim3 grid, block, bid;
  unsigned n, cur, alive, arrived, gen;
  unsigned walive[32], warrived[32], wgen[32];
  unsigned long long slot[32][32];
  long progress;
  pt_fiber* f;
  void* sched;
  void (*body)(void**);
  void** args;
};
static thread_local pt_state* pt;
#define threadIdx (pt->f[pt->cur].tid)
#define blockIdx (pt->bid)
#define blockDim (pt->block)
#define gridDim (pt->grid)

#if defined(__x86_64__)
extern "C" void pt_swap(void** save, void* to);
asm(".pushsection .text\n.globl pt_swap\n.hidden pt_swap\n.type pt_swap,@function\npt_swap:\n"
    " pushq %rbp\n pushq %rbx\n pushq %r12\n pushq %r13\n pushq %r14\n pushq %r15\n"
    " movq %rsp, (%rdi)\n movq %rsi, %rsp\n"
    " popq %r15\n popq %r14\n popq %r13\n popq %r12\n popq %rbx\n popq %rbp\n ret\n"
    ".size pt_swap, .-pt_swap\n.popsection\n");
static void pt_entry();
static void* pt_stack(char* top) {
  void** sp = (void**)(top - 64);
  sp[6] = (void*)pt_entry; sp[7] = 0;
  return sp;
}
#else
#error "the host harness switches fibers with x86-64 code only"
#endif

static unsigned pt_linear() { dim3 t = threadIdx; return t.x + pt->block.x * (t.y + pt->block.y * t.z); }
static void pt_yield() { pt_swap(&pt->f[pt->cur].sp, pt->sched); }

static void __syncthreads() {
  pt->progress++;
  unsigned g = pt->gen;
  if (++pt->arrived == pt->alive) { pt->arrived = 0; pt->gen++; }
  else while (pt->gen == g) pt_yield();
}
static void pt_warp_sync() {
  unsigned w = pt_linear() >> 5;
  pt->progress++;
  unsigned g = pt->wgen[w];
  if (++pt->warrived[w] == pt->walive[w]) { pt->warrived[w] = 0; pt->wgen[w]++; }
  else while (pt->wgen[w] == g) pt_yield();
}
static void __syncwarp(unsigned = 0xffffffffu) { pt_warp_sync(); }

// Lane src's value of v, every lane of the warp taking part.
template <class T> static T pt_exchange(T v, int src) {
  unsigned t = pt_linear(), w = t >> 5;
  unsigned long long u = 0;
  memcpy(&u, &v, sizeof v);
  pt->slot[w][t & 31] = u;
  pt_warp_sync();
  u = pt->slot[w][src & 31];
  pt_warp_sync();
  T r;
  memcpy(&r, &u, sizeof r);
  return r;
}
template <class T> static T __shfl_xor_sync(unsigned, T v, int m, int = 32) { return pt_exchange(v, (int)(pt_linear() & 31) ^ m); }
template <class T> static T __shfl_sync(unsigned, T v, int src, int = 32) { return pt_exchange(v, src); }
template <class T> static T __shfl_down_sync(unsigned, T v, unsigned d, int = 32) {
  int l = (int)(pt_linear() & 31), s = l + (int)d;
  return pt_exchange(v, s < 32 ? s : l);
}
static unsigned __ballot_sync(unsigned, int p) {
  unsigned t = pt_linear(), w = t >> 5, b = 0;
  pt->slot[w][t & 31] = p != 0;
  pt_warp_sync();
  for (int l = 0; l < 32; l++) if (pt->slot[w][l]) b |= 1u << l;
  pt_warp_sync();
  return b;
}
static bool __any_sync(unsigned m, int p) { return __ballot_sync(m, p) != 0; }
static bool __all_sync(unsigned m, int p) {
  unsigned t = pt_linear(), w = t >> 5, n = pt->walive[w];
  return __ballot_sync(m, p) == (n == 32 ? 0xffffffffu : (1u << n) - 1u);
}

static void pt_entry() {
  pt->body(pt->args);
  pt_fiber* f = &pt->f[pt->cur];
  f->done = 1;
  pt->progress++;
  // A finished thread no longer holds up its block's or its warp's barrier.
  unsigned w = pt_linear() >> 5;
  pt->alive--;
  pt->walive[w]--;
  if (pt->arrived && pt->arrived == pt->alive) { pt->arrived = 0; pt->gen++; }
  if (pt->warrived[w] && pt->warrived[w] == pt->walive[w]) { pt->warrived[w] = 0; pt->wgen[w]++; }
  pt_swap(&f->sp, pt->sched);
}

static const size_t pt_stack_bytes = 1 << 16;
static std::mutex pt_mu;

// pt_run runs a grid of blocks of the kernel body; it returns 0, or -1
// when a block cannot pass a barrier, or -2 for a block of more than 1024
// threads.
static int pt_run(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                  void (*body)(void**), void** args) {
  std::lock_guard<std::mutex> lock(pt_mu);
  unsigned n = bx * by * bz;
  if (n == 0 || n > 1024) return -2;
  static char* stacks;
  static unsigned have;
  if (have < n) { free(stacks); stacks = (char*)aligned_alloc(64, n * pt_stack_bytes); have = n; }
  // The state lives on the heap: a caller may be on a small stack.
  pt_state* sp = (pt_state*)calloc(1, sizeof(pt_state));
  pt_state& st = *sp;
  pt_fiber* fs = (pt_fiber*)calloc(n, sizeof(pt_fiber));
  st.grid = dim3{gx, gy, gz}; st.block = dim3{bx, by, bz}; st.n = n; st.f = fs; st.body = body; st.args = args;
  pt_state* saved = pt;
  pt = &st;
  int rc = 0;
  for (unsigned z = 0; z < gz && !rc; z++)
    for (unsigned y = 0; y < gy && !rc; y++)
      for (unsigned x = 0; x < gx && !rc; x++) {
        st.bid = dim3{x, y, z};
        st.alive = n; st.arrived = 0;
        memset(st.walive, 0, sizeof st.walive); memset(st.warrived, 0, sizeof st.warrived);
        for (unsigned t = 0; t < n; t++) {
          fs[t].tid = dim3{t % bx, (t / bx) % by, t / (bx * by)};
          fs[t].done = 0;
          fs[t].sp = pt_stack(stacks + (size_t)(t + 1) * pt_stack_bytes);
          st.walive[t >> 5]++;
        }
        while (st.alive) {
          long before = st.progress;
          for (unsigned t = 0; t < n; t++)
            if (!fs[t].done) { st.cur = t; pt_swap(&st.sched, fs[t].sp); }
          if (st.alive && st.progress == before) rc = -1;
          if (rc) break;
        }
      }
  pt = saved;
  free(fs);
  free(sp);
  return rc;
}
