package cpu

import (
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
	if rk.r.T < 2 || rk.r.T*rk.r.Heads*rk.r.D < 1<<15 {
		rk.rows(0, rk.r.T)
		return nil
	}
	rk.x.pool.Run(rk.r.T, rk.fn)
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
