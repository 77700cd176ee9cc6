package poot_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/pootlabs/poot"
	"pgregory.net/rapid"
)

type brandR struct{}

// genGraph records a random graph through mostly valid builder calls, in
// scopes "s.0", "s.1", ... so that edits and digests have structure to work
// on. It returns the finished graph or the builder's error.
func genGraph(t *rapid.T, constPrefix string) (*poot.Graph, error) {
	b := poot.NewBuilder[brandR](poot.Limits{})
	var pool []poot.Traced[brandR]
	nconst := 0
	newConst := func(tt poot.TensorType) poot.Traced[brandR] {
		nconst++
		h := b.Constant(fmt.Sprintf("%s%d", constPrefix, nconst), tt)
		pool = append(pool, h)
		return h
	}
	dims := func() []int {
		r := rapid.IntRange(1, 3).Draw(t, "rank")
		d := make([]int, r)
		for i := range d {
			d[i] = rapid.IntRange(1, 4).Draw(t, "dim")
		}
		return d
	}
	pick := func() poot.Traced[brandR] {
		if len(pool) == 0 {
			return newConst(poot.T(poot.F32, dims()...))
		}
		return pool[rapid.IntRange(0, len(pool)-1).Draw(t, "pick")]
	}
	pickF32 := func() poot.Traced[brandR] {
		for range 4 {
			h := pick()
			if b.DType(h) == poot.F32 {
				return h
			}
		}
		return newConst(poot.T(poot.F32, dims()...))
	}
	nscopes := rapid.IntRange(1, 3).Draw(t, "scopes")
	steps := rapid.IntRange(nscopes, 30).Draw(t, "steps")
	for s := range nscopes {
		b.Push(fmt.Sprintf("s.%d", s))
		for range steps / nscopes {
			x := pickF32()
			sh := b.Shape(x)
			var y poot.Traced[brandR]
			switch rapid.IntRange(0, 13).Draw(t, "action") {
			case 0:
				ops := []func(poot.Traced[brandR]) poot.Traced[brandR]{b.Neg, b.Exp, b.Tanh, b.Abs, b.Sin, b.Cos, b.Erf}
				y = ops[rapid.IntRange(0, len(ops)-1).Draw(t, "unary")](x)
			case 1:
				ops := []func(x, y poot.Traced[brandR]) poot.Traced[brandR]{b.Add, b.Sub, b.Mul, b.Max, b.Min}
				y = ops[rapid.IntRange(0, len(ops)-1).Draw(t, "binary")](x, b.FullLike(x, 0.5))
			case 2:
				y = b.ReduceSum(x, rapid.IntRange(0, len(sh)-1).Draw(t, "axis"))
			case 3:
				y = b.ReduceMax(x, -1)
			case 4:
				y = b.Reshape(x, int(sh.Size()))
			case 5:
				perm := rapid.Permutation(identity(len(sh))).Draw(t, "perm")
				y = b.Transpose(x, perm...)
			case 6:
				n := rapid.IntRange(1, 4).Draw(t, "n")
				w := newConst(poot.T(poot.F32, n, sh[len(sh)-1]))
				if len(sh) == 1 {
					x = b.Reshape(x, 1, sh[0])
				}
				y = b.MatMul(x, w)
			case 7:
				y = b.Select(b.Gt(x, b.FullLike(x, 0)), x, b.Neg(x))
			case 8:
				y = b.Concat(0, x, x)
			case 9:
				y = b.SliceAxis(x, -1, 0, max(1, sh[len(sh)-1]/2))
			case 10:
				y = b.Cast(b.Cast(x, poot.BF16), poot.F32)
			case 11:
				y = b.Broadcast(b.SliceAxis(x, 0, 0, 1), sh...)
			case 12, 13:
				// A composite over x, sometimes holding another.
				eps := rapid.SampledFrom([]float64{1e-6, 1e-5}).Draw(t, "eps")
				norm := func(v poot.Traced[brandR]) poot.Traced[brandR] {
					return b.Composite("norm", poot.Attrs{{Name: "epsilon", Value: eps}}, []poot.Traced[brandR]{v}, func() []poot.Traced[brandR] {
						ms := b.ReduceSum(b.Mul(v, v), -1)
						r := b.Rsqrt(b.Add(ms, b.FullLike(ms, eps)))
						return []poot.Traced[brandR]{b.Mul(v, b.Broadcast(r, b.Shape(v)...))}
					})[0]
				}
				if rapid.Bool().Draw(t, "nested") {
					y = b.Composite("block", poot.Attrs{{Name: "depth", Value: 2}}, []poot.Traced[brandR]{x}, func() []poot.Traced[brandR] {
						return []poot.Traced[brandR]{b.Tanh(norm(b.Exp(x)))}
					})[0]
				} else {
					y = norm(x)
				}
			}
			pool = append(pool, y)
		}
		b.Pop()
	}
	out := poot.Out(pool[len(pool)-1])
	if rapid.Bool().Draw(t, "witness") {
		out = out.WithWitness("w", pick())
	}
	return b.Finish(out)
}

func identity(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}

// TestRandomValidGraphs: mostly valid call sequences give valid graphs.
func TestRandomValidGraphs(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g, err := genGraph(t, "c")
		if err != nil {
			t.Fatalf("generator made an invalid call: %v", err)
		}
		if err := g.Validate(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestRandomCallsNeverPanic: arbitrary primitive applications with arbitrary
// parameters and handles (foreign and zero ones included) never panic and
// always end in a valid graph or a typed error.
func TestRandomCallsNeverPanic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := poot.NewBuilder[brandR](poot.Limits{MaxEquations: rapid.IntRange(0, 40).Draw(t, "maxEq")})
		other := poot.NewBuilder[brandR](poot.Limits{})
		foreign := other.Constant("f", poot.T(poot.F32, 2))
		pool := []poot.Traced[brandR]{foreign, {}}
		dt := rapid.SampledFrom(append(poot.DTypes(), poot.Invalid, poot.DType(99)))
		smallInts := rapid.SliceOfN(rapid.IntRange(-2, 5), 0, 4)
		for i := range rapid.IntRange(0, 40).Draw(t, "n") {
			switch rapid.IntRange(0, 5).Draw(t, "kind") {
			case 0:
				pool = append(pool, b.Constant(fmt.Sprintf("c%d", i), poot.TensorType{Shape: smallInts.Draw(t, "shape"), DType: dt.Draw(t, "dt")}))
			case 1:
				pool = append(pool, b.StateInput(fmt.Sprintf("s%d", i), poot.TensorType{Shape: smallInts.Draw(t, "shape"), DType: dt.Draw(t, "dt")}))
			case 2:
				b.Push(rapid.SampledFrom([]string{"a", "b", "", "x/y"}).Draw(t, "scope"))
			case 3:
				b.Pop()
			default:
				op := poot.Op(rapid.IntRange(0, poot.NumOps+1).Draw(t, "op"))
				p := poot.Params{
					Axis: rapid.IntRange(-2, 4).Draw(t, "axis"), K: rapid.IntRange(-1, 5).Draw(t, "k"),
					Perm: smallInts.Draw(t, "perm"), Shape: smallInts.Draw(t, "pshape"),
					Start: smallInts.Draw(t, "start"), Limit: smallInts.Draw(t, "limit"),
					DType: dt.Draw(t, "pdt"), Value: rapid.Float64().Draw(t, "value"),
				}
				var in []poot.Traced[brandR]
				for range rapid.IntRange(0, 4).Draw(t, "arity") {
					in = append(in, pool[rapid.IntRange(0, len(pool)-1).Draw(t, "operand")])
				}
				pool = append(pool, b.Apply(op, p, in...))
			}
		}
		var outs []poot.Traced[brandR]
		for range rapid.IntRange(0, 2).Draw(t, "outs") {
			outs = append(outs, pool[rapid.IntRange(0, len(pool)-1).Draw(t, "out")])
		}
		g, err := b.Finish(poot.Out(outs...))
		if err != nil {
			var pe *poot.Error
			if !errors.As(err, &pe) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		if err := g.Validate(); err != nil {
			t.Fatalf("Finish returned an invalid graph: %v", err)
		}
	})
}
