package cuda

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/lower"
)

// Module is the CUDA C of one plan: the distinct kernels (without the
// prelude, which depends on the compiler) and the launches of one step.
type Module struct {
	Kernels  []KernelSource
	Launches []Launch
	// Faults is the number of fault words the launches write (one per
	// launch that can fault: an index out of range, an I32 division by
	// zero).
	Faults int
	// Scratch is the bytes of device scratch the launches share (split-K
	// attention's partial results), placed after the plan's arena; each
	// launch that uses it finishes with it before the next one starts.
	Scratch int64
}

// KernelSource is one __global__ function. Its Name is a prefix naming
// what it does and a hash of its text, so equal kernels (the layers of a
// model) share one function and a kernel's name never changes while its
// text does not.
type KernelSource struct {
	Name   string
	Params []string // the C types of its parameters, all pointers
	Text   string
}

// Launch is one kernel launch of a step.
type Launch struct {
	Kernel string
	Step   int // index of the plan kernel in Plan.Kernels
	// Fused are the plan kernels a fused launch runs besides Step's (see
	// fusable), in order.
	Fused       []int
	Grid, Block [3]uint32
	Args        []Arg
}

// Arg is a launch argument: the storage of a value, or (Value argFault)
// the fault word Fault of the plan kernel Step, or (Value argScratch) the
// module's scratch.
type Arg struct {
	Value poot.ValueID
	Fault int
	Step  int
}

// Source is the module's kernels as one text, in first-use order.
func (m *Module) Source() string {
	var sb strings.Builder
	for _, k := range m.Kernels {
		sb.WriteString(k.Text)
	}
	return sb.String()
}

// The Values of an Arg that is not a value's storage.
const (
	argFault   poot.ValueID = -1
	argScratch poot.ValueID = -2
)

// Fault codes a kernel writes to its fault word.
const (
	faultIndex     = 1
	faultDivide    = 2
	faultHalfRange = 3 // a tensor-core GEMM's f16 activation overflowed
)

// UnsupportedError says that a plan kernel has no CUDA kernel yet.
type UnsupportedError struct {
	Step   int
	Kernel string
	Reason string
}

// Error names the kernel and why.
func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("cuda: no CUDA kernel for plan kernel %d (%s): %s", e.Step, e.Kernel, e.Reason)
}

// Unwrap makes the error an interp.ErrUnsupported.
func (e *UnsupportedError) Unwrap() error { return interp.ErrUnsupported }

// Target is the CUDA backend's description for the planner.
func Target() lower.Target {
	w := []poot.DType{poot.F32, poot.F16, poot.BF16, poot.Q8_0, poot.Q4_0, poot.Q4_1, poot.Q5_0, poot.Q5_1, poot.Q4_K, poot.Q5_K, poot.Q6_K, poot.MXFP4}
	return lower.Target{Name: "cuda", MatMulWeights: w, Fallback: w,
		Kinds:      []lower.Kind{lower.Contract, lower.Elementwise, lower.Reduce, lower.FlashAttention, lower.Rows},
		Composites: []string{lower.FusedAttention}, NarrowKV: []poot.DType{poot.F16, poot.Q8_0}}
}

// Generate writes the CUDA C of every kernel of plan for a device of
// compute capability 8.0 or later, tensor-core GEMMs included
// (GenerateFor with the zero GenOptions).
func Generate(plan *lower.Plan) (*Module, error) { return GenerateFor(plan, GenOptions{}) }

// GenerateFor writes the CUDA C of every kernel of plan with the kernels
// o allows.
func GenerateFor(plan *lower.Plan, o GenOptions) (*Module, error) {
	var all []*kgen
	for i, k := range plan.Kernels {
		gs, err := genKernel(plan, k, o)
		if err != nil {
			return nil, &UnsupportedError{Step: i, Kernel: k.Name(), Reason: err.Error()}
		}
		for _, kg := range gs {
			kg.step, kg.alone = i, len(gs) == 1
			all = append(all, kg)
		}
	}
	m := &Module{}
	seen := map[string]bool{}
	for len(all) > 0 {
		n := 1
		for n < len(all) && fusable(plan, all[:n], all[n]) {
			n++
		}
		kg := all[0]
		if n > 1 {
			kg = fuse(all[:n])
		}
		all = all[n:]
		ks, l := kg.finish()
		l.Step, l.Fused = kg.step, kg.fused
		for a := range l.Args {
			if l.Args[a].Value == argFault {
				l.Args[a].Fault = m.Faults
				m.Faults++
			}
		}
		if !seen[ks.Name] {
			seen[ks.Name] = true
			m.Kernels = append(m.Kernels, ks)
		}
		m.Launches = append(m.Launches, l)
		m.Scratch = max(m.Scratch, kg.scratchBytes)
	}
	return m, nil
}

// fusable reports whether kernel k can run in one launch with the kernels
// of group, which come before it in the step: each is the only kernel of
// its plan kernel, has the same block size, a grid along x only and no
// scratch or shared memory, and no kernel writes storage another reads
// or writes (so the group's blocks may run in any order). Decode's
// sibling products (the Q, K and V projections; gate and up), its two
// rotary kernels and its two cache appends each become one launch: a GPU
// pays a few microseconds a launch even in a CUDA graph, and a small
// product alone leaves most SMs idle.
func fusable(plan *lower.Plan, group []*kgen, k *kgen) bool {
	ok := func(k *kgen) bool {
		return k.alone && k.grid[1] == 1 && k.grid[2] == 1 && k.scratchBytes == 0 && k.block == group[0].block &&
			!strings.Contains(k.sb.String(), "__shared__") // fused, their shared memory would add up
	}
	if !ok(k) || !ok(group[0]) {
		return false
	}
	clash := func(w, r *kgen) bool {
		for _, o := range plan.Kernels[w.step].Outputs {
			for _, v := range r.params {
				if v >= 0 && overlaps(plan.Locs[o], plan.Locs[v]) {
					return true
				}
			}
		}
		return false
	}
	for _, g := range group {
		if clash(g, k) || clash(k, g) {
			return false
		}
	}
	return true
}

// overlaps reports whether two values' storage can share bytes: arena
// ranges that intersect, or the same constant, slot or state.
func overlaps(a, b lower.Loc) bool {
	if a.Space == lower.Arena && b.Space == lower.Arena {
		return a.Offset < b.Offset+b.Bytes && b.Offset < a.Offset+a.Bytes
	}
	return a.Space == b.Space && a.Root == b.Root
}

// paramName matches a kernel parameter's name in its text (kgen.ptr).
var paramName = regexp.MustCompile(`\ba([0-9]+)\b`)

// fuse joins kernels into one whose blocks run each kernel's blocks in
// turn (blockIdx.x rebased), their parameters merged except the fault
// words, which stay one a kernel.
func fuse(ks []*kgen) *kgen {
	f := &kgen{g: ks[0].g, prefix: fmt.Sprintf("%s_x%d", ks[0].prefix, len(ks)), block: ks[0].block, grid: [3]uint32{0, 1, 1}, step: ks[0].step}
	for _, k := range ks {
		names := make([]string, len(k.params))
		for i, id := range k.params {
			if id == argFault {
				f.params, f.raw = append(f.params, id), append(f.raw, false)
				f.faults = append(f.faults, k.step)
				names[i] = "a" + strconv.Itoa(len(f.params)-1)
			} else {
				names[i] = f.ptr(id, k.raw[i])
			}
		}
		body := paramName.ReplaceAllStringFunc(k.sb.String(), func(a string) string {
			i, _ := strconv.Atoi(a[1:])
			return names[i]
		})
		f.line("if (blockIdx.x - %d < %d) { unsigned bx = blockIdx.x - %d;", f.grid[0], k.grid[0], f.grid[0])
		f.sb.WriteString(strings.ReplaceAll(body, "blockIdx.x", "bx"))
		f.line("}")
		f.grid[0] += k.grid[0]
		if k != ks[0] {
			f.fused = append(f.fused, k.step)
		}
	}
	return f
}

// kgen builds one kernel.
type kgen struct {
	g      *poot.Graph
	prefix string
	params []poot.ValueID // -1: the fault word
	raw    []bool
	grid   [3]uint32
	block  int
	sb     strings.Builder
	n      int
	// scratchBytes is how much of the module's scratch the kernel uses.
	scratchBytes int64
	// step is the plan kernel it computes (of the first, when fused), and
	// alone whether that plan kernel has no other.
	step  int
	alone bool
	// faults are the plan kernels of a fused kernel's fault words, in
	// order (nil: every fault word is step's); fused the plan kernels it
	// runs besides step's.
	faults, fused []int
}

func newKgen(g *poot.Graph, prefix string, block int, grid ...int) *kgen {
	kg := &kgen{g: g, prefix: prefix, block: block, grid: [3]uint32{1, 1, 1}}
	for i, x := range grid {
		kg.grid[i] = uint32(max(x, 1))
	}
	return kg
}

func (kg *kgen) line(format string, args ...any) {
	fmt.Fprintf(&kg.sb, "  "+format+"\n", args...)
}

func (kg *kgen) fresh(p string) string {
	kg.n++
	return p + strconv.Itoa(kg.n)
}

// ptr returns the parameter holding value id, typed by its dtype (raw:
// as bytes).
func (kg *kgen) ptr(id poot.ValueID, raw bool) string {
	for i, p := range kg.params {
		if p == id && kg.raw[i] == raw {
			return "a" + strconv.Itoa(i)
		}
	}
	kg.params = append(kg.params, id)
	kg.raw = append(kg.raw, raw)
	return "a" + strconv.Itoa(len(kg.params)-1)
}

// fault returns the parameter of the fault word.
func (kg *kgen) fault() string { return kg.ptr(argFault, false) }

// scratch returns the parameter of the module's scratch (float*), of which
// the kernel uses n bytes.
func (kg *kgen) scratch(n int64) string {
	kg.scratchBytes = max(kg.scratchBytes, n)
	return kg.ptr(argScratch, false)
}

func ctype(d poot.DType) string {
	switch d {
	case poot.F32:
		return "float"
	case poot.I32:
		return "int"
	case poot.F16, poot.BF16:
		return "u16"
	}
	return "u8"
}

func (kg *kgen) finish() (KernelSource, Launch) {
	var ps []string
	nf := 0
	l := Launch{Grid: kg.grid, Block: [3]uint32{uint32(kg.block), 1, 1}}
	for i, id := range kg.params {
		t := "u8*"
		switch {
		case id == argFault:
			t = "int*"
		case id == argScratch:
			t = "float*"
		case !kg.raw[i]:
			t = ctype(kg.g.Type(id).DType) + "*"
		}
		ps = append(ps, t)
		l.Args = append(l.Args, Arg{Value: id, Step: kg.step})
		if id == argFault && kg.faults != nil {
			l.Args[len(l.Args)-1].Step = kg.faults[nf]
			nf++
		}
	}
	decl := make([]string, len(ps))
	for i, t := range ps {
		decl[i] = t + " a" + strconv.Itoa(i)
	}
	text := fmt.Sprintf("extern \"C\" __global__ void __launch_bounds__(%d) NAME(%s) {\n%s}\n", kg.block, strings.Join(decl, ", "), kg.sb.String())
	h := sha256.Sum256([]byte(text))
	name := kg.prefix + "_" + hex.EncodeToString(h[:5])
	l.Kernel = name
	return KernelSource{Name: name, Params: ps, Text: strings.Replace(text, "NAME", name, 1)}, l
}

// lit writes a float32 constant as a C expression.
func lit(f float32) string {
	if math.IsInf(float64(f), 0) || f != f {
		return fmt.Sprintf("f32_bits(0x%08xu)", math.Float32bits(f))
	}
	s := strconv.FormatFloat(float64(f), 'g', -1, 32)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s + "f"
}

// offset emits the flat offset of element idx of an iteration over shape
// read through strides from off, and returns its variable.
func (kg *kgen) offset(shape poot.Shape, strides []int, off int, idx string) string {
	o := kg.fresh("o")
	kg.line("int %s = %d; { int t = %s;", o, off, idx)
	for a := len(shape) - 1; a >= 0; a-- {
		switch {
		case a == 0:
			if strides[a] != 0 {
				kg.line("  %s += t * %d;", o, strides[a])
			}
		case strides[a] == 0:
			kg.line("  t /= %d;", shape[a])
		default:
			kg.line("  %s += (t %% %d) * %d; t /= %d;", o, shape[a], strides[a], shape[a])
		}
	}
	kg.line("}")
	return o
}

// program emits pr evaluated at element idx, all stores but skip, and
// returns the register of store skip (or "").
func (kg *kgen) program(pr *lower.Program, idx string, skip int) string {
	reg := make([]string, len(pr.Loads)+len(pr.Code))
	for i := range reg {
		reg[i] = kg.fresh("r")
	}
	for li, l := range pr.Loads {
		switch {
		case l.Imm:
			kg.line("float %s = %s;", reg[li], lit(l.Const))
		default:
			at := idx
			if l.Strides != nil {
				at = kg.offset(l.Shape, l.Strides, l.Offset, idx)
			}
			p := kg.ptr(l.Value, false)
			if l.DType == poot.Bool {
				kg.line("float %s = %s[%s] ? 1.0f : 0.0f;", reg[li], p, at)
			} else {
				kg.line("float %s = %s[%s];", reg[li], p, at)
			}
		}
	}
	for ci, in := range pr.Code {
		var a [3]string
		for j := range in.Op.Arity() {
			a[j] = reg[in.Args[j]]
		}
		kg.line("float %s = %s;", reg[len(pr.Loads)+ci], floatExpr(in.Op, a))
	}
	for si, st := range pr.Stores {
		if si == skip {
			continue
		}
		at := idx
		if st.Strides != nil {
			at = kg.offset(st.Shape, st.Strides, st.Offset, idx)
		}
		p := kg.ptr(st.Value, false)
		if st.DType == poot.Bool {
			kg.line("%s[%s] = %s != 0.0f;", p, at, reg[st.Reg])
		} else {
			kg.line("%s[%s] = %s;", p, at, reg[st.Reg])
		}
	}
	if skip >= 0 {
		return reg[pr.Stores[skip].Reg]
	}
	return ""
}

// floatExpr is an elementwise primitive over registers, which hold F32
// values and Bools as 0 and 1.
func floatExpr(op poot.Op, a [3]string) string {
	x, y := a[0], a[1]
	b := func(c string) string { return "(" + c + " ? 1.0f : 0.0f)" }
	switch op {
	case poot.Neg:
		return "-" + x
	case poot.Exp, poot.Log, poot.Sqrt, poot.Tanh, poot.Erf, poot.Sin, poot.Cos:
		return op.String() + "f(" + x + ")"
	case poot.Rsqrt:
		return "1.0f / sqrtf(" + x + ")"
	case poot.Abs:
		return "f32_bits(bits_f32(" + x + ") & 0x7fffffffu)"
	case poot.Not:
		return b(x + " == 0.0f")
	case poot.Add:
		return x + " + " + y
	case poot.Sub:
		return x + " - " + y
	case poot.Mul:
		return x + " * " + y
	case poot.Div:
		return x + " / " + y
	case poot.Max:
		return "max_nan(" + x + ", " + y + ")"
	case poot.Min:
		return "min_nan(" + x + ", " + y + ")"
	case poot.Pow:
		return "powf(" + x + ", " + y + ")"
	case poot.Eq:
		return b(x + " == " + y)
	case poot.Ne:
		return b(x + " != " + y)
	case poot.Lt:
		return b(x + " < " + y)
	case poot.Le:
		return b(x + " <= " + y)
	case poot.Gt:
		return b(x + " > " + y)
	case poot.Ge:
		return b(x + " >= " + y)
	case poot.And:
		return b(x + " != 0.0f && " + y + " != 0.0f")
	case poot.Or:
		return b(x + " != 0.0f || " + y + " != 0.0f")
	case poot.Select:
		return "(" + x + " != 0.0f ? " + y + " : " + a[2] + ")"
	}
	return "/* unknown op */"
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// genKernel makes the CUDA kernels (usually one) of a plan kernel.
func genKernel(plan *lower.Plan, k *lower.Kernel, o GenOptions) ([]*kgen, error) {
	g := plan.Graph
	switch k.Kind {
	case lower.Elementwise:
		n := k.Program.Size
		kg := newKgen(g, "elementwise", 256, ceilDiv(n, 256))
		kg.line("int i = blockIdx.x * blockDim.x + threadIdx.x;")
		kg.line("if (i < %d) {", n)
		kg.program(k.Program, "i", -1)
		kg.line("}")
		return []*kgen{kg}, nil
	case lower.Reduce:
		e := g.Eqn(k.Eqns[len(k.Eqns)-1])
		L := last(g.Type(e.Inputs[0]).Shape)
		rows := k.Program.Size / L
		kg := newKgen(g, "reduce", rowThreads(L), rows)
		kg.line("__shared__ double shd[32]; __shared__ float shf[32];")
		kg.line("int row = blockIdx.x;")
		kg.reduceRow(k, L)
		return []*kgen{kg}, nil
	case lower.Rows:
		rows := k.Parts[0].Program.Size / k.RowLen
		kg := newKgen(g, "rows", rowThreads(k.RowLen), rows)
		kg.line("__shared__ double shd[32]; __shared__ float shf[32];")
		kg.line("int row = blockIdx.x;")
		for _, q := range k.Parts {
			switch {
			case q.Kind == lower.Reduce:
				kg.reduceRow(q, k.RowLen)
			case q.Program.Size == rows:
				kg.line("if (threadIdx.x == 0) {")
				kg.program(q.Program, "row", -1)
				kg.line("}")
			default:
				kg.line("for (int j = threadIdx.x; j < %d; j += blockDim.x) { int i = row * %d + j;", k.RowLen, k.RowLen)
				kg.program(q.Program, "i", -1)
				kg.line("}")
			}
			kg.line("__syncthreads();")
		}
		return []*kgen{kg}, nil
	case lower.Contract:
		e := g.Eqn(k.Eqns[0])
		return genContract(g, e, o)
	case lower.FlashAttention:
		return genFlash(g, k.Attention), nil
	case lower.Generic:
		return genGeneric(plan, g.Eqn(k.Eqns[0]), o)
	}
	return nil, fmt.Errorf("kernel kind %v", k.Kind)
}

func last(s poot.Shape) int {
	if len(s) == 0 {
		return 1
	}
	return s[len(s)-1]
}

// rowThreads is the block size of a kernel that runs one row per block.
func rowThreads(L int) int { return min(256, ceilDiv(L, 32)*32) }

// reduceRow emits a Reduce kernel's row: its program over row `row`, a
// block reduction (sums in double, maxima keeping NaN) and its result
// written by thread 0, then a barrier.
func (kg *kgen) reduceRow(k *lower.Kernel, L int) {
	sum := k.Op == poot.ReduceSum
	acc := kg.fresh("acc")
	if sum {
		kg.line("{ double %s = 0.0;", acc)
	} else {
		kg.line("{ float %s = %s;", acc, lit(float32(math.Inf(-1))))
	}
	kg.line("for (int j = threadIdx.x; j < %d; j += blockDim.x) { int i = row * %d + j;", L, L)
	r := kg.program(k.Program, "i", k.Program.Reduced)
	if sum {
		kg.line("%s += (double)%s;", acc, r)
	} else {
		kg.line("%s = max_nan(%s, %s);", acc, acc, r)
	}
	kg.line("}")
	out := kg.ptr(k.Outputs[len(k.Outputs)-1], false)
	if sum {
		kg.line("%s = block_sum(%s, shd);", acc, acc)
		kg.line("if (threadIdx.x == 0) %s[row] = (float)%s; }", out, acc)
	} else {
		kg.line("%s = block_max(%s, shf);", acc, acc)
		kg.line("if (threadIdx.x == 0) %s[row] = %s; }", out, acc)
	}
}

// decoder names the prelude function reading element k of a row stored as
// d, or "" when there is none.
func decoder(d poot.DType) string {
	switch d {
	case poot.F32, poot.F16, poot.BF16, poot.Q8_0, poot.Q4_0, poot.Q4_1, poot.Q5_0, poot.Q5_1, poot.Q4_K, poot.Q5_K, poot.Q6_K, poot.MXFP4:
		return "ld_" + strings.ToLower(d.String())
	}
	return ""
}

// genContract is the GEMV of a MatMul with a rank-2 weight read as stored
// (one warp per output element, lanes striding over K) or of an
// IndexedMatMul, whose rows each read their own expert; a MatMul of
// prefill's many rows is the tensor-core GEMM where opt allows it.
func genContract(g *poot.Graph, e poot.Eqn, opt GenOptions) ([]*kgen, error) {
	xs, ws := g.Type(e.Inputs[0]).Shape, g.Type(e.Inputs[1]).Shape
	wt := g.Type(e.Inputs[1]).DType
	dec := decoder(wt)
	if dec == "" {
		return nil, fmt.Errorf("no decoder for %v weights", wt)
	}
	if opt.gemm(g, e) {
		return []*kgen{genGemm(g, e)}, nil
	}
	K := last(xs)
	T := int(xs.Size()) / K
	N := ws[len(ws)-2]
	rb := wt.RowBytes(int64(K))
	kg := newKgen(g, "gemv_"+strings.ToLower(wt.String()), 128, ceilDiv(N, 4), T)
	x, w, o := kg.ptr(e.Inputs[0], false), kg.ptr(e.Inputs[1], true), kg.ptr(e.Out, false)
	kg.line("int n = blockIdx.x * 4 + (threadIdx.x >> 5), t = blockIdx.y, lane = threadIdx.x & 31;")
	kg.line("float acc = 0.0f;")
	kg.line("const u8* w = %s + (long long)n * %d;", w, rb)
	ok := "n < " + strconv.Itoa(N)
	if e.Op == poot.IndexedMatMul {
		E := ws[0]
		kg.line("int ex = %s[t];", kg.ptr(e.Inputs[2], false))
		kg.line("if (ex < 0 || ex >= %d) { if (lane == 0) *%s = %d; ex = -1; }", E, kg.fault(), faultIndex)
		kg.line("w += (long long)ex * %d;", int64(N)*rb)
		ok += " && ex >= 0"
	}
	kg.line("if (%s) { const float* xr = %s + (long long)t * %d;", ok, x, K)
	if fn, elems := gemvUnit(wt, K); fn != "" {
		// Units of a row with the widest loads; the lanes' loads of a
		// few units in flight together (unrolled) hide the latency.
		kg.line("  #pragma unroll 8")
		kg.line("  for (int u = lane; u < %d; u += 32) acc += %s(w, u, xr); }", K/elems, fn)
	} else {
		kg.line("  for (int k = lane; k < %d; k += 32) acc += xr[k] * %s(w, k); }", K, dec)
	}
	kg.line("acc = warp_sum(acc);")
	kg.line("if (%s && lane == 0) %s[(long long)t * %d + n] = acc;", ok, o, N)
	return []*kgen{kg}, nil
}

// gemvUnit names the prelude function that dots one unit of a row of
// weights stored as d with x, and the unit's elements, where a row of K
// elements is whole units with their loads aligned; "" keeps the
// element-by-element decoders.
func gemvUnit(d poot.DType, K int) (string, int) {
	switch {
	case d == poot.F32 && K%4 == 0:
		return "dot_f32x4", 4
	case d == poot.F16 && K%8 == 0:
		return "dot_f16x8", 8
	case d == poot.BF16 && K%8 == 0:
		return "dot_bf16x8", 8
	case d == poot.Q8_0:
		return "dot_q8_0b", 32
	case d == poot.Q4_0:
		return "dot_q4_0b", 32
	case d == poot.Q4_K:
		return "dot_q4_kc", 64
	case d == poot.Q5_K:
		return "dot_q5_kc", 64
	case d == poot.Q6_K:
		return "dot_q6_kc", 64
	}
	return "", 0
}

// splitChunk is the positions a block of split-K attention covers, and
// splitMinS the least cache length (two chunks) that a decode step (T = 1)
// runs split-K: the one-pass kernel launches only R·Heads warps, each
// walking all S positions in order, which leaves most of a GPU idle and
// takes time linear in S; splitting adds a second launch and a scratch
// round trip of (Dv+2) floats per chunk and head, a cost worth paying only
// when each warp's walk is long. Shorter caches, and prefill (whose T
// query rows already fill the grid), keep the one-pass kernel. Chunks are
// short because each warp's walk is a chain of dependent loads and warp
// sums: on an H200, chunks of 256 gave a Llama-3.2-1B decode step at 544
// positions 24 blocks a layer and 230 µs a layer, 37% of the step.
const (
	splitChunk = 32
	splitMinS  = 2 * splitChunk
	splitWarps = 8 // query heads (one warp each) per block of split-K
)

// kvAt returns the C expression of element idx of the K or V cache p as
// a float: F32, or F16 or Q8_0 read in place (Attention.KV).
func kvAt(a *lower.Attention, p, idx string) string {
	switch a.KV {
	case poot.F16:
		return "f16_to_f32(" + p + "[" + idx + "])"
	case poot.Q8_0:
		return "ld_q8_0l(" + p + ", " + idx + ")"
	}
	return p + "[" + idx + "]"
}

// flashScore emits the score x of query q against the K row of position s
// of sequence r and K/V head g, the warp's lanes striding over D.
func flashScore(kg *kgen, a *lower.Attention, kc string) {
	kg.line("  long long kb = ((long long)r * %d + s) * %d + g * %d;", a.S, a.KVHeads*a.D, a.D)
	kg.line("  float d = 0.0f; for (int c = lane; c < %d; c += 32) d += q[c] * %s;", a.D, kvAt(a, kc, "kb + c"))
	kg.line("  float x = warp_sum(d) * %s;", lit(a.Scale))
	if a.SoftCap != 0 {
		kg.line("  x = tanhf(x * %s) * %s;", lit(1/a.SoftCap), lit(a.SoftCap))
	}
}

// genFlash is fused attention: one warp per query row and head, a pass
// over the visible cache rows for the maximum score, a second for the
// weights and the weighted sum of V, each lane holding Dv/32 output
// columns; the NaN rule of lower.Attention (a V row hidden from this query
// but seen by another of its sequence still turns its non-finite columns
// NaN) in a third pass over the hidden rows. A decode step over a long
// cache is split-K instead (genFlashSplit).
func genFlash(g *poot.Graph, a *lower.Attention) []*kgen {
	if a.T == 1 && a.S >= splitMinS {
		return genFlashSplit(g, a)
	}
	if a.T > 1 && flashTiled(a) {
		return []*kgen{genFlashTile(g, a)}
	}
	kg := newKgen(g, "flash_attention", 32, a.Heads, a.R*a.T)
	q, kc, vc, mk := kg.ptr(a.Q, false), kg.ptr(a.K, false), kg.ptr(a.V, false), kg.ptr(a.Mask, false)
	cols := ceilDiv(a.Dv, 32)
	vw := a.KVHeads * a.Dv
	kg.line("int h = blockIdx.x, row = blockIdx.y, lane = threadIdx.x, r = row / %d, g = h / %d;", a.T, a.Rep)
	kg.line("const float* q = %s + (long long)row * %d + h * %d;", q, a.Heads*a.D, a.D)
	kg.line("const u8* mrow = %s + (long long)row * %d;", mk, a.S)
	kg.line("float m = %s;", lit(float32(math.Inf(-1))))
	if a.Sinks >= 0 {
		kg.line("float sink = %s[h]; m = sink;", kg.ptr(a.Sinks, false))
	}
	kg.line("for (int s = 0; s < %d; s++) { if (!mrow[s]) continue;", a.S)
	flashScore(kg, a, kc)
	kg.line("  m = max_nan(m, x); }")
	if a.Sinks >= 0 {
		kg.line("float l = expf(sink - m);")
	} else {
		kg.line("float l = 0.0f;")
	}
	kg.line("float acc[%d]; for (int c = 0; c < %d; c++) acc[c] = 0.0f;", cols, cols)
	kg.line("for (int s = 0; s < %d; s++) { if (!mrow[s]) continue;", a.S)
	flashScore(kg, a, kc)
	kg.line("  float e = expf(x - m); l += e;")
	kg.line("  long long vb = ((long long)r * %d + s) * %d + g * %d;", a.S, vw, a.Dv)
	kg.line("  for (int c = 0; c < %d; c++) { int j = lane + 32 * c; if (j < %d) acc[c] += e * %s; } }", cols, a.Dv, kvAt(a, vc, "vb + j"))
	if a.T > 1 {
		kg.line("for (int s = 0; s < %d; s++) { if (mrow[s]) continue;", a.S)
		kg.line("  long long vb = ((long long)r * %d + s) * %d + g * %d;", a.S, vw, a.Dv)
		kg.line("  bool bad = false; for (int c = 0; c < %d; c++) { int j = lane + 32 * c; if (j < %d && !finite_f(%s)) bad = true; }", cols, a.Dv, kvAt(a, vc, "vb + j"))
		kg.line("  if (!__any_sync(0xffffffffu, bad)) continue;")
		kg.line("  bool seen = false; for (int t = 0; t < %d && !seen; t++) seen = %s[((long long)r * %d + t) * %d + s] != 0;", a.T, mk, a.T, a.S)
		kg.line("  if (!seen) continue;")
		kg.line("  for (int c = 0; c < %d; c++) { int j = lane + 32 * c; if (j < %d && !finite_f(%s)) acc[c] = f32_bits(0x7fc00000u); } }", cols, a.Dv, kvAt(a, vc, "vb + j"))
	}
	kg.line("float inv = l == 0.0f ? f32_bits(0x7fc00000u) : 1.0f / l;")
	kg.line("float* out = %s + (long long)row * %d + h * %d;", kg.ptr(a.Out, false), a.Heads*a.Dv, a.Dv)
	kg.line("for (int c = 0; c < %d; c++) { int j = lane + 32 * c; if (j < %d) out[j] = acc[c] * inv; }", cols, a.Dv)
	return []*kgen{kg}
}

// tileWarps is the queries (a warp each) a block of the chunked attention
// kernels serves, and tileShared the most shared memory its chunks of K
// and V (32 positions), queries and weights may take.
const (
	tileWarps  = 8
	tileShared = 40 << 10
)

// flashTiled reports whether attention a's chunks of K and V rows fit in
// shared memory (head dimensions up to 128 do): prefill (T > 1) then runs
// by genFlashTile and split-K decode stages its chunks (flashFold). Wider
// heads keep the one-pass kernel and a warp per position in split-K.
func flashTiled(a *lower.Attention) bool {
	return 4*(32*(a.D+1+a.Dv)+tileWarps*(a.D+32)) <= tileShared
}

// genFlashTile is prefill attention in chunks of 32 cache positions: a
// block per sequence, K/V head and tileWarps of its (query row, query
// head) pairs, rows first, so that the block's warps share each chunk of
// K and V rows (flashFold).
func genFlashTile(g *poot.Graph, a *lower.Attention) *kgen {
	pairs := a.T * a.Rep
	cols := ceilDiv(a.Dv, 32)
	kg := newKgen(g, "flash_tile", 32*tileWarps, ceilDiv(pairs, tileWarps), a.KVHeads, a.R)
	kg.line("int g = blockIdx.y, r = blockIdx.z, w = threadIdx.x >> 5, lane = threadIdx.x & 31, p = blockIdx.x * %d + w;", tileWarps)
	// A warp past the last pair stages chunks and meets the barriers but
	// computes nothing.
	kg.line("bool on = p < %d; int t = on ? p / %d : 0, h = g * %d + (on ? p %% %d : 0), row = r * %d + t;", pairs, a.Rep, a.Rep, a.Rep, a.T)
	flashFold(kg, a, tileWarps, "0", strconv.Itoa(a.S), a.Sinks >= 0)
	kg.line("if (on) { float inv = l == 0.0f ? f32_bits(0x7fc00000u) : 1.0f / l;")
	kg.line("  float* out = %s + (long long)row * %d + h * %d;", kg.ptr(a.Out, false), a.Heads*a.Dv, a.Dv)
	kg.line("  for (int c = 0; c < %d; c++) { int j = lane + 32 * c; if (j < %d) out[j] = acc[c] * inv; } }", cols, a.Dv)
	return kg
}

// flashFold emits the chunk loop of the chunked attention kernels, for a
// block of warps warps whose warp w, where on, is the query of row row and
// head h, of sequence r and K/V head g: the block stages the chunks of 32
// positions in [first, end) of K and V (as f32, whatever the cache's
// dtype) in shared memory and flags their non-finite V rows; each lane
// scores one position of the chunk against its warp's query, and the
// warp folds the chunk into a running maximum m, sum of exponentials l
// and weighted sum of V rows acc (its lanes holding Dv/32 columns),
// rescaling them by exp(m_old − m_new) when the maximum rises, from the
// sink's start where sink is set. Weights are 0 while the maximum is −Inf,
// so that a visible row of −Inf score passes a non-finite V value on as
// 0·NaN does, a query that sees nothing keeps l = 0 (NaN, once divided),
// and NaN spreads. For T > 1, lower.Attention's NaN rule for hidden V
// rows reads the chunk's flags.
func flashFold(kg *kgen, a *lower.Attention, warps int, first, end string, sink bool) {
	cols := ceilDiv(a.Dv, 32)
	negInf := lit(float32(math.Inf(-1)))
	q, kc, vc, mk := kg.ptr(a.Q, false), kg.ptr(a.K, false), kg.ptr(a.V, false), kg.ptr(a.Mask, false)
	kg.line("__shared__ float ks[32][%d], vs[32][%d], qs[%d][%d], es[%d][32]; __shared__ int vbad[2][32];", a.D+1, a.Dv, warps, a.D, warps)
	kg.line("for (int c = lane; c < %d; c += 32) qs[w][c] = on ? %s[(long long)row * %d + h * %d + c] : 0.0f;", a.D, q, a.Heads*a.D, a.D)
	kg.line("if (threadIdx.x < 64) vbad[threadIdx.x >> 5][threadIdx.x & 31] = 0;")
	kg.line("const u8* mrow = %s + (long long)row * %d;", mk, a.S)
	if sink {
		// The sink enters l as exp(sink − m): 1 at m = sink, 0 for a sink
		// of −Inf, NaN for +Inf or NaN (as the one-pass kernel's).
		kg.line("float m = on ? %s[h] : 0.0f, l = m == %s ? 0.0f : expf(m - m);", kg.ptr(a.Sinks, false), negInf)
	} else {
		kg.line("float m = %s, l = 0.0f;", negInf)
	}
	kg.line("float acc[%d]; for (int c = 0; c < %d; c++) acc[c] = 0.0f;", cols, cols)
	kg.line("__syncthreads();")
	kg.line("for (int s0 = %s, par = 0; s0 < %s; s0 += 32, par ^= 1) {", first, end)
	// The flags of the chunk before last are free: cleared for the next.
	kg.line("  if (threadIdx.x < 32) vbad[par ^ 1][threadIdx.x] = 0;")
	kg.line("  for (int e = threadIdx.x; e < %d; e += %d) { int s = e / %d, c = e %% %d;", 32*a.D, 32*warps, a.D, a.D)
	kg.line("    ks[s][c] = s0 + s < %d ? %s : 0.0f; }", a.S, kvAt(a, kc, fmt.Sprintf("((long long)r * %d + s0 + s) * %d + g * %d + c", a.S, a.KVHeads*a.D, a.D)))
	kg.line("  for (int e = threadIdx.x; e < %d; e += %d) { int s = e / %d, c = e %% %d; float v = 0.0f;", 32*a.Dv, 32*warps, a.Dv, a.Dv)
	kg.line("    if (s0 + s < %d) { v = %s; if (!finite_f(v)) vbad[par][s] = 1; }", a.S, kvAt(a, vc, fmt.Sprintf("((long long)r * %d + s0 + s) * %d + g * %d + c", a.S, a.KVHeads*a.Dv, a.Dv)))
	kg.line("    vs[s][c] = v; }")
	kg.line("  __syncthreads();")
	kg.line("  if (on) {")
	kg.line("    int s = s0 + lane; bool vis = s < %s && mrow[s] != 0;", end)
	kg.line("    unsigned seen = __ballot_sync(0xffffffffu, vis);")
	kg.line("    float x = %s;", negInf)
	kg.line("    if (vis) { float d = 0.0f; for (int c = 0; c < %d; c++) d += qs[w][c] * ks[lane][c]; x = d * %s;", a.D, lit(a.Scale))
	if a.SoftCap != 0 {
		kg.line("      x = tanhf(x * %s) * %s;", lit(1/a.SoftCap), lit(a.SoftCap))
	}
	kg.line("    }")
	kg.line("    if (seen) {")
	kg.line("      float mn = max_nan(m, warp_max(x)), f = mn == m ? 1.0f : expf(m - mn);")
	kg.line("      float e = vis ? (mn == %s ? 0.0f : expf(x - mn)) : 0.0f;", negInf)
	kg.line("      l = l * f + warp_sum(e); m = mn; es[w][lane] = e;")
	kg.line("      for (int c = 0; c < %d; c++) acc[c] *= f;", cols)
	kg.line("      __syncwarp();")
	kg.line("      for (int j0 = 0; j0 < 32; j0++) { if (!((seen >> j0) & 1u)) continue; float pe = es[w][j0];")
	kg.line("        for (int c = 0; c < %d; c++) { int j = lane + 32 * c; if (j < %d) acc[c] += pe * vs[j0][j]; } } }", cols, a.Dv)
	if a.T > 1 {
		// A V row hidden from this query and seen by another of its
		// sequence turns the query's columns NaN where it is not finite.
		kg.line("    unsigned hid = __ballot_sync(0xffffffffu, s < %d && mrow[s] == 0 && vbad[par][lane] != 0);", a.S)
		kg.line("    for (int j0 = 0; j0 < 32; j0++) { if (!((hid >> j0) & 1u)) continue;")
		kg.line("      bool sn = false; for (int u = 0; u < %d && !sn; u++) sn = %s[((long long)r * %d + u) * %d + s0 + j0] != 0;", a.T, mk, a.T, a.S)
		kg.line("      if (!sn) continue;")
		kg.line("      for (int c = 0; c < %d; c++) { int j = lane + 32 * c; if (j < %d && !finite_f(vs[j0][j])) acc[c] = f32_bits(0x7fc00000u); } }", cols, a.Dv)
	}
	kg.line("  }")
	kg.line("  __syncthreads(); }")
}

// genFlashSplit is decode attention (T = 1) split along the cache: the
// first kernel runs a block per sequence, K/V head (and group of up to
// splitWarps of its query heads) and chunk of splitChunk positions, a warp
// per query head computing the chunk's visible scores (kept in shared
// memory), their maximum m, sum of exponentials l and weighted sum of V
// rows into the scratch, (Dv+2) floats per chunk, sequence and head; the
// second, a warp per sequence and head, rescales the chunks to their
// common maximum (and the sink's, which enters the denominator here,
// once) and writes the output. A chunk whose maximum is -Inf (no visible
// position, or only -Inf scores) weighs its rows by 0, not exp(-Inf+Inf),
// so that a visible row of -Inf score still passes a non-finite V value
// on as 0·NaN does, and the combine weighs the chunk by exp(-Inf - max),
// 0 (or NaN where the maximum is -Inf too: a row that sees nothing is
// NaN); every other NaN or infinity propagates as in the one-pass kernel.
func genFlashSplit(g *poot.Graph, a *lower.Attention) []*kgen {
	C := ceilDiv(a.S, splitChunk)
	W := min(a.Rep, splitWarps)
	groups := ceilDiv(a.Rep, W)
	cols := ceilDiv(a.Dv, 32)
	stride := a.Dv + 2
	bytes := int64(a.R) * int64(a.Heads) * int64(C) * int64(stride) * 4
	negInf := lit(float32(math.Inf(-1)))

	kg := newKgen(g, "flash_split", 32*W, C, a.KVHeads*groups, a.R)
	sp := kg.scratch(bytes)
	kg.line("int ch = blockIdx.x, g = blockIdx.y / %d, w = threadIdx.x >> 5, i = (blockIdx.y %% %d) * %d + w, r = blockIdx.z, lane = threadIdx.x & 31;", groups, groups, W)
	if flashTiled(a) {
		// The chunk staged once for the block's heads, a lane a position
		// (flashFold); a warp past the group's last head stages and meets
		// the barriers but computes nothing.
		kg.line("bool on = i < %d; int h = g * %d + (on ? i : 0), row = r;", a.Rep, a.Rep)
		flashFold(kg, a, W, fmt.Sprintf("ch * %d", splitChunk), fmt.Sprintf("(ch * %d + %d < %d ? ch * %d + %d : %d)", splitChunk, splitChunk, a.S, splitChunk, splitChunk, a.S), false)
		kg.line("if (!on) return;")
	} else {
		q, kc, vc, mk := kg.ptr(a.Q, false), kg.ptr(a.K, false), kg.ptr(a.V, false), kg.ptr(a.Mask, false)
		kg.line("__shared__ float sc[%d][%d];", W, splitChunk)
		kg.line("if (i >= %d) return;", a.Rep) // a whole warp leaves; no block barrier follows
		kg.line("int h = g * %d + i, s0 = ch * %d, s1 = s0 + %d < %d ? s0 + %d : %d;", a.Rep, splitChunk, splitChunk, a.S, splitChunk, a.S)
		kg.line("const float* q = %s + (long long)r * %d + h * %d;", q, a.Heads*a.D, a.D)
		kg.line("const u8* mrow = %s + (long long)r * %d;", mk, a.S)
		kg.line("float m = %s;", negInf)
		kg.line("for (int s = s0; s < s1; s++) { if (!mrow[s]) continue;")
		flashScore(kg, a, kc)
		kg.line("  if (lane == 0) sc[w][s - s0] = x; m = max_nan(m, x); }")
		kg.line("__syncwarp();")
		kg.line("float l = 0.0f, acc[%d]; for (int c = 0; c < %d; c++) acc[c] = 0.0f;", cols, cols)
		kg.line("for (int s = s0; s < s1; s++) { if (!mrow[s]) continue;")
		kg.line("  float e = m == %s ? 0.0f : expf(sc[w][s - s0] - m); l += e;", negInf)
		kg.line("  long long vb = ((long long)r * %d + s) * %d + g * %d;", a.S, a.KVHeads*a.Dv, a.Dv)
		kg.line("  for (int c = 0; c < %d; c++) { int j = lane + 32 * c; if (j < %d) acc[c] += e * %s; } }", cols, a.Dv, kvAt(a, vc, "vb + j"))
	}
	kg.line("float* o = %s + ((long long)(r * %d + h) * %d + ch) * %d;", sp, a.Heads, C, stride)
	kg.line("if (lane == 0) { o[0] = m; o[1] = l; }")
	kg.line("for (int c = 0; c < %d; c++) { int j = lane + 32 * c; if (j < %d) o[2 + j] = acc[c]; }", cols, a.Dv)

	cb := newKgen(g, "flash_combine", 32, a.Heads, a.R)
	sp = cb.scratch(bytes)
	cb.line("int h = blockIdx.x, r = blockIdx.y, lane = threadIdx.x;")
	cb.line("const float* p = %s + (long long)(r * %d + h) * %d;", sp, a.Heads, C*stride)
	cb.line("float m = %s;", negInf)
	if a.Sinks >= 0 {
		cb.line("float sink = %s[h]; m = sink;", cb.ptr(a.Sinks, false))
	}
	cb.line("for (int c = 0; c < %d; c++) m = max_nan(m, p[c * %d]);", C, stride)
	if a.Sinks >= 0 {
		cb.line("float l = expf(sink - m);")
	} else {
		cb.line("float l = 0.0f;")
	}
	cb.line("float acc[%d]; for (int c = 0; c < %d; c++) acc[c] = 0.0f;", cols, cols)
	cb.line("for (int ch = 0; ch < %d; ch++) { const float* pc = p + ch * %d;", C, stride)
	cb.line("  float f = expf(pc[0] - m); l += pc[1] * f;")
	cb.line("  for (int c = 0; c < %d; c++) { int j = lane + 32 * c; if (j < %d) acc[c] += pc[2 + j] * f; } }", cols, a.Dv)
	cb.line("float inv = l == 0.0f ? f32_bits(0x7fc00000u) : 1.0f / l;")
	cb.line("float* out = %s + (long long)r * %d + h * %d;", cb.ptr(a.Out, false), a.Heads*a.Dv, a.Dv)
	cb.line("for (int c = 0; c < %d; c++) { int j = lane + 32 * c; if (j < %d) out[j] = acc[c] * inv; }", cols, a.Dv)
	return []*kgen{kg, cb}
}

// rowMajor returns the row-major strides of s.
func rowMajor(s poot.Shape) []int {
	st := make([]int, len(s))
	n := 1
	for a := len(s) - 1; a >= 0; a-- {
		st[a] = n
		n *= s[a]
	}
	return st
}

// elemKgen starts a kernel of one thread per element of n, inside
// `if (i < n) {`; the caller closes it.
func elemKgen(g *poot.Graph, prefix string, n int) *kgen {
	kg := newKgen(g, prefix, 256, ceilDiv(n, 256))
	kg.line("int i = blockIdx.x * blockDim.x + threadIdx.x;")
	kg.line("if (i < %d) {", n)
	return kg
}

// genGeneric makes the kernel of one equation by its primitive.
func genGeneric(plan *lower.Plan, e poot.Eqn, opt GenOptions) ([]*kgen, error) {
	g := plan.Graph
	ot := g.Type(e.Out)
	n := int(ot.Shape.Size())
	in := func(i int) poot.TensorType { return g.Type(e.Inputs[i]) }
	if e.Op.Elementwise() {
		return genElementwise(g, e)
	}
	switch e.Op {
	case poot.Broadcast, poot.Transpose, poot.Slice:
		if in(0).DType.Packed() {
			return nil, fmt.Errorf("%v of packed %v data", e.Op, in(0).DType)
		}
		xs := in(0).Shape
		st := rowMajor(xs)
		strides := make([]int, len(ot.Shape))
		off := 0
		for a := range ot.Shape {
			switch e.Op {
			case poot.Broadcast:
				if xs[a] != 1 {
					strides[a] = st[a]
				}
			case poot.Slice:
				strides[a] = st[a]
				off += e.Params.Start[a] * st[a]
			case poot.Transpose:
				strides[a] = st[e.Params.Perm[a]]
			}
		}
		kg := elemKgen(g, e.Op.String(), n)
		o := kg.offset(ot.Shape, strides, off, "i")
		kg.line("%s[i] = %s[%s]; }", kg.ptr(e.Out, false), kg.ptr(e.Inputs[0], false), o)
		return []*kgen{kg}, nil
	case poot.Concat:
		if ot.DType.Packed() {
			return nil, fmt.Errorf("concat of packed %v data", ot.DType)
		}
		ax := e.Params.Axis
		inner := int(ot.Shape[ax+1:].Size())
		ext := ot.Shape[ax]
		kg := elemKgen(g, "concat", n)
		kg.line("int in = i %% %d, a = (i / %d) %% %d, outer = i / %d;", inner, inner, ext, inner*ext)
		off := 0
		for j, v := range e.Inputs {
			ej := in(j).Shape[ax]
			kg.line("%sif (a < %d) %s[i] = %s[((long long)outer * %d + (a - %d)) * %d + in];", map[bool]string{true: "", false: "else "}[j == 0],
				off+ej, kg.ptr(e.Out, false), kg.ptr(v, false), ej, off, inner)
			off += ej
		}
		kg.line("}")
		return []*kgen{kg}, nil
	case poot.Gather:
		tt := in(0)
		rows := tt.Shape[0]
		rb := int(tt.DType.RowBytes(int64(last(tt.Shape))) * (tt.Shape[1:].Size() / int64(max(last(tt.Shape), 1))))
		if len(tt.Shape) == 1 {
			rb = int(tt.DType.RowBytes(1))
		}
		ni := int(in(1).Shape.Size())
		kg := elemKgen(g, "gather", ni*rb)
		kg.line("int r = i / %d, c = i %% %d, x = %s[r];", rb, rb, kg.ptr(e.Inputs[1], false))
		kg.line("if (x < 0 || x >= %d) *%s = %d; else %s[i] = %s[(long long)x * %d + c]; }", rows, kg.fault(), faultIndex,
			kg.ptr(e.Out, true), kg.ptr(e.Inputs[0], true), rb)
		return []*kgen{kg}, nil
	case poot.WriteRows:
		dt := in(0)
		rows := dt.Shape[0]
		rb := int(dt.DType.RowBytes(int64(last(dt.Shape))) * (dt.Shape[1:].Size() / int64(max(last(dt.Shape), 1))))
		if len(dt.Shape) == 1 {
			rb = int(dt.DType.RowBytes(1))
		}
		var ks []*kgen
		if plan.Locs[e.Out].Root != plan.Locs[e.Inputs[0]].Root {
			size := int(dt.Bytes())
			cp := elemKgen(g, "copy", size)
			cp.line("%s[i] = %s[i]; }", cp.ptr(e.Out, true), cp.ptr(e.Inputs[0], true))
			ks = append(ks, cp)
		}
		ni := int(in(1).Shape.Size())
		kg := elemKgen(g, "write_rows", rb)
		idx := kg.ptr(e.Inputs[1], false)
		kg.line("for (int r = 0; r < %d; r++) { int x = %s[r];", ni, idx)
		kg.line("  if (x < 0 || x >= %d) { *%s = %d; continue; }", rows, kg.fault(), faultIndex)
		kg.line("  %s[(long long)x * %d + i] = %s[(long long)r * %d + i]; } }", kg.ptr(e.Out, true), rb, kg.ptr(e.Inputs[2], true), rb)
		return append(ks, kg), nil
	case poot.Cast:
		return genCast(g, e)
	case poot.ReduceSum, poot.ReduceMax, poot.ArgMax:
		return genReduce(g, e)
	case poot.ArgTopK:
		return genTopK(g, e)
	case poot.MatMul, poot.IndexedMatMul:
		if e.Op == poot.IndexedMatMul || len(in(1).Shape) == 2 {
			return genContract(g, e, opt)
		}
		return genBatchedMatMul(g, e)
	}
	return nil, fmt.Errorf("primitive %v", e.Op)
}

// genElementwise is one elementwise primitive over values of any dtype.
func genElementwise(g *poot.Graph, e poot.Eqn) ([]*kgen, error) {
	ot := g.Type(e.Out)
	dt := g.Type(e.Inputs[0]).DType
	if e.Op == poot.Select {
		dt = g.Type(e.Inputs[1]).DType
	}
	kg := elemKgen(g, "ew_"+e.Op.String(), int(ot.Shape.Size()))
	var a [3]string
	for j, v := range e.Inputs {
		a[j] = kg.ptr(v, false) + "[i]"
	}
	o := kg.ptr(e.Out, false) + "[i]"
	switch {
	case dt == poot.F32 || dt == poot.Bool:
		for j, v := range e.Inputs {
			if g.Type(v).DType == poot.Bool {
				a[j] = "(" + a[j] + " ? 1.0f : 0.0f)"
			}
		}
		x := floatExpr(e.Op, a)
		if ot.DType == poot.Bool {
			x = "(" + x + ") != 0.0f"
		}
		kg.line("%s = %s; }", o, x)
	case dt == poot.I32:
		x, err := intExpr(e.Op, a)
		if err != nil {
			return nil, err
		}
		if e.Op == poot.Div {
			kg.line("if (%s == 0) { *%s = %d; } else", a[1], kg.fault(), faultDivide)
		}
		kg.line("%s = %s; }", o, x)
	default:
		return nil, fmt.Errorf("%v over %v", e.Op, dt)
	}
	return []*kgen{kg}, nil
}

// intExpr is an elementwise primitive over I32 operands, wrapping as Go's
// int32 arithmetic does.
func intExpr(op poot.Op, a [3]string) (string, error) {
	x, y := a[0], a[1]
	u := func(e string) string { return "(int)(" + e + ")" }
	switch op {
	case poot.Neg:
		return u("0u - (u32)" + x), nil
	case poot.Abs:
		return "(" + x + " < 0 ? " + u("0u - (u32)"+x) + " : " + x + ")", nil
	case poot.Add:
		return u("(u32)" + x + " + (u32)" + y), nil
	case poot.Sub:
		return u("(u32)" + x + " - (u32)" + y), nil
	case poot.Mul:
		return u("(u32)" + x + " * (u32)" + y), nil
	case poot.Div:
		return "(" + y + " == -1 ? " + u("0u - (u32)"+x) + " : " + x + " / " + y + ")", nil
	case poot.Max:
		return "(" + x + " > " + y + " ? " + x + " : " + y + ")", nil
	case poot.Min:
		return "(" + x + " < " + y + " ? " + x + " : " + y + ")", nil
	case poot.Eq, poot.Ne, poot.Lt, poot.Le, poot.Gt, poot.Ge:
		c := map[poot.Op]string{poot.Eq: "==", poot.Ne: "!=", poot.Lt: "<", poot.Le: "<=", poot.Gt: ">", poot.Ge: ">="}[op]
		return "(" + x + " " + c + " " + y + ")", nil
	case poot.Select:
		return "(" + x + " ? " + y + " : " + a[2] + ")", nil
	}
	return "", fmt.Errorf("%v over I32", op)
}

// genCast converts element by element; a packed operand decodes rows.
// genQuantQ8 is the cast of F32 to Q8_0, one thread per block of 32, as
// the IR defines it (package poot, Cast): d = max|x|/127 in f32 (a NaN
// replaced by the next element's magnitude, as C's MAX spells it), stored
// rounded to f16; quants x·(1/d) rounded half away from zero, and 0 for a
// NaN quotient (which every interpreter gives, though the IR leaves it
// unspecified).
func genQuantQ8(g *poot.Graph, e poot.Eqn) *kgen {
	n := int(g.Type(e.Inputs[0]).Shape.Size()) / 32
	kg := elemKgen(g, "cast_f32_q8_0", n)
	kg.line("const float* x = %s + (long long)i * 32; u8* o = %s + (long long)i * 34;", kg.ptr(e.Inputs[0], false), kg.ptr(e.Out, true))
	kg.line("float amax = 0.0f; for (int j = 0; j < 32; j++) { float a = fabsf(x[j]); if (!(amax > a)) amax = a; }")
	kg.line("float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f; u16 h = f32_to_f16(d); o[0] = (u8)h; o[1] = (u8)(h >> 8);")
	kg.line("for (int j = 0; j < 32; j++) { float r = roundf(x[j] * id); o[2 + j] = (u8)(signed char)(r == r ? (int)r : 0); } }")
	return kg
}

func genCast(g *poot.Graph, e poot.Eqn) ([]*kgen, error) {
	from, to := g.Type(e.Inputs[0]), g.Type(e.Out).DType
	n := int(from.Shape.Size())
	kg := elemKgen(g, "cast_"+strings.ToLower(from.DType.String())+"_"+strings.ToLower(to.String()), n)
	o := kg.ptr(e.Out, false)
	if to.Packed() {
		if from.DType != poot.F32 || to != poot.Q8_0 {
			return nil, fmt.Errorf("cast of %v to %v", from.DType, to)
		}
		return []*kgen{genQuantQ8(g, e)}, nil
	}
	if from.DType.Packed() {
		dec := decoder(from.DType)
		if to != poot.F32 || dec == "" {
			return nil, fmt.Errorf("cast of %v to %v", from.DType, to)
		}
		K := last(from.Shape)
		kg.line("%s[i] = %s(%s + (long long)(i / %d) * %d, i %% %d); }", o, dec, kg.ptr(e.Inputs[0], true), K, from.DType.RowBytes(int64(K)), K)
		return []*kgen{kg}, nil
	}
	x := kg.ptr(e.Inputs[0], false) + "[i]"
	var v string
	// Through float for F32, F16, BF16, Bool sources; I32 sources convert
	// directly so that I32 to BF16 rounds once.
	switch from.DType {
	case poot.F32:
		v = x
	case poot.F16:
		v = "f16_to_f32(" + x + ")"
	case poot.BF16:
		v = "f32_bits((u32)" + x + " << 16)"
	case poot.Bool:
		v = "(" + x + " ? 1.0f : 0.0f)"
	case poot.I32:
		switch to {
		case poot.F32:
			v = "(float)" + x
		case poot.F16:
			v = "f32_to_f16((float)" + x + ")"
		case poot.BF16:
			v = "i32_to_bf16(" + x + ")"
		case poot.I32:
			v = x
		case poot.Bool:
			v = "(" + x + " != 0)"
		}
		kg.line("%s[i] = %s; }", o, v)
		return []*kgen{kg}, nil
	default:
		return nil, fmt.Errorf("cast from %v", from.DType)
	}
	switch to {
	case poot.F16:
		if from.DType != poot.F16 {
			v = "f32_to_f16(" + v + ")"
		} else {
			v = x
		}
	case poot.BF16:
		if from.DType != poot.BF16 {
			v = "f32_to_bf16(" + v + ")"
		} else {
			v = x
		}
	case poot.I32:
		v = "f32_to_i32(" + v + ")"
	case poot.Bool:
		v = "(" + v + " != 0.0f)"
	case poot.F32:
	default:
		return nil, fmt.Errorf("cast to %v", to)
	}
	kg.line("%s[i] = %s; }", o, v)
	return []*kgen{kg}, nil
}

// genReduce is a reduction or arg-max over any axis: one thread per output
// element, looping over the axis (F32 sums in double).
func genReduce(g *poot.Graph, e poot.Eqn) ([]*kgen, error) {
	xt := g.Type(e.Inputs[0])
	ax := e.Params.Axis
	inner := int(xt.Shape[ax+1:].Size())
	ext := xt.Shape[ax]
	n := int(g.Type(e.Out).Shape.Size())
	kg := elemKgen(g, e.Op.String(), n)
	x, o := kg.ptr(e.Inputs[0], false), kg.ptr(e.Out, false)
	kg.line("long long base = (long long)(i / %d) * %d + i %% %d;", inner, inner*ext, inner)
	at := fmt.Sprintf("%s[base + (long long)j * %d]", x, inner)
	f32 := xt.DType == poot.F32
	switch {
	case e.Op == poot.ReduceSum && f32:
		kg.line("double s = 0.0; for (int j = 0; j < %d; j++) s += (double)%s; %s[i] = (float)s; }", ext, at, o)
	case e.Op == poot.ReduceSum:
		kg.line("u32 s = 0; for (int j = 0; j < %d; j++) s += (u32)%s; %s[i] = (int)s; }", ext, at, o)
	case e.Op == poot.ReduceMax && f32:
		kg.line("float s = %s; for (int j = 0; j < %d; j++) s = max_nan(s, %s); %s[i] = s; }", lit(float32(math.Inf(-1))), ext, at, o)
	case e.Op == poot.ReduceMax:
		kg.line("int s = %s; for (int j = 1; j < %d; j++) { int v = %s; if (v > s) s = v; } %s[i] = s; }", strings.Replace(at, "j *", "0 *", 1), ext, at, o)
	case f32: // ArgMax
		kg.line("int b = 0; float bv = %s; for (int j = 1; j < %d; j++) { float v = %s; if (bv == bv && (v != v || v > bv)) { b = j; bv = v; } } %s[i] = b; }",
			strings.Replace(at, "j *", "0 *", 1), ext, at, o)
	default:
		kg.line("int b = 0; int bv = %s; for (int j = 1; j < %d; j++) { int v = %s; if (v > bv) { b = j; bv = v; } } %s[i] = b; }",
			strings.Replace(at, "j *", "0 *", 1), ext, at, o)
	}
	return []*kgen{kg}, nil
}

// genTopK selects the K largest of each last-axis row (NaN above every
// number, ties to the lowest index), one thread per row, K passes.
func genTopK(g *poot.Graph, e poot.Eqn) ([]*kgen, error) {
	xt := g.Type(e.Inputs[0])
	L, K := last(xt.Shape), e.Params.K
	rows := int(xt.Shape.Size()) / L
	kg := elemKgen(g, "argtopk", rows)
	x, o := kg.ptr(e.Inputs[0], false), kg.ptr(e.Out, false)
	f := xt.DType == poot.F32
	typ := map[bool]string{true: "float", false: "int"}[f]
	// better(v, b): v ranks above the current best b (found earlier).
	better := "v > bv"
	if f {
		better = "(v != v && bv == bv) || (bv == bv && v > bv)"
	}
	kg.line("const %s* xr = %s + (long long)i * %d; int* orow = %s + (long long)i * %d;", typ, x, L, o, K)
	kg.line("for (int p = 0; p < %d; p++) { int b = -1; %s bv = 0;", K, typ)
	kg.line("  for (int j = 0; j < %d; j++) { bool used = false; for (int q = 0; q < p; q++) used = used || orow[q] == j;", L)
	kg.line("    if (used) continue; %s v = xr[j]; if (b < 0 || %s) { b = j; bv = v; } }", typ, better)
	kg.line("  orow[p] = b; } }")
	return []*kgen{kg}, nil
}

// genBatchedMatMul is a MatMul whose b has a's batch axes: one thread per
// output element, sums in double.
func genBatchedMatMul(g *poot.Graph, e poot.Eqn) ([]*kgen, error) {
	as, bt := g.Type(e.Inputs[0]).Shape, g.Type(e.Inputs[1])
	dec := decoder(bt.DType)
	if dec == "" {
		return nil, fmt.Errorf("no decoder for %v", bt.DType)
	}
	K, M, N := last(as), as[len(as)-2], bt.Shape[len(bt.Shape)-2]
	rb := bt.DType.RowBytes(int64(K))
	n := int(g.Type(e.Out).Shape.Size())
	kg := elemKgen(g, "matmul_"+strings.ToLower(bt.DType.String()), n)
	a, b, o := kg.ptr(e.Inputs[0], false), kg.ptr(e.Inputs[1], true), kg.ptr(e.Out, false)
	kg.line("int nn = i %% %d, mm = (i / %d) %% %d, bb = i / %d;", N, N, M, M*N)
	kg.line("const float* ar = %s + ((long long)bb * %d + mm) * %d; const u8* br = %s + ((long long)bb * %d + nn) * %d;", a, M, K, b, N, rb)
	kg.line("double s = 0.0; for (int k = 0; k < %d; k++) s += (double)ar[k] * (double)%s(br, k); %s[i] = (float)s; }", K, dec, o)
	return []*kgen{kg}, nil
}

// PlanString prints the plan as lower.Plan.String does, with each
// kernel's CUDA launches under it: the kernel's name, grid and block.
func PlanString(plan *lower.Plan) (string, error) {
	m, err := Generate(plan)
	if err != nil {
		return "", err
	}
	lines := strings.Split(plan.String(), "\n")
	var sb strings.Builder
	sb.WriteString(lines[0] + "\n")
	li := 0
	for i, line := range lines[1:] {
		if line == "" {
			continue
		}
		sb.WriteString(line + "\n")
		for ; i < len(plan.Kernels) && li < len(m.Launches) && m.Launches[li].Step == i; li++ {
			l := m.Launches[li]
			fmt.Fprintf(&sb, "       cuda %s grid(%d,%d,%d) block(%d,%d,%d)\n", l.Kernel, l.Grid[0], l.Grid[1], l.Grid[2], l.Block[0], l.Block[1], l.Block[2])
		}
	}
	fmt.Fprintf(&sb, "%d launches of %d distinct kernels\n", len(m.Launches), len(m.Kernels))
	return sb.String(), nil
}
