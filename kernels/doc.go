// Package kernels holds the hot loops of poot's CPU backend: quantized and
// floating-point matrix products, the row-wise operations of a transformer
// layer (RMSNorm, softmax, SwiGLU, RoPE, residual add), f16/bf16 conversion,
// a fused one-pass attention decode kernel over a KV cache, and a persistent
// worker pool to run them in parallel.
//
// It is not a tensor library: every kernel works on plain slices with explicit
// lengths, allocates nothing, and knows nothing about graphs or shapes beyond
// the integers it is given. The planner decides what to call and how to split
// the work; this package only makes each call fast.
//
// # Matrix products
//
// Weights are stored as GGUF stores them: N rows of K elements, each row a run
// of whole blocks of its dtype. A product computes
//
//	y[t*N+n] = sum_k x[t*K+k] * W[n][k]
//
// for activation rows t in [0,T) and weight rows n in [n0,n1), so workers can
// split N. Activations are first prepared once per product with
// [Acts.Prepare]: for F32/F16/BF16 weights they are used as f32; for the
// 32-element quantized types they are quantized to 8-bit blocks of 32 with an
// f32 scale (as llama.cpp's Q8_0), and for the K-quants to 8-bit blocks of
// 256 with 16-element sums (as Q8_K), so the inner loops are integer dot
// products with one float multiply per block. Several activation rows are
// processed against each weight block while it is in registers, which is what
// turns prompt processing from memory-bound into compute-bound.
//
// # Instruction sets
//
// On amd64 with AVX2, FMA and F16C the products use hand-written assembly
// (VPMADDUBSW/VPMADDWD for the integer dots, VFMADD231PS for floats, VCVTPH2PS
// for f16); every other case, and any machine without those features, runs
// the portable Go code, which computes the same integer sums.
package kernels
