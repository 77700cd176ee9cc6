package interp_test

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/tensor"
)

type unit struct{}

var (
	nan  = float32(math.NaN())
	inf  = float32(math.Inf(1))
	ninf = float32(math.Inf(-1))
	negz = float32(math.Copysign(0, -1))
)

func f32(s poot.Shape, v ...float32) tensor.Tensor {
	t, err := tensor.FromF32(s, v)
	if err != nil {
		panic(err)
	}
	return t
}

func i32(s poot.Shape, v ...int32) tensor.Tensor {
	t, err := tensor.FromI32(s, v)
	if err != nil {
		panic(err)
	}
	return t
}

func bl(s poot.Shape, v ...bool) tensor.Tensor {
	t, err := tensor.FromBool(s, v)
	if err != nil {
		panic(err)
	}
	return t
}

// half builds an F16 or BF16 tensor from bit patterns.
func half(d poot.DType, s poot.Shape, bits ...uint16) tensor.Tensor {
	t, err := tensor.New(poot.TensorType{Shape: s, DType: d})
	if err != nil {
		panic(err)
	}
	for i, b := range bits {
		binary.LittleEndian.PutUint16(t.Data[2*i:], b)
	}
	return t
}

// q8Block is one Q8_0 block with scale 0.5 and quants 1..32, so element j
// decodes to 0.5·(j+1).
func q8Block() []byte {
	b := make([]byte, 34)
	binary.LittleEndian.PutUint16(b, 0x3800) // 0.5 in binary16
	for j := range 32 {
		b[2+j] = byte(j + 1)
	}
	return b
}

// eval1 evaluates one equation op[p] over constant operands.
func eval1(op poot.Op, p poot.Params, ins ...tensor.Tensor) (tensor.Tensor, error) {
	b := poot.NewBuilder[unit](poot.Limits{})
	consts := interp.ConstMap{}
	hs := make([]poot.Traced[unit], len(ins))
	for i, in := range ins {
		name := string(rune('a' + i))
		hs[i] = b.Constant(name, in.Type)
		consts[name] = in
	}
	g, err := b.Finish(poot.Out(b.Apply(op, p, hs...)))
	if err != nil {
		return tensor.Tensor{}, err
	}
	out, err := interp.Eval(g, consts, nil, nil)
	if err != nil {
		return tensor.Tensor{}, err
	}
	return out[0], nil
}

// same reports whether two tensors have equal types and equal elements,
// with every NaN equal to every NaN and -0 distinct from +0.
func same(a, b tensor.Tensor) bool {
	if !a.Type.Equal(b.Type) {
		return false
	}
	if a.Type.DType == poot.F32 {
		x, y := a.F32(), b.F32()
		for i := range x {
			if x[i] != x[i] && y[i] != y[i] {
				continue
			}
			if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
				return false
			}
		}
		return true
	}
	if a.Type.DType == poot.F16 {
		for i := 0; i < len(a.Data); i += 2 {
			x, y := binary.LittleEndian.Uint16(a.Data[i:]), binary.LittleEndian.Uint16(b.Data[i:])
			if x&0x7c00 == 0x7c00 && x&0x3ff != 0 && y&0x7c00 == 0x7c00 && y&0x3ff != 0 {
				continue
			}
			if x != y {
				return false
			}
		}
		return true
	}
	return string(a.Data) == string(b.Data)
}

func show(t tensor.Tensor) any {
	switch t.Type.DType {
	case poot.F32:
		return t.F32()
	case poot.I32:
		return t.I32()
	case poot.Bool:
		return t.Bool()
	}
	return t.Data
}

type primCase struct {
	name string
	op   poot.Op
	p    poot.Params
	in   []tensor.Tensor
	want tensor.Tensor
	err  error // a sentinel the evaluation must fail with
}

func ins(ts ...tensor.Tensor) []tensor.Tensor { return ts }

var s1 = poot.Shape{1}

func primCases() []primCase {
	q8, _ := tensor.View(poot.T(poot.Q8_0, 1, 32), q8Block())
	q8x2, _ := tensor.View(poot.T(poot.Q8_0, 2, 32), append(q8Block(), make([]byte, 34)...))
	ones := make([]float32, 32)
	halves := make([]float32, 32)
	// A block whose scale is exactly 0.5 (max |x| = 63.5), with two ties
	// that round away from zero: 0.25/0.5 gives 1 and -0.75/0.5 gives -2.
	q8In := make([]float32, 32)
	q8Out := make([]byte, 34)
	binary.LittleEndian.PutUint16(q8Out, 0x3800)
	for j := range 32 {
		q8In[j] = float32(j-16) / 2
		q8Out[2+j] = byte(int8(j - 16))
	}
	q8In[0], q8In[1], q8In[2], q8In[3] = 63.5, 0.25, -0.75, -63.5
	q8Out[2], q8Out[3], q8Out[4], q8Out[5] = 127, 1, 0xFE, 0x81
	for j := range ones {
		ones[j] = 1
		halves[j] = 0.5 * float32(j+1)
	}
	return []primCase{
		{"neg f32", poot.Neg, poot.Params{}, ins(f32(poot.Shape{3}, 1, -2, 0)), f32(poot.Shape{3}, -1, 2, negz), nil},
		{"neg i32 wraps", poot.Neg, poot.Params{}, ins(i32(poot.Shape{2}, 3, math.MinInt32)), i32(poot.Shape{2}, -3, math.MinInt32), nil},
		{"exp", poot.Exp, poot.Params{}, ins(f32(poot.Shape{5}, 0, 1, ninf, inf, nan)), f32(poot.Shape{5}, 1, float32(math.E), 0, inf, nan), nil},
		{"log", poot.Log, poot.Params{}, ins(f32(poot.Shape{4}, 1, 0, -1, float32(math.E))), f32(poot.Shape{4}, 0, ninf, nan, float32(math.Log(float64(float32(math.E))))), nil},
		{"sqrt", poot.Sqrt, poot.Params{}, ins(f32(poot.Shape{5}, 4, -1, 0, negz, inf)), f32(poot.Shape{5}, 2, nan, 0, negz, inf), nil},
		{"rsqrt", poot.Rsqrt, poot.Params{}, ins(f32(poot.Shape{4}, 4, 0, -1, inf)), f32(poot.Shape{4}, 0.5, inf, nan, 0), nil},
		{"tanh", poot.Tanh, poot.Params{}, ins(f32(poot.Shape{3}, 0, inf, ninf)), f32(poot.Shape{3}, 0, 1, -1), nil},
		{"erf", poot.Erf, poot.Params{}, ins(f32(poot.Shape{3}, 0, inf, 1)), f32(poot.Shape{3}, 0, 1, 0.8427007929497149), nil},
		{"sin", poot.Sin, poot.Params{}, ins(f32(poot.Shape{2}, 0, math.Pi/2)), f32(poot.Shape{2}, 0, 1), nil},
		{"cos", poot.Cos, poot.Params{}, ins(f32(poot.Shape{2}, 0, math.Pi)), f32(poot.Shape{2}, 1, -1), nil},
		{"abs f32", poot.Abs, poot.Params{}, ins(f32(poot.Shape{3}, -2, negz, nan)), f32(poot.Shape{3}, 2, 0, nan), nil},
		{"abs i32", poot.Abs, poot.Params{}, ins(i32(poot.Shape{2}, -3, math.MinInt32)), i32(poot.Shape{2}, 3, math.MinInt32), nil},
		{"not", poot.Not, poot.Params{}, ins(bl(poot.Shape{2}, true, false)), bl(poot.Shape{2}, false, true), nil},

		{"add", poot.Add, poot.Params{}, ins(f32(poot.Shape{3}, 1, inf, 0.1), f32(poot.Shape{3}, 3, ninf, 0.2)), f32(poot.Shape{3}, 4, nan, 0.1+float32(0.2)), nil},
		{"add i32 wraps", poot.Add, poot.Params{}, ins(i32(s1, math.MaxInt32), i32(s1, 1)), i32(s1, math.MinInt32), nil},
		{"sub", poot.Sub, poot.Params{}, ins(f32(poot.Shape{2}, 1, inf), f32(poot.Shape{2}, 3, inf)), f32(poot.Shape{2}, -2, nan), nil},
		{"mul i32 wraps", poot.Mul, poot.Params{}, ins(i32(poot.Shape{2}, 65536, -3), i32(poot.Shape{2}, 65536, 7)), i32(poot.Shape{2}, 0, -21), nil},
		{"mul f32", poot.Mul, poot.Params{}, ins(f32(poot.Shape{2}, 0, -2), f32(poot.Shape{2}, inf, 3)), f32(poot.Shape{2}, nan, -6), nil},
		{"div f32", poot.Div, poot.Params{}, ins(f32(poot.Shape{4}, 1, -1, 0, 7), f32(poot.Shape{4}, 0, 0, 0, 2)), f32(poot.Shape{4}, inf, ninf, nan, 3.5), nil},
		{"div i32 truncates", poot.Div, poot.Params{}, ins(i32(poot.Shape{3}, 7, -7, math.MinInt32), i32(poot.Shape{3}, -2, 2, -1)), i32(poot.Shape{3}, -3, -3, math.MinInt32), nil},
		{"div i32 by zero", poot.Div, poot.Params{}, ins(i32(poot.Shape{2}, 1, 2), i32(poot.Shape{2}, 1, 0)), tensor.Tensor{}, interp.ErrDivideByZero},
		{"max", poot.Max, poot.Params{}, ins(f32(poot.Shape{3}, 1, nan, 5), f32(poot.Shape{3}, 2, 0, nan)), f32(poot.Shape{3}, 2, nan, nan), nil},
		{"min", poot.Min, poot.Params{}, ins(f32(poot.Shape{3}, 1, nan, -5), f32(poot.Shape{3}, 2, 0, 1)), f32(poot.Shape{3}, 1, nan, -5), nil},
		{"max i32", poot.Max, poot.Params{}, ins(i32(poot.Shape{2}, -1, 4), i32(poot.Shape{2}, 2, 3)), i32(poot.Shape{2}, 2, 4), nil},
		{"pow", poot.Pow, poot.Params{}, ins(f32(poot.Shape{4}, 2, -8, 0, -2), f32(poot.Shape{4}, 3, 1.0/3, 0, 2)), f32(poot.Shape{4}, 8, nan, 1, 4), nil},
		{"eq nan", poot.Eq, poot.Params{}, ins(f32(poot.Shape{3}, nan, 1, 0), f32(poot.Shape{3}, nan, 1, negz)), bl(poot.Shape{3}, false, true, true), nil},
		{"ne nan", poot.Ne, poot.Params{}, ins(f32(poot.Shape{2}, nan, 1), f32(poot.Shape{2}, nan, 1)), bl(poot.Shape{2}, true, false), nil},
		{"eq bool", poot.Eq, poot.Params{}, ins(bl(poot.Shape{2}, true, false), bl(poot.Shape{2}, true, true)), bl(poot.Shape{2}, true, false), nil},
		{"lt", poot.Lt, poot.Params{}, ins(f32(poot.Shape{3}, 1, nan, 2), f32(poot.Shape{3}, 2, 1, 2)), bl(poot.Shape{3}, true, false, false), nil},
		{"le", poot.Le, poot.Params{}, ins(f32(poot.Shape{3}, 1, nan, 2), f32(poot.Shape{3}, 2, nan, 2)), bl(poot.Shape{3}, true, false, true), nil},
		{"gt i32", poot.Gt, poot.Params{}, ins(i32(poot.Shape{2}, 3, 1), i32(poot.Shape{2}, 2, 1)), bl(poot.Shape{2}, true, false), nil},
		{"ge", poot.Ge, poot.Params{}, ins(f32(poot.Shape{2}, 2, 1), f32(poot.Shape{2}, 2, nan)), bl(poot.Shape{2}, true, false), nil},
		{"and", poot.And, poot.Params{}, ins(bl(poot.Shape{3}, true, true, false), bl(poot.Shape{3}, true, false, false)), bl(poot.Shape{3}, true, false, false), nil},
		{"or", poot.Or, poot.Params{}, ins(bl(poot.Shape{3}, true, false, false), bl(poot.Shape{3}, false, true, false)), bl(poot.Shape{3}, true, true, false), nil},
		{"select f32", poot.Select, poot.Params{}, ins(bl(poot.Shape{2}, true, false), f32(poot.Shape{2}, 1, 2), f32(poot.Shape{2}, ninf, ninf)), f32(poot.Shape{2}, 1, ninf), nil},
		{"select f16", poot.Select, poot.Params{}, ins(bl(poot.Shape{2}, false, true), half(poot.F16, poot.Shape{2}, 1, 2), half(poot.F16, poot.Shape{2}, 3, 4)), half(poot.F16, poot.Shape{2}, 3, 2), nil},

		{"reduce_sum axis 0", poot.ReduceSum, poot.Params{Axis: 0}, ins(f32(poot.Shape{2, 3}, 1, 2, 3, 4, 5, 6)), f32(poot.Shape{1, 3}, 5, 7, 9), nil},
		{"reduce_sum axis 1", poot.ReduceSum, poot.Params{Axis: 1}, ins(f32(poot.Shape{2, 3}, 1, 2, 3, 4, 5, 6)), f32(poot.Shape{2, 1}, 6, 15), nil},
		{"reduce_sum size-1 axis", poot.ReduceSum, poot.Params{Axis: 0}, ins(f32(poot.Shape{1, 2}, 1, 2)), f32(poot.Shape{1, 2}, 1, 2), nil},
		{"reduce_sum float64", poot.ReduceSum, poot.Params{Axis: 0}, ins(f32(poot.Shape{3}, 1e8, 1, -1e8)), f32(s1, 1), nil},
		{"reduce_sum i32 wraps", poot.ReduceSum, poot.Params{Axis: 0}, ins(i32(poot.Shape{2}, math.MaxInt32, 2)), i32(s1, math.MinInt32+1), nil},
		{"reduce_max nan", poot.ReduceMax, poot.Params{Axis: 1}, ins(f32(poot.Shape{2, 3}, 1, nan, 3, ninf, ninf, ninf)), f32(poot.Shape{2, 1}, nan, ninf), nil},
		{"reduce_max i32", poot.ReduceMax, poot.Params{Axis: 0}, ins(i32(poot.Shape{3}, -4, 9, 2)), i32(s1, 9), nil},
		{"argmax ties", poot.ArgMax, poot.Params{Axis: 1}, ins(f32(poot.Shape{2, 3}, 3, 1, 3, 0, 2, 2)), i32(poot.Shape{2, 1}, 0, 1), nil},
		{"argmax nan", poot.ArgMax, poot.Params{Axis: 0}, ins(f32(poot.Shape{4}, 1, nan, 3, nan)), i32(s1, 1), nil},
		{"argmax axis 0", poot.ArgMax, poot.Params{Axis: 0}, ins(i32(poot.Shape{2, 2}, 1, 5, 3, 5)), i32(poot.Shape{1, 2}, 1, 0), nil},
		{"arg_top_k ties", poot.ArgTopK, poot.Params{K: 3}, ins(f32(poot.Shape{4}, 1, 3, 3, 2)), i32(poot.Shape{3}, 1, 2, 3), nil},
		{"arg_top_k nan", poot.ArgTopK, poot.Params{K: 2}, ins(f32(poot.Shape{3}, 1, nan, 5)), i32(poot.Shape{2}, 1, 2), nil},
		{"arg_top_k rows", poot.ArgTopK, poot.Params{K: 2}, ins(i32(poot.Shape{2, 3}, 0, 0, 0, 1, 9, 4)), i32(poot.Shape{2, 2}, 0, 1, 1, 2), nil},
		{"arg_top_k all", poot.ArgTopK, poot.Params{K: 3}, ins(f32(poot.Shape{3}, ninf, negz, 0)), i32(poot.Shape{3}, 1, 2, 0), nil},

		{"matmul", poot.MatMul, poot.Params{}, ins(f32(poot.Shape{1, 2}, 1, 2), f32(poot.Shape{2, 2}, 3, 4, 5, 6)), f32(poot.Shape{1, 2}, 11, 17), nil},
		{"matmul batched", poot.MatMul, poot.Params{}, ins(f32(poot.Shape{2, 1, 2}, 1, 2, 3, 4), f32(poot.Shape{2, 1, 2}, 1, 1, 0, 1)), f32(poot.Shape{2, 1, 1}, 3, 4), nil},
		{"matmul shared rank 3", poot.MatMul, poot.Params{}, ins(f32(poot.Shape{2, 1, 2}, 1, 2, 3, 4), f32(poot.Shape{1, 2}, 1, 1)), f32(poot.Shape{2, 1, 1}, 3, 7), nil},
		{"matmul float64", poot.MatMul, poot.Params{}, ins(f32(poot.Shape{1, 3}, 1e8, 1, -1e8), f32(poot.Shape{1, 3}, 1, 1, 1)), f32(poot.Shape{1, 1}, 1), nil},
		{"matmul f16", poot.MatMul, poot.Params{}, ins(f32(poot.Shape{1, 2}, 1, 2), half(poot.F16, poot.Shape{1, 2}, 0x3C00, 0xC000)), f32(poot.Shape{1, 1}, -3), nil},
		{"matmul bf16", poot.MatMul, poot.Params{}, ins(f32(poot.Shape{1, 2}, 1, 2), half(poot.BF16, poot.Shape{1, 2}, 0x3F80, 0xC000)), f32(poot.Shape{1, 1}, -3), nil},
		{"matmul q8_0", poot.MatMul, poot.Params{}, ins(f32(poot.Shape{1, 32}, ones...), q8), f32(poot.Shape{1, 1}, 264), nil},
		{"matmul inf", poot.MatMul, poot.Params{}, ins(f32(poot.Shape{1, 2}, inf, 0), f32(poot.Shape{1, 2}, 0, 1)), f32(poot.Shape{1, 1}, nan), nil},
		{"indexed_matmul", poot.IndexedMatMul, poot.Params{}, ins(f32(poot.Shape{2, 2}, 1, 2, 3, 4), f32(poot.Shape{2, 1, 2}, 1, 0, 0, 1), i32(poot.Shape{2}, 1, 0)), f32(poot.Shape{2, 1}, 2, 3), nil},
		{"indexed_matmul q8_0", poot.IndexedMatMul, poot.Params{}, ins(f32(poot.Shape{1, 32}, ones...), mustView(poot.T(poot.Q8_0, 2, 1, 32), q8x2.Data), i32(s1, 0)), f32(poot.Shape{1, 1}, 264), nil},
		{"indexed_matmul out of range", poot.IndexedMatMul, poot.Params{}, ins(f32(poot.Shape{1, 2}, 1, 2), f32(poot.Shape{2, 1, 2}, 1, 0, 0, 1), i32(s1, 2)), tensor.Tensor{}, interp.ErrIndexRange},

		{"reshape", poot.Reshape, poot.Params{Shape: poot.Shape{3, 2}}, ins(f32(poot.Shape{2, 3}, 1, 2, 3, 4, 5, 6)), f32(poot.Shape{3, 2}, 1, 2, 3, 4, 5, 6), nil},
		{"reshape to scalar", poot.Reshape, poot.Params{Shape: poot.Shape{}}, ins(i32(poot.Shape{1, 1}, 7)), i32(poot.Shape{}, 7), nil},
		{"broadcast rows", poot.Broadcast, poot.Params{Shape: poot.Shape{2, 3}}, ins(f32(poot.Shape{1, 3}, 1, 2, 3)), f32(poot.Shape{2, 3}, 1, 2, 3, 1, 2, 3), nil},
		{"broadcast columns", poot.Broadcast, poot.Params{Shape: poot.Shape{2, 3}}, ins(i32(poot.Shape{2, 1}, 1, 2)), i32(poot.Shape{2, 3}, 1, 1, 1, 2, 2, 2), nil},
		{"broadcast bool", poot.Broadcast, poot.Params{Shape: poot.Shape{2, 2}}, ins(bl(poot.Shape{1, 1}, true)), bl(poot.Shape{2, 2}, true, true, true, true), nil},
		{"broadcast f16", poot.Broadcast, poot.Params{Shape: poot.Shape{2, 2}}, ins(half(poot.F16, poot.Shape{1, 2}, 1, 2)), half(poot.F16, poot.Shape{2, 2}, 1, 2, 1, 2), nil},
		{"transpose", poot.Transpose, poot.Params{Perm: []int{1, 0}}, ins(f32(poot.Shape{2, 3}, 1, 2, 3, 4, 5, 6)), f32(poot.Shape{3, 2}, 1, 4, 2, 5, 3, 6), nil},
		{"transpose 3d", poot.Transpose, poot.Params{Perm: []int{2, 0, 1}}, ins(i32(poot.Shape{1, 2, 2}, 1, 2, 3, 4)), i32(poot.Shape{2, 1, 2}, 1, 3, 2, 4), nil},
		{"transpose bf16", poot.Transpose, poot.Params{Perm: []int{1, 0}}, ins(half(poot.BF16, poot.Shape{2, 2}, 1, 2, 3, 4)), half(poot.BF16, poot.Shape{2, 2}, 1, 3, 2, 4), nil},
		{"slice", poot.Slice, poot.Params{Start: []int{1, 1}, Limit: []int{3, 3}}, ins(f32(poot.Shape{3, 4}, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)), f32(poot.Shape{2, 2}, 5, 6, 9, 10), nil},
		{"slice packed rows", poot.Slice, poot.Params{Start: []int{0, 0}, Limit: []int{1, 32}}, ins(q8x2), q8, nil},
		{"concat axis 1", poot.Concat, poot.Params{Axis: 1}, ins(f32(poot.Shape{2, 1}, 1, 2), f32(poot.Shape{2, 2}, 3, 4, 5, 6)), f32(poot.Shape{2, 3}, 1, 3, 4, 2, 5, 6), nil},
		{"concat axis 0 bool", poot.Concat, poot.Params{Axis: 0}, ins(bl(s1, true), bl(s1, false), bl(s1, true)), bl(poot.Shape{3}, true, false, true), nil},
		{"concat packed", poot.Concat, poot.Params{Axis: 0}, ins(q8, mustView(poot.T(poot.Q8_0, 1, 32), make([]byte, 34))), q8x2, nil},
		{"gather", poot.Gather, poot.Params{}, ins(f32(poot.Shape{3, 2}, 1, 2, 3, 4, 5, 6), i32(poot.Shape{1, 2}, 2, 0)), f32(poot.Shape{1, 2, 2}, 5, 6, 1, 2), nil},
		{"gather scalar index", poot.Gather, poot.Params{}, ins(i32(poot.Shape{3}, 7, 8, 9), i32(poot.Shape{}, 2)), i32(poot.Shape{}, 9), nil},
		{"gather packed", poot.Gather, poot.Params{}, ins(q8x2, i32(s1, 0)), q8, nil},
		{"gather past end", poot.Gather, poot.Params{}, ins(f32(poot.Shape{3, 2}, 1, 2, 3, 4, 5, 6), i32(s1, 3)), tensor.Tensor{}, interp.ErrIndexRange},
		{"gather negative", poot.Gather, poot.Params{}, ins(f32(poot.Shape{3, 2}, 1, 2, 3, 4, 5, 6), i32(s1, -1)), tensor.Tensor{}, interp.ErrIndexRange},
		{"write_rows last wins", poot.WriteRows, poot.Params{}, ins(f32(poot.Shape{3, 2}, 0, 0, 0, 0, 0, 0), i32(poot.Shape{3}, 2, 0, 2), f32(poot.Shape{3, 2}, 1, 2, 3, 4, 5, 6)), f32(poot.Shape{3, 2}, 3, 4, 0, 0, 5, 6), nil},
		{"write_rows past end", poot.WriteRows, poot.Params{}, ins(f32(poot.Shape{2, 1}, 0, 0), i32(s1, 2), f32(poot.Shape{1, 1}, 1)), tensor.Tensor{}, interp.ErrIndexRange},
		{"iota axis 1", poot.Iota, poot.Params{Shape: poot.Shape{2, 3}, Axis: 1, DType: poot.F32}, nil, f32(poot.Shape{2, 3}, 0, 1, 2, 0, 1, 2), nil},
		{"iota axis 0", poot.Iota, poot.Params{Shape: poot.Shape{2, 2}, Axis: 0, DType: poot.I32}, nil, i32(poot.Shape{2, 2}, 0, 0, 1, 1), nil},
		{"literal nan", poot.Literal, poot.Params{Shape: poot.Shape{2}, DType: poot.F32, Value: math.NaN()}, nil, f32(poot.Shape{2}, nan, nan), nil},
		{"literal -inf", poot.Literal, poot.Params{Shape: poot.Shape{}, DType: poot.F32, Value: math.Inf(-1)}, nil, f32(poot.Shape{}, ninf), nil},
		{"literal rounds", poot.Literal, poot.Params{Shape: s1, DType: poot.F32, Value: 0.1}, nil, f32(s1, 0.1), nil},
		{"literal i32", poot.Literal, poot.Params{Shape: s1, DType: poot.I32, Value: -7}, nil, i32(s1, -7), nil},
		{"literal bool", poot.Literal, poot.Params{Shape: s1, DType: poot.Bool, Value: 1}, nil, bl(s1, true), nil},

		{"cast f32 to f16 ties even", poot.Cast, poot.Params{DType: poot.F16}, ins(f32(poot.Shape{5}, 1+1.0/2048, 1+3.0/2048, 65520, nan, 1e-8)), half(poot.F16, poot.Shape{5}, 0x3C00, 0x3C02, 0x7C00, 0x7E00, 0), nil},
		{"cast f32 to bf16 ties even", poot.Cast, poot.Params{DType: poot.BF16}, ins(f32(poot.Shape{3}, 1+1.0/256, 1+3.0/256, inf)), half(poot.BF16, poot.Shape{3}, 0x3F80, 0x3F82, 0x7F80), nil},
		{"cast f16 to f32", poot.Cast, poot.Params{DType: poot.F32}, ins(half(poot.F16, poot.Shape{4}, 0x7C00, 0x0001, 0xFC00, 0x3555)), f32(poot.Shape{4}, inf, 1.0/16777216, ninf, 0.333251953125), nil},
		{"cast bf16 to f16", poot.Cast, poot.Params{DType: poot.F16}, ins(half(poot.BF16, poot.Shape{2}, 0x3F80, 0x4780)), half(poot.F16, poot.Shape{2}, 0x3C00, 0x7C00), nil},
		{"cast f32 to i32", poot.Cast, poot.Params{DType: poot.I32}, ins(f32(poot.Shape{7}, 2.7, -2.7, nan, 3e9, -3e9, inf, negz)), i32(poot.Shape{7}, 2, -2, 0, math.MaxInt32, math.MinInt32, math.MaxInt32, 0), nil},
		{"cast f16 to i32", poot.Cast, poot.Params{DType: poot.I32}, ins(half(poot.F16, poot.Shape{2}, 0x7C00, 0xBE00)), i32(poot.Shape{2}, math.MaxInt32, -1), nil},
		{"cast i32 to f32 ties even", poot.Cast, poot.Params{DType: poot.F32}, ins(i32(poot.Shape{2}, 16777217, 16777219)), f32(poot.Shape{2}, 16777216, 16777220), nil},
		{"cast i32 to bf16 rounds once", poot.Cast, poot.Params{DType: poot.BF16}, ins(i32(poot.Shape{3}, 16842753, -3, 257)), half(poot.BF16, poot.Shape{3}, 0x4B81, 0xC040, 0x4380), nil},
		{"cast i32 to f16", poot.Cast, poot.Params{DType: poot.F16}, ins(i32(poot.Shape{3}, 2049, 65520, -70000)), half(poot.F16, poot.Shape{3}, 0x6800, 0x7C00, 0xFC00), nil},
		{"cast bool to f32", poot.Cast, poot.Params{DType: poot.F32}, ins(bl(poot.Shape{2}, true, false)), f32(poot.Shape{2}, 1, 0), nil},
		{"cast f32 to bool", poot.Cast, poot.Params{DType: poot.Bool}, ins(f32(poot.Shape{4}, 0, negz, nan, 2)), bl(poot.Shape{4}, false, false, true, true), nil},
		{"cast i32 to bool", poot.Cast, poot.Params{DType: poot.Bool}, ins(i32(poot.Shape{2}, 0, -5)), bl(poot.Shape{2}, false, true), nil},
		{"cast q8_0 to f32", poot.Cast, poot.Params{DType: poot.F32}, ins(q8), f32(poot.Shape{1, 32}, halves...), nil},
		{"cast f32 to q8_0", poot.Cast, poot.Params{DType: poot.Q8_0}, ins(f32(poot.Shape{2, 32}, append(q8In, make([]float32, 32)...)...)), mustView(poot.T(poot.Q8_0, 2, 32), append(q8Out, make([]byte, 34)...)), nil},
		{"write q8_0 rows", poot.WriteRows, poot.Params{}, ins(mustView(poot.T(poot.Q8_0, 2, 32), make([]byte, 68)), i32(s1, 1), q8), mustView(poot.T(poot.Q8_0, 2, 32), append(make([]byte, 34), q8Block()...)), nil},
		{"cast f16 to f16 keeps nan payload", poot.Cast, poot.Params{DType: poot.F16}, ins(half(poot.F16, s1, 0x7C01)), half(poot.F16, s1, 0x7C01), nil},
	}
}

func mustView(t poot.TensorType, b []byte) tensor.Tensor {
	v, err := tensor.View(t, b)
	if err != nil {
		panic(err)
	}
	return v
}

// TestPrimitives checks every primitive against hand-computed results,
// edge cases included.
func TestPrimitives(t *testing.T) {
	covered := map[poot.Op]bool{}
	for _, c := range primCases() {
		covered[c.op] = true
		t.Run(c.name, func(t *testing.T) {
			got, err := eval1(c.op, c.p, c.in...)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("error %v, want %v", err, c.err)
				}
				var ie *interp.Error
				if !errors.As(err, &ie) || ie.Eqn != 0 || ie.Op != c.op {
					t.Fatalf("error %#v does not name equation 0 (%v)", err, c.op)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !same(got, c.want) {
				t.Fatalf("got %v %v, want %v %v", got.Type, show(got), c.want.Type, show(c.want))
			}
		})
	}
	for _, op := range poot.Ops() {
		if !covered[op] {
			t.Errorf("no table case for %v", op)
		}
	}
}
