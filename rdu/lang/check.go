package lang

import (
	"fmt"
	"math"
)

// MaxElements bounds the elements of one tensor a program may declare or
// compute.
const MaxElements = 1 << 31

// Type is a value's type: an Int scalar, or an R by C matrix.
type Type struct {
	Scalar     bool
	Rows, Cols int
	Elem       Elem
}

// String writes the type as the language declares it.
func (t Type) String() string {
	if t.Scalar {
		return "an Int scalar"
	}
	return fmt.Sprintf("a %d by %d tensor of %v", t.Rows, t.Cols, t.Elem)
}

func matrix(r, c int) Type { return Type{Rows: r, Cols: c} }

// TypeError is a statement that does not type: the program, the
// statement's index (from 0), the name it binds or writes, and the rule.
type TypeError struct {
	Program string
	Stmt    int
	Name    string
	Msg     string
}

// Error formats the error on one line.
func (e *TypeError) Error() string {
	return fmt.Sprintf("rdu/lang: program %s, statement %d (%s): %s", e.Program, e.Stmt, e.Name, e.Msg)
}

// Typed is a checked program: every name's type, and which names are
// declared (provided from outside) rather than computed.
type Typed struct {
	Types map[string]Type
	// Declared lists the declared tensors and scalars in order.
	Declared []string
	// Written lists the declared tensors a Set writes, in order of their
	// first write.
	Written []string
}

// Check infers the type of every name of p and checks every statement
// against the rules of the language; the first statement that breaks one
// is a *TypeError.
func Check(p *Program) (*Typed, error) {
	c := &checker{p: p, t: &Typed{Types: map[string]Type{}}, declared: map[string]bool{}}
	for i, s := range p.Stmts {
		c.stmt = i
		if err := c.check(s); err != nil {
			return nil, err
		}
	}
	return c.t, nil
}

type checker struct {
	p        *Program
	t        *Typed
	stmt     int
	name     string
	declared map[string]bool
}

func (c *checker) errf(format string, args ...any) error {
	return &TypeError{Program: c.p.Name, Stmt: c.stmt, Name: c.name, Msg: fmt.Sprintf(format, args...)}
}

func (c *checker) bind(name string, t Type) error {
	if !IsName(name) {
		return c.errf("%q is not a name", name)
	}
	if _, ok := c.t.Types[name]; ok {
		return c.errf("%s is bound twice", name)
	}
	if !t.Scalar && int64(t.Rows)*int64(t.Cols) > MaxElements {
		return c.errf("%s would hold %d by %d elements, more than %d", name, t.Rows, t.Cols, MaxElements)
	}
	c.t.Types[name] = t
	return nil
}

// real returns the type of a Real matrix called name.
func (c *checker) real(name string) (Type, error) {
	t, ok := c.t.Types[name]
	switch {
	case !ok:
		return t, c.errf("%s is not bound before it is read", name)
	case t.Scalar || t.Elem != Real:
		return t, c.errf("%s is %v, not a tensor of Real", name, t)
	}
	return t, nil
}

// index checks a row or position: a number within [1, limit] (limit 0:
// any), or an Int scalar.
func (c *checker) index(i Index, limit int) error {
	if i.Name == "" {
		if i.Num < 1 || limit > 0 && i.Num > limit {
			return c.errf("row %d is outside 1…%d", i.Num, limit)
		}
		return nil
	}
	t, ok := c.t.Types[i.Name]
	if !ok {
		return c.errf("%s is not bound before it is read", i.Name)
	}
	if !t.Scalar {
		return c.errf("%s is %v, not an Int scalar", i.Name, t)
	}
	return nil
}

func (c *checker) positive(what string, v float64) error {
	if !(v > 0) || math.IsInf(v, 0) {
		return c.errf("%s %s is not a positive number", what, FormatReal(v))
	}
	return nil
}

// split checks that n heads divide cols and returns a head's width.
func (c *checker) split(what string, cols, n int) (int, error) {
	if n < 1 || cols%n != 0 {
		return 0, c.errf("%s of %d columns cannot be cut into %d heads", what, cols, n)
	}
	return cols / n, nil
}

// row checks a one-row Real operand of a given width.
func (c *checker) row(name string, cols int) error {
	t, err := c.real(name)
	if err != nil {
		return err
	}
	if t.Rows != 1 || t.Cols != cols {
		return c.errf("%s is %v, want a 1 by %d tensor", name, t, cols)
	}
	return nil
}

func (c *checker) check(s Stmt) error {
	switch s := s.(type) {
	case Declare:
		c.name = s.Name
		if s.Rows < 1 || s.Cols < 1 {
			return c.errf("a %d by %d tensor", s.Rows, s.Cols)
		}
		c.t.Declared = append(c.t.Declared, s.Name)
		c.declared[s.Name] = true
		return c.bind(s.Name, Type{Rows: s.Rows, Cols: s.Cols, Elem: s.Elem})
	case Scalar:
		c.name = s.Name
		c.t.Declared = append(c.t.Declared, s.Name)
		c.declared[s.Name] = true
		return c.bind(s.Name, Type{Scalar: true, Elem: Int})
	case SetItem:
		c.name = s.Name
		t, ok := c.t.Types[s.Name]
		if !ok || t.Scalar || t.Elem != Int || !c.declared[s.Name] {
			return c.errf("%s is not a declared tensor of Int", s.Name)
		}
		if s.Item < 1 || int64(s.Item) > int64(t.Rows)*int64(t.Cols) {
			return c.errf("item %d is outside 1…%d", s.Item, t.Rows*t.Cols)
		}
		c.written(s.Name)
		return nil
	case SetRow:
		c.name = s.Target
		t, err := c.target(s.Target)
		if err != nil {
			return err
		}
		if err := c.index(s.Row, t.Rows); err != nil {
			return err
		}
		return c.row(s.Value, t.Cols)
	case SetRows:
		c.name = s.Target
		t, err := c.target(s.Target)
		if err != nil {
			return err
		}
		if err := c.index(s.From, t.Rows); err != nil {
			return err
		}
		v, err := c.real(s.Value)
		if err != nil {
			return err
		}
		if v.Cols != t.Cols || v.Rows > t.Rows {
			return c.errf("%s is %v, which %s (%v) cannot take", s.Value, v, s.Target, t)
		}
		if s.From.Name == "" && s.From.Num+v.Rows-1 > t.Rows {
			return c.errf("rows %d…%d of %s, which has %d", s.From.Num, s.From.Num+v.Rows-1, s.Target, t.Rows)
		}
		return nil
	case Let:
		c.name = s.Name
		t, err := c.expr(s.Expr)
		if err != nil {
			return err
		}
		return c.bind(s.Name, t)
	}
	return c.errf("unknown statement %T", s)
}

// target checks the tensor a Set writes: declared, Real.
func (c *checker) target(name string) (Type, error) {
	t, err := c.real(name)
	if err != nil {
		return t, err
	}
	if !c.declared[name] {
		return t, c.errf("%s is computed by the program; only declared tensors are written", name)
	}
	c.written(name)
	return t, nil
}

func (c *checker) written(name string) {
	for _, w := range c.t.Written {
		if w == name {
			return
		}
	}
	c.t.Written = append(c.t.Written, name)
}

func (c *checker) expr(e Expr) (Type, error) {
	switch e := e.(type) {
	case RMSNorm:
		x, err := c.real(e.X)
		if err != nil {
			return x, err
		}
		w := x.Cols
		if e.Heads != 0 {
			if w, err = c.split(e.X, x.Cols, e.Heads); err != nil {
				return x, err
			}
		}
		if e.Weight != "" {
			if err := c.row(e.Weight, w); err != nil {
				return x, err
			}
		}
		return matrix(x.Rows, x.Cols), c.positive("the epsilon", e.Epsilon)
	case LayerNorm:
		x, err := c.real(e.X)
		if err != nil {
			return x, err
		}
		for _, n := range []string{e.Weight, e.Bias} {
			if n != "" {
				if err := c.row(n, x.Cols); err != nil {
					return x, err
				}
			}
		}
		return matrix(x.Rows, x.Cols), c.positive("the epsilon", e.Epsilon)
	case L2Norm:
		x, err := c.real(e.X)
		if err != nil {
			return x, err
		}
		if e.Heads != 0 {
			if _, err = c.split(e.X, x.Cols, e.Heads); err != nil {
				return x, err
			}
		}
		return matrix(x.Rows, x.Cols), c.positive("the epsilon", e.Epsilon)
	case Rope:
		x, err := c.real(e.X)
		if err != nil {
			return x, err
		}
		d, err := c.split(e.X, x.Cols, e.Heads)
		if err != nil {
			return x, err
		}
		cos, err := c.real(e.Cos)
		if err != nil {
			return x, err
		}
		sin, err := c.real(e.Sin)
		if err != nil {
			return x, err
		}
		if cos != sin {
			return x, c.errf("cos %s is %v and sin %s is %v", e.Cos, cos, e.Sin, sin)
		}
		if 2*cos.Cols > d {
			return x, c.errf("tables of %d angles turn %d channels, more than a head's %d", cos.Cols, 2*cos.Cols, d)
		}
		if e.From != nil {
			if x.Rows > cos.Rows {
				return x, c.errf("tables of %d rows turn %d rows of %s", cos.Rows, x.Rows, e.X)
			}
			if err := c.index(*e.From, cos.Rows-x.Rows+1); err != nil {
				return x, err
			}
		} else if cos.Rows != x.Rows {
			return x, c.errf("tables of %d rows turn %d rows of %s", cos.Rows, x.Rows, e.X)
		}
		return matrix(x.Rows, x.Cols), nil
	case Attention:
		return c.attention(e)
	case SwiGLU:
		g, err := c.real(e.Gate)
		if err != nil {
			return g, err
		}
		u, err := c.real(e.Up)
		if err != nil {
			return u, err
		}
		if g != u {
			return g, c.errf("gate %s is %v and up %s is %v", e.Gate, g, e.Up, u)
		}
		return g, nil
	case Unary:
		x, err := c.real(e.X)
		if err != nil {
			return x, err
		}
		if e.Op == Argmax {
			if x.Rows != 1 {
				return x, c.errf("argmax of %s, which is %v, not one row", e.X, x)
			}
			return Type{Scalar: true, Elem: Int}, nil
		}
		return x, nil
	case CausalConv:
		x, err := c.real(e.X)
		if err != nil {
			return x, err
		}
		if e.Taps < 2 {
			return x, c.errf("a causal conv over %d taps", e.Taps)
		}
		for i, n := range []string{e.Weight, e.State} {
			t, err := c.real(n)
			if err != nil {
				return x, err
			}
			if t.Rows != e.Taps-i || t.Cols != x.Cols {
				return x, c.errf("%s is %v, want a %d by %d tensor", n, t, e.Taps-i, x.Cols)
			}
		}
		if !c.declared[e.State] {
			return x, c.errf("%s is computed by the program; only declared tensors are written", e.State)
		}
		if e.From != nil {
			if err := c.index(*e.From, 0); err != nil {
				return x, err
			}
		}
		c.written(e.State)
		return x, nil
	case Decay:
		x, err := c.real(e.X)
		if err != nil {
			return x, err
		}
		for _, n := range []string{e.Bias, e.Rate} {
			if err := c.row(n, x.Cols); err != nil {
				return x, err
			}
		}
		return x, nil
	case GatedDelta:
		return c.gatedDelta(e)
	case MoE:
		return c.moe(e)
	case Binary:
		return c.binary(e)
	case Scaled:
		return c.real(e.X)
	case Capped:
		x, err := c.real(e.X)
		if err != nil {
			return x, err
		}
		return x, c.positive("the cap", e.At)
	case Row:
		t, ok := c.t.Types[e.X]
		if !ok || t.Scalar {
			return t, c.errf("%s is not a tensor bound before it is read", e.X)
		}
		if err := c.index(e.Index, t.Rows); err != nil {
			return t, err
		}
		return Type{Rows: 1, Cols: t.Cols, Elem: t.Elem}, nil
	case Rows:
		idx, ok := c.t.Types[e.Indices]
		if !ok || idx.Scalar || idx.Elem != Int || idx.Rows != 1 {
			return idx, c.errf("%s is not a one-row tensor of Int", e.Indices)
		}
		t, ok := c.t.Types[e.X]
		if !ok || t.Scalar {
			return t, c.errf("%s is not a tensor bound before it is read", e.X)
		}
		return Type{Rows: idx.Cols, Cols: t.Cols, Elem: t.Elem}, nil
	case Columns:
		x, err := c.real(e.X)
		if err != nil {
			return x, err
		}
		if e.N < 1 || e.After < 0 || e.Every < e.After+e.N || x.Cols%e.Every != 0 {
			return x, c.errf("%d columns after the first %d of every %d of %d columns", e.N, e.After, e.Every, x.Cols)
		}
		return matrix(x.Rows, x.Cols/e.Every*e.N), nil
	}
	return Type{}, c.errf("unknown expression %T", e)
}

func (c *checker) attention(e Attention) (Type, error) {
	q, err := c.real(e.Q)
	if err != nil {
		return q, err
	}
	k, err := c.real(e.K)
	if err != nil {
		return k, err
	}
	v, err := c.real(e.V)
	if err != nil {
		return v, err
	}
	if e.Heads < 1 || e.Groups < 1 || e.Heads%e.Groups != 0 {
		return q, c.errf("%d heads in %d groups", e.Heads, e.Groups)
	}
	d, err := c.split(e.Q, q.Cols, e.Heads)
	if err != nil {
		return q, err
	}
	if k.Cols != e.Groups*d {
		return q, c.errf("keys %s are %v; %d groups of %d channels want %d columns", e.K, k, e.Groups, d, e.Groups*d)
	}
	dv, err := c.split(e.V, v.Cols, e.Groups)
	if err != nil {
		return q, err
	}
	if v.Rows != k.Rows {
		return q, c.errf("keys %s have %d rows and values %s %d", e.K, k.Rows, e.V, v.Rows)
	}
	if e.Causal && e.At == nil {
		return q, c.errf("causal attention without its first position")
	}
	if e.At != nil {
		if err := c.index(*e.At, k.Rows); err != nil {
			return q, err
		}
	}
	if e.Window < 0 || e.Chunk < 0 || math.IsNaN(e.Scale) || math.IsInf(e.Scale, 0) {
		return q, c.errf("window %d, chunk %d, scale %s", e.Window, e.Chunk, FormatReal(e.Scale))
	}
	if e.Cap != 0 {
		if err := c.positive("the cap", e.Cap); err != nil {
			return q, err
		}
	}
	if e.Sinks != "" {
		if err := c.row(e.Sinks, e.Heads); err != nil {
			return q, err
		}
	}
	return matrix(q.Rows, e.Heads*dv), nil
}

func (c *checker) gatedDelta(e GatedDelta) (Type, error) {
	q, err := c.real(e.Q)
	if err != nil {
		return q, err
	}
	if !(e.Epsilon > 0) || math.IsInf(e.Epsilon, 0) {
		return q, c.errf("epsilon %v", e.Epsilon)
	}
	if e.Heads < 1 || e.Groups < 1 || e.Heads%e.Groups != 0 {
		return q, c.errf("%d heads in %d groups", e.Heads, e.Groups)
	}
	dk, err := c.split(e.Q, q.Cols, e.Groups)
	if err != nil {
		return q, err
	}
	k, err := c.real(e.K)
	if err != nil {
		return k, err
	}
	v, err := c.real(e.V)
	if err != nil {
		return v, err
	}
	if k != q {
		return q, c.errf("keys %s are %v and queries %s %v", e.K, k, e.Q, q)
	}
	dv, err := c.split(e.V, v.Cols, e.Heads)
	if err != nil {
		return q, err
	}
	want := map[string]Type{
		e.Gate:  matrix(q.Rows, v.Cols),
		e.Beta:  matrix(q.Rows, e.Heads),
		e.Decay: matrix(q.Rows, e.Heads),
		e.State: matrix(e.Heads*dv, dk),
		e.Norm:  matrix(1, dv),
	}
	for _, n := range []string{e.Gate, e.Beta, e.Decay, e.State, e.Norm} {
		t, err := c.real(n)
		if err != nil {
			return q, err
		}
		if t != want[n] {
			return q, c.errf("%s is %v, want %v", n, t, want[n])
		}
	}
	if !c.declared[e.State] {
		return q, c.errf("%s is computed by the program; only declared tensors are written", e.State)
	}
	if e.From != nil {
		if err := c.index(*e.From, 0); err != nil {
			return q, err
		}
	}
	c.written(e.State)
	return matrix(q.Rows, v.Cols), nil
}

func (c *checker) moe(e MoE) (Type, error) {
	x, err := c.real(e.X)
	if err != nil {
		return x, err
	}
	d, n := x.Cols, e.E
	if e.K < 1 || e.K > n {
		return x, c.errf("choosing %d of %d experts", e.K, n)
	}
	shape := func(name string, rows, cols int) error {
		if name == "" {
			return nil
		}
		t, err := c.real(name)
		if err != nil {
			return err
		}
		if t.Rows != rows || t.Cols != cols {
			return c.errf("%s is %v, want a %d by %d tensor", name, t, rows, cols)
		}
		return nil
	}
	if err := shape(e.Router, d, n); err != nil {
		return x, err
	}
	g, ok := c.t.Types[e.Gate]
	if !ok || g.Scalar || g.Rows%n != 0 {
		return x, c.errf("gate stack %s is not %d blocks of rows", e.Gate, n)
	}
	f := g.Rows / n
	for _, s := range []struct {
		name       string
		rows, cols int
	}{
		{e.RouterBias, 1, n}, {e.Gate, n * f, d}, {e.GateBias, n, f}, {e.Up, n * f, d}, {e.UpBias, n, f},
		{e.Down, n * d, f}, {e.DownBias, n, d}, {e.SelectionBias, 1, n},
	} {
		if err := shape(s.name, s.rows, s.cols); err != nil {
			return x, err
		}
	}
	if e.Groups != 0 && (n%e.Groups != 0 || e.TopGroups < 1 || e.TopGroups > e.Groups || e.TopGroups*(n/e.Groups) < e.K) {
		return x, c.errf("the top %d of %d groups of %d experts, choosing %d", e.TopGroups, e.Groups, n, e.K)
	}
	if e.Clamped {
		if err := c.positive("the clamp", e.Limit); err != nil {
			return x, err
		}
	}
	if e.SelectionBias != "" && !e.Sigmoid {
		return x, c.errf("a selection bias without sigmoid scores")
	}
	return matrix(x.Rows, d), nil
}

func (c *checker) binary(e Binary) (Type, error) {
	a, err := c.real(e.A)
	if err != nil {
		return a, err
	}
	b, err := c.real(e.B)
	if err != nil {
		return b, err
	}
	switch e.Op {
	case MatMul:
		h := max(e.Heads, 1)
		if a.Cols%h != 0 || b.Rows != a.Cols {
			return a, c.errf("%s (%v) matmul %s (%v)%s", e.A, a, e.B, b, heads(e.Heads))
		}
		return matrix(a.Rows, h*b.Cols), nil
	case Plus, Hadamard:
		if e.Op == Hadamard && b.Cols == 1 && b.Rows == a.Rows {
			return a, nil // one column standing for every column
		}
		if a.Cols != b.Cols || b.Rows != a.Rows && b.Rows != 1 {
			return a, c.errf("%s (%v) %v %s (%v)", e.A, a, e.Op, e.B, b)
		}
		return a, nil
	case Joined:
		h := max(e.Heads, 1)
		if a.Rows != b.Rows || a.Cols%h != 0 || b.Cols%h != 0 {
			return a, c.errf("%s (%v) joined with %s (%v)%s", e.A, a, e.B, b, heads(e.Heads))
		}
		return matrix(a.Rows, a.Cols+b.Cols), nil
	}
	return a, c.errf("unknown form %v", e.Op)
}
