package pootest_test

// This file is an independent evaluator of poot graphs, written from the
// primitive documentation with plain nested loops over multi-indices. It
// shares no code with package interp (only its error sentinels, so that
// error kinds can be compared) and uses quant only for the storage formats'
// definitions.

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/quant"
	"github.com/pootlabs/poot/tensor"
)

type naive struct{}

func (naive) Name() string { return "naive" }

func (naive) Compile(g *poot.Graph, consts interp.Consts) (interp.Executable, error) {
	for _, id := range g.Inputs(poot.Const) {
		v := g.Value(id)
		t, ok := consts.Lookup(v.Name)
		if !ok || !t.Type.Equal(v.Type) || int64(len(t.Data)) != v.Type.Bytes() {
			return nil, fmt.Errorf("%w: constant %q", interp.ErrBinding, v.Name)
		}
	}
	return &naiveExec{g: g, consts: consts}, nil
}

type naiveExec struct {
	g         *poot.Graph
	consts    interp.Consts
	witnesses map[string]tensor.Tensor
}

// nv is a value: one slice per dtype family; packed values are a list of
// stored rows, one per index of shape[:-1].
type nv struct {
	t    poot.TensorType
	f    []float32
	i    []int32
	b    []bool
	h    []uint16
	rows [][]byte
}

func size(s poot.Shape) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// unitShape is the shape over which layout primitives move units:
// elements, or whole stored rows for packed values.
func unitShape(t poot.TensorType) poot.Shape {
	if t.DType.Packed() {
		return t.Shape[:len(t.Shape)-1]
	}
	return t.Shape
}

func alloc(t poot.TensorType) *nv {
	v := &nv{t: t}
	n := size(t.Shape)
	switch {
	case t.DType == poot.F32:
		v.f = make([]float32, n)
	case t.DType == poot.I32:
		v.i = make([]int32, n)
	case t.DType == poot.Bool:
		v.b = make([]bool, n)
	case t.DType == poot.F16 || t.DType == poot.BF16:
		v.h = make([]uint16, n)
	default:
		v.rows = make([][]byte, size(unitShape(t)))
	}
	return v
}

// move copies unit si of src to unit di of dst.
func move(dst *nv, di int, src *nv, si int) {
	switch {
	case dst.f != nil:
		dst.f[di] = src.f[si]
	case dst.i != nil:
		dst.i[di] = src.i[si]
	case dst.b != nil:
		dst.b[di] = src.b[si]
	case dst.h != nil:
		dst.h[di] = src.h[si]
	default:
		dst.rows[di] = src.rows[si]
	}
}

func unravel(flat int, shape poot.Shape) []int {
	idx := make([]int, len(shape))
	for a := len(shape) - 1; a >= 0; a-- {
		idx[a] = flat % shape[a]
		flat /= shape[a]
	}
	return idx
}

func ravel(idx []int, shape poot.Shape) int {
	flat := 0
	for a, d := range shape {
		flat = flat*d + idx[a]
	}
	return flat
}

func load(t tensor.Tensor) *nv {
	v := alloc(t.Type)
	n := size(t.Type.Shape)
	for k := 0; k < n; k++ {
		switch t.Type.DType {
		case poot.F32:
			v.f[k] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*k:]))
		case poot.I32:
			v.i[k] = int32(binary.LittleEndian.Uint32(t.Data[4*k:]))
		case poot.Bool:
			v.b[k] = t.Data[k] != 0
		case poot.F16, poot.BF16:
			v.h[k] = binary.LittleEndian.Uint16(t.Data[2*k:])
		}
	}
	if v.rows != nil {
		rb := int(t.Type.DType.RowBytes(int64(t.Type.Shape[len(t.Type.Shape)-1])))
		for r := range v.rows {
			v.rows[r] = t.Data[r*rb : (r+1)*rb]
		}
	}
	return v
}

func store(v *nv) tensor.Tensor {
	t, _ := tensor.New(v.t)
	for k := range size(v.t.Shape) {
		switch v.t.DType {
		case poot.F32:
			binary.LittleEndian.PutUint32(t.Data[4*k:], math.Float32bits(v.f[k]))
		case poot.I32:
			binary.LittleEndian.PutUint32(t.Data[4*k:], uint32(v.i[k]))
		case poot.Bool:
			if v.b[k] {
				t.Data[k] = 1
			}
		case poot.F16, poot.BF16:
			binary.LittleEndian.PutUint16(t.Data[2*k:], v.h[k])
		}
	}
	if v.rows != nil {
		off := 0
		for _, r := range v.rows {
			off += copy(t.Data[off:], r)
		}
	}
	return t
}

// floatRows decodes a float value of any dtype to float32, row-major.
func floatRows(v *nv) []float32 {
	switch v.t.DType {
	case poot.F32:
		return v.f
	case poot.F16, poot.BF16:
		out := make([]float32, len(v.h))
		for k, h := range v.h {
			if v.t.DType == poot.F16 {
				out[k] = quant.F16ToF32(h)
			} else {
				out[k] = quant.BF16ToF32(h)
			}
		}
		return out
	}
	last := v.t.Shape[len(v.t.Shape)-1]
	out := make([]float32, len(v.rows)*last)
	for r, row := range v.rows {
		_ = quant.DequantizeRow(v.t.DType, out[r*last:(r+1)*last], row)
	}
	return out
}

func (x *naiveExec) Witness(name string) (tensor.Tensor, bool) {
	t, ok := x.witnesses[name]
	return t, ok
}

func (x *naiveExec) Run(slots interp.Slots, state *interp.State) ([]tensor.Tensor, error) {
	g := x.g
	vals := make([]*nv, g.NumValues())
	for id := range vals {
		v := g.Value(poot.ValueID(id))
		var t tensor.Tensor
		var ok bool
		switch v.Kind {
		case poot.Const:
			t, ok = x.consts.Lookup(v.Name)
		case poot.Slot:
			t, ok = slots[v.Name]
		case poot.State:
			if state != nil {
				t, ok = state.Tensors[v.Name]
			}
		default:
			continue
		}
		if !ok || !t.Type.Equal(v.Type) || int64(len(t.Data)) != v.Type.Bytes() {
			return nil, fmt.Errorf("%w: %q", interp.ErrBinding, v.Name)
		}
		vals[id] = load(t)
		if v.Ranged() {
			for _, k := range vals[id].i {
				if int64(k) < v.Min || int64(k) > v.Max {
					return nil, fmt.Errorf("%w: %q holds %d", interp.ErrSlotRange, v.Name, k)
				}
			}
		}
	}
	for _, name := range sortedKeys(slots) {
		if id, ok := g.Lookup(name); !ok || g.Value(id).Kind != poot.Slot {
			return nil, fmt.Errorf("%w: extra slot %q", interp.ErrBinding, name)
		}
	}
	for i, e := range g.Eqns() {
		in := make([]*nv, len(e.Inputs))
		for j, id := range e.Inputs {
			in[j] = vals[id]
		}
		out, err := evalNaive(e, g.Type(e.Out), in)
		if err != nil {
			return nil, fmt.Errorf("naive: eqn %d (%v): %w", i, e.Op, err)
		}
		vals[e.Out] = out
	}
	var res []tensor.Tensor
	for _, id := range g.Outputs() {
		res = append(res, store(vals[id]))
	}
	x.witnesses = map[string]tensor.Tensor{}
	for _, w := range g.Witnesses() {
		x.witnesses[w.Name] = store(vals[w.Value])
	}
	for _, s := range g.States() {
		copy(state.Tensors[g.Value(s.In).Name].Data, store(vals[s.Out]).Data)
	}
	return res, nil
}

func sortedKeys(m interp.Slots) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

func greater(a, b float32) bool {
	if math.IsNaN(float64(a)) {
		return !math.IsNaN(float64(b))
	}
	return !math.IsNaN(float64(b)) && a > b
}

func evalNaive(e poot.Eqn, ot poot.TensorType, in []*nv) (*nv, error) {
	out := alloc(ot)
	n := size(ot.Shape)
	p := e.Params
	switch e.Op {
	case poot.Neg, poot.Exp, poot.Log, poot.Sqrt, poot.Rsqrt, poot.Tanh, poot.Erf, poot.Sin, poot.Cos, poot.Abs:
		x := in[0]
		for k := 0; k < n; k++ {
			if ot.DType == poot.I32 {
				v := x.i[k]
				if e.Op == poot.Neg || v < 0 {
					v = 0 - v
				}
				out.i[k] = v
				continue
			}
			v := float64(x.f[k])
			var r float64
			switch e.Op {
			case poot.Neg:
				r = -v
			case poot.Exp:
				r = math.Exp(v)
			case poot.Log:
				r = math.Log(v)
			case poot.Sqrt:
				r = math.Sqrt(v)
			case poot.Rsqrt:
				r = 1 / math.Sqrt(v)
			case poot.Tanh:
				r = math.Tanh(v)
			case poot.Erf:
				r = math.Erf(v)
			case poot.Sin:
				r = math.Sin(v)
			case poot.Cos:
				r = math.Cos(v)
			case poot.Abs:
				r = math.Abs(v)
			}
			out.f[k] = float32(r)
		}
	case poot.Not:
		for k := 0; k < n; k++ {
			out.b[k] = !in[0].b[k]
		}
	case poot.Add, poot.Sub, poot.Mul, poot.Div, poot.Max, poot.Min, poot.Pow:
		x, y := in[0], in[1]
		for k := 0; k < n; k++ {
			if ot.DType == poot.I32 {
				a, b := x.i[k], y.i[k]
				switch e.Op {
				case poot.Add:
					out.i[k] = a + b
				case poot.Sub:
					out.i[k] = a - b
				case poot.Mul:
					out.i[k] = a * b
				case poot.Div:
					if b == 0 {
						return nil, interp.ErrDivideByZero
					}
					out.i[k] = int32(int64(a) / int64(b))
				case poot.Max:
					out.i[k] = a
					if b > a {
						out.i[k] = b
					}
				case poot.Min:
					out.i[k] = a
					if b < a {
						out.i[k] = b
					}
				}
				continue
			}
			a, b := x.f[k], y.f[k]
			switch e.Op {
			case poot.Add:
				out.f[k] = a + b
			case poot.Sub:
				out.f[k] = a - b
			case poot.Mul:
				out.f[k] = a * b
			case poot.Div:
				out.f[k] = a / b
			case poot.Max, poot.Min:
				switch {
				case math.IsNaN(float64(a)) || math.IsNaN(float64(b)):
					out.f[k] = float32(math.NaN())
				case a == b: // ±0: max prefers +0, min prefers -0
					if (e.Op == poot.Max) == math.Signbit(float64(a)) {
						out.f[k] = b
					} else {
						out.f[k] = a
					}
				case (a > b) == (e.Op == poot.Max):
					out.f[k] = a
				default:
					out.f[k] = b
				}
			case poot.Pow:
				out.f[k] = float32(math.Pow(float64(a), float64(b)))
			}
		}
	case poot.Eq, poot.Ne, poot.Lt, poot.Le, poot.Gt, poot.Ge:
		x, y := in[0], in[1]
		for k := 0; k < n; k++ {
			var cmp int // -1, 0, 1, or 2 for unordered
			switch x.t.DType {
			case poot.F32:
				a, b := x.f[k], y.f[k]
				switch {
				case a != a || b != b:
					cmp = 2
				case a < b:
					cmp = -1
				case a > b:
					cmp = 1
				}
			case poot.I32:
				a, b := x.i[k], y.i[k]
				switch {
				case a < b:
					cmp = -1
				case a > b:
					cmp = 1
				}
			case poot.Bool:
				if x.b[k] != y.b[k] {
					cmp = 1
				}
			}
			var r bool
			switch e.Op {
			case poot.Eq:
				r = cmp == 0
			case poot.Ne:
				r = cmp != 0
			case poot.Lt:
				r = cmp == -1
			case poot.Le:
				r = cmp == -1 || cmp == 0
			case poot.Gt:
				r = cmp == 1
			case poot.Ge:
				r = cmp == 1 || cmp == 0
			}
			out.b[k] = r
		}
	case poot.And, poot.Or:
		for k := 0; k < n; k++ {
			if e.Op == poot.And {
				out.b[k] = in[0].b[k] && in[1].b[k]
			} else {
				out.b[k] = in[0].b[k] || in[1].b[k]
			}
		}
	case poot.Select:
		for k := 0; k < n; k++ {
			if in[0].b[k] {
				move(out, k, in[1], k)
			} else {
				move(out, k, in[2], k)
			}
		}
	case poot.ReduceSum, poot.ReduceMax, poot.ArgMax:
		x := in[0]
		ext := x.t.Shape[p.Axis]
		for k := 0; k < n; k++ {
			idx := unravel(k, ot.Shape)
			var sum float64
			var isum int32
			best := 0
			mf := float32(math.Inf(-1))
			mi := int32(math.MinInt32)
			for j := 0; j < ext; j++ {
				idx[p.Axis] = j
				s := ravel(idx, x.t.Shape)
				if x.t.DType == poot.F32 {
					v := x.f[s]
					sum += float64(v)
					// +0 ranks above -0, as in Max.
					if math.IsNaN(float64(v)) || v > mf || (v == 0 && mf == 0 && !math.Signbit(float64(v))) {
						mf = v
					}
					if math.IsNaN(float64(mf)) {
						mf = float32(math.NaN())
					}
					idx[p.Axis] = best
					if greater(v, x.f[ravel(idx, x.t.Shape)]) {
						best = j
					}
				} else {
					v := x.i[s]
					isum += v
					if v > mi {
						mi = v
					}
					idx[p.Axis] = best
					if v > x.i[ravel(idx, x.t.Shape)] {
						best = j
					}
				}
			}
			switch {
			case e.Op == poot.ArgMax:
				out.i[k] = int32(best)
			case x.t.DType == poot.I32 && e.Op == poot.ReduceSum:
				out.i[k] = isum
			case x.t.DType == poot.I32:
				out.i[k] = mi
			case e.Op == poot.ReduceSum:
				out.f[k] = float32(sum)
			default:
				out.f[k] = mf
			}
		}
	case poot.ArgTopK:
		x := in[0]
		last := x.t.Shape[len(x.t.Shape)-1]
		for r := 0; r < n/p.K; r++ {
			taken := make([]bool, last)
			for j := 0; j < p.K; j++ {
				best := -1
				for c := 0; c < last; c++ {
					if taken[c] {
						continue
					}
					if best < 0 {
						best = c
						continue
					}
					if x.t.DType == poot.F32 {
						if greater(x.f[r*last+c], x.f[r*last+best]) {
							best = c
						}
					} else if x.i[r*last+c] > x.i[r*last+best] {
						best = c
					}
				}
				taken[best] = true
				out.i[r*p.K+j] = int32(best)
			}
		}
	case poot.MatMul:
		a, w := in[0], in[1]
		wf := floatRows(w)
		K := a.t.Shape[len(a.t.Shape)-1]
		for k := 0; k < n; k++ {
			idx := unravel(k, ot.Shape)
			r := len(idx)
			ai := append([]int(nil), idx...)
			var wi []int
			if len(w.t.Shape) == 2 {
				wi = []int{idx[r-1], 0}
			} else {
				wi = append([]int(nil), idx...)
				wi[r-2] = idx[r-1]
			}
			var s float64
			for j := 0; j < K; j++ {
				ai[r-1] = j
				wi[len(wi)-1] = j
				s += float64(a.f[ravel(ai, a.t.Shape)]) * float64(wf[ravel(wi, w.t.Shape)])
			}
			out.f[k] = float32(s)
		}
	case poot.IndexedMatMul:
		x, w, ix := in[0], in[1], in[2]
		wf := floatRows(w)
		E, N, K := w.t.Shape[0], w.t.Shape[1], w.t.Shape[2]
		for r := 0; r < x.t.Shape[0]; r++ {
			ex := int(ix.i[r])
			if ex < 0 || ex >= E {
				return nil, interp.ErrIndexRange
			}
			for c := 0; c < N; c++ {
				var s float64
				for j := 0; j < K; j++ {
					s += float64(x.f[r*K+j]) * float64(wf[(ex*N+c)*K+j])
				}
				out.f[r*N+c] = float32(s)
			}
		}
	case poot.Reshape:
		for k := range size(unitShape(ot)) {
			move(out, k, in[0], k)
		}
	case poot.Broadcast:
		x := in[0]
		for k := 0; k < n; k++ {
			idx := unravel(k, ot.Shape)
			for a, d := range x.t.Shape {
				if d == 1 {
					idx[a] = 0
				}
			}
			move(out, k, x, ravel(idx, x.t.Shape))
		}
	case poot.Transpose:
		x := in[0]
		for k := 0; k < n; k++ {
			idx := unravel(k, ot.Shape)
			src := make([]int, len(idx))
			for i, a := range p.Perm {
				src[a] = idx[i]
			}
			move(out, k, x, ravel(src, x.t.Shape))
		}
	case poot.Slice:
		x := in[0]
		us := unitShape(ot)
		for k := range size(us) {
			idx := unravel(k, us)
			for a := range idx {
				idx[a] += p.Start[a]
			}
			move(out, k, x, ravel(idx, unitShape(x.t)))
		}
	case poot.Concat:
		us := unitShape(ot)
		for k := range size(us) {
			idx := unravel(k, us)
			for _, x := range in {
				if idx[p.Axis] < x.t.Shape[p.Axis] {
					move(out, k, x, ravel(idx, unitShape(x.t)))
					break
				}
				idx[p.Axis] -= x.t.Shape[p.Axis]
			}
		}
	case poot.Gather:
		table, ix := in[0], in[1]
		us := unitShape(ot)
		ir := len(ix.t.Shape)
		for k := range size(us) {
			idx := unravel(k, us)
			row := int(ix.i[ravel(idx[:ir], ix.t.Shape)])
			if row < 0 || row >= table.t.Shape[0] {
				return nil, interp.ErrIndexRange
			}
			src := append([]int{row}, idx[ir:]...)
			move(out, k, table, ravel(src, unitShape(table.t)))
		}
	case poot.WriteRows:
		dst, ix, src := in[0], in[1], in[2]
		for k := 0; k < n; k++ {
			move(out, k, dst, k)
		}
		rowLen := n / dst.t.Shape[0]
		for i, r := range ix.i {
			if r < 0 || int(r) >= dst.t.Shape[0] {
				return nil, interp.ErrIndexRange
			}
			for c := 0; c < rowLen; c++ {
				move(out, int(r)*rowLen+c, src, i*rowLen+c)
			}
		}
	case poot.Iota:
		for k := 0; k < n; k++ {
			v := unravel(k, ot.Shape)[p.Axis]
			if ot.DType == poot.F32 {
				out.f[k] = float32(v)
			} else {
				out.i[k] = int32(v)
			}
		}
	case poot.Literal:
		for k := 0; k < n; k++ {
			switch ot.DType {
			case poot.F32:
				out.f[k] = float32(p.Value)
			case poot.I32:
				out.i[k] = int32(p.Value)
			case poot.Bool:
				out.b[k] = p.Value != 0
			}
		}
	case poot.Cast:
		return naiveCast(in[0], out), nil
	default:
		return nil, fmt.Errorf("naive: no rule for %v", e.Op)
	}
	return out, nil
}

// roundBits rounds a finite float64 to the given number of explicit
// mantissa bits, to nearest even.
func roundBits(x float64, mant int) float64 {
	u := math.Float64bits(x)
	drop := uint(52 - mant)
	q, rem, half := u>>drop, u&(1<<drop-1), uint64(1)<<(drop-1)
	if rem > half || rem == half && q&1 == 1 {
		q++
	}
	return math.Float64frombits(q << drop)
}

func naiveCast(x, out *nv) *nv {
	n := size(x.t.Shape)
	from, to := x.t.DType, out.t.DType
	if from == to {
		for k := range size(unitShape(x.t)) {
			move(out, k, x, k)
		}
		return out
	}
	if from.Packed() {
		copy(out.f, floatRows(x))
		return out
	}
	for k := 0; k < n; k++ {
		var f float64 // exact value of the source element
		isInt := false
		switch from {
		case poot.F32:
			f = float64(x.f[k])
		case poot.F16:
			f = float64(quant.F16ToF32(x.h[k]))
		case poot.BF16:
			f = float64(quant.BF16ToF32(x.h[k]))
		case poot.I32:
			f, isInt = float64(x.i[k]), true
		case poot.Bool:
			isInt = true
			if x.b[k] {
				f = 1
			}
		}
		switch to {
		case poot.F32:
			out.f[k] = float32(f)
		case poot.F16:
			if isInt && f != 0 {
				r := roundBits(f, 10)
				if math.Abs(r) > 65504 {
					r = math.Inf(int(math.Copysign(1, r)))
				}
				out.h[k] = quant.F32ToF16(float32(r))
			} else {
				out.h[k] = quant.F32ToF16(float32(f))
			}
		case poot.BF16:
			if isInt && f != 0 {
				f = roundBits(f, 7)
			}
			out.h[k] = quant.F32ToBF16(float32(f))
		case poot.I32:
			switch {
			case math.IsNaN(f):
				out.i[k] = 0
			case f >= 2147483647:
				out.i[k] = math.MaxInt32
			case f <= -2147483648:
				out.i[k] = math.MinInt32
			default:
				out.i[k] = int32(math.Trunc(f))
			}
		case poot.Bool:
			out.b[k] = f != 0
		}
	}
	return out
}
