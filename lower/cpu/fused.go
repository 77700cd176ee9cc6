package cpu

import (
	"math"

	"github.com/pootlabs/poot/kernels"
	"github.com/pootlabs/poot/lower"
)

// rope is the fused rotary embedding (lower.Rotary): each row copied to the
// output and rotated there by package kernels' RoPE, which rounds as the
// composite's body does; rows split across the pool when there are enough
// of them to pay for waking it.
type rope struct {
	x                 *Exec
	r                 lower.Rotary
	in, cos, sin, out *buf
	fn                func(lo, hi int)
}

func compileRope(c *compiler, k *lower.Kernel) func() error {
	r := k.Rotary
	rk := &rope{x: c.x, r: *r, in: c.bufs[r.X], cos: c.bufs[r.Cos], sin: c.bufs[r.Sin], out: c.bufs[r.Out]}
	rk.fn = rk.rows
	return rk.run
}

func (rk *rope) run() error {
	if rk.r.T*rk.r.Heads*rk.r.D < 1<<15 {
		rk.rows(0, rk.r.T)
	} else {
		rk.x.pool.Run(rk.r.T, rk.fn) // one row runs on the caller
	}
	return nil
}

func (rk *rope) rows(lo, hi int) {
	r := &rk.r
	half, w := r.N/2, r.Heads*r.D
	for t := lo; t < hi; t++ {
		o := rk.out.f[t*w : (t+1)*w]
		copy(o, rk.in.f[t*w:(t+1)*w])
		_ = kernels.RoPE(o, r.D, rk.cos.f[t*half:(t+1)*half], rk.sin.f[t*half:(t+1)*half], !r.Interleaved) // shapes checked by lower.RotaryOf
	}
}

// glu is the fused SwiGLU (lower.Gated), over the chunks a program would
// take (256 elements, parts cut by partSpan): each chunk by
// kernels.SiLUMulInRange where its gates allow, otherwise by the steps the
// body's program runs there (exp by expf, or in float64 when exact), so
// that it agrees with that program bit for bit.
type glu struct {
	x             *Exec
	n, parts      int
	gate, up, out *buf
	exact         bool
	fn            func(lo, hi int)
}

func compileGLU(c *compiler, k *lower.Kernel) func() error {
	s := k.Gated
	gk := &glu{x: c.x, n: s.N, parts: c.x.pool.Workers(), gate: c.bufs[s.Gate], up: c.bufs[s.Up], out: c.bufs[s.Out], exact: c.exact}
	gk.fn = gk.do
	return gk.run
}

func (gk *glu) run() error {
	if gk.n*5 < 1<<14 || gk.parts == 1 { // as a program of its five operations
		gk.span(0, gk.n)
	} else {
		gk.x.pool.Run(gk.parts, gk.fn)
	}
	return nil
}

func (gk *glu) do(lo, hi int) {
	for p := lo; p < hi; p++ {
		gk.span(partSpan(gk.n, gk.parts, p))
	}
}

func (gk *glu) span(a, b int) {
	for c0 := a; c0 < b; c0 += chunk {
		c1 := min(c0+chunk, b)
		g, u, o := gk.gate.f[c0:c1], gk.up.f[c0:c1], gk.out.f[c0:c1]
		if !gk.exact && kernels.SiLUMulInRange(o, g, u) {
			continue
		}
		for i, v := range g {
			e := expf(-v)
			if gk.exact {
				e = float32(math.Exp(float64(-v)))
			}
			o[i] = v / (1 + e) * u[i]
		}
	}
}

// norm is the fused RMSNorm (lower.Norm): each row by kernels.RMSNorm,
// after kernels.Add where it takes the residual add too, rows split across
// the pool when there are enough of them to pay for waking it. A OnePlus
// weight plus one is formed each run, as the body forms it.
type norm struct {
	x                *Exec
	n                lower.Norm
	in, w, out, a, b *buf
	w1               []float32 // W+1, for OnePlus
	fn               func(lo, hi int)
}

func compileNorm(c *compiler, k *lower.Kernel) func() error {
	n := k.Norm
	nk := &norm{x: c.x, n: *n, in: c.bufs[n.X], out: c.bufs[n.Out]}
	if n.W >= 0 {
		nk.w = c.bufs[n.W]
	}
	if n.A >= 0 {
		nk.a, nk.b = c.bufs[n.A], c.bufs[n.B]
	}
	if n.OnePlus {
		nk.w1 = make([]float32, n.D)
	}
	nk.fn = nk.rows
	return nk.run
}

func (nk *norm) run() error {
	if nk.w1 != nil && nk.w != nil {
		for i, v := range nk.w.f[:nk.n.D] {
			nk.w1[i] = v + 1
		}
	}
	if nk.n.Rows*nk.n.D < 1<<15 || nk.n.Rows < 2 {
		nk.rows(0, nk.n.Rows)
	} else {
		nk.x.pool.Run(nk.n.Rows, nk.fn)
	}
	return nil
}

func (nk *norm) rows(lo, hi int) {
	var w []float32
	switch {
	case nk.w1 != nil && nk.w != nil:
		w = nk.w1
	case nk.w != nil:
		w = nk.w.f[:nk.n.D]
	}
	D := nk.n.D
	for r := lo; r < hi; r++ {
		if nk.a != nil {
			_ = kernels.Add(nk.in.f[r*D:(r+1)*D], nk.a.f[r*D:(r+1)*D], nk.b.f[r*D:(r+1)*D])
		}
		_ = kernels.RMSNorm(nk.out.f[r*D:(r+1)*D], nk.in.f[r*D:(r+1)*D], w, float32(nk.n.Eps)) // shapes checked by the planner
	}
}
