package interp

import (
	"fmt"
	"math"

	"github.com/pootlabs/poot"
)

// F32 unary functions. Transcendentals are evaluated in float64 and rounded
// once to float32.
var unaryF32 = map[poot.Op]func(float32) float32{
	poot.Neg:   func(x float32) float32 { return -x },
	poot.Exp:   func(x float32) float32 { return float32(math.Exp(float64(x))) },
	poot.Log:   func(x float32) float32 { return float32(math.Log(float64(x))) },
	poot.Sqrt:  func(x float32) float32 { return float32(math.Sqrt(float64(x))) },
	poot.Rsqrt: func(x float32) float32 { return float32(1 / math.Sqrt(float64(x))) },
	poot.Tanh:  func(x float32) float32 { return float32(math.Tanh(float64(x))) },
	poot.Erf:   func(x float32) float32 { return float32(math.Erf(float64(x))) },
	poot.Sin:   func(x float32) float32 { return float32(math.Sin(float64(x))) },
	poot.Cos:   func(x float32) float32 { return float32(math.Cos(float64(x))) },
	poot.Abs:   func(x float32) float32 { return float32(math.Abs(float64(x))) },
}

var unaryI32 = map[poot.Op]func(int32) int32{
	poot.Neg: func(x int32) int32 { return -x },
	poot.Abs: func(x int32) int32 {
		if x < 0 {
			return -x // wraps for math.MinInt32
		}
		return x
	},
}

var binaryF32 = map[poot.Op]func(x, y float32) float32{
	poot.Add: func(x, y float32) float32 { return x + y },
	poot.Sub: func(x, y float32) float32 { return x - y },
	poot.Mul: func(x, y float32) float32 { return x * y },
	poot.Div: func(x, y float32) float32 { return x / y },
	poot.Max: func(x, y float32) float32 { return max(x, y) },
	poot.Min: func(x, y float32) float32 { return min(x, y) },
	poot.Pow: func(x, y float32) float32 { return float32(math.Pow(float64(x), float64(y))) },
}

var binaryI32 = map[poot.Op]func(x, y int32) int32{
	poot.Add: func(x, y int32) int32 { return x + y },
	poot.Sub: func(x, y int32) int32 { return x - y },
	poot.Mul: func(x, y int32) int32 { return x * y },
	poot.Max: func(x, y int32) int32 { return max(x, y) },
	poot.Min: func(x, y int32) int32 { return min(x, y) },
}

func compare[T int32 | float32](op poot.Op) func(x, y T) bool {
	switch op {
	case poot.Eq:
		return func(x, y T) bool { return x == y }
	case poot.Ne:
		return func(x, y T) bool { return x != y }
	case poot.Lt:
		return func(x, y T) bool { return x < y }
	case poot.Le:
		return func(x, y T) bool { return x <= y }
	case poot.Gt:
		return func(x, y T) bool { return x > y }
	case poot.Ge:
		return func(x, y T) bool { return x >= y }
	}
	return nil
}

func b2u(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func init() {
	for op := range unaryF32 {
		rules[op] = ruleUnary
	}
	rules[poot.Not] = ruleUnary
	for _, op := range []poot.Op{poot.Add, poot.Sub, poot.Mul, poot.Div, poot.Max, poot.Min, poot.Pow} {
		rules[op] = ruleBinary
	}
	for _, op := range []poot.Op{poot.Eq, poot.Ne, poot.Lt, poot.Le, poot.Gt, poot.Ge} {
		rules[op] = ruleCompare
	}
	rules[poot.And] = ruleLogic
	rules[poot.Or] = ruleLogic
	rules[poot.Select] = ruleSelect
}

func ruleUnary(c *compiler, e *poot.Eqn) (func() error, error) {
	x, out := c.in(e, 0), c.out(e)
	switch x.t.DType {
	case poot.F32:
		fn := unaryF32[e.Op]
		return func() error {
			for i, v := range x.f {
				out.f[i] = fn(v)
			}
			return nil
		}, nil
	case poot.I32:
		if fn := unaryI32[e.Op]; fn != nil {
			return func() error {
				for i, v := range x.i {
					out.i[i] = fn(v)
				}
				return nil
			}, nil
		}
	case poot.Bool:
		if e.Op == poot.Not {
			return func() error {
				for i, v := range x.b {
					out.b[i] = b2u(v == 0)
				}
				return nil
			}, nil
		}
	}
	return nil, fmt.Errorf("%w: %v of %v", ErrUnsupported, e.Op, x.t)
}

func ruleBinary(c *compiler, e *poot.Eqn) (func() error, error) {
	x, y, out := c.in(e, 0), c.in(e, 1), c.out(e)
	switch x.t.DType {
	case poot.F32:
		fn := binaryF32[e.Op]
		return func() error {
			for i, v := range x.f {
				out.f[i] = fn(v, y.f[i])
			}
			return nil
		}, nil
	case poot.I32:
		if e.Op == poot.Div {
			return func() error {
				for i, v := range x.i {
					d := y.i[i]
					if d == 0 {
						return fmt.Errorf("%w: element %d is %d / 0", ErrDivideByZero, i, v)
					}
					out.i[i] = v / d // truncates; MinInt32 / -1 wraps to MinInt32
				}
				return nil
			}, nil
		}
		if fn := binaryI32[e.Op]; fn != nil {
			return func() error {
				for i, v := range x.i {
					out.i[i] = fn(v, y.i[i])
				}
				return nil
			}, nil
		}
	}
	return nil, fmt.Errorf("%w: %v of %v", ErrUnsupported, e.Op, x.t)
}

func ruleCompare(c *compiler, e *poot.Eqn) (func() error, error) {
	x, y, out := c.in(e, 0), c.in(e, 1), c.out(e)
	switch x.t.DType {
	case poot.F32:
		fn := compare[float32](e.Op)
		return func() error {
			for i, v := range x.f {
				out.b[i] = b2u(fn(v, y.f[i]))
			}
			return nil
		}, nil
	case poot.I32:
		fn := compare[int32](e.Op)
		return func() error {
			for i, v := range x.i {
				out.b[i] = b2u(fn(v, y.i[i]))
			}
			return nil
		}, nil
	case poot.Bool:
		ne := e.Op == poot.Ne
		if e.Op == poot.Eq || ne {
			return func() error {
				for i, v := range x.b {
					out.b[i] = b2u(((v != 0) == (y.b[i] != 0)) != ne)
				}
				return nil
			}, nil
		}
	}
	return nil, fmt.Errorf("%w: %v of %v", ErrUnsupported, e.Op, x.t)
}

func ruleLogic(c *compiler, e *poot.Eqn) (func() error, error) {
	x, y, out := c.in(e, 0), c.in(e, 1), c.out(e)
	and := e.Op == poot.And
	return func() error {
		for i, v := range x.b {
			a, b := v != 0, y.b[i] != 0
			if and {
				out.b[i] = b2u(a && b)
			} else {
				out.b[i] = b2u(a || b)
			}
		}
		return nil
	}, nil
}

func ruleSelect(c *compiler, e *poot.Eqn) (func() error, error) {
	cond, t, f, out := c.in(e, 0), c.in(e, 1), c.in(e, 2), c.out(e)
	switch storageOf(t.t.DType) {
	case sF32:
		return func() error {
			for i, k := range cond.b {
				if k != 0 {
					out.f[i] = t.f[i]
				} else {
					out.f[i] = f.f[i]
				}
			}
			return nil
		}, nil
	case sI32:
		return func() error {
			for i, k := range cond.b {
				if k != 0 {
					out.i[i] = t.i[i]
				} else {
					out.i[i] = f.i[i]
				}
			}
			return nil
		}, nil
	}
	w := t.t.DType.BlockBytes()
	return func() error {
		for i, k := range cond.b {
			src := f.b
			if k != 0 {
				src = t.b
			}
			copy(out.b[i*w:(i+1)*w], src[i*w:(i+1)*w])
		}
		return nil
	}, nil
}
