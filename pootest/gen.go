package pootest

import (
	"fmt"
	"math"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/tensor"
	"pgregory.net/rapid"
)

// GraphCase is a random well-formed graph with everything needed to run one
// step of it.
type GraphCase struct {
	Graph  *poot.Graph
	Consts interp.ConstMap
	Slots  interp.Slots
	State  *interp.State
}

// GenBrand is the brand of the builders GenGraph records with.
type GenBrand struct{}

// GenGraph generates random graphs over every primitive (an elementwise
// one drawn from its poot.Scalar record), with random shapes
// (extents 1 to 4, ranks 0 to 3) and random data: F32 data include signed
// zeros and occasionally NaN and ±Inf; index data are always in range, and
// I32 divisors never zero, so a step never faults. Contractions read F32,
// F16, BF16 and packed weights (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and the
// K-quants); gathers read packed tables; casts decode them.
func GenGraph() *rapid.Generator[*GraphCase] {
	return rapid.Custom(func(t *rapid.T) *GraphCase {
		g := newGen(t)
		n := rapid.IntRange(1, 10).Draw(t, "equations")
		ops := poot.Ops()
		for i := range n {
			op := rapid.SampledFrom(ops).Draw(t, fmt.Sprintf("op%d", i))
			scope := rapid.SampledFrom([]string{"", "a", "b"}).Draw(t, fmt.Sprintf("scope%d", i))
			if scope != "" {
				g.b.Push(scope)
			}
			g.emit(op)
			if scope != "" {
				g.b.Pop()
			}
		}
		return g.finish()
	})
}

// GenOp is GenGraph restricted to graphs whose last equation applies op.
func GenOp(op poot.Op) *rapid.Generator[*GraphCase] {
	return rapid.Custom(func(t *rapid.T) *GraphCase {
		g := newGen(t)
		pre := rapid.IntRange(0, 3).Draw(t, "before")
		for i := range pre {
			g.emit(rapid.SampledFrom(poot.Ops()).Draw(t, fmt.Sprintf("op%d", i)))
		}
		g.emit(op)
		return g.finish()
	})
}

type pooled struct {
	h poot.Traced[GenBrand]
	t poot.TensorType
}

type gen struct {
	t      *rapid.T
	b      *poot.Builder[GenBrand]
	pool   []pooled
	last   poot.Traced[GenBrand]
	consts interp.ConstMap
	slots  interp.Slots
	states []pooled
	state  *interp.State
	names  int
	token  bool // the SlotToken slot is taken
}

func newGen(t *rapid.T) *gen {
	return &gen{t: t, b: poot.NewBuilder[GenBrand](poot.Limits{}), consts: interp.ConstMap{}, slots: interp.Slots{}, state: &interp.State{Tensors: map[string]tensor.Tensor{}}}
}

func (g *gen) fail(err error) {
	g.t.Fatalf("pootest: generator: %v", err)
}

func (g *gen) label(s string) string {
	g.names++
	return fmt.Sprintf("%s%d", s, g.names)
}

// shape draws a shape of rank in [minRank, 3] with extents in [1, 4].
func (g *gen) shape(minRank int) poot.Shape {
	r := rapid.IntRange(minRank, 3).Draw(g.t, g.label("rank"))
	s := make(poot.Shape, r)
	for i := range s {
		s[i] = rapid.IntRange(1, 4).Draw(g.t, g.label("extent"))
	}
	return s
}

var specials = []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1, -1, 0.5}

// f32 is the F32 tensor of shape sh holding v.
func (g *gen) f32(sh poot.Shape, v []float32) tensor.Tensor {
	t, err := tensor.FromF32(sh, v)
	if err != nil {
		g.fail(err)
	}
	return t
}

// floats draws n float32 values: mostly in [-3, 3]. Half the tensors that
// allow it also hold special values (signed zeros, NaN, ±Inf, ±1, 0.5) in
// about a third of their elements, so every run of a few dozen cases meets
// each of them.
func (g *gen) floats(n int, allowSpecial bool) []float32 {
	v := make([]float32, n)
	special := allowSpecial && rapid.Bool().Draw(g.t, g.label("special"))
	for i := range v {
		if special && rapid.IntRange(0, 2).Draw(g.t, g.label("sp")) == 0 {
			v[i] = rapid.SampledFrom(specials).Draw(g.t, g.label("value"))
			continue
		}
		v[i] = float32(rapid.Float64Range(-3, 3).Draw(g.t, g.label("value")))
	}
	return v
}

// data draws data of type t; integers lie in [lo, hi] and are never zero
// when nonzero is set.
func (g *gen) data(t poot.TensorType, lo, hi int32, nonzero bool) tensor.Tensor {
	n := int(t.Shape.Size())
	var ten tensor.Tensor
	var err error
	switch t.DType {
	case poot.I32:
		v := make([]int32, n)
		for i := range v {
			v[i] = rapid.Int32Range(lo, hi).Draw(g.t, g.label("int"))
			if nonzero && v[i] == 0 {
				v[i] = 1
			}
		}
		ten, err = tensor.FromI32(t.Shape, v)
	case poot.Bool:
		v := make([]bool, n)
		for i := range v {
			v[i] = rapid.Bool().Draw(g.t, g.label("bool"))
		}
		ten, err = tensor.FromBool(t.Shape, v)
	default:
		ten, err = tensor.Quantize(t, g.floats(n, !t.DType.Packed()))
	}
	if err != nil {
		g.fail(err)
	}
	return ten
}

// input declares a fresh constant, slot or state of type t holding data
// drawn by data (integers in [lo, hi]).
func (g *gen) input(t poot.TensorType, lo, hi int32, nonzero bool) poot.Traced[GenBrand] {
	kinds := []poot.Kind{poot.Const}
	if !t.DType.Packed() && !nonzero {
		kinds = append(kinds, poot.Slot, poot.State)
	}
	k := rapid.SampledFrom(kinds).Draw(g.t, g.label("kind"))
	d := g.data(t, lo, hi, nonzero)
	var h poot.Traced[GenBrand]
	switch k {
	case poot.Const:
		name := g.label("w")
		h = g.b.Constant(name, t)
		g.consts[name] = d
	case poot.State:
		name := g.label("s")
		h = g.b.StateInput(name, t)
		g.state.Tensors[name] = d
		g.states = append(g.states, pooled{h, t})
	default:
		if t.DType == poot.I32 && !g.token && lo <= hi {
			g.token = true
			h = g.b.Slot(poot.SlotToken, t.Shape, int64(lo), int64(hi))
			g.slots[poot.SlotToken.String()] = d
		} else {
			name := g.label("x")
			h = g.b.SlotNamed(name, t)
			g.slots[name] = d
		}
	}
	if err := g.b.Err(); err != nil {
		g.fail(err)
	}
	return h
}

// operand returns a value of type t: an earlier value of that type, or a
// fresh input.
func (g *gen) operand(t poot.TensorType) poot.Traced[GenBrand] {
	var cands []poot.Traced[GenBrand]
	for _, p := range g.pool {
		if p.t.Equal(t) {
			cands = append(cands, p.h)
		}
	}
	if len(cands) > 0 && rapid.IntRange(0, 2).Draw(g.t, g.label("reuse")) > 0 {
		return rapid.SampledFrom(cands).Draw(g.t, g.label("pick"))
	}
	h := g.input(t, -5, 5, false)
	g.pool = append(g.pool, pooled{h, t})
	return h
}

// indices returns a fresh I32 input of the given shape with values in
// [0, n).
func (g *gen) indices(shape poot.Shape, n int) poot.Traced[GenBrand] {
	return g.input(poot.TensorType{Shape: shape, DType: poot.I32}, 0, int32(n-1), false)
}

// anyShaped returns a value of the given dtype: an earlier one, or a fresh
// input of a drawn shape.
func (g *gen) anyShaped(d poot.DType, minRank int) (poot.Traced[GenBrand], poot.TensorType) {
	var cands []pooled
	for _, p := range g.pool {
		if p.t.DType == d && len(p.t.Shape) >= minRank {
			cands = append(cands, p)
		}
	}
	if len(cands) > 0 && rapid.IntRange(0, 2).Draw(g.t, g.label("reuse")) > 0 {
		p := rapid.SampledFrom(cands).Draw(g.t, g.label("pick"))
		return p.h, p.t
	}
	t := poot.TensorType{Shape: g.shape(minRank), DType: d}
	if d.Packed() {
		t.Shape = g.packedShape(d, max(minRank, 1))
	}
	return g.operand(t), t
}

var packedTypes = []poot.DType{poot.Q8_0, poot.Q4_0, poot.Q4_1, poot.Q5_0, poot.Q5_1, poot.Q4_K, poot.Q5_K, poot.Q6_K, poot.Q8_K, poot.MXFP4}

var plainTypes = []poot.DType{poot.F32, poot.I32, poot.Bool, poot.F16, poot.BF16}

// packedShape draws a shape of rank in [minRank, 3] whose last extent is
// one or two blocks of d.
func (g *gen) packedShape(d poot.DType, minRank int) poot.Shape {
	s := g.shape(minRank)
	s[len(s)-1] = d.BlockElems() * rapid.IntRange(1, 2).Draw(g.t, g.label("blocks"))
	return s
}

func (g *gen) dtype(from []poot.DType) poot.DType {
	return rapid.SampledFrom(from).Draw(g.t, g.label("dtype"))
}

func (g *gen) apply(op poot.Op, p poot.Params, in ...poot.Traced[GenBrand]) {
	h := g.b.Apply(op, p, in...)
	if err := g.b.Err(); err != nil {
		g.fail(err)
	}
	g.pool = append(g.pool, pooled{h, g.b.Aval(h)})
	g.last = h
}

// emit records one equation of op with drawn operands.
func (g *gen) emit(op poot.Op) {
	switch op {
	case poot.Select:
		x, t := g.anyShaped(g.dtype(plainTypes), 0)
		c := g.operand(poot.TensorType{Shape: t.Shape, DType: poot.Bool})
		g.apply(op, poot.Params{}, c, x, g.operand(t))
	case poot.ReduceSum, poot.ReduceMax, poot.ArgMax:
		x, t := g.anyShaped(g.dtype([]poot.DType{poot.F32, poot.I32}), 1)
		axis := rapid.IntRange(0, len(t.Shape)-1).Draw(g.t, g.label("axis"))
		g.apply(op, poot.Params{Axis: axis}, x)
	case poot.ArgTopK:
		x, t := g.anyShaped(g.dtype([]poot.DType{poot.F32, poot.I32}), 1)
		k := rapid.IntRange(1, t.Shape[len(t.Shape)-1]).Draw(g.t, g.label("k"))
		g.apply(op, poot.Params{K: k}, x)
	case poot.MatMul:
		g.emitMatMul()
	case poot.IndexedMatMul:
		wd := g.dtype(append([]poot.DType{poot.F32, poot.F16, poot.BF16}, packedTypes...))
		k := rapid.IntRange(1, 5).Draw(g.t, g.label("k"))
		if wd.Packed() {
			k = wd.BlockElems()
		}
		r := rapid.IntRange(1, 3).Draw(g.t, g.label("rows"))
		e := rapid.IntRange(1, 3).Draw(g.t, g.label("experts"))
		n := rapid.IntRange(1, 3).Draw(g.t, g.label("n"))
		x := g.operand(poot.T(poot.F32, r, k))
		w := g.operand(poot.T(wd, e, n, k))
		g.apply(op, poot.Params{}, x, w, g.indices(poot.Shape{r}, e))
	case poot.Reshape:
		g.emitReshape()
	case poot.Broadcast:
		d := g.dtype(plainTypes)
		target := g.shape(0)
		s := target.Clone()
		for i := range s {
			if rapid.Bool().Draw(g.t, g.label("one")) {
				s[i] = 1
			}
		}
		x := g.operand(poot.TensorType{Shape: s, DType: d})
		g.apply(op, poot.Params{Shape: target}, x)
	case poot.Transpose:
		x, t := g.anyShaped(g.dtype(plainTypes), 0)
		perm := rapid.Permutation(identity(len(t.Shape))).Draw(g.t, g.label("perm"))
		g.apply(op, poot.Params{Perm: perm}, x)
	case poot.Slice:
		x, t := g.anyShaped(g.dtype(append(plainTypes, packedTypes...)), 0)
		r := len(t.Shape)
		start, limit := make([]int, r), make([]int, r)
		for i, d := range t.Shape {
			start[i] = rapid.IntRange(0, d-1).Draw(g.t, g.label("start"))
			limit[i] = rapid.IntRange(start[i]+1, d).Draw(g.t, g.label("limit"))
		}
		if t.DType.Packed() {
			start[r-1], limit[r-1] = 0, t.Shape[r-1]
		}
		g.apply(op, poot.Params{Start: start, Limit: limit}, x)
	case poot.Concat:
		d := g.dtype(append(plainTypes, packedTypes...))
		minRank := 1
		if d.Packed() {
			minRank = 2
		}
		x, t := g.anyShaped(d, minRank)
		axisMax := len(t.Shape) - 1
		if d.Packed() {
			axisMax--
		}
		axis := rapid.IntRange(0, axisMax).Draw(g.t, g.label("axis"))
		in := []poot.Traced[GenBrand]{x}
		for range rapid.IntRange(0, 2).Draw(g.t, g.label("more")) {
			s := t.Shape.Clone()
			s[axis] = rapid.IntRange(1, 3).Draw(g.t, g.label("extent"))
			in = append(in, g.operand(poot.TensorType{Shape: s, DType: d}))
		}
		g.apply(op, poot.Params{Axis: axis}, in...)
	case poot.Gather:
		d := g.dtype(append(plainTypes, packedTypes...))
		minRank := 1
		if d.Packed() {
			minRank = 2
		}
		table, t := g.anyShaped(d, minRank)
		idx := g.indices(g.shape(0), t.Shape[0])
		g.apply(op, poot.Params{}, table, idx)
	case poot.WriteRows:
		dst, t := g.anyShaped(g.dtype(plainTypes), 1)
		n := rapid.IntRange(1, 4).Draw(g.t, g.label("rows"))
		src := g.operand(poot.TensorType{Shape: append(poot.Shape{n}, t.Shape[1:]...), DType: t.DType})
		g.apply(op, poot.Params{}, dst, g.indices(poot.Shape{n}, t.Shape[0]), src)
	case poot.Iota:
		s := g.shape(1)
		axis := rapid.IntRange(0, len(s)-1).Draw(g.t, g.label("axis"))
		g.apply(op, poot.Params{Shape: s, Axis: axis, DType: g.dtype([]poot.DType{poot.F32, poot.I32})})
	case poot.Literal:
		d := g.dtype([]poot.DType{poot.F32, poot.I32, poot.Bool})
		var v float64
		switch d {
		case poot.F32:
			v = float64(g.floats(1, true)[0])
		case poot.I32:
			v = float64(rapid.Int32Range(-100, 100).Draw(g.t, g.label("int")))
		default:
			v = float64(rapid.IntRange(0, 1).Draw(g.t, g.label("bool")))
		}
		g.apply(op, poot.Params{Shape: g.shape(0), DType: d, Value: v})
	case poot.Cast:
		from := g.dtype(append(plainTypes, packedTypes...))
		x, _ := g.anyShaped(from, 0)
		to := poot.F32
		if !from.Packed() {
			to = g.dtype(plainTypes)
		}
		g.apply(op, poot.Params{DType: to}, x)
	default:
		s, ok := op.Scalar()
		if !ok {
			g.fail(fmt.Errorf("no generator for %v", op))
		}
		g.emitScalar(op, s)
	}
}

// emitScalar records an elementwise primitive from its record: operands of
// one drawn dtype it accepts and one shape, an I32 divisor drawn nonzero
// where the record says zero faults.
func (g *gen) emitScalar(op poot.Op, s poot.Scalar) {
	d := g.dtype(s.DTypes())
	x, t := g.anyShaped(d, 0)
	in := []poot.Traced[GenBrand]{x}
	for len(in) < op.Arity() {
		if s.NonzeroI32 && d == poot.I32 {
			in = append(in, g.input(t, -5, 5, true)) // a fresh divisor: never zero
		} else {
			in = append(in, g.operand(t))
		}
	}
	g.apply(op, poot.Params{}, in...)
}

func identity(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}

func (g *gen) emitMatMul() {
	wd := g.dtype(append([]poot.DType{poot.F32, poot.F16, poot.BF16}, packedTypes...))
	k := rapid.IntRange(1, 5).Draw(g.t, g.label("k"))
	if wd.Packed() {
		k = wd.BlockElems() * rapid.IntRange(1, 2).Draw(g.t, g.label("blocks"))
	}
	m := rapid.IntRange(1, 3).Draw(g.t, g.label("m"))
	n := rapid.IntRange(1, 3).Draw(g.t, g.label("n"))
	batch := g.shape(0)
	if len(batch) > 2 {
		batch = batch[:2]
	}
	as := append(batch.Clone(), m, k)
	a := g.operand(poot.T(poot.F32, as...))
	ws := poot.Shape{n, k}
	if len(batch) > 0 && rapid.Bool().Draw(g.t, g.label("batched")) {
		ws = append(batch.Clone(), n, k)
	}
	g.apply(poot.MatMul, poot.Params{}, a, g.operand(poot.TensorType{Shape: ws, DType: wd}))
}

func (g *gen) emitReshape() {
	x, t := g.anyShaped(g.dtype(append(plainTypes, packedTypes...)), 0)
	size := int(t.Shape.Size())
	var s poot.Shape
	if t.DType.Packed() {
		last := t.Shape[len(t.Shape)-1]
		s = append(factor(g, size/last), last)
	} else {
		s = factor(g, size)
	}
	g.apply(poot.Reshape, poot.Params{Shape: s}, x)
}

// factor draws a shape with n elements (rank 0 when n is 1 and drawn so).
func factor(g *gen, n int) poot.Shape {
	var s poot.Shape
	for n > 1 || (len(s) == 0 && rapid.Bool().Draw(g.t, g.label("unit"))) {
		var divs []int
		for d := 1; d <= n; d++ {
			if n%d == 0 {
				divs = append(divs, d)
			}
		}
		d := rapid.SampledFrom(divs).Draw(g.t, g.label("div"))
		s = append(s, d)
		n /= d
		if len(s) >= 3 {
			s[len(s)-1] *= n
			n = 1
		}
	}
	return s
}

func (g *gen) finish() *GraphCase {
	out := poot.Outputs[GenBrand]{}
	if g.last.ID() >= 0 {
		out.Values = append(out.Values, g.last)
	}
	for _, p := range g.pool {
		if rapid.IntRange(0, 3).Draw(g.t, g.label("output")) == 0 {
			out.Values = append(out.Values, p.h)
		}
	}
	for _, s := range g.states {
		var cands []poot.Traced[GenBrand]
		for _, p := range g.pool {
			if p.t.Equal(s.t) {
				cands = append(cands, p.h)
			}
		}
		carry := s.h
		if len(cands) > 0 {
			carry = rapid.SampledFrom(cands).Draw(g.t, g.label("carry"))
		}
		out = out.WithState(s.h, carry)
	}
	gr, err := g.b.Finish(out)
	if err != nil {
		g.fail(err)
	}
	return &GraphCase{Graph: gr, Consts: g.consts, Slots: g.slots, State: g.state}
}
