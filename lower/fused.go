package lower

import (
	"slices"

	"github.com/pootlabs/poot"
)

// The composites the RoPE, SwiGLU and RMSNorm kernels run, recorded by
// ops.RoPE, ops.SwiGLU and ops.RMSNorm (or ops.RMSNormHeads).
const (
	FusedRope    = "rope"
	FusedSwiGLU  = "swiglu"
	FusedRMSNorm = "rmsnorm"
)

// Rotary is the fused rotary embedding of ops.RoPE: for every row t < T
// and head h, with x the head's D channels and half = N/2,
//
//	out[2i]   = x[2i]·cos[t,i] - x[2i+1]·sin[t,i]     (Interleaved)
//	out[2i+1] = x[2i+1]·cos[t,i] + x[2i]·sin[t,i]
//
// or, in the NeoX layout, the same with x[i] and x[half+i] as the pair
// and out[i], out[half+i] as the results; each product is rounded to
// float32 before the sum, as the body computes it. Channels N… of a head
// pass through unchanged (partial rotary).
type Rotary struct {
	X, Cos, Sin, Out poot.ValueID
	T, Heads, D, N   int
	Interleaved      bool
}

// rope replaces each "rope" composite the RoPE kernel can run by one such
// kernel, when the target fuses it.
func (p *planner) rope() error {
	if !p.target.Fuses(FusedRope) {
		return nil
	}
	return p.fuseComposites(FusedRope, func(c poot.Composite, _ map[int]int) (*Kernel, []int) {
		r, ok := RotaryOf(p.g, c)
		if !ok {
			return nil, nil
		}
		return &Kernel{Kind: RoPE, Rotary: r, Inputs: []poot.ValueID{r.X, r.Cos, r.Sin}, Outputs: []poot.ValueID{r.Out}}, nil
	})
}

// RotaryOf reads a "rope" composite's record as the RoPE kernel's
// description, and reports false when the kernel cannot run it: operands
// other than F32 x [T, heads·D] and tables [T, N/2], or attributes
// inconsistent with their shapes.
func RotaryOf(g *poot.Graph, c poot.Composite) (*Rotary, bool) {
	if c.Name != FusedRope || len(c.Operands) != 3 || len(c.Results) != 1 || c.Operands[0] < 0 || c.Operands[1] < 0 || c.Operands[2] < 0 {
		return nil, false
	}
	heads, ok1 := c.Attrs.Int("heads")
	layout, ok2 := c.Attrs.Str("layout")
	n, ok3 := c.Attrs.Int("dims")
	if !(ok1 && ok2 && ok3) || heads < 1 || n < 2 || n%2 != 0 || layout != "neox" && layout != "interleaved" {
		return nil, false
	}
	r := &Rotary{X: c.Operands[0], Cos: c.Operands[1], Sin: c.Operands[2], Out: c.Results[0], Heads: heads, N: n, Interleaved: layout == "interleaved"}
	xt, ct, st, ot := g.Type(r.X), g.Type(r.Cos), g.Type(r.Sin), g.Type(r.Out)
	if len(xt.Shape) != 2 || xt.DType != poot.F32 || ct.DType != poot.F32 || st.DType != poot.F32 || !xt.Equal(ot) {
		return nil, false
	}
	r.T, r.D = xt.Shape[0], xt.Shape[1]/heads
	table := poot.Shape{r.T, n / 2}
	if xt.Shape[1]%heads != 0 || n > r.D || !ct.Shape.Equal(table) || !st.Shape.Equal(table) {
		return nil, false
	}
	return r, true
}

// Gated is the fused SwiGLU of ops.SwiGLU: out = Gate / (1 + e^-Gate) · Up
// elementwise over N F32 values, each operation rounded to float32 as the
// body computes it.
type Gated struct {
	Gate, Up, Out poot.ValueID
	N             int
}

// swiglu replaces each "swiglu" composite over F32 operands of one shape by
// one SwiGLU kernel, when the target fuses it and both operands are stored
// anyway: inputs of the step or results of products (reshaped or not).
// Halves sliced from
// one product (Phi-3's gate_up) stay a program, which reads them as views
// of the product instead of storing them first.
func (p *planner) swiglu() error {
	if !p.target.Fuses(FusedSwiGLU) {
		return nil
	}
	stored := func(v poot.ValueID) bool {
		pi := p.prod[v]
		for pi >= 0 && p.eqns[pi].Op == poot.Reshape {
			pi = p.prod[p.eqns[pi].Inputs[0]]
		}
		return pi < 0 || p.eqns[pi].Op == poot.MatMul || p.eqns[pi].Op == poot.IndexedMatMul
	}
	return p.fuseComposites(FusedSwiGLU, func(c poot.Composite, _ map[int]int) (*Kernel, []int) {
		if len(c.Operands) != 2 || len(c.Results) != 1 || c.Operands[0] < 0 || c.Operands[1] < 0 || !stored(c.Operands[0]) || !stored(c.Operands[1]) {
			return nil, nil
		}
		gt := p.g.Type(c.Operands[0])
		if gt.DType != poot.F32 || !gt.Equal(p.g.Type(c.Operands[1])) || !gt.Equal(p.g.Type(c.Results[0])) {
			return nil, nil
		}
		s := &Gated{Gate: c.Operands[0], Up: c.Operands[1], Out: c.Results[0], N: int(gt.Shape.Size())}
		return &Kernel{Kind: SwiGLU, Gated: s, Inputs: []poot.ValueID{s.Gate, s.Up}, Outputs: []poot.ValueID{s.Out}}, nil
	})
}

// Norm is the fused RMSNorm of ops.RMSNorm and ops.RMSNormHeads: each of
// Rows rows of D F32 elements of X is scaled by 1/sqrt(mean(x²) + Eps) and
// multiplied by W, an F32 vector of D (by W+1 when OnePlus; W is -1 for
// none), rounded as the body rounds except that the float64 sum of
// squares may be taken in another order, so that a norm may differ from
// the body's in its last bit: a target fuses it only where exactness is
// not asked for. When X is the sum A+B of two F32 values of its shape (a
// residual add) that nothing reads before the norm, the kernel adds them
// too, each row just before it normalizes it, and stores X (A and B are
// -1 otherwise).
type Norm struct {
	X, W, Out, A, B poot.ValueID
	Rows, D         int
	Eps             float64
	OnePlus         bool
}

// rmsnorm replaces each "rmsnorm" composite over an F32 x and an F32 or
// absent weight by one RMSNorm kernel, when the target fuses it.
func (p *planner) rmsnorm() error {
	if !p.target.Fuses(FusedRMSNorm) {
		return nil
	}
	users := p.users()
	return p.fuseComposites(FusedRMSNorm, func(c poot.Composite, pos map[int]int) (*Kernel, []int) {
		eps, ok1 := c.Attrs.Float("epsilon")
		onePlus, ok2 := c.Attrs.Bool("one_plus")
		heads, ok3 := c.Attrs.Int("heads")
		if !ok3 {
			heads = 1
		}
		if !ok1 || !ok2 || heads < 1 || len(c.Operands) != 2 || c.Operands[0] < 0 || len(c.Results) != 1 {
			return nil, nil
		}
		xt := p.g.Type(c.Operands[0])
		if xt.DType != poot.F32 || len(xt.Shape) == 0 || !xt.Equal(p.g.Type(c.Results[0])) || xt.Shape[len(xt.Shape)-1]%heads != 0 {
			return nil, nil
		}
		n := &Norm{X: c.Operands[0], W: c.Operands[1], Out: c.Results[0], A: -1, B: -1, D: xt.Shape[len(xt.Shape)-1] / heads, Eps: eps, OnePlus: onePlus}
		if n.D == 0 {
			return nil, nil
		}
		n.Rows = int(xt.Shape.Size()) / n.D
		in := []poot.ValueID{n.X}
		if n.W >= 0 {
			if wt := p.g.Type(n.W); wt.DType != poot.F32 || !wt.Shape.Equal(poot.Shape{n.D}) {
				return nil, nil
			}
			in = append(in, n.W)
		}
		k := &Kernel{Kind: RMSNorm, Norm: n, Inputs: in, Outputs: []poot.ValueID{n.Out}}
		ai := p.prod[n.X]
		if ai < 0 || p.eqns[ai].Op != poot.Add || !xt.Equal(p.g.Type(p.eqns[ai].Inputs[0])) || !xt.Equal(p.g.Type(p.eqns[ai].Inputs[1])) {
			return k, nil
		}
		if ki, ok := pos[ai]; ok && p.kernels[ki].Kind == Generic && len(p.kernels[ki].Eqns) == 1 && !slices.ContainsFunc(users[n.X], func(u int) bool { return u < c.Lo }) {
			n.A, n.B = p.eqns[ai].Inputs[0], p.eqns[ai].Inputs[1]
			k.Inputs = append(in[1:], n.A, n.B) // X is the kernel's now
			k.Outputs = append(k.Outputs, n.X)
			return k, []int{ki}
		}
		return k, nil
	})
}
