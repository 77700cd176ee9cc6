package hostexec

import (
	"fmt"

	"github.com/pootlabs/poot"
)

// elementwise applies the scalar meaning s to every element. A unary
// primitive's functions get x twice.
func elementwise(e *Eqn, s poot.Scalar) (func() error, error) {
	x, y, out := e.Args[0], e.Args[0], e.Res
	if len(e.Args) > 1 {
		y = e.Args[1]
	}
	n := size(e.Out)
	switch d := e.In[0].DType; {
	case d == poot.F32 && s.F32 != nil:
		f := s.F32
		return func() error {
			xs, ys, o := x.F32()[:n], y.F32()[:n], out.F32()[:n]
			for i, v := range xs {
				o[i] = f(v, ys[i])
			}
			return nil
		}, nil
	case d == poot.F32 && s.CompareF32 != nil:
		f := s.CompareF32
		return func() error {
			xs, ys, o := x.F32()[:n], y.F32()[:n], out.Bytes()[:n]
			for i, v := range xs {
				o[i] = Bool(f(v, ys[i]))
			}
			return nil
		}, nil
	case d == poot.I32 && s.I32 != nil:
		f, nonzero := s.I32, s.NonzeroI32 && len(e.Args) > 1
		return func() error {
			xs, ys, o := x.I32()[:n], y.I32()[:n], out.I32()[:n]
			for i, v := range xs {
				if nonzero && ys[i] == 0 {
					return fmt.Errorf("%w: element %d is %d / 0", ErrDivideByZero, i, v)
				}
				o[i] = f(v, ys[i])
			}
			return nil
		}, nil
	case d == poot.I32 && s.CompareI32 != nil:
		f := s.CompareI32
		return func() error {
			xs, ys, o := x.I32()[:n], y.I32()[:n], out.Bytes()[:n]
			for i, v := range xs {
				o[i] = Bool(f(v, ys[i]))
			}
			return nil
		}, nil
	case d == poot.Bool && s.Bool != nil:
		f := s.Bool
		return func() error {
			xs, ys, o := x.Bytes()[:n], y.Bytes()[:n], out.Bytes()[:n]
			for i, v := range xs {
				o[i] = Bool(f(v != 0, ys[i] != 0))
			}
			return nil
		}, nil
	}
	return nil, fmt.Errorf("%w: %v of %v", ErrUnsupported, e.Op, e.In[0])
}

// ruleSelect copies each element from the true or the false operand, a
// word at a time for 4-byte dtypes and byte by byte otherwise.
func ruleSelect(e *Eqn) (func() error, error) {
	cond, t, f, out := e.Args[0], e.Args[1], e.Args[2], e.Res
	n := size(e.Out)
	if w := e.In[1].DType.BlockBytes(); w != 4 {
		return func() error {
			selectBytes(out.Bytes(), cond.Bytes()[:n], t.Bytes(), f.Bytes(), w)
			return nil
		}, nil
	}
	return func() error {
		o, ts, fs := out.I32()[:n], t.I32()[:n], f.I32()[:n]
		for i, k := range cond.Bytes()[:n] {
			if k != 0 {
				o[i] = ts[i]
			} else {
				o[i] = fs[i]
			}
		}
		return nil
	}, nil
}

// selectBytes is Select over elements of w bytes: each element of out is
// t's where cond is nonzero and f's elsewhere.
func selectBytes(out, cond, t, f []byte, w int) {
	for j, k := range cond {
		src := f
		if k != 0 {
			src = t
		}
		copy(out[j*w:(j+1)*w], src[j*w:(j+1)*w])
	}
}
