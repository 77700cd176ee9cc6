package cuda

import (
	"errors"
	"strings"

	"github.com/pootlabs/poot"
)

// ErrHalfRange is the error of a step in which a tensor-core GEMM over F16
// weights met a finite activation beyond f16's range, which it would have
// rounded to infinity: the step's outputs are not returned. With
// Interpreter.NoTensorCores such a MatMul runs in f32.
var ErrHalfRange = errors.New("cuda: an activation beyond f16's range (±65504) in a tensor-core GEMM over F16 weights")

// GenOptions choose among the kernels Generate may write.
type GenOptions struct {
	// SM is the device's compute capability, 10·major + minor (0: 80).
	SM int
	// NoTensorCores runs every MatMul by the f32 GEMV, whatever its row
	// count: results within a few float32 ulps of the oracle's.
	NoTensorCores bool
}

// minGemmRows is the least number of activation rows a MatMul runs by
// the tensor-core GEMM: one m16 fragment. Decode and short prefills keep
// the GEMV, which reads the weights once per row anyway.
const minGemmRows = 16

// gemm reports whether the contraction e runs by the tensor-core GEMM: a
// MatMul with a rank-2 weight and at least minGemmRows rows, on a device
// of sm_80 or later. mma.sync m16n8k16, and any bf16 mma, need sm_80; an
// older device keeps the GEMV, so its module calls no mma and compiles.
func (o GenOptions) gemm(g *poot.Graph, e poot.Eqn) bool {
	if o.NoTensorCores || e.Op != poot.MatMul || (o.SM != 0 && o.SM < 80) {
		return false
	}
	xs, ws := g.Type(e.Inputs[0]).Shape, g.Type(e.Inputs[1]).Shape
	K := last(xs)
	return len(ws) == 2 && K > 0 && int(xs.Size())/K >= minGemmRows
}

// gemmHalf is the 16-bit type the GEMM rounds both operands to before the
// tensor cores multiply them (exactly, into f32 accumulators). F16
// weights are read exactly in f16, so only the activations round, to
// f16's 11 significant bits; this keeps the weight bits a bf16 product
// would drop, at the price of f16's range: a finite activation that
// rounds to infinity faults the step with ErrHalfRange. Every other
// weight takes bf16, which keeps f32's range for the activations and for
// F32 weights; BF16 weights are then exact, and for packed weights bf16's
// rounding of the decoded value (at most 2⁻⁹ of it) stays under half the
// quantization step of every format (Q8_0, the finest, steps by 1/127 of
// its block's largest), while their decoded values (an f16 scale times
// the quant) could pass f16's range.
func gemmHalf(w poot.DType) string {
	if w == poot.F16 {
		return "f16"
	}
	return "bf16"
}

// genGemm is a MatMul x[M,K]·w[N,K]ᵀ on tensor cores. A block of four
// warps computes a 64×64 tile of the output, each warp 32×32 as 2×4
// mma.sync m16n8k16 fragments. Per step of 32 along K the block stages x
// (rounded to the half type) and w (rounded after decoding) in shared
// memory, as pairs of halves along K, one pair per word, so that a
// fragment register is one word. Each thread stages sixteen elements of
// one row of each: read into registers while the tensor cores work on
// the step before (two shared buffers, one barrier a step), with 16-byte
// loads where K is whole steps (x, and F32, F16 and BF16 weights, whose
// F16 and BF16 words are already the fragment's pairs), Q8_0, Q4_K and
// Q6_K weights sixteen elements at a time (ld16_ in the prelude), element
// by element otherwise. Rows past M, columns past N and k past K are zero
// (and their outputs not written). Rows are padded to 20 words: the
// eight rows and four words a fragment load touches fall in distinct
// banks.
func genGemm(g *poot.Graph, e poot.Eqn) *kgen {
	xs, wt := g.Type(e.Inputs[0]).Shape, g.Type(e.Inputs[1])
	K := last(xs)
	M, N := int(xs.Size())/K, wt.Shape[0]
	rb := wt.DType.RowBytes(int64(K))
	half, dec := gemmHalf(wt.DType), decoder(wt.DType)
	whole := K%32 == 0
	kg := newKgen(g, "gemm_tc_"+strings.ToLower(wt.DType.String()), 128, ceilDiv(N, 64), ceilDiv(M, 64))
	x, w, o := kg.ptr(e.Inputs[0], false), kg.ptr(e.Inputs[1], true), kg.ptr(e.Out, false)
	kg.line("__shared__ __attribute__((aligned(16))) u32 as[2][64][20], bs[2][64][20];")
	kg.line("int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, q = lane & 3;")
	kg.line("int m0 = blockIdx.y * 64, n0 = blockIdx.x * 64, wm = (warp >> 1) * 32, wn = (warp & 1) * 32;")
	kg.line("int sr = tid >> 1, sk = 16 * (tid & 1), m = m0 + sr, n = n0 + sr;")
	kg.line("const float* xr = %s + (long long)(m < %d ? m : %d) * %d;", x, M, M-1, K)
	kg.line("const u8* wr = %s + (long long)(n < %d ? n : %d) * %d;", w, N, N-1, rb)
	kg.line("float acc[2][4][4];")
	kg.line("for (int i = 0; i < 2; i++) for (int j = 0; j < 4; j++) for (int c = 0; c < 4; c++) acc[i][j][c] = 0.0f;")
	kg.line("u32 xa[8], wa[8];")
	// Step s is read at k0 = 32s into registers, and stored into buffer
	// s&1 after the mma of step s-1 (buffer (s-1)&1) has been issued.
	kg.line("for (int k0 = 0, buf = 0; k0 < %d; k0 += 32, buf ^= 1) {", K+32)
	kg.line("  if (k0 < %d) {", K)
	overflow := func(vs ...string) {
		if half != "f16" {
			return
		}
		var c []string
		for _, v := range vs {
			c = append(c, "f16_overflows("+v+")")
		}
		kg.line("      if (%s) *%s = %d;", strings.Join(c, " || "), kg.fault(), faultHalfRange)
	}
	if whole {
		kg.line("    if (m < %d) { const v4f* xp = (const v4f*)(xr + k0 + sk);", M)
		kg.line("      for (int i = 0; i < 4; i++) { v4f v = xp[i];")
		overflow("v.x", "v.y", "v.z", "v.w")
		kg.line("        xa[2 * i] = pack_%s(v.x, v.y); xa[2 * i + 1] = pack_%s(v.z, v.w); } }", half, half)
		kg.line("    else for (int i = 0; i < 8; i++) xa[i] = 0u;")
	} else {
		kg.line("    for (int i = 0; i < 8; i++) { int k = k0 + sk + 2 * i; float x0 = 0.0f, x1 = 0.0f;")
		kg.line("      if (m < %d) { if (k < %d) x0 = xr[k]; if (k + 1 < %d) x1 = xr[k + 1]; }", M, K, K)
		overflow("x0", "x1")
		kg.line("      xa[i] = pack_%s(x0, x1); }", half)
	}
	switch {
	case whole && (wt.DType == poot.F16 || wt.DType == poot.BF16):
		kg.line("    if (n < %d) { const v4u* wp = (const v4u*)(wr + 2 * (k0 + sk)); v4u a = wp[0], b = wp[1];", N)
		kg.line("      wa[0] = a.x; wa[1] = a.y; wa[2] = a.z; wa[3] = a.w; wa[4] = b.x; wa[5] = b.y; wa[6] = b.z; wa[7] = b.w; }")
		kg.line("    else for (int i = 0; i < 8; i++) wa[i] = 0u;")
	case whole && wt.DType == poot.F32:
		kg.line("    if (n < %d) { const v4f* wp = (const v4f*)(wr + 4 * (k0 + sk));", N)
		kg.line("      for (int i = 0; i < 4; i++) { v4f v = wp[i]; wa[2 * i] = pack_%s(v.x, v.y); wa[2 * i + 1] = pack_%s(v.z, v.w); } }", half, half)
		kg.line("    else for (int i = 0; i < 8; i++) wa[i] = 0u;")
	case wt.DType == poot.Q8_0 || wt.DType == poot.Q4_K || wt.DType == poot.Q6_K:
		kg.line("    if (n < %d) { float v[16]; ld16_%s(wr, k0 + sk, v);", N, strings.ToLower(wt.DType.String()))
		kg.line("      for (int i = 0; i < 8; i++) wa[i] = pack_%s(v[2 * i], v[2 * i + 1]); }", half)
		kg.line("    else for (int i = 0; i < 8; i++) wa[i] = 0u;")
	default:
		kg.line("    for (int i = 0; i < 8; i++) { int k = k0 + sk + 2 * i; float w0 = 0.0f, w1 = 0.0f;")
		kg.line("      if (n < %d) { if (k < %d) w0 = %s(wr, k); if (k + 1 < %d) w1 = %s(wr, k + 1); }", N, K, dec, K, dec)
		kg.line("      wa[i] = pack_%s(w0, w1); }", half)
	}
	kg.line("  }")
	// Two k16 steps of eight words. A's registers: rows g and g+8, columns
	// 2q..2q+1 then 2q+8..2q+9 (words q and q+4); B's: column g, rows
	// 2q..2q+1 and 2q+8..2q+9.
	kg.line("  if (k0 > 0) { const u32 (*A)[20] = as[buf ^ 1], (*B)[20] = bs[buf ^ 1];")
	kg.line("    for (int kw = 0; kw < 16; kw += 8) {")
	kg.line("      u32 a[2][4], b[4][2];")
	kg.line("      for (int i = 0; i < 2; i++) { int r = wm + 16 * i + g;")
	kg.line("        a[i][0] = A[r][kw + q]; a[i][1] = A[r + 8][kw + q]; a[i][2] = A[r][kw + q + 4]; a[i][3] = A[r + 8][kw + q + 4]; }")
	kg.line("      for (int j = 0; j < 4; j++) { int r = wn + 8 * j + g; b[j][0] = B[r][kw + q]; b[j][1] = B[r][kw + q + 4]; }")
	kg.line("      for (int i = 0; i < 2; i++) for (int j = 0; j < 4; j++) mma_16816_%s(acc[i][j], a[i], b[j]); } }", half)
	kg.line("  if (k0 < %d) { v4u* ap = (v4u*)&as[buf][sr][sk >> 1]; v4u* bp = (v4u*)&bs[buf][sr][sk >> 1];", K)
	kg.line("    ap[0] = v4u_of(xa[0], xa[1], xa[2], xa[3]); ap[1] = v4u_of(xa[4], xa[5], xa[6], xa[7]);")
	kg.line("    bp[0] = v4u_of(wa[0], wa[1], wa[2], wa[3]); bp[1] = v4u_of(wa[4], wa[5], wa[6], wa[7]); }")
	kg.line("  __syncthreads(); }")
	// D's element c: row g (+8 for c >= 2), column 2q + (c & 1).
	kg.line("for (int i = 0; i < 2; i++) for (int j = 0; j < 4; j++) for (int c = 0; c < 4; c++) {")
	kg.line("  int m = m0 + wm + 16 * i + g + 8 * (c >> 1), n = n0 + wn + 8 * j + 2 * q + (c & 1);")
	kg.line("  if (m < %d && n < %d) %s[(long long)m * %d + n] = acc[i][j][c]; }", M, N, o, N)
	return kg
}
