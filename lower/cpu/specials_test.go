package cpu_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/lower"
	"github.com/pootlabs/poot/lower/cpu"
	"github.com/pootlabs/poot/tensor"
	"github.com/x448/float16"
)

// specialValues are the inputs every elementwise primitive is pinned on:
// signed zeros, infinities, NaN, and a few finite values around them
// (one that overflows exp, one that underflows).
var specialValues = []float32{
	0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
	1, -1, 0.5, -2.5, 1e-30, 100, -100,
}

// wantUnary is the documented meaning of each unary F32 primitive
// (prims.go): evaluated in float64, rounded once.
func wantUnary(op poot.Op, x float32) float32 {
	v := float64(x)
	switch op {
	case poot.Neg:
		return -x
	case poot.Exp:
		return float32(math.Exp(v))
	case poot.Log:
		return float32(math.Log(v))
	case poot.Sqrt:
		return float32(math.Sqrt(v))
	case poot.Rsqrt:
		return float32(1 / math.Sqrt(v))
	case poot.Tanh:
		return float32(math.Tanh(v))
	case poot.Erf:
		return float32(math.Erf(v))
	case poot.Sin:
		return float32(math.Sin(v))
	case poot.Cos:
		return float32(math.Cos(v))
	case poot.Abs:
		return float32(math.Abs(v))
	}
	panic("not unary: " + op.String())
}

// wantBinary is the documented meaning of each binary F32 primitive.
func wantBinary(op poot.Op, x, y float32) float32 {
	switch op {
	case poot.Add:
		return x + y
	case poot.Sub:
		return x - y
	case poot.Mul:
		return x * y
	case poot.Div:
		return x / y
	case poot.Max:
		return max(x, y)
	case poot.Min:
		return min(x, y)
	case poot.Pow:
		return float32(math.Pow(float64(x), float64(y)))
	}
	panic("not binary: " + op.String())
}

// wantCompare is the documented meaning of each comparison on F32.
func wantCompare(op poot.Op, x, y float32) bool {
	switch op {
	case poot.Eq:
		return x == y
	case poot.Ne:
		return x != y
	case poot.Lt:
		return x < y
	case poot.Le:
		return x <= y
	case poot.Gt:
		return x > y
	case poot.Ge:
		return x >= y
	}
	panic("not a comparison: " + op.String())
}

// specialInterpreters are the interpreters pinned: the oracle, and the cpu
// backend exact and fast, with its elementwise programs and without.
func specialInterpreters() map[string]interp.Interpreter {
	off := lower.Options{Disabled: []string{"elementwise", "row_fusion", "reduce_fusion"}}
	return map[string]interp.Interpreter{
		"oracle":         interp.Oracle{},
		"cpu_exact":      cpu.Interpreter{Exact: true, Threads: 1},
		"cpu_fast":       cpu.Interpreter{Threads: 1},
		"cpu_exact_gen":  cpu.Interpreter{Exact: true, Threads: 1, Options: off},
		"cpu_fast_gen":   cpu.Interpreter{Threads: 1, Options: off},
		"cpu_fast_wide":  cpu.Interpreter{Threads: 2},
		"cpu_exact_wide": cpu.Interpreter{Exact: true, Threads: 2},
	}
}

// sameSpecial reports whether got is want: NaN for NaN, the same infinity,
// a zero of the same sign; other finite values equal when exact, and within
// a few ulps otherwise (a fast interpreter's transcendentals).
func sameSpecial(got, want float32, exact bool) bool {
	g, w := float64(got), float64(want)
	switch {
	case math.IsNaN(w) || math.IsNaN(g):
		return math.IsNaN(w) && math.IsNaN(g)
	case math.IsInf(w, 0) || math.IsInf(g, 0) || w == 0 || g == 0:
		return g == w && math.Signbit(g) == math.Signbit(w)
	case exact:
		return g == w
	}
	return math.Abs(g-w) <= 1e-6*math.Abs(w)
}

// runSpecial builds one graph with build, runs it under in and returns its
// single output.
func runSpecial(t *testing.T, in interp.Interpreter, consts interp.ConstMap, build func(b *poot.Builder[struct{}]) poot.Traced[struct{}]) tensor.Tensor {
	t.Helper()
	b := poot.NewBuilder[struct{}](poot.Limits{})
	g, err := b.Finish(poot.Out(build(b)))
	if err != nil {
		t.Fatal(err)
	}
	exe, err := in.Compile(g, consts)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exe.Run(interp.Slots{}, &interp.State{})
	if err != nil {
		t.Fatal(err)
	}
	return out[0]
}

func f32Const(t *testing.T, v []float32) tensor.Tensor {
	t.Helper()
	x, err := tensor.FromF32(poot.Shape{len(v)}, v)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// pairs returns every ordered pair of special values as two vectors.
func pairs() (xs, ys []float32) {
	for _, x := range specialValues {
		for _, y := range specialValues {
			xs, ys = append(xs, x), append(ys, y)
		}
	}
	return xs, ys
}

// TestSpecialValuesEveryInterpreter pins -0, +0, ±Inf and NaN (and their
// neighbours) through every elementwise F32 primitive, the F32 reductions
// and Select on every interpreter, against the meaning prims.go documents.
func TestSpecialValuesEveryInterpreter(t *testing.T) {
	xs, ys := pairs()
	n := len(xs)
	ft := poot.TensorType{Shape: poot.Shape{n}, DType: poot.F32}
	u := len(specialValues)
	ut := poot.TensorType{Shape: poot.Shape{u}, DType: poot.F32}
	for name, in := range specialInterpreters() {
		exact := name == "oracle" || name == "cpu_exact" || name == "cpu_exact_gen" || name == "cpu_exact_wide"
		t.Run(name, func(t *testing.T) {
			for _, op := range []poot.Op{poot.Neg, poot.Exp, poot.Log, poot.Sqrt, poot.Rsqrt, poot.Tanh, poot.Erf, poot.Sin, poot.Cos, poot.Abs} {
				got := runSpecial(t, in, interp.ConstMap{"x": f32Const(t, specialValues)}, func(b *poot.Builder[struct{}]) poot.Traced[struct{}] {
					return b.Apply(op, poot.Params{}, b.Constant("x", ut))
				}).F32()
				for i, x := range specialValues {
					if w := wantUnary(op, x); !sameSpecial(got[i], w, exact) {
						t.Errorf("%s(%v) = %v, want %v", op, x, got[i], w)
					}
				}
			}
			for _, op := range []poot.Op{poot.Add, poot.Sub, poot.Mul, poot.Div, poot.Max, poot.Min, poot.Pow} {
				consts := interp.ConstMap{"x": f32Const(t, xs), "y": f32Const(t, ys)}
				got := runSpecial(t, in, consts, func(b *poot.Builder[struct{}]) poot.Traced[struct{}] {
					return b.Apply(op, poot.Params{}, b.Constant("x", ft), b.Constant("y", ft))
				}).F32()
				for i := range xs {
					if w := wantBinary(op, xs[i], ys[i]); !sameSpecial(got[i], w, exact) {
						t.Errorf("%s(%v, %v) = %v, want %v", op, xs[i], ys[i], got[i], w)
					}
				}
			}
			for _, op := range []poot.Op{poot.Eq, poot.Ne, poot.Lt, poot.Le, poot.Gt, poot.Ge} {
				consts := interp.ConstMap{"x": f32Const(t, xs), "y": f32Const(t, ys)}
				got := runSpecial(t, in, consts, func(b *poot.Builder[struct{}]) poot.Traced[struct{}] {
					return b.Apply(op, poot.Params{}, b.Constant("x", ft), b.Constant("y", ft))
				}).Bool()
				for i := range xs {
					if w := wantCompare(op, xs[i], ys[i]); got[i] != w {
						t.Errorf("%s(%v, %v) = %v, want %v", op, xs[i], ys[i], got[i], w)
					}
				}
			}
			// Select passes a special value through untouched.
			consts := interp.ConstMap{"x": f32Const(t, xs), "y": f32Const(t, ys)}
			got := runSpecial(t, in, consts, func(b *poot.Builder[struct{}]) poot.Traced[struct{}] {
				x, y := b.Constant("x", ft), b.Constant("y", ft)
				return b.Select(b.Lt(x, y), x, y)
			}).F32()
			for i := range xs {
				w := ys[i]
				if xs[i] < ys[i] {
					w = xs[i]
				}
				if !sameSpecial(got[i], w, true) {
					t.Errorf("select(%v < %v) = %v, want %v", xs[i], ys[i], got[i], w)
				}
			}
			// A round trip through F16 keeps zeros' signs, infinities and
			// NaN, and rounds the rest as IEEE binary16 does.
			got = runSpecial(t, in, interp.ConstMap{"x": f32Const(t, specialValues)}, func(b *poot.Builder[struct{}]) poot.Traced[struct{}] {
				return b.Cast(b.Cast(b.Constant("x", ut), poot.F16), poot.F32)
			}).F32()
			for i, x := range specialValues {
				if w := float16.Fromfloat32(x).Float32(); !sameSpecial(got[i], w, true) {
					t.Errorf("cast f16 round trip of %v = %v, want %v", x, got[i], w)
				}
			}
			testSpecialReductions(t, in)
		})
	}
}

// testSpecialReductions pins ReduceMax (Max folded: +0 above -0, NaN
// propagates) and ReduceSum (from +0) over every pair of special values.
func testSpecialReductions(t *testing.T, in interp.Interpreter) {
	t.Helper()
	xs, ys := pairs()
	n := len(xs)
	both := make([]float32, 0, 2*n)
	for i := range xs {
		both = append(both, xs[i], ys[i])
	}
	mt := poot.TensorType{Shape: poot.Shape{n, 2}, DType: poot.F32}
	x, err := tensor.FromF32(mt.Shape, both)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []poot.Op{poot.ReduceMax, poot.ReduceSum} {
		got := runSpecial(t, in, interp.ConstMap{"x": x}, func(b *poot.Builder[struct{}]) poot.Traced[struct{}] {
			return b.Apply(op, poot.Params{Axis: 1}, b.Constant("x", mt))
		}).F32()
		for i := range xs {
			w := max(xs[i], ys[i])
			if op == poot.ReduceSum {
				w = float32(0 + float64(xs[i]) + float64(ys[i])) // sums start from +0
			}
			if !sameSpecial(got[i], w, true) {
				t.Errorf("%s([%v %v]) = %v, want %v", op, xs[i], ys[i], got[i], w)
			}
		}
	}
}

func ExampleInterpreter_specials() {
	b := poot.NewBuilder[struct{}](poot.Limits{})
	x := b.Constant("x", poot.TensorType{Shape: poot.Shape{2}, DType: poot.F32})
	g, _ := b.Finish(poot.Out(b.Rsqrt(x)))
	v, _ := tensor.FromF32(poot.Shape{2}, []float32{0, float32(math.Copysign(0, -1))})
	exe, _ := cpu.Interpreter{}.Compile(g, interp.ConstMap{"x": v})
	out, _ := exe.Run(interp.Slots{}, &interp.State{})
	fmt.Println(out[0].F32())
	// Output: [+Inf -Inf]
}
