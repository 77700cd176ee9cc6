package interp

import (
	"fmt"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/internal/semantics"
)

func b2u(b bool) byte { return semantics.Bool(b) }

// unaryOps are the unary primitives; all are defined on F32.
var unaryOps = []poot.Op{poot.Neg, poot.Exp, poot.Log, poot.Sqrt, poot.Rsqrt, poot.Tanh, poot.Erf, poot.Sin, poot.Cos, poot.Abs}

func init() {
	for _, op := range unaryOps {
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
		op := e.Op
		return func() error {
			for i, v := range x.f {
				out.f[i] = semantics.UnaryF32(op, v)
			}
			return nil
		}, nil
	case poot.I32:
		if op := e.Op; op == poot.Neg || op == poot.Abs {
			return func() error {
				for i, v := range x.i {
					out.i[i] = semantics.UnaryI32(op, v)
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
		op := e.Op
		return func() error {
			for i, v := range x.f {
				out.f[i] = semantics.BinaryF32(op, v, y.f[i])
			}
			return nil
		}, nil
	case poot.I32:
		if op := e.Op; semantics.HasBinaryI32(op) {
			return func() error {
				for i, v := range x.i {
					r, ok := semantics.BinaryI32(op, v, y.i[i])
					if !ok {
						return fmt.Errorf("%w: element %d is %d / 0", ErrDivideByZero, i, v)
					}
					out.i[i] = r
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
		op := e.Op
		return func() error {
			for i, v := range x.f {
				out.b[i] = b2u(semantics.Compare(op, v, y.f[i]))
			}
			return nil
		}, nil
	case poot.I32:
		op := e.Op
		return func() error {
			for i, v := range x.i {
				out.b[i] = b2u(semantics.Compare(op, v, y.i[i]))
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
	op := e.Op
	return func() error { semantics.Logic(op, out.b, x.b, y.b); return nil }, nil
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
	return func() error { semantics.SelectBytes(out.b, cond.b, t.b, f.b, w); return nil }, nil
}
