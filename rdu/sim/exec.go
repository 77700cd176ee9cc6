package sim

import (
	"fmt"
	"math"

	"github.com/pootlabs/poot/rdu/bundle"
	"github.com/pootlabs/poot/rdu/lang"
)

// The statements' meaning, as package lang's documentation defines it.
// Values are float32; sums and products accumulate in float64 and are
// rounded once.

// value is a *matrix, an *ints or an int (a scalar).
type value any

// matrix is a Real matrix. A weight stored [out, in] and declared in by
// out keeps its stored order: transposed says data holds the cols by rows
// transpose.
type matrix struct {
	rows, cols int
	data       []float32
	transposed bool
}

func newMatrix(r, c int) *matrix { return &matrix{rows: r, cols: c, data: make([]float32, r*c)} }

func (m *matrix) at(r, c int) float32 {
	if m.transposed {
		return m.data[c*m.rows+r]
	}
	return m.data[r*m.cols+c]
}

// plain returns m in row-major order.
func (m *matrix) plain() *matrix {
	if !m.transposed {
		return m
	}
	out := newMatrix(m.rows, m.cols)
	for r := range m.rows {
		for c := range m.cols {
			out.data[r*m.cols+c] = m.at(r, c)
		}
	}
	return out
}

func (m *matrix) row(r int) []float32 { return m.data[r*m.cols : (r+1)*m.cols] }

// ints is an Int matrix.
type ints struct {
	rows, cols int
	data       []int32
}

func (m *Machine) exec(in *instance, env map[string]value, s lang.Stmt, runtime map[string]value, hidden value) error {
	switch s := s.(type) {
	case lang.Declare:
		bd := in.bind[s.Name]
		switch bd.Source {
		case bundle.SourceWeight:
			env[s.Name] = in.weights[s.Name]
		case bundle.SourceState:
			st := m.state(stateKey(bd))
			if bd.Row < 0 || bd.Row+s.Rows > st.rows || st.cols != s.Cols {
				return fmt.Errorf("rows %d…%d of state %q (%d by %d)", bd.Row+1, bd.Row+s.Rows, stateKey(bd), st.rows, st.cols)
			}
			env[s.Name] = &matrix{rows: s.Rows, cols: s.Cols, data: st.data[bd.Row*s.Cols : (bd.Row+s.Rows)*s.Cols]}
		case bundle.SourceScratch:
			env[s.Name] = newMatrix(s.Rows, s.Cols)
		case bundle.SourceTable:
			env[s.Name] = m.tables[bd.Table]
		case bundle.SourceRuntime:
			t, ok := runtime[s.Name].(*ints)
			if !ok || s.Elem != lang.Int || t.rows != s.Rows || t.cols != s.Cols {
				return fmt.Errorf("%s is not a runtime input of %d by %d", s.Name, s.Rows, s.Cols)
			}
			env[s.Name] = t
		case bundle.SourceInput:
			h, ok := hidden.(*matrix)
			if !ok || h.rows != s.Rows || h.cols != s.Cols {
				return fmt.Errorf("the hidden state is not a %d by %d tensor", s.Rows, s.Cols)
			}
			env[s.Name] = h
		default:
			return fmt.Errorf("%s is bound to %q", s.Name, bd.Source)
		}
		if env[s.Name] == nil {
			return fmt.Errorf("%s is not loaded", s.Name)
		}
		return nil
	case lang.Scalar:
		v, ok := runtime[s.Name].(int)
		if !ok {
			return fmt.Errorf("%s is not a runtime input", s.Name)
		}
		env[s.Name] = v
		return nil
	case lang.SetItem:
		t, ok := env[s.Name].(*ints)
		if !ok || s.Item < 1 || s.Item > len(t.data) {
			return fmt.Errorf("item %d of %s", s.Item, s.Name)
		}
		t.data[s.Item-1] = int32(s.Value)
		return nil
	case lang.SetRow:
		t, v, r, err := setOperands(env, s.Target, s.Value, s.Row)
		if err != nil {
			return err
		}
		if v.rows != 1 || r < 1 || r > t.rows {
			return fmt.Errorf("row %d of %s (%d rows) from %d rows", r, s.Target, t.rows, v.rows)
		}
		copy(t.row(r-1), v.plain().data)
		return nil
	case lang.SetRows:
		t, v, r, err := setOperands(env, s.Target, s.Value, s.From)
		if err != nil {
			return err
		}
		if r < 1 || r-1+v.rows > t.rows {
			return fmt.Errorf("rows %d…%d of %s (%d rows)", r, r+v.rows-1, s.Target, t.rows)
		}
		copy(t.data[(r-1)*t.cols:], v.plain().data)
		return nil
	case lang.Let:
		v, err := m.eval(env, s.Expr)
		if err != nil {
			return err
		}
		env[s.Name] = v
		return nil
	}
	return fmt.Errorf("unknown statement %T", s)
}

func setOperands(env map[string]value, target, val string, at lang.Index) (*matrix, *matrix, int, error) {
	t, ok := env[target].(*matrix)
	v, ok2 := env[val].(*matrix)
	if !ok || !ok2 || t.transposed || v.cols != t.cols {
		return nil, nil, 0, fmt.Errorf("%s cannot be written with %s", target, val)
	}
	r, err := index(env, at)
	return t, v, r, err
}

func index(env map[string]value, i lang.Index) (int, error) {
	if i.Name == "" {
		return i.Num, nil
	}
	v, ok := env[i.Name].(int)
	if !ok {
		return 0, fmt.Errorf("%s is not a scalar", i.Name)
	}
	return v, nil
}

func realOf(env map[string]value, name string) (*matrix, error) {
	m, ok := env[name].(*matrix)
	if !ok {
		return nil, fmt.Errorf("%s is not a tensor of Real", name)
	}
	return m, nil
}

// reals fetches several Real operands.
func reals(env map[string]value, names ...string) ([]*matrix, error) {
	out := make([]*matrix, len(names))
	for i, n := range names {
		m, err := realOf(env, n)
		if err != nil {
			return nil, err
		}
		out[i] = m
	}
	return out, nil
}

func (m *Machine) eval(env map[string]value, e lang.Expr) (value, error) {
	switch e := e.(type) {
	case lang.RMSNorm:
		return normalize(env, e.X, e.Weight, e.OnePlus, e.Heads, e.Epsilon, true)
	case lang.LayerNorm:
		return layerNorm(env, e)
	case lang.L2Norm:
		return normalize(env, e.X, "", false, e.Heads, e.Epsilon, false)
	case lang.Rope:
		return rope(env, e)
	case lang.Attention:
		return attention(env, e)
	case lang.SwiGLU:
		ms, err := reals(env, e.Gate, e.Up)
		if err != nil {
			return nil, err
		}
		g, u := ms[0].plain(), ms[1].plain()
		if len(g.data) != len(u.data) {
			return nil, fmt.Errorf("swiglu of %d and %d values", len(g.data), len(u.data))
		}
		out := newMatrix(g.rows, g.cols)
		for i, x := range g.data {
			out.data[i] = silu(x) * u.data[i]
		}
		return out, nil
	case lang.Unary:
		x, err := realOf(env, e.X)
		if err != nil {
			return nil, err
		}
		x = x.plain()
		if e.Op == lang.Argmax {
			return argmax(x.data) + 1, nil
		}
		f := map[lang.UnaryOp]func(float32) float32{lang.Gelu: gelu, lang.Silu: silu, lang.Sigmoid: sigmoid}[e.Op]
		if f == nil {
			return nil, fmt.Errorf("unknown function %v", e.Op)
		}
		out := newMatrix(x.rows, x.cols)
		for i, v := range x.data {
			out.data[i] = f(v)
		}
		return out, nil
	case lang.Binary:
		return binaryOp(env, e)
	case lang.Scaled:
		x, err := realOf(env, e.X)
		if err != nil {
			return nil, err
		}
		x = x.plain()
		out := newMatrix(x.rows, x.cols)
		s := float32(e.By)
		for i, v := range x.data {
			out.data[i] = v * s
		}
		return out, nil
	case lang.Capped:
		x, err := realOf(env, e.X)
		if err != nil {
			return nil, err
		}
		x = x.plain()
		out := newMatrix(x.rows, x.cols)
		for i, v := range x.data {
			out.data[i] = capped(v, e.At)
		}
		return out, nil
	case lang.Row:
		r, err := index(env, e.Index)
		if err != nil {
			return nil, err
		}
		switch x := env[e.X].(type) {
		case *matrix:
			if r < 1 || r > x.rows {
				return nil, fmt.Errorf("row %d of %s, which has %d", r, e.X, x.rows)
			}
			out := newMatrix(1, x.cols)
			for c := range x.cols {
				out.data[c] = x.at(r-1, c)
			}
			return out, nil
		case *ints:
			if r < 1 || r > x.rows {
				return nil, fmt.Errorf("row %d of %s, which has %d", r, e.X, x.rows)
			}
			return &ints{rows: 1, cols: x.cols, data: append([]int32(nil), x.data[(r-1)*x.cols:r*x.cols]...)}, nil
		}
		return nil, fmt.Errorf("%s is not a tensor", e.X)
	case lang.Rows:
		idx, ok := env[e.Indices].(*ints)
		x, err := realOf(env, e.X)
		if !ok || err != nil {
			return nil, fmt.Errorf("rows %s of %s", e.Indices, e.X)
		}
		out := newMatrix(len(idx.data), x.cols)
		for i, r := range idx.data {
			if r < 1 || int(r) > x.rows {
				return nil, fmt.Errorf("row %d of %s, which has %d", r, e.X, x.rows)
			}
			for c := range x.cols {
				out.data[i*x.cols+c] = x.at(int(r)-1, c)
			}
		}
		return out, nil
	case lang.Columns:
		x, err := realOf(env, e.X)
		if err != nil {
			return nil, err
		}
		x = x.plain()
		if e.Every < 1 || e.After < 0 || e.After+e.N > e.Every || x.cols%e.Every != 0 {
			return nil, fmt.Errorf("%d after %d of every %d of %d columns", e.N, e.After, e.Every, x.cols)
		}
		runs := x.cols / e.Every
		out := newMatrix(x.rows, runs*e.N)
		off := e.After
		if e.Last {
			off = e.Every - e.N
		}
		for r := range x.rows {
			for k := range runs {
				copy(out.data[r*out.cols+k*e.N:], x.data[r*x.cols+k*e.Every+off:r*x.cols+k*e.Every+off+e.N])
			}
		}
		return out, nil
	case lang.MoE:
		return m.moe(env, e)
	case lang.CausalConv:
		return causalConv(env, e)
	case lang.Decay:
		return decay(env, e)
	case lang.GatedDelta:
		return gatedDelta(env, e)
	}
	return nil, fmt.Errorf("the simulator does not run %T statements yet", e)
}

func silu(x float32) float32 { return float32(float64(x) / (1 + math.Exp(-float64(x)))) }

func sigmoid(x float32) float32 { return float32(1 / (1 + math.Exp(-float64(x)))) }

func gelu(x float32) float32 {
	v := float64(x)
	return float32(0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v))))
}

func capped(x float32, c float64) float32 { return float32(c * math.Tanh(float64(x)/c)) }

// argmax is the index (from 0) of the largest element, the first of
// equals; a NaN counts as larger than any number.
func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		b := v[best]
		if b != b {
			break
		}
		if x != x || x > b {
			best = i
		}
	}
	return best
}

// normalize is rmsnorm (rms set) or l2norm.
func normalize(env map[string]value, xn, wn string, onePlus bool, heads int, eps float64, rms bool) (value, error) {
	x, err := realOf(env, xn)
	if err != nil {
		return nil, err
	}
	x = x.plain()
	n := max(heads, 1)
	if x.cols%n != 0 {
		return nil, fmt.Errorf("%d columns in %d heads", x.cols, n)
	}
	w := x.cols / n
	var weight []float32
	if wn != "" {
		wm, err := realOf(env, wn)
		if err != nil {
			return nil, err
		}
		wm = wm.plain()
		if wm.rows != 1 || wm.cols != w {
			return nil, fmt.Errorf("weight %s is %d by %d for slices of %d", wn, wm.rows, wm.cols, w)
		}
		weight = wm.data
	}
	out := newMatrix(x.rows, x.cols)
	for r := range x.rows {
		for h := range n {
			seg := x.data[r*x.cols+h*w : r*x.cols+(h+1)*w]
			var ss float64
			for _, v := range seg {
				ss += float64(v) * float64(v)
			}
			if rms {
				ss /= float64(w)
			}
			scale := 1 / math.Sqrt(ss+eps)
			dst := out.data[r*x.cols+h*w:]
			for i, v := range seg {
				y := float64(v) * scale
				if weight != nil {
					wv := float64(weight[i])
					if onePlus {
						wv++
					}
					y *= wv
				}
				dst[i] = float32(y)
			}
		}
	}
	return out, nil
}

// layerNorm centres each row, scales it to unit variance (the biased
// variance), and applies the weight and the bias.
func layerNorm(env map[string]value, e lang.LayerNorm) (value, error) {
	x, err := realOf(env, e.X)
	if err != nil {
		return nil, err
	}
	x = x.plain()
	vec := func(name string) ([]float32, error) {
		if name == "" {
			return nil, nil
		}
		m, err := realOf(env, name)
		if err != nil {
			return nil, err
		}
		if m = m.plain(); m.rows != 1 || m.cols != x.cols {
			return nil, fmt.Errorf("%s is %d by %d for rows of %d", name, m.rows, m.cols, x.cols)
		}
		return m.data, nil
	}
	w, err := vec(e.Weight)
	if err != nil {
		return nil, err
	}
	b, err := vec(e.Bias)
	if err != nil {
		return nil, err
	}
	out := newMatrix(x.rows, x.cols)
	n := float64(x.cols)
	for r := range x.rows {
		row := x.row(r)
		var sum, ss float64
		for _, v := range row {
			sum += float64(v)
		}
		mean := sum / n
		for _, v := range row {
			d := float64(v) - mean
			ss += d * d
		}
		scale := 1 / math.Sqrt(ss/n+e.Epsilon)
		for i, v := range row {
			y := (float64(v) - mean) * scale
			if w != nil {
				wv := float64(w[i])
				if e.OnePlus {
					wv++
				}
				y *= wv
			}
			if b != nil {
				y += float64(b[i])
			}
			out.data[r*x.cols+i] = float32(y)
		}
	}
	return out, nil
}

func rope(env map[string]value, e lang.Rope) (value, error) {
	ms, err := reals(env, e.X, e.Cos, e.Sin)
	if err != nil {
		return nil, err
	}
	x, cos, sin := ms[0].plain(), ms[1], ms[2]
	if x.cols%e.Heads != 0 || cos.cols != sin.cols || cos.rows != sin.rows {
		return nil, fmt.Errorf("rope of %d columns in %d heads with tables %dx%d", x.cols, e.Heads, cos.cols, sin.cols)
	}
	d, half := x.cols/e.Heads, cos.cols
	if 2*half > d {
		return nil, fmt.Errorf("%d angles for heads of %d", half, d)
	}
	out := newMatrix(x.rows, x.cols)
	copy(out.data, x.data)
	for r := range x.rows {
		tr := r
		if e.From != nil {
			p, err := index(env, *e.From)
			if err != nil {
				return nil, err
			}
			tr = p - 1 + r
		}
		if tr < 0 || tr >= cos.rows {
			return nil, fmt.Errorf("row %d of tables of %d rows", tr+1, cos.rows)
		}
		for h := range e.Heads {
			base := r*x.cols + h*d
			for i := range half {
				ia, ib := base+i, base+i+half
				if e.Interleaved {
					ia, ib = base+2*i, base+2*i+1
				}
				c, s := float64(cos.at(tr, i)), float64(sin.at(tr, i))
				a, b := float64(x.data[ia]), float64(x.data[ib])
				out.data[ia] = float32(a*c - b*s)
				out.data[ib] = float32(b*c + a*s)
			}
		}
	}
	return out, nil
}

func attention(env map[string]value, e lang.Attention) (value, error) {
	ms, err := reals(env, e.Q, e.K, e.V)
	if err != nil {
		return nil, err
	}
	q, k, v := ms[0].plain(), ms[1].plain(), ms[2].plain()
	h, g := e.Heads, e.Groups
	if h < 1 || g < 1 || h%g != 0 || q.cols%h != 0 || v.cols%g != 0 || k.rows != v.rows {
		return nil, fmt.Errorf("attention of %d heads in %d groups over %dx%d, %dx%d, %dx%d", h, g, q.rows, q.cols, k.rows, k.cols, v.rows, v.cols)
	}
	d, dv := q.cols/h, v.cols/g
	if k.cols != g*d {
		return nil, fmt.Errorf("keys of %d columns for %d groups of %d", k.cols, g, d)
	}
	scale := e.Scale
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(d))
	}
	var sinks []float32
	if e.Sinks != "" {
		s, err := realOf(env, e.Sinks)
		if err != nil {
			return nil, err
		}
		sinks = s.plain().data
		if len(sinks) != h {
			return nil, fmt.Errorf("%d sinks for %d heads", len(sinks), h)
		}
	}
	at := k.rows
	if e.At != nil {
		if at, err = index(env, *e.At); err != nil {
			return nil, err
		}
	}
	out := newMatrix(q.rows, h*dv)
	scores := make([]float64, k.rows)
	for r := range q.rows {
		p := at
		if e.Causal {
			p = at + r
		}
		if p < 1 || p > k.rows {
			return nil, fmt.Errorf("position %d outside %d cache rows", p, k.rows)
		}
		visible := func(j int) bool { // j from 1
			return j <= p && (e.Window == 0 || p-j < e.Window) && (e.Chunk == 0 || (p-1)/e.Chunk == (j-1)/e.Chunk)
		}
		for hh := range h {
			grp := hh / (h / g)
			qh := q.data[r*q.cols+hh*d : r*q.cols+(hh+1)*d]
			best := math.Inf(-1)
			for j := 1; j <= k.rows; j++ {
				if !visible(j) {
					continue
				}
				kj := k.data[(j-1)*k.cols+grp*d : (j-1)*k.cols+(grp+1)*d]
				var s float64
				for i, x := range qh {
					s += float64(x) * float64(kj[i])
				}
				s = float64(float32(s)) * scale
				if e.Cap != 0 {
					s = e.Cap * math.Tanh(s/e.Cap)
				}
				scores[j-1] = s
				best = math.Max(best, s)
			}
			if sinks != nil {
				best = math.Max(best, float64(sinks[hh]))
			}
			var sum float64
			for j := 1; j <= k.rows; j++ {
				if visible(j) {
					scores[j-1] = math.Exp(scores[j-1] - best)
					sum += scores[j-1]
				}
			}
			if sinks != nil {
				sum += math.Exp(float64(sinks[hh]) - best)
			}
			dst := out.data[r*out.cols+hh*dv : r*out.cols+(hh+1)*dv]
			for c := range dv {
				var acc float64
				for j := 1; j <= k.rows; j++ {
					if visible(j) {
						acc += scores[j-1] / sum * float64(v.data[(j-1)*v.cols+grp*dv+c])
					}
				}
				dst[c] = float32(acc)
			}
		}
	}
	return out, nil
}

func binaryOp(env map[string]value, e lang.Binary) (value, error) {
	ms, err := reals(env, e.A, e.B)
	if err != nil {
		return nil, err
	}
	a, b := ms[0].plain(), ms[1]
	switch e.Op {
	case lang.MatMul:
		n := max(e.Heads, 1)
		if b.rows != a.cols || a.cols%n != 0 || b.rows%n != 0 {
			return nil, fmt.Errorf("%dx%d matmul %dx%d across %d heads", a.rows, a.cols, b.rows, b.cols, n)
		}
		kb := a.cols / n
		out := newMatrix(a.rows, n*b.cols)
		for r := range a.rows {
			for hh := range n {
				x := a.data[r*a.cols+hh*kb : r*a.cols+(hh+1)*kb]
				for c := range b.cols {
					var acc float64
					if b.transposed {
						// The stored row of output c: contiguous over k.
						col := b.data[c*b.rows+hh*kb : c*b.rows+(hh+1)*kb]
						for i, xv := range x {
							acc += float64(xv) * float64(col[i])
						}
					} else {
						for i, xv := range x {
							acc += float64(xv) * float64(b.data[(hh*kb+i)*b.cols+c])
						}
					}
					out.data[r*out.cols+hh*b.cols+c] = float32(acc)
				}
			}
		}
		return out, nil
	case lang.Plus, lang.Hadamard:
		b = b.plain()
		if e.Op == lang.Hadamard && b.cols == 1 && b.rows == a.rows && a.cols != 1 {
			a = a.plain()
			out := newMatrix(a.rows, a.cols)
			for i, x := range a.data {
				out.data[i] = x * b.data[i/a.cols]
			}
			return out, nil
		}
		if a.cols != b.cols || (b.rows != a.rows && b.rows != 1) {
			return nil, fmt.Errorf("%dx%d %v %dx%d", a.rows, a.cols, e.Op, b.rows, b.cols)
		}
		out := newMatrix(a.rows, a.cols)
		for i, x := range a.data {
			y := b.data[i%(b.rows*b.cols)]
			if b.rows == 1 {
				y = b.data[i%b.cols]
			}
			if e.Op == lang.Plus {
				out.data[i] = x + y
			} else {
				out.data[i] = x * y
			}
		}
		return out, nil
	case lang.Joined:
		b = b.plain()
		n := max(e.Heads, 1)
		if a.rows != b.rows || a.cols%n != 0 || b.cols%n != 0 {
			return nil, fmt.Errorf("%dx%d joined with %dx%d across %d heads", a.rows, a.cols, b.rows, b.cols, n)
		}
		wa, wb := a.cols/n, b.cols/n
		out := newMatrix(a.rows, a.cols+b.cols)
		for r := range a.rows {
			for hh := range n {
				dst := out.data[r*out.cols+hh*(wa+wb):]
				copy(dst, a.data[r*a.cols+hh*wa:r*a.cols+(hh+1)*wa])
				copy(dst[wa:], b.data[r*b.cols+hh*wb:r*b.cols+(hh+1)*wb])
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown form %v", e.Op)
}
