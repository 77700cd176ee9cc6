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
struct pt_fiber { void* sp; dim3 tid; int done; unsigned mmas; };
struct pt_state {
  dim3 grid, block, bid;
  unsigned n, cur, alive, arrived, gen;
  unsigned walive[32], warrived[32], wgen[32];
  unsigned long long slot[32][32];
  unsigned frag[32][32][7];  // per warp and lane: mma A and B fragments, call number
  int fault;                 // an mma.sync without its whole warp
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

// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}: D = A·B + C, executed
// by the warp together as the PTX ISA defines it by its fragment layout.
// Each lane leaves its A (4 registers, 8 halves) and B (2 registers) in
// the warp's slots; past the warp barrier every lane rebuilds A (16×16)
// and B (16×8) from all 32 lanes' fragments and computes its own four
// elements of D. With groupID = lane>>2 and threadID_in_group = lane%4,
// the low half of a register is the element of lower index, and
//   A half i: row groupID (+8 for i = 2,3,6,7),
//             column 2·threadID_in_group + (i&1) (+8 for i >= 4);
//   B half i: row 2·threadID_in_group + (i&1) (+8 for i >= 2), column groupID;
//   C, D i:   row groupID (+8 for i >= 2), column 2·threadID_in_group + (i&1).
// Products of halves are exact in float; the sum runs over k in order.
// Each lane also leaves the number of its call: a lane that has finished,
// or waits at another warp barrier, leaves a stale one, and the launch
// fails (mma.sync.aligned needs the whole warp at the same instruction).
static float pt_half(unsigned r, int hi, bool bf) {
  unsigned h = hi ? r >> 16 : r & 0xffffu, u;
  if (bf) u = h << 16;
  else {
    unsigned s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1fu) u = s | 0x7f800000u | (m << 13);
    else if (e == 0) { float v = ldexpf((float)m, -24); return s ? -v : v; }
    else u = s | ((e + 112u) << 23) | (m << 13);
  }
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static void pt_mma(float* d, const unsigned* a, const unsigned* b, bool bf) {
  unsigned t = pt_linear(), w = t >> 5, lane = t & 31;
  unsigned call = ++pt->f[pt->cur].mmas;
  memcpy(pt->frag[w][lane], a, 4 * sizeof *a);
  memcpy(pt->frag[w][lane] + 4, b, 2 * sizeof *b);
  pt->frag[w][lane][6] = call;
  pt_warp_sync();
  float A[16][16], B[16][8];
  for (int l = 0; l < 32; l++) {
    int g = l >> 2, q = l & 3;
    const unsigned* f = pt->frag[w][l];
    if (f[6] != call) pt->fault = 1;
    for (int i = 0; i < 8; i++)
      A[g + ((i & 2) ? 8 : 0)][2 * q + (i & 1) + (i >= 4 ? 8 : 0)] = pt_half(f[i >> 1], i & 1, bf);
    for (int i = 0; i < 4; i++)
      B[2 * q + (i & 1) + (i >= 2 ? 8 : 0)][g] = pt_half(f[4 + (i >> 1)], i & 1, bf);
  }
  pt_warp_sync();
  int g = lane >> 2, q = lane & 3;
  for (int i = 0; i < 4; i++) {
    int row = g + (i >= 2 ? 8 : 0), col = 2 * q + (i & 1);
    float s = d[i];
    for (int k = 0; k < 16; k++) s += A[row][k] * B[k][col];
    d[i] = s;
  }
}
static void mma_16816_f16(float* d, const unsigned* a, const unsigned* b) { pt_mma(d, a, b, false); }
static void mma_16816_bf16(float* d, const unsigned* a, const unsigned* b) { pt_mma(d, a, b, true); }

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
// when a block cannot pass a barrier, -2 for a block of more than 1024
// threads, -3 when an mma.sync ran without all 32 lanes of its warp.
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
        memset(st.frag, 0, sizeof st.frag);
        for (unsigned t = 0; t < n; t++) {
          fs[t].tid = dim3{t % bx, (t / bx) % by, t / (bx * by)};
          fs[t].done = 0; fs[t].mmas = 0;
          fs[t].sp = pt_stack(stacks + (size_t)(t + 1) * pt_stack_bytes);
          st.walive[t >> 5]++;
        }
        while (st.alive) {
          long before = st.progress;
          for (unsigned t = 0; t < n; t++)
            if (!fs[t].done) { st.cur = t; pt_swap(&st.sched, fs[t].sp); }
          if (st.alive && st.progress == before) rc = -1;
          if (st.fault) rc = -3;
          if (rc) break;
        }
      }
  pt = saved;
  free(fs);
  free(sp);
  return rc;
}
