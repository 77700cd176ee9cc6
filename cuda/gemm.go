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
// mma.sync m16n8k16 fragments; per step of 32 along K the block stages x
// (rounded to the half type) and w (decoded as the GEMV decodes it, then
// rounded) in shared memory, as pairs of halves along K, one pair per
// word, so that a fragment register is one word. Rows past M, columns
// past N and k past K are zero-filled (and their outputs not written).
// Rows are padded to 20 words: the eight rows and four words a fragment
// load touches fall in distinct banks.
func genGemm(g *poot.Graph, e poot.Eqn) *kgen {
	xs, wt := g.Type(e.Inputs[0]).Shape, g.Type(e.Inputs[1])
	K := last(xs)
	M, N := int(xs.Size())/K, wt.Shape[0]
	rb := wt.DType.RowBytes(int64(K))
	half, dec := gemmHalf(wt.DType), decoder(wt.DType)
	kg := newKgen(g, "gemm_tc_"+strings.ToLower(wt.DType.String()), 128, ceilDiv(N, 64), ceilDiv(M, 64))
	x, w, o := kg.ptr(e.Inputs[0], false), kg.ptr(e.Inputs[1], true), kg.ptr(e.Out, false)
	kg.line("__shared__ u32 as[64][20], bs[64][20];")
	kg.line("int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, q = lane & 3;")
	kg.line("int m0 = blockIdx.y * 64, n0 = blockIdx.x * 64, wm = (warp >> 1) * 32, wn = (warp & 1) * 32;")
	kg.line("float acc[2][4][4];")
	kg.line("for (int i = 0; i < 2; i++) for (int j = 0; j < 4; j++) for (int c = 0; c < 4; c++) acc[i][j][c] = 0.0f;")
	kg.line("for (int k0 = 0; k0 < %d; k0 += 32) {", K)
	kg.line("  for (int i = tid; i < 1024; i += 128) { int r = i >> 4, c = i & 15, k = k0 + 2 * c, m = m0 + r, n = n0 + r;")
	kg.line("    float x0 = 0.0f, x1 = 0.0f, w0 = 0.0f, w1 = 0.0f;")
	kg.line("    if (m < %d) { const float* xr = %s + (long long)m * %d; if (k < %d) x0 = xr[k]; if (k + 1 < %d) x1 = xr[k + 1]; }", M, x, K, K, K)
	kg.line("    if (n < %d) { const u8* wr = %s + (long long)n * %d; if (k < %d) w0 = %s(wr, k); if (k + 1 < %d) w1 = %s(wr, k + 1); }", N, w, rb, K, dec, K, dec)
	if half == "f16" {
		kg.line("    if (f16_overflows(x0) || f16_overflows(x1)) *%s = %d;", kg.fault(), faultHalfRange)
	}
	kg.line("    as[r][c] = pack_%s(x0, x1); bs[r][c] = pack_%s(w0, w1); }", half, half)
	kg.line("  __syncthreads();")
	// Two k16 steps of eight words. A's registers: rows g and g+8, columns
	// 2q..2q+1 then 2q+8..2q+9 (words q and q+4); B's: column g, rows
	// 2q..2q+1 and 2q+8..2q+9.
	kg.line("  for (int kw = 0; kw < 16; kw += 8) {")
	kg.line("    u32 a[2][4], b[4][2];")
	kg.line("    for (int i = 0; i < 2; i++) { int r = wm + 16 * i + g;")
	kg.line("      a[i][0] = as[r][kw + q]; a[i][1] = as[r + 8][kw + q]; a[i][2] = as[r][kw + q + 4]; a[i][3] = as[r + 8][kw + q + 4]; }")
	kg.line("    for (int j = 0; j < 4; j++) { int r = wn + 8 * j + g; b[j][0] = bs[r][kw + q]; b[j][1] = bs[r][kw + q + 4]; }")
	kg.line("    for (int i = 0; i < 2; i++) for (int j = 0; j < 4; j++) mma_16816_%s(acc[i][j], a[i], b[j]); }", half)
	kg.line("  __syncthreads(); }")
	// D's element c: row g (+8 for c >= 2), column 2q + (c & 1).
	kg.line("for (int i = 0; i < 2; i++) for (int j = 0; j < 4; j++) for (int c = 0; c < 4; c++) {")
	kg.line("  int m = m0 + wm + 16 * i + g + 8 * (c >> 1), n = n0 + wn + 8 * j + 2 * q + (c & 1);")
	kg.line("  if (m < %d && n < %d) %s[(long long)m * %d + n] = acc[i][j][c]; }", M, N, o, N)
	return kg
}
