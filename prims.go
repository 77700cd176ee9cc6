package poot

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Op identifies a primitive. Each primitive has exactly one definition in
// this file: its name, arity, which Params it reads, its type rule and its
// semantics (documented on the constant). An elementwise primitive's
// definition also holds its scalar meaning ([Scalar]), from which its type
// rule follows and which the interpreters, the planner's programs and the
// random-graph generator of package pootest read: adding one is its
// definition here, its Builder method (builder_prims.go) and its notebook
// method (nb/prims.go). Other primitives have one rule per interpreter, in
// tables indexed by Op.
//
// Conventions shared by all primitives:
//   - Transcendental functions and Pow are evaluated on the f32 operands
//     and rounded once to f32 (interpreters may differ from the correctly
//     rounded result by a few ulp; the oracle computes in float64).
//   - No implicit broadcasting: operands of elementwise primitives have equal
//     shapes; use Broadcast explicitly.
//   - Arithmetic is on F32 (and I32 where stated). F16, BF16 and the packed
//     types are storage types: they are read by MatMul, IndexedMatMul,
//     Gather and Cast, and moved by the layout primitives. A computed
//     packed value comes only from a Cast of F32 to Q8_0 (a quantized
//     cache's new rows), and a packed state is written only by WriteRows.
//   - Every extent of every value is at least 1.
//   - Axes in Params are non-negative (builders normalise negative axes).
//   - Reductions keep the reduced axis with extent 1.
//   - Runtime faults (an index out of range, a slot outside its declared
//     range) are errors reported by the interpreter, naming the equation.
type Op uint8

// The primitives.
const (
	opInvalid Op = iota

	// Neg is -x (F32, I32; the I32 negation of MinInt32 wraps to MinInt32).
	Neg
	// Exp is e^x (F32).
	Exp
	// Log is the natural logarithm (F32); negative inputs give NaN, 0 gives -Inf.
	Log
	// Sqrt is the square root (F32); -0 gives -0, inputs below zero give NaN.
	Sqrt
	// Rsqrt is 1/sqrt(x) (F32); +0 gives +Inf, -0 gives -Inf, inputs below
	// zero give NaN.
	Rsqrt
	// Tanh is the hyperbolic tangent (F32).
	Tanh
	// Erf is the error function (F32).
	Erf
	// Sin is the sine of x radians (F32).
	Sin
	// Cos is the cosine of x radians (F32).
	Cos
	// Abs is |x| (F32, I32; the I32 |MinInt32| wraps to MinInt32).
	Abs
	// Not is logical negation (Bool).
	Not

	// Add is x+y (F32, I32; I32 wraps).
	Add
	// Sub is x-y (F32, I32; I32 wraps).
	Sub
	// Mul is x*y (F32, I32; I32 wraps).
	Mul
	// Div is x/y. F32 follows IEEE (x/0 is ±Inf or NaN). I32 truncates
	// toward zero and MinInt32/-1 wraps to MinInt32; an I32 division by zero
	// is a runtime fault.
	Div
	// Max is the larger operand (F32, I32); a NaN operand gives NaN, and
	// Max(-0, +0) is +0.
	Max
	// Min is the smaller operand (F32, I32); a NaN operand gives NaN, and
	// Min(-0, +0) is -0.
	Min
	// Pow is x^y as math.Pow defines it (F32).
	Pow
	// Eq compares for equality (F32, I32, Bool); the result is Bool. NaN is
	// unequal to everything.
	Eq
	// Ne is the negation of Eq.
	Ne
	// Lt is x<y (F32, I32); Bool result; false when either is NaN.
	Lt
	// Le is x<=y (F32, I32); Bool result; false when either is NaN.
	Le
	// Gt is x>y (F32, I32); Bool result; false when either is NaN.
	Gt
	// Ge is x>=y (F32, I32); Bool result; false when either is NaN.
	Ge
	// And is logical conjunction (Bool).
	And
	// Or is logical disjunction (Bool).
	Or

	// Select(c, t, f) is t where c is true and f elsewhere. c is Bool; t and
	// f have one type (any plain dtype); all three shapes are equal.
	Select

	// ReduceSum sums over Params.Axis (F32, I32; I32 wraps), keeping the
	// axis with extent 1. Interpreters may sum in any order; the oracle sums
	// in float64 in element order and rounds once to f32. A sum starts from
	// +0, so a sum of zeros is +0 whatever their signs.
	ReduceSum
	// ReduceMax is the maximum over Params.Axis (F32, I32), keeping the axis
	// with extent 1: Max folded over the axis, so NaN propagates and +0
	// ranks above -0.
	ReduceMax
	// ArgMax is the index (I32) of the largest element over Params.Axis,
	// keeping the axis with extent 1. The lowest index wins ties (-0 and +0
	// are equal); a NaN counts as larger than any number (the first NaN
	// wins).
	ArgMax
	// ArgTopK returns, over the last axis, the indices (I32) of the
	// Params.K largest elements in descending order of value, so the output
	// has extent K on the last axis. Ties go to the lowest index; NaN counts
	// as larger than any number.
	ArgTopK

	// MatMul contracts the last axis of both operands:
	// out[..., m, n] = Σ_k a[..., m, k] · b[..., n, k].
	// a is F32 with rank ≥ 2. b has either rank 2 (one matrix shared by every
	// batch, the layout of a weight [out_features, in_features]) or the same
	// rank and batch extents as a. b may be any float dtype, packed included;
	// it is read as stored. The result is F32 [..., M, N].
	MatMul
	// IndexedMatMul contracts each row with its own expert:
	// out[r, n] = Σ_k x[r, k] · w[idx[r], n, k], with x F32 [R, K], w any
	// float dtype [E, N, K] read as stored, idx I32 [R]. An idx outside
	// [0, E) is a runtime fault. The result is F32 [R, N].
	IndexedMatMul

	// Reshape reinterprets the row-major elements with Params.Shape (same
	// element count). It moves no data. A packed operand keeps its last axis.
	Reshape
	// Broadcast repeats the operand to Params.Shape, which has the same rank;
	// each operand extent equals the target extent or is 1.
	Broadcast
	// Transpose permutes axes: out axis i is operand axis Params.Perm[i].
	Transpose
	// Slice takes out[i] = x[Params.Start + i] for i < Params.Limit -
	// Params.Start, per axis, with 0 ≤ Start < Limit ≤ extent. A packed
	// operand may be sliced on every axis but the last.
	Slice
	// Concat joins its operands (one or more, one dtype, equal extents except
	// on the axis) along Params.Axis.
	Concat
	// Gather reads rows of a table: out[i..., r...] = table[idx[i...], r...].
	// table has rank ≥ 1 and any dtype (packed tables give packed rows that a
	// Cast then decodes); idx is I32 of any rank; the output shape is
	// idx.Shape followed by table.Shape[1:]. An index outside [0, rows) is a
	// runtime fault.
	Gather
	// WriteRows returns dst with rows replaced: out = dst, then for each i in
	// order out[idx[i], r...] = src[i, r...]. dst is [R, rest...], idx is I32
	// [n], src is [n, rest...] of dst's dtype, packed dtypes included (a
	// row is whole blocks). The last write to a row wins; an index outside
	// [0, R) is a runtime fault. It is how caches append at positions and
	// paged layouts scatter.
	WriteRows

	// Iota fills Params.Shape with each element's index along Params.Axis,
	// as Params.DType (F32 or I32).
	Iota
	// Literal fills Params.Shape with Params.Value as Params.DType (F32, I32 or
	// Bool). I32 values are integers within range; Bool values are 0 or 1.
	// F32 values are rounded to nearest and may be ±Inf or NaN.
	Literal
	// Cast converts to Params.DType. Float to float rounds to nearest even
	// (overflow gives ±Inf); float to I32 truncates toward zero and
	// saturates, NaN giving 0; I32 to float rounds to nearest even; Bool gives
	// 0 or 1; to Bool is x != 0 (NaN gives true). Every conversion rounds
	// once (I32 to BF16 does not pass through F32); a NaN stays a NaN, with
	// an unspecified payload; a cast to the operand's own dtype is the
	// identity. A packed operand can only be cast to F32, which decodes it
	// exactly as its format defines. F32 casts to Q8_0 as the format's
	// reference quantizer does: each block of 32 along the last axis has
	// d = max|x|/127 in F32, stored rounded to F16, and quants x·(1/d)
	// rounded half away from zero (0 where d is 0); a block holding a NaN
	// or an infinity gets unspecified quants. No other packed dtype is a
	// cast's target.
	Cast

	numOps
)

// Params are the static parameters of an equation. Each primitive reads
// only the fields its documentation names; the others are zero.
type Params struct {
	Axis  int     // ReduceSum, ReduceMax, ArgMax, Concat, Iota
	K     int     // ArgTopK
	Perm  []int   // Transpose
	Shape Shape   // Reshape, Broadcast, Iota, Literal
	Start []int   // Slice
	Limit []int   // Slice
	DType DType   // Cast, Iota, Literal
	Value float64 // Literal
}

func (p Params) clone() Params {
	p.Perm = cloneInts(p.Perm)
	p.Shape = p.Shape.Clone()
	p.Start = cloneInts(p.Start)
	p.Limit = cloneInts(p.Limit)
	return p
}

func cloneInts(s []int) []int {
	if s == nil {
		return nil
	}
	return append([]int(nil), s...)
}

type paramField uint8

const (
	pAxis paramField = 1 << iota
	pK
	pPerm
	pShape
	pSlice
	pDType
	pValue
)

// primitive is the one definition of a primitive. An elementwise primitive
// with a scalar meaning has no infer: its type rule follows from scalar.
type primitive struct {
	name        string
	arity       int // -1: one or more
	metadata    bool
	elementwise bool
	params      paramField
	infer       func(p *Params, in []TensorType) (TensorType, error)
	scalar      *Scalar
}

// Scalar is the meaning of an elementwise primitive on one element of each
// operand: one function per operand dtype the primitive accepts, nil where
// it accepts none. A unary primitive's functions ignore y (interpreters
// pass x again). The primitive's type rule follows from which functions are
// set: operands of one dtype and one shape, and a result of that shape and
// of the dtype the function returns. At most one of F32 and CompareF32 is
// set, and likewise for I32.
//
// Interpreters read these functions, so a new elementwise primitive needs
// no rule of its own; an interpreter may still run a faster loop for a
// primitive it knows, which must agree with the function.
type Scalar struct {
	// F32 maps F32 operands to an F32 result.
	F32 func(x, y float32) float32
	// I32 maps I32 operands to an I32 result.
	I32 func(x, y int32) int32
	// Bool maps Bool operands to a Bool result.
	Bool func(x, y bool) bool
	// CompareF32 maps F32 operands to a Bool result.
	CompareF32 func(x, y float32) bool
	// CompareI32 maps I32 operands to a Bool result.
	CompareI32 func(x, y int32) bool
	// NonzeroI32 marks a binary primitive whose I32 form faults when y is
	// 0 (Div): interpreters report the fault before calling I32, and
	// generators of random graphs draw such divisors nonzero.
	NonzeroI32 bool
}

// DTypes lists the operand dtypes s accepts, in the order F32, I32, Bool.
func (s *Scalar) DTypes() []DType {
	var ds []DType
	if s.F32 != nil || s.CompareF32 != nil {
		ds = append(ds, F32)
	}
	if s.I32 != nil || s.CompareI32 != nil {
		ds = append(ds, I32)
	}
	if s.Bool != nil {
		ds = append(ds, Bool)
	}
	return ds
}

// result is the dtype s gives for operands of dtype d, or Invalid.
func (s *Scalar) result(d DType) DType {
	switch {
	case d == F32 && s.F32 != nil, d == I32 && s.I32 != nil:
		return d
	case d == F32 && s.CompareF32 != nil, d == I32 && s.CompareI32 != nil, d == Bool && s.Bool != nil:
		return Bool
	}
	return Invalid
}

// Transcendentals are computed in float64 and rounded once to float32.
func f64(f func(float64) float64) func(x, _ float32) float32 {
	return func(x, _ float32) float32 { return float32(f(float64(x))) }
}

var prims = [numOps]primitive{
	Neg: {name: "neg", arity: 1, scalar: &Scalar{
		F32: func(x, _ float32) float32 { return -x },
		I32: func(x, _ int32) int32 { return -x }}},
	Exp:   {name: "exp", arity: 1, scalar: &Scalar{F32: f64(math.Exp)}},
	Log:   {name: "log", arity: 1, scalar: &Scalar{F32: f64(math.Log)}},
	Sqrt:  {name: "sqrt", arity: 1, scalar: &Scalar{F32: f64(math.Sqrt)}},
	Rsqrt: {name: "rsqrt", arity: 1, scalar: &Scalar{F32: f64(func(x float64) float64 { return 1 / math.Sqrt(x) })}},
	Tanh:  {name: "tanh", arity: 1, scalar: &Scalar{F32: f64(math.Tanh)}},
	Erf:   {name: "erf", arity: 1, scalar: &Scalar{F32: f64(math.Erf)}},
	Sin:   {name: "sin", arity: 1, scalar: &Scalar{F32: f64(math.Sin)}},
	Cos:   {name: "cos", arity: 1, scalar: &Scalar{F32: f64(math.Cos)}},
	Abs: {name: "abs", arity: 1, scalar: &Scalar{
		F32: func(x, _ float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) },
		I32: func(x, _ int32) int32 { return max(x, -x) }}}, // -MinInt32 wraps to MinInt32
	Not: {name: "not", arity: 1, scalar: &Scalar{Bool: func(x, _ bool) bool { return !x }}},

	Add: {name: "add", arity: 2, scalar: &Scalar{
		F32: func(x, y float32) float32 { return x + y },
		I32: func(x, y int32) int32 { return x + y }}},
	Sub: {name: "sub", arity: 2, scalar: &Scalar{
		F32: func(x, y float32) float32 { return x - y },
		I32: func(x, y int32) int32 { return x - y }}},
	Mul: {name: "mul", arity: 2, scalar: &Scalar{
		F32: func(x, y float32) float32 { return x * y },
		I32: func(x, y int32) int32 { return x * y }}},
	Div: {name: "div", arity: 2, scalar: &Scalar{
		F32: func(x, y float32) float32 { return x / y },
		I32: func(x, y int32) int32 {
			if y == 0 {
				return 0 // a fault, reported before I32 is called
			}
			return x / y // Go defines MinInt32 / -1 as MinInt32
		},
		NonzeroI32: true}},
	// Go's max and min propagate NaN and order -0 below +0.
	Max: {name: "max", arity: 2, scalar: &Scalar{
		F32: func(x, y float32) float32 { return max(x, y) },
		I32: func(x, y int32) int32 { return max(x, y) }}},
	Min: {name: "min", arity: 2, scalar: &Scalar{
		F32: func(x, y float32) float32 { return min(x, y) },
		I32: func(x, y int32) int32 { return min(x, y) }}},
	Pow: {name: "pow", arity: 2, scalar: &Scalar{
		F32: func(x, y float32) float32 { return float32(math.Pow(float64(x), float64(y))) }}},
	Eq: {name: "eq", arity: 2, scalar: &Scalar{
		CompareF32: func(x, y float32) bool { return x == y },
		CompareI32: func(x, y int32) bool { return x == y },
		Bool:       func(x, y bool) bool { return x == y }}},
	Ne: {name: "ne", arity: 2, scalar: &Scalar{
		CompareF32: func(x, y float32) bool { return x != y },
		CompareI32: func(x, y int32) bool { return x != y },
		Bool:       func(x, y bool) bool { return x != y }}},
	Lt: {name: "lt", arity: 2, scalar: &Scalar{
		CompareF32: func(x, y float32) bool { return x < y },
		CompareI32: func(x, y int32) bool { return x < y }}},
	Le: {name: "le", arity: 2, scalar: &Scalar{
		CompareF32: func(x, y float32) bool { return x <= y },
		CompareI32: func(x, y int32) bool { return x <= y }}},
	Gt: {name: "gt", arity: 2, scalar: &Scalar{
		CompareF32: func(x, y float32) bool { return x > y },
		CompareI32: func(x, y int32) bool { return x > y }}},
	Ge: {name: "ge", arity: 2, scalar: &Scalar{
		CompareF32: func(x, y float32) bool { return x >= y },
		CompareI32: func(x, y int32) bool { return x >= y }}},
	And: {name: "and", arity: 2, scalar: &Scalar{Bool: func(x, y bool) bool { return x && y }}},
	Or:  {name: "or", arity: 2, scalar: &Scalar{Bool: func(x, y bool) bool { return x || y }}},

	Select: {name: "select", arity: 3, elementwise: true, infer: inferSelect},

	ReduceSum:     {name: "reduce_sum", arity: 1, params: pAxis, infer: reduceRule(Invalid)},
	ReduceMax:     {name: "reduce_max", arity: 1, params: pAxis, infer: reduceRule(Invalid)},
	ArgMax:        {name: "argmax", arity: 1, params: pAxis, infer: reduceRule(I32)},
	ArgTopK:       {name: "arg_top_k", arity: 1, params: pK, infer: inferArgTopK},
	MatMul:        {name: "matmul", arity: 2, infer: inferMatMul},
	IndexedMatMul: {name: "indexed_matmul", arity: 3, infer: inferIndexedMatMul},
	Reshape:       {name: "reshape", arity: 1, metadata: true, params: pShape, infer: inferReshape},
	Broadcast:     {name: "broadcast", arity: 1, params: pShape, infer: inferBroadcast},
	Transpose:     {name: "transpose", arity: 1, params: pPerm, infer: inferTranspose},
	Slice:         {name: "slice", arity: 1, params: pSlice, infer: inferSlice},
	Concat:        {name: "concat", arity: -1, params: pAxis, infer: inferConcat},
	Gather:        {name: "gather", arity: 2, infer: inferGather},
	WriteRows:     {name: "write_rows", arity: 3, infer: inferWriteRows},
	Iota:          {name: "iota", arity: 0, params: pShape | pAxis | pDType, infer: inferIota},
	Literal:       {name: "literal", arity: 0, params: pShape | pDType | pValue, infer: inferLiteral},
	Cast:          {name: "cast", arity: 1, params: pDType, infer: inferCast},
}

func init() {
	// A scalar meaning makes a primitive elementwise and gives its type rule.
	for op := range prims {
		if def := &prims[op]; def.scalar != nil {
			def.elementwise = true
			def.infer = scalarRule(def.scalar, def.arity)
		}
	}
}

// Ops lists every primitive, in Op order.
func Ops() []Op {
	out := make([]Op, 0, numOps-1)
	for op := Op(1); op < numOps; op++ {
		out = append(out, op)
	}
	return out
}

// NumOps is one more than the largest Op, for sizing rule tables.
const NumOps = int(numOps)

// Valid reports whether op is a defined primitive.
func (op Op) Valid() bool { return op > opInvalid && op < numOps }

// String returns the primitive's name as printed ("reduce_sum").
func (op Op) String() string {
	if op.Valid() {
		return prims[op].name
	}
	return "op(" + strconv.Itoa(int(op)) + ")"
}

// Arity is the number of operands, or -1 for a variadic primitive (Concat).
func (op Op) Arity() int {
	if !op.Valid() {
		return 0
	}
	return prims[op].arity
}

// Metadata reports whether the primitive only reinterprets its operand and
// launches no work (Reshape).
func (op Op) Metadata() bool { return op.Valid() && prims[op].metadata }

// Elementwise reports whether out[i] depends only on the operands' element
// i: every primitive with a scalar meaning, and Select. (Cast is not
// marked: its meaning depends on its params and the operand's storage.)
func (op Op) Elementwise() bool { return op.Valid() && prims[op].elementwise }

// Scalar returns the scalar meaning of an elementwise primitive, and false
// for a primitive without one (Select and every other primitive).
func (op Op) Scalar() (Scalar, bool) {
	if !op.Valid() || prims[op].scalar == nil {
		return Scalar{}, false
	}
	return *prims[op].scalar, true
}

// Infer applies the primitive's type rule: the output type of op with params
// p over operands of the given types, or an error saying what is invalid.
func (op Op) Infer(p Params, in ...TensorType) (TensorType, error) {
	if !op.Valid() {
		return TensorType{}, fmt.Errorf("unknown primitive %d", op)
	}
	for i, t := range in {
		if err := checkType(t); err != nil {
			return TensorType{}, fmt.Errorf("operand %d: %w", i, err)
		}
	}
	p = canonicalParams(op, p)
	return op.infer(&p, in)
}

// infer applies the rule to operands already known to be valid types and
// to params that are the caller's own copy (canonicalParams), which the
// result may share.
func (op Op) infer(p *Params, in []TensorType) (TensorType, error) {
	def := &prims[op]
	if def.arity >= 0 && len(in) != def.arity {
		return TensorType{}, fmt.Errorf("%s takes %d operands, got %d", def.name, def.arity, len(in))
	}
	if def.arity < 0 && len(in) == 0 {
		return TensorType{}, fmt.Errorf("%s takes at least one operand", def.name)
	}
	out, err := def.infer(p, in)
	if err != nil {
		return TensorType{}, err
	}
	if err := checkType(out); err != nil {
		return TensorType{}, fmt.Errorf("result: %w", err)
	}
	return out, nil
}

// checkType reports whether t can be the type of a value.
func checkType(t TensorType) error {
	if !t.DType.Valid() {
		return fmt.Errorf("invalid dtype %v", t.DType)
	}
	for _, d := range t.Shape {
		if d < 1 {
			return fmt.Errorf("shape %v has an extent below 1", t.Shape)
		}
	}
	if t.Bytes() < 0 {
		if t.DType.Packed() {
			return fmt.Errorf("%v: the last axis must be a whole number of %d-element blocks", t, t.DType.BlockElems())
		}
		return fmt.Errorf("shape %v is too large", t.Shape)
	}
	return nil
}

func dtypeList(allowed []DType) string {
	s := make([]string, len(allowed))
	for i, d := range allowed {
		s[i] = d.String()
	}
	return strings.Join(s, " or ")
}

// scalarRule is the type rule of an elementwise primitive with the scalar
// meaning s: see [Scalar].
func scalarRule(s *Scalar, arity int) func(*Params, []TensorType) (TensorType, error) {
	allowed := s.DTypes()
	return func(_ *Params, in []TensorType) (TensorType, error) {
		x := in[0]
		for _, y := range in[1:] {
			if x.DType != y.DType {
				return TensorType{}, fmt.Errorf("dtypes differ: %v and %v", x.DType, y.DType)
			}
		}
		if r := s.result(x.DType); r != Invalid {
			for _, y := range in[1:] {
				if !x.Shape.Equal(y.Shape) {
					return TensorType{}, fmt.Errorf("shapes differ: %v and %v (broadcast explicitly)", x.Shape, y.Shape)
				}
			}
			return TensorType{Shape: x.Shape, DType: r}, nil
		}
		if arity == 1 {
			return TensorType{}, fmt.Errorf("operand is %v, want %s", x.DType, dtypeList(allowed))
		}
		return TensorType{}, fmt.Errorf("operands are %v, want %s", x.DType, dtypeList(allowed))
	}
}

func inferSelect(_ *Params, in []TensorType) (TensorType, error) {
	c, t, f := in[0], in[1], in[2]
	if c.DType != Bool {
		return TensorType{}, fmt.Errorf("condition is %v, want bool", c.DType)
	}
	if !t.Equal(f) {
		return TensorType{}, fmt.Errorf("branches differ: %v and %v", t, f)
	}
	if t.DType.Packed() {
		return TensorType{}, fmt.Errorf("branches are packed %v", t.DType)
	}
	if !c.Shape.Equal(t.Shape) {
		return TensorType{}, fmt.Errorf("condition shape %v differs from branch shape %v", c.Shape, t.Shape)
	}
	return t, nil
}

func checkAxis(axis, rank int) error {
	if axis < 0 || axis >= rank {
		return fmt.Errorf("axis %d out of range for rank %d", axis, rank)
	}
	return nil
}

// reduceRule covers ReduceSum, ReduceMax and ArgMax; ArgMax's result is I32.
func reduceRule(result DType) func(*Params, []TensorType) (TensorType, error) {
	return func(p *Params, in []TensorType) (TensorType, error) {
		x := in[0]
		if x.DType != F32 && x.DType != I32 {
			return TensorType{}, fmt.Errorf("operand is %v, want f32 or i32", x.DType)
		}
		if err := checkAxis(p.Axis, len(x.Shape)); err != nil {
			return TensorType{}, err
		}
		s := x.Shape.Clone()
		s[p.Axis] = 1
		d := result
		if d == Invalid {
			d = x.DType
		}
		return TensorType{Shape: s, DType: d}, nil
	}
}

func inferArgTopK(p *Params, in []TensorType) (TensorType, error) {
	x := in[0]
	if x.DType != F32 && x.DType != I32 {
		return TensorType{}, fmt.Errorf("operand is %v, want f32 or i32", x.DType)
	}
	if len(x.Shape) == 0 {
		return TensorType{}, fmt.Errorf("operand is a scalar")
	}
	n := x.Shape[len(x.Shape)-1]
	if p.K < 1 || p.K > n {
		return TensorType{}, fmt.Errorf("k = %d outside [1, %d]", p.K, n)
	}
	s := x.Shape.Clone()
	s[len(s)-1] = p.K
	return TensorType{Shape: s, DType: I32}, nil
}

func inferMatMul(_ *Params, in []TensorType) (TensorType, error) {
	a, b := in[0], in[1]
	if a.DType != F32 {
		return TensorType{}, fmt.Errorf("left operand is %v, want f32", a.DType)
	}
	if !b.DType.Float() {
		return TensorType{}, fmt.Errorf("right operand is %v, want a float type", b.DType)
	}
	ra, rb := len(a.Shape), len(b.Shape)
	if ra < 2 {
		return TensorType{}, fmt.Errorf("left operand has rank %d, want at least 2", ra)
	}
	if rb != 2 && rb != ra {
		return TensorType{}, fmt.Errorf("right operand has rank %d, want 2 or %d", rb, ra)
	}
	if rb == ra && !a.Shape[:ra-2].Equal(b.Shape[:rb-2]) {
		return TensorType{}, fmt.Errorf("batch extents differ: %v and %v", a.Shape[:ra-2], b.Shape[:rb-2])
	}
	if a.Shape[ra-1] != b.Shape[rb-1] {
		return TensorType{}, fmt.Errorf("contracted extents differ: %d and %d", a.Shape[ra-1], b.Shape[rb-1])
	}
	s := a.Shape.Clone()
	s[ra-1] = b.Shape[rb-2]
	return TensorType{Shape: s, DType: F32}, nil
}

func inferIndexedMatMul(_ *Params, in []TensorType) (TensorType, error) {
	x, w, idx := in[0], in[1], in[2]
	if x.DType != F32 || len(x.Shape) != 2 {
		return TensorType{}, fmt.Errorf("rows are %v, want f32[R,K]", x)
	}
	if !w.DType.Float() || len(w.Shape) != 3 {
		return TensorType{}, fmt.Errorf("experts are %v, want a float [E,N,K]", w)
	}
	if idx.DType != I32 || len(idx.Shape) != 1 {
		return TensorType{}, fmt.Errorf("indices are %v, want i32[R]", idx)
	}
	if idx.Shape[0] != x.Shape[0] {
		return TensorType{}, fmt.Errorf("%d indices for %d rows", idx.Shape[0], x.Shape[0])
	}
	if w.Shape[2] != x.Shape[1] {
		return TensorType{}, fmt.Errorf("contracted extents differ: %d and %d", x.Shape[1], w.Shape[2])
	}
	return T(F32, x.Shape[0], w.Shape[1]), nil
}

func inferReshape(p *Params, in []TensorType) (TensorType, error) {
	x := in[0]
	out := TensorType{Shape: p.Shape, DType: x.DType}
	if err := checkType(out); err != nil {
		return TensorType{}, err
	}
	if out.Shape.Size() != x.Shape.Size() {
		return TensorType{}, fmt.Errorf("cannot reshape %v (%d elements) to %v (%d elements)", x.Shape, x.Shape.Size(), p.Shape, out.Shape.Size())
	}
	if x.DType.Packed() && (len(out.Shape) == 0 || len(x.Shape) == 0 || out.Shape[len(out.Shape)-1] != x.Shape[len(x.Shape)-1]) {
		return TensorType{}, fmt.Errorf("reshape of packed %v must keep the last axis", x)
	}
	return out, nil
}

func inferBroadcast(p *Params, in []TensorType) (TensorType, error) {
	x := in[0]
	if x.DType.Packed() {
		return TensorType{}, fmt.Errorf("cannot broadcast packed %v", x.DType)
	}
	if len(p.Shape) != len(x.Shape) {
		return TensorType{}, fmt.Errorf("cannot broadcast rank %d to rank %d (reshape first)", len(x.Shape), len(p.Shape))
	}
	for i, d := range x.Shape {
		if d != 1 && d != p.Shape[i] {
			return TensorType{}, fmt.Errorf("cannot broadcast %v to %v: axis %d", x.Shape, p.Shape, i)
		}
	}
	return TensorType{Shape: p.Shape, DType: x.DType}, nil
}

func inferTranspose(p *Params, in []TensorType) (TensorType, error) {
	x := in[0]
	if x.DType.Packed() {
		return TensorType{}, fmt.Errorf("cannot transpose packed %v", x.DType)
	}
	if len(p.Perm) != len(x.Shape) {
		return TensorType{}, fmt.Errorf("permutation %v for rank %d", p.Perm, len(x.Shape))
	}
	seen := make([]bool, len(p.Perm))
	s := make(Shape, len(p.Perm))
	for i, a := range p.Perm {
		if a < 0 || a >= len(p.Perm) || seen[a] {
			return TensorType{}, fmt.Errorf("%v is not a permutation", p.Perm)
		}
		seen[a] = true
		s[i] = x.Shape[a]
	}
	return TensorType{Shape: s, DType: x.DType}, nil
}

func inferSlice(p *Params, in []TensorType) (TensorType, error) {
	x := in[0]
	r := len(x.Shape)
	if len(p.Start) != r || len(p.Limit) != r {
		return TensorType{}, fmt.Errorf("slice bounds %v:%v for rank %d", p.Start, p.Limit, r)
	}
	s := make(Shape, r)
	for i := range r {
		if p.Start[i] < 0 || p.Start[i] >= p.Limit[i] || p.Limit[i] > x.Shape[i] {
			return TensorType{}, fmt.Errorf("slice %d:%d of axis %d with extent %d", p.Start[i], p.Limit[i], i, x.Shape[i])
		}
		s[i] = p.Limit[i] - p.Start[i]
	}
	if x.DType.Packed() && s[r-1] != x.Shape[r-1] {
		return TensorType{}, fmt.Errorf("cannot slice the last axis of packed %v", x)
	}
	return TensorType{Shape: s, DType: x.DType}, nil
}

func inferConcat(p *Params, in []TensorType) (TensorType, error) {
	first := in[0]
	r := len(first.Shape)
	if err := checkAxis(p.Axis, r); err != nil {
		return TensorType{}, err
	}
	if first.DType.Packed() && p.Axis == r-1 {
		return TensorType{}, fmt.Errorf("cannot concatenate packed %v along the last axis", first.DType)
	}
	s := first.Shape.Clone()
	s[p.Axis] = 0
	for i, t := range in {
		if t.DType != first.DType {
			return TensorType{}, fmt.Errorf("operand %d is %v, want %v", i, t.DType, first.DType)
		}
		if len(t.Shape) != r {
			return TensorType{}, fmt.Errorf("operand %d has rank %d, want %d", i, len(t.Shape), r)
		}
		for a := range r {
			if a != p.Axis && t.Shape[a] != first.Shape[a] {
				return TensorType{}, fmt.Errorf("operand %d has shape %v, want %v off axis %d", i, t.Shape, first.Shape, p.Axis)
			}
		}
		s[p.Axis] += t.Shape[p.Axis]
	}
	return TensorType{Shape: s, DType: first.DType}, nil
}

func inferGather(_ *Params, in []TensorType) (TensorType, error) {
	table, idx := in[0], in[1]
	if len(table.Shape) == 0 {
		return TensorType{}, fmt.Errorf("table is a scalar")
	}
	if idx.DType != I32 {
		return TensorType{}, fmt.Errorf("indices are %v, want i32", idx.DType)
	}
	if table.DType.Packed() && len(table.Shape) < 2 {
		return TensorType{}, fmt.Errorf("packed table %v must have rank at least 2", table)
	}
	s := append(idx.Shape.Clone(), table.Shape[1:]...)
	return TensorType{Shape: s, DType: table.DType}, nil
}

func inferWriteRows(_ *Params, in []TensorType) (TensorType, error) {
	dst, idx, src := in[0], in[1], in[2]
	if len(dst.Shape) == 0 {
		return TensorType{}, fmt.Errorf("destination is a scalar")
	}
	if idx.DType != I32 || len(idx.Shape) != 1 {
		return TensorType{}, fmt.Errorf("indices are %v, want i32[n]", idx)
	}
	if src.DType != dst.DType {
		return TensorType{}, fmt.Errorf("rows are %v, destination is %v", src.DType, dst.DType)
	}
	want := append(Shape{idx.Shape[0]}, dst.Shape[1:]...)
	if !src.Shape.Equal(want) {
		return TensorType{}, fmt.Errorf("rows have shape %v, want %v", src.Shape, want)
	}
	return dst, nil
}

func inferIota(p *Params, _ []TensorType) (TensorType, error) {
	if p.DType != F32 && p.DType != I32 {
		return TensorType{}, fmt.Errorf("iota of %v, want f32 or i32", p.DType)
	}
	if err := checkAxis(p.Axis, len(p.Shape)); err != nil {
		return TensorType{}, err
	}
	return TensorType{Shape: p.Shape, DType: p.DType}, nil
}

func inferLiteral(p *Params, _ []TensorType) (TensorType, error) {
	v := p.Value
	switch p.DType {
	case F32:
	case I32:
		if v != math.Trunc(v) || v < math.MinInt32 || v > math.MaxInt32 {
			return TensorType{}, fmt.Errorf("%v is not an i32", v)
		}
	case Bool:
		if v != 0 && v != 1 {
			return TensorType{}, fmt.Errorf("%v is not a bool (0 or 1)", v)
		}
	default:
		return TensorType{}, fmt.Errorf("literal of %v, want f32, i32 or bool", p.DType)
	}
	return TensorType{Shape: p.Shape, DType: p.DType}, nil
}

func inferCast(p *Params, in []TensorType) (TensorType, error) {
	x := in[0]
	if p.DType == Q8_0 && x.DType == F32 {
		t := TensorType{Shape: x.Shape, DType: Q8_0}
		if len(x.Shape) == 0 || t.Bytes() < 0 {
			return TensorType{}, fmt.Errorf("cast of %v to q8_0: the last axis must be a whole number of 32-element blocks", x)
		}
		return t, nil
	}
	if !p.DType.Valid() || p.DType.Packed() {
		if p.DType.Packed() {
			return TensorType{}, fmt.Errorf("cannot cast %v to %v (only f32 casts to a packed dtype, q8_0)", x.DType, p.DType)
		}
		return TensorType{}, fmt.Errorf("cannot cast to %v", p.DType)
	}
	if x.DType.Packed() && p.DType != F32 {
		return TensorType{}, fmt.Errorf("packed %v casts only to f32, not %v", x.DType, p.DType)
	}
	return TensorType{Shape: x.Shape, DType: p.DType}, nil
}

// formatParams writes the parameters op reads, as "[axis=2]".
func formatParams(op Op, p Params) string {
	if !op.Valid() {
		return ""
	}
	f := prims[op].params
	if f == 0 {
		return ""
	}
	var parts []string
	if f&pAxis != 0 {
		parts = append(parts, "axis="+strconv.Itoa(p.Axis))
	}
	if f&pK != 0 {
		parts = append(parts, "k="+strconv.Itoa(p.K))
	}
	if f&pPerm != 0 {
		parts = append(parts, "perm="+Shape(p.Perm).String())
	}
	if f&pShape != 0 {
		parts = append(parts, "shape="+p.Shape.String())
	}
	if f&pSlice != 0 {
		parts = append(parts, "start="+Shape(p.Start).String(), "limit="+Shape(p.Limit).String())
	}
	if f&pDType != 0 {
		parts = append(parts, "dtype="+p.DType.String())
	}
	if f&pValue != 0 {
		parts = append(parts, "value="+strconv.FormatFloat(p.Value, 'g', -1, 64))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// canonicalParams keeps only the fields op reads, so that equal equations
// compare equal whatever else a caller left in Params.
func canonicalParams(op Op, p Params) Params {
	if !op.Valid() {
		return Params{}
	}
	f := prims[op].params
	if f == 0 {
		return Params{}
	}
	var q Params
	if f&pAxis != 0 {
		q.Axis = p.Axis
	}
	if f&pK != 0 {
		q.K = p.K
	}
	if f&pPerm != 0 {
		q.Perm = cloneInts(p.Perm)
	}
	if f&pShape != 0 {
		q.Shape = p.Shape.Clone()
	}
	if f&pSlice != 0 {
		q.Start, q.Limit = cloneInts(p.Start), cloneInts(p.Limit)
	}
	if f&pDType != 0 {
		q.DType = p.DType
	}
	if f&pValue != 0 {
		q.Value = p.Value
	}
	return q
}
