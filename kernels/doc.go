// Package kernels holds the hot loops of poot's CPU backend: quantized and
// floating-point matrix products, the row-wise operations of a transformer
// layer (RMSNorm, softmax, SwiGLU, RoPE, residual add), f16/bf16 conversion,
// a fused one-pass attention decode kernel over a KV cache, and a persistent
// worker pool to run them in parallel.
//
// It is not a tensor library: every kernel works on plain slices with explicit
// lengths, allocates nothing, and knows nothing about graphs or shapes beyond
// the integers it is given. The planner decides what to call and how to split
// the work; this package only makes each call fast. Checked entry points
// return errors for inconsistent lengths; nothing panics on input.
//
// # Matrix products
//
// Weights are stored as GGUF stores them: N rows of K elements, each row a run
// of whole blocks of its dtype (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
// Q4_K, Q5_K, Q6_K, MXFP4). A product computes
//
//	y[t*ldy+n] = sum_k x[t*K+k] * W[n][k]
//
// for activation rows t in [0,T) and weight rows n in [n0,n1), so workers can
// split N ([MatMulRows]); [MatMul] does the split over a [Pool]. Activations
// are prepared once per product with [Acts.Prepare], and one preparation
// serves every product that reads the same x with weights of the same family
// (say the Q, K and V projections). For F32/F16/BF16 weights x is used as is;
// for the 32-element quantized types (MXFP4 among them: its FP4 codes are
// looked up as ggml's doubled values, small integers) it is quantized to
// 8-bit blocks of 32 with an f32 scale (as llama.cpp's Q8_0, plus each
// block's scaled sum), and for the K-quants to 8-bit blocks of 256 with sums of each 16 (as Q8_K). The
// inner loops are then integer dot products with one float multiply a block.
// The error this adds is at most half a quantization step of each activation
// block times the weights it meets: sum over blocks of amax/254 * sum|w|.
//
// For prompt processing (T >= 4) each weight block is decoded once and
// multiplied with four activation rows while it is in registers (float
// weights: four activation rows by three weight rows, blocked along K so the
// activations stay in L2), which makes the product compute-bound rather
// than memory-bound.
//
// # Instruction sets
//
// The kernels run at one of a few dispatch levels ([Level]): "go", the
// portable Go code every machine runs; "avx2", hand-written assembly for
// amd64 with AVX2, FMA and F16C (VPMADDUBSW/VPMADDWD for the integer dots,
// VFMADD231PS for floats, VCVTPH2PS for f16) used by the products and the
// exp, axpy, quantization and f16 loops; and "avx512", which needs AVX-512
// F, BW and VL with VNNI and has products of its own for every dtype (one
// activation row against two or more streams of weight rows for decode;
// register tiles over packed weight panels for prompts), whose integer dots
// take 64 bytes at a time by VPDPBUSD (unsigned by signed bytes: unsigned
// codes, or weights offset by 128, against the signed activation quants,
// with the offset times each activation block's sum subtracted, so the
// integer sums are exact and equal to the Go code's). At start-up
// CPUID picks the best level the CPU and OS support ([BestLevel]). The environment variable
// POOT_KERNELS ([EnvVar]) set to a level's name lowers it, and the lowered
// level is then the ceiling for the whole process, as if the CPU had nothing
// more; an unknown name, or a level the CPU lacks, is not fatal: the kernels
// run at the best level and [EnvError] (and [Features]) report why the value
// was ignored. [CurrentLevel] and [Features] say which level is in use;
// [SetLevel] switches levels for tests and benchmarks, refusing with
// [ErrLevel] a level the CPU or POOT_KERNELS rules out. Every level computes
// the same integer block sums, and the package's tests run every check once
// per level the machine supports ([Levels]), in subtests named by level.
//
// Two choices at the avx512 level follow the CPU's vendor (one also its
// family), because they were measured to go opposite ways on the Intel Xeon
// and the AMD EPYC, or measured on one only: how the decode kernels prefetch
// their weights (PREFETCHT0 2048 and 1024 bytes ahead on Intel; on AMD only
// the float ones, by PREFETCHNTA 256 bytes ahead, which keeps the activation
// in L1 beside the weight streams, and the Q4_0, Q4_1, Q5_0, Q5_1 and MXFP4
// ones, which are slow enough per byte to gain, by PREFETCHT0 2048 ahead as
// on Intel, as the Q8_0 ones do from the Zen 5 on, where they read DRAM
// faster so, and the float ones also by PREFETCHT0 1024 ahead from the
// Zen 5 on; the avx2 level's decode kernels likewise prefetch 1024 bytes
// ahead except on AMD, where only its Q4_0 and MXFP4 ones do), from which row
// length the float decode kernels read four streams of rows rather than two
// (2048 elements on AMD, above 4096 on Intel) and six rather than four (4096
// on AMD, never on Intel), and the Q8_0 one four rather than two (every row
// on AMD, never on Intel). None changes a result. Where the CPU has GFNI the
// avx512 Q4_K and Q5_K decode kernels spread each 32 bytes of nibbles by one
// VGF2P8AFFINEQB instead of a shift and a mask (7-8% more from L2 on the Zen
// 4); the sums are the same bits either way.
//
// Every assembly routine ends with VZEROUPPER and uses only VEX-encoded
// instructions (EVEX too in the AVX-512 kernel), never legacy SSE: mixing
// legacy-SSE instructions with dirty upper YMM state made one kernel 40
// times slower on the test machine. VZEROUPPER clears the upper halves of
// Z0-Z15 only; the kernels that use Z16-Z31 (the multi-stream decode
// kernels, the prompt tiles and their packers) zero them before it.
package kernels
