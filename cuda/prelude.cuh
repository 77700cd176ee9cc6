// The functions every generated kernel may call, in CUDA C that NVRTC and
// the host harness (host.h) both compile. Half-precision values are
// storage only (u16) and convert by bit manipulation, so no CUDA header
// is needed.
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;

static __device__ __forceinline__ float f32_bits(u32 u) { union { u32 u; float f; } c; c.u = u; return c.f; }
static __device__ __forceinline__ u32 bits_f32(float f) { union { u32 u; float f; } c; c.f = f; return c.u; }
static __device__ __forceinline__ bool finite_f(float x) { return (bits_f32(x) & 0x7f800000u) != 0x7f800000u; }

// Go's max and min: a NaN operand gives NaN, +0 ranks above -0.
static __device__ __forceinline__ float max_nan(float a, float b) {
  if (a != a || b != b) return f32_bits(0x7fc00000u);
  if (a == b) return f32_bits(bits_f32(a) & bits_f32(b));
  return a > b ? a : b;
}
static __device__ __forceinline__ float min_nan(float a, float b) {
  if (a != a || b != b) return f32_bits(0x7fc00000u);
  if (a == b) return f32_bits(bits_f32(a) | bits_f32(b));
  return a < b ? a : b;
}

static __device__ __forceinline__ float f16_to_f32(u16 h) {
#if defined(__CUDA_ARCH__)
  // The conversion instruction, exact for every non-NaN half (a NaN keeps
  // its payload by the bit path below): the bit path costs a dozen
  // instructions an element, which bounds a GEMV over F16 weights.
  if ((h & 0x7fffu) <= 0x7c00u) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
#endif
  u32 s = (u32)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return f32_bits(s | 0x7f800000u | (m << 13));
  if (e == 0) { float v = (float)m * 5.9604644775390625e-8f; return s ? -v : v; }
  return f32_bits(s | ((e + 112u) << 23) | (m << 13));
}
// Round to nearest even; overflow gives infinity.
static __device__ __forceinline__ u16 f32_to_f16(float f) {
#if defined(__CUDA_ARCH__)
  // The instruction rounds alike (to nearest even, past 65520 to
  // infinity, subnormals exactly); NaNs keep the bit path's quiet NaN.
  if (f == f) { u16 h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
#endif
  u32 x = bits_f32(f), s = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return (u16)(s | 0x7e00u);
  if (a >= 0x477ff000u) return (u16)(s | 0x7c00u);
  if (a < 0x38800000u) {
    float v = f32_bits(a) * 16777216.0f;
    u32 q = (u32)v; float r = v - (float)q;
    if (r > 0.5f || (r == 0.5f && (q & 1u))) q++;
    return (u16)(s | q);
  }
  a -= 0x38000000u;
  return (u16)(s | ((a + 0xfffu + ((a >> 13) & 1u)) >> 13));
}
static __device__ __forceinline__ u16 f32_to_bf16(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if (f == f) { u16 h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
#endif
  u32 x = bits_f32(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (u16)((x >> 16) | 0x40u);
  return (u16)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
// I32 to BF16 rounds once, to nearest even.
static __device__ __forceinline__ u16 i32_to_bf16(int v) {
  if (v == 0) return 0;
  u32 s = v < 0 ? 0x8000u : 0u, a = v < 0 ? 0u - (u32)v : (u32)v;
  int e = 31; while (!(a >> e)) e--;
  if (e > 7) {
    int sh = e - 7; u32 rem = a & ((1u << sh) - 1u), half = 1u << (sh - 1);
    a >>= sh;
    if (rem > half || (rem == half && (a & 1u))) { a++; if (a == 256u) { a = 128u; e++; } }
  } else a <<= (7 - e);
  return (u16)(s | ((u32)(e + 127) << 7) | (a & 0x7fu));
}
// Truncate toward zero, saturating; NaN gives 0.
static __device__ __forceinline__ int f32_to_i32(float f) {
  if (f != f) return 0;
  if (f >= 2147483648.0f) return 2147483647;
  if (f <= -2147483648.0f) return (int)0x80000000u;
  return (int)f;
}

// Element k of a row stored as each weight dtype.
static __device__ __forceinline__ float ld_f32(const u8* r, int k) { return ((const float*)r)[k]; }
static __device__ __forceinline__ float ld_f16(const u8* r, int k) { return f16_to_f32(((const u16*)r)[k]); }
static __device__ __forceinline__ float ld_bf16(const u8* r, int k) { return f32_bits((u32)((const u16*)r)[k] << 16); }
static __device__ __forceinline__ float ld_half(const u8* b) { return f16_to_f32((u16)(b[0] | (b[1] << 8))); }
static __device__ __forceinline__ float ld_q8_0(const u8* r, int k) {
  const u8* b = r + (k >> 5) * 34; return (float)(signed char)b[2 + (k & 31)] * ld_half(b);
}
// Element k of a Q8_0 tensor read as one long row (a KV cache in place).
static __device__ __forceinline__ float ld_q8_0l(const u8* r, long long k) {
  const u8* b = r + (k >> 5) * 34; return (float)(signed char)b[2 + (k & 31)] * ld_half(b);
}
static __device__ __forceinline__ int nibble(const u8* qs, int j) { return j < 16 ? qs[j] & 15 : qs[j - 16] >> 4; }
static __device__ __forceinline__ float ld_q4_0(const u8* r, int k) {
  const u8* b = r + (k >> 5) * 18; return (float)(nibble(b + 2, k & 31) - 8) * ld_half(b);
}
static __device__ __forceinline__ float ld_q4_1(const u8* r, int k) {
  const u8* b = r + (k >> 5) * 20; return (float)nibble(b + 4, k & 31) * ld_half(b) + ld_half(b + 2);
}
static __device__ __forceinline__ int fifth(const u8* qh, int j) { return ((qh[j >> 3] >> (j & 7)) & 1) << 4; }
static __device__ __forceinline__ float ld_q5_0(const u8* r, int k) {
  const u8* b = r + (k >> 5) * 22; int j = k & 31;
  return (float)((nibble(b + 6, j) | fifth(b + 2, j)) - 16) * ld_half(b);
}
static __device__ __forceinline__ float ld_q5_1(const u8* r, int k) {
  const u8* b = r + (k >> 5) * 24; int j = k & 31;
  return (float)(nibble(b + 8, j) | fifth(b + 4, j)) * ld_half(b) + ld_half(b + 2);
}

// K-quants, super-blocks of 256 as GGUF stores them. Q4_K and Q5_K: the
// 6-bit scale and min of sub-block s (of 32) packed in 12 bytes; byte l
// of 64-element chunk c holds elements 64c+l (low nibble) and 64c+32+l
// (high), so element j is in byte 32(j>>6) + (j&31), nibble (j>>5)&1.
static __device__ __forceinline__ void k4_scale_min(const u8* s, int j, int* sc, int* m) {
  if (j < 4) { *sc = s[j] & 63; *m = s[j + 4] & 63; }
  else { *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4); *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4); }
}
static __device__ __forceinline__ float ld_q4_k(const u8* r, int k) {
  const u8* b = r + (k >> 8) * 144; int j = k & 255, s = j >> 5, sc, m;
  k4_scale_min(b + 4, s, &sc, &m);
  int q = (b[16 + 32 * (j >> 6) + (j & 31)] >> (4 * (s & 1))) & 15;
  float d1 = ld_half(b) * (float)sc, o1 = ld_half(b + 2) * (float)m;
  return d1 * (float)q - o1;
}

// Q5_K: Q4_K's layout with 32 bytes of fifth bits before the nibbles;
// element j's is bit j>>5 (its sub-block) of byte j&31.
static __device__ __forceinline__ float ld_q5_k(const u8* r, int k) {
  const u8* b = r + (k >> 8) * 176; int j = k & 255, s = j >> 5, sc, m;
  k4_scale_min(b + 4, s, &sc, &m);
  int q = ((b[48 + 32 * (j >> 6) + (j & 31)] >> (4 * (s & 1))) & 15) | (((b[16 + (j & 31)] >> s) & 1) << 4);
  float d1 = ld_half(b) * (float)sc, o1 = ld_half(b + 2) * (float)m;
  return d1 * (float)q - o1;
}
// Q6_K: 128 bytes of low nibbles, 64 of top bit pairs, 16 int8 scales (one
// a 16 elements), d last. In half h (of 128), quarter q (of 32), lane l:
// the low nibble is in ql byte 64h + 32(q&1) + l (high nibble for q >= 2),
// the top two bits at bit 2q of qh byte 32h + l; the quant is offset by 32.
static __device__ __forceinline__ float ld_q6_k(const u8* r, int k) {
  const u8* b = r + (k >> 8) * 210; int j = k & 255, h = j >> 7, q = (j >> 5) & 3, l = j & 31;
  int lo = (b[64 * h + 32 * (q & 1) + l] >> (4 * (q >> 1))) & 15;
  int hi = (b[128 + 32 * h + l] >> (2 * q)) & 3;
  float ds = ld_half(b + 208) * (float)(signed char)b[192 + (j >> 4)];
  return ds * (float)((lo | (hi << 4)) - 32);
}

// The GEMV's units: the dot of unit u of a row (4 F32, 8 F16 or BF16
// elements, a Q8_0 or Q4_0 block, or 64 elements of a K-quant super-block)
// with the same elements of x, each read with the widest loads its
// alignment allows (16 bytes for the floats and Q4_K's nibbles, 2 for
// the blocks of 34 and 18 bytes), so that a warp reads 512 contiguous
// bytes of weights a step instead of 64.
struct __attribute__((aligned(16))) v4u { u32 x, y, z, w; };
struct __attribute__((aligned(16))) v4f { float x, y, z, w; };
static __device__ __forceinline__ v4u v4u_of(u32 x, u32 y, u32 z, u32 w) { v4u r; r.x = x; r.y = y; r.z = z; r.w = w; return r; }
static __device__ __forceinline__ float dot4(v4f a, v4f b) { return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w; }
// Sixteen elements k..k+15 of a row (k a multiple of 16), each as the
// ld_ function reads it, with one read of their block's scales and the
// widest loads the block's alignment allows: the tensor-core GEMM's
// staging of Q8_0 (halfwords), Q4_K (16 bytes of nibbles) and Q6_K
// (halfwords) weights.
static __device__ __forceinline__ void ld16_q8_0(const u8* r, int k, float* v) {
  const u8* b = r + (k >> 5) * 34; const u16* q = (const u16*)(b + 2 + (k & 16)); float d = ld_half(b);
  for (int i = 0; i < 8; i++) { u32 p = q[i]; v[2 * i] = (float)(signed char)(p & 255u) * d; v[2 * i + 1] = (float)(signed char)(p >> 8) * d; }
}
static __device__ __forceinline__ void ld16_q4_k(const u8* r, int k, float* v) {
  const u8* b = r + (k >> 8) * 144; int j = k & 255, s = j >> 5, sc, m;
  k4_scale_min(b + 4, s, &sc, &m);
  float d1 = ld_half(b) * (float)sc, o1 = ld_half(b + 2) * (float)m;
  v4u w = *(const v4u*)(b + 16 + 32 * (j >> 6) + (j & 16)); u32 ws[4] = {w.x, w.y, w.z, w.w}; int sh = 4 * (s & 1);
  for (int i = 0; i < 16; i++) v[i] = d1 * (float)((ws[i >> 2] >> (8 * (i & 3) + sh)) & 15u) - o1;
}
static __device__ __forceinline__ void ld16_q6_k(const u8* r, int k, float* v) {
  const u8* b = r + (k >> 8) * 210; int j = k & 255, h = j >> 7, q = (j >> 5) & 3, l = j & 16;
  const u16* lo = (const u16*)(b + 64 * h + 32 * (q & 1) + l); const u16* hi = (const u16*)(b + 128 + 32 * h + l);
  float ds = ld_half(b + 208) * (float)(signed char)b[192 + (j >> 4)];
  for (int i = 0; i < 8; i++) {
    u32 a = lo[i], c = hi[i];
    for (int e = 0; e < 2; e++) {
      int x = (int)((a >> (8 * e + 4 * (q >> 1))) & 15u) | (int)(((c >> (8 * e + 2 * q)) & 3u) << 4);
      v[2 * i + e] = ds * (float)(x - 32);
    }
  }
}

static __device__ __forceinline__ float dot_f32x4(const u8* r, int u, const float* x) {
  return dot4(((const v4f*)r)[u], ((const v4f*)x)[u]);
}
// F16 and BF16: two halves a word, the element first in the low half.
static __device__ __forceinline__ float dot_f16x8(const u8* r, int u, const float* x) {
  v4u w = ((const v4u*)r)[u]; v4f a = ((const v4f*)x)[2 * u], b = ((const v4f*)x)[2 * u + 1];
  v4f lo = {f16_to_f32((u16)w.x), f16_to_f32((u16)(w.x >> 16)), f16_to_f32((u16)w.y), f16_to_f32((u16)(w.y >> 16))};
  v4f hi = {f16_to_f32((u16)w.z), f16_to_f32((u16)(w.z >> 16)), f16_to_f32((u16)w.w), f16_to_f32((u16)(w.w >> 16))};
  return dot4(lo, a) + dot4(hi, b);
}
static __device__ __forceinline__ float dot_bf16x8(const u8* r, int u, const float* x) {
  v4u w = ((const v4u*)r)[u]; v4f a = ((const v4f*)x)[2 * u], b = ((const v4f*)x)[2 * u + 1];
  v4f lo = {f32_bits(w.x << 16), f32_bits(w.x & 0xffff0000u), f32_bits(w.y << 16), f32_bits(w.y & 0xffff0000u)};
  v4f hi = {f32_bits(w.z << 16), f32_bits(w.z & 0xffff0000u), f32_bits(w.w << 16), f32_bits(w.w & 0xffff0000u)};
  return dot4(lo, a) + dot4(hi, b);
}
// Q8_0: the block's 32 quants as 16 halfwords after its scale.
static __device__ __forceinline__ float dot_q8_0b(const u8* r, int u, const float* x) {
  const u16* b = (const u16*)(r + u * 34); const v4f* xs = (const v4f*)(x + 32 * u);
  float acc = 0.0f;
  for (int i = 0; i < 8; i++) {
    u32 a = b[1 + 2 * i], c = b[2 + 2 * i];
    v4f q = {(float)(signed char)a, (float)(signed char)(a >> 8), (float)(signed char)c, (float)(signed char)(c >> 8)};
    acc += dot4(q, xs[i]);
  }
  return acc * f16_to_f32(b[0]);
}
// Q4_0: byte l of the 16 holds element l (low nibble) and l+16 (high).
static __device__ __forceinline__ float dot_q4_0b(const u8* r, int u, const float* x) {
  const u16* b = (const u16*)(r + u * 18); const float* xs = x + 32 * u;
  float acc = 0.0f;
  for (int i = 0; i < 8; i++) {
    u32 w = b[1 + i];
    acc += (float)((int)(w & 15) - 8) * xs[2 * i] + (float)((int)((w >> 8) & 15) - 8) * xs[2 * i + 1] +
           (float)((int)((w >> 4) & 15) - 8) * xs[16 + 2 * i] + (float)((int)((w >> 12) & 15) - 8) * xs[17 + 2 * i];
  }
  return acc * f16_to_f32(b[0]);
}
// Q4_K: unit u is 64-element chunk u&3 of super-block u>>2: 32 bytes of
// nibbles (two 16-byte loads), low nibbles sub-block 2c, high 2c+1.
static __device__ __forceinline__ float dot_q4_kc(const u8* r, int u, const float* x) {
  const u8* b = r + (u >> 2) * 144; int c = u & 3, sc0, m0, sc1, m1;
  k4_scale_min(b + 4, 2 * c, &sc0, &m0);
  k4_scale_min(b + 4, 2 * c + 1, &sc1, &m1);
  const v4u* q = (const v4u*)(b + 16 + 32 * c);
  const v4f* xs = (const v4f*)(x + 64 * u);
  float lo = 0.0f, hi = 0.0f, slo = 0.0f, shi = 0.0f;
  for (int h = 0; h < 2; h++) {
    v4u w = q[h]; u32 ws[4] = {w.x, w.y, w.z, w.w};
    for (int i = 0; i < 4; i++) {
      u32 v = ws[i]; v4f a = xs[4 * h + i], e = xs[8 + 4 * h + i];
      v4f ql = {(float)(v & 15), (float)((v >> 8) & 15), (float)((v >> 16) & 15), (float)((v >> 24) & 15)};
      v4f qh = {(float)((v >> 4) & 15), (float)((v >> 12) & 15), (float)((v >> 20) & 15), (float)(v >> 28)};
      lo += dot4(ql, a); hi += dot4(qh, e);
      slo += a.x + a.y + a.z + a.w; shi += e.x + e.y + e.z + e.w;
    }
  }
  float d = ld_half(b), dm = ld_half(b + 2);
  return d * ((float)sc0 * lo + (float)sc1 * hi) - dm * ((float)m0 * slo + (float)m1 * shi);
}

// Q5_K: Q4_K's unit with its fifth bits: bit 2c (low nibbles) and 2c+1
// (high) of the 32 qh bytes, read as two 16-byte loads.
static __device__ __forceinline__ float dot_q5_kc(const u8* r, int u, const float* x) {
  const u8* b = r + (u >> 2) * 176; int c = u & 3, sc0, m0, sc1, m1;
  k4_scale_min(b + 4, 2 * c, &sc0, &m0);
  k4_scale_min(b + 4, 2 * c + 1, &sc1, &m1);
  const v4u* q = (const v4u*)(b + 48 + 32 * c);
  const v4u* qh = (const v4u*)(b + 16);
  const v4f* xs = (const v4f*)(x + 64 * u);
  float lo = 0.0f, hi = 0.0f, slo = 0.0f, shi = 0.0f;
  for (int h = 0; h < 2; h++) {
    v4u w = q[h], f = qh[h]; u32 ws[4] = {w.x, w.y, w.z, w.w}, fs[4] = {f.x, f.y, f.z, f.w};
    for (int i = 0; i < 4; i++) {
      u32 v = ws[i], e5 = fs[i] >> (2 * c); v4f a = xs[4 * h + i], e = xs[8 + 4 * h + i];
      v4f ql = {(float)((v & 15) | ((e5 & 1) << 4)), (float)(((v >> 8) & 15) | (((e5 >> 8) & 1) << 4)),
                (float)(((v >> 16) & 15) | (((e5 >> 16) & 1) << 4)), (float)(((v >> 24) & 15) | (((e5 >> 24) & 1) << 4))};
      v4f qu = {(float)(((v >> 4) & 15) | (((e5 >> 1) & 1) << 4)), (float)(((v >> 12) & 15) | (((e5 >> 9) & 1) << 4)),
                (float)(((v >> 20) & 15) | (((e5 >> 17) & 1) << 4)), (float)((v >> 28) | (((e5 >> 25) & 1) << 4))};
      lo += dot4(ql, a); hi += dot4(qu, e);
      slo += a.x + a.y + a.z + a.w; shi += e.x + e.y + e.z + e.w;
    }
  }
  float d = ld_half(b), dm = ld_half(b + 2);
  return d * ((float)sc0 * lo + (float)sc1 * hi) - dm * ((float)m0 * slo + (float)m1 * shi);
}
// Q6_K: unit u is half h = (u>>1)&1 of super-block u>>2, lanes l0..l0+15
// (l0 = 16(u&1)) of its four quarters: 16 bytes of each of its two runs
// of low nibbles and of its top bit pairs, read as halfwords (a
// super-block is 210 bytes, so only two-byte alignment holds), each
// quarter's 16 elements under one scale.
static __device__ __forceinline__ float dot_q6_kc(const u8* r, int u, const float* x) {
  const u8* b = r + (u >> 2) * 210; int h = (u >> 1) & 1, l0 = 16 * (u & 1);
  const u16* q0 = (const u16*)(b + 64 * h + l0);
  const u16* q1 = (const u16*)(b + 64 * h + 32 + l0);
  const u16* qh = (const u16*)(b + 128 + 32 * h + l0);
  const float* xs = x + 256 * (u >> 2) + 128 * h + l0;
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int i = 0; i < 8; i++) {
    u32 a = q0[i], c = q1[i], t = qh[i];
    for (int k = 0; k < 2; k++) {
      u32 lo0 = (a >> (8 * k)) & 255, lo1 = (c >> (8 * k)) & 255, top = (t >> (8 * k)) & 255;
      int l = 2 * i + k;
      acc[0] += (float)((int)((lo0 & 15) | ((top & 3) << 4)) - 32) * xs[l];
      acc[1] += (float)((int)((lo1 & 15) | (((top >> 2) & 3) << 4)) - 32) * xs[32 + l];
      acc[2] += (float)((int)((lo0 >> 4) | (((top >> 4) & 3) << 4)) - 32) * xs[64 + l];
      acc[3] += (float)((int)((lo1 >> 4) | ((top >> 6) << 4)) - 32) * xs[96 + l];
    }
  }
  const signed char* sc = (const signed char*)(b + 192 + 8 * h + (l0 >> 4));
  return ld_half(b + 208) * ((float)sc[0] * acc[0] + (float)sc[2] * acc[1] + (float)sc[4] * acc[2] + (float)sc[6] * acc[3]);
}

// MXFP4 (OCP Microscaling, FP4 E2M1 elements, as ggml stores it): blocks
// of 32 in 17 bytes, an E8M0 exponent e (bias 127) and 16 bytes of 4-bit
// codes split as the legacy nibbles. A code is a sign bit above three
// magnitude bits naming 0, 0.5, 1, 1.5, 2, 3, 4, 6; taken doubled (0, 1,
// 2, 3, 4, 6, 8, 12) it multiplies half the block's scale, 2^(e−128),
// exactly (e of 0 and 1 give float32 subnormals; 255 is 2^127, not NaN).
static __device__ __forceinline__ float e8m0_half(u32 e) { return e < 2u ? f32_bits(1u << (21u + e)) : f32_bits((e - 1u) << 23); }
static __device__ __forceinline__ float ld_mxfp4(const u8* r, int k) {
  const u8* b = r + (k >> 5) * 17; int c = nibble(b + 1, k & 31), m = c & 7;
  int v = m < 4 ? m : (2 + (m & 1)) << ((m >> 1) - 1);
  return (float)(c & 8 ? -v : v) * e8m0_half(b[0]);
}

// Reductions over a warp and over a block (whose size is a multiple of
// 32); every thread gets the result, summed in a fixed order.
static __device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
static __device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = max_nan(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
static __device__ __forceinline__ double block_sum(double v, double* sh) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  double t = sh[0];
  for (unsigned w = 1; w < (blockDim.x >> 5); w++) t += sh[w];
  __syncthreads();
  return t;
}
static __device__ __forceinline__ float block_max(float v, float* sh) {
  v = warp_max(v);
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  float t = sh[0];
  for (unsigned w = 1; w < (blockDim.x >> 5); w++) t = max_nan(t, sh[w]);
  __syncthreads();
  return t;
}

// Tensor cores: D += A·B for one warp, mma.sync m16n8k16 with A 16×16
// row-major, B 16×8 column-major, f32 accumulators. a, b and d are the
// calling lane's fragments as the PTX ISA lays them out (4, 2 and 4
// registers; the GEMM in gen.go loads them). Every lane of the warp must
// call it together. bf16 and m16n8k16 need sm_80; Generate emits no call
// for an older device. The host harness (host.h) defines both by the
// fragment layout instead.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
static __device__ __forceinline__ void mma_16816_f16(float* d, const u32* a, const u32* b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
static __device__ __forceinline__ void mma_16816_bf16(float* d, const u32* a, const u32* b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif
// A finite x that f32_to_f16 rounds to infinity.
static __device__ __forceinline__ bool f16_overflows(float x) { return finite_f(x) && (bits_f32(x) & 0x7fffffffu) >= 0x477ff000u; }
// Two values as the halves of one fragment register: the first (lower
// k) in the low 16 bits.
static __device__ __forceinline__ u32 pack_f16(float lo, float hi) { return (u32)f32_to_f16(lo) | ((u32)f32_to_f16(hi) << 16); }
static __device__ __forceinline__ u32 pack_bf16(float lo, float hi) { return (u32)f32_to_bf16(lo) | ((u32)f32_to_bf16(hi) << 16); }
