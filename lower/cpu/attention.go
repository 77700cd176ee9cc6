package cpu

import (
	"math"

	"github.com/pootlabs/poot/lower"
)

// flash is the fused attention kernel: for every query row and key/value
// head, one pass over the cache rows with an online softmax for the Rep
// query heads that share them, reading K and V rows in place.
type flash struct {
	x                    *Exec
	a                    lower.Attention
	q, k, v, mask, sinks *buf
	out                  *buf
	acc                  [][]float32 // per part: Rep·Dv accumulators
	m, l                 [][]float32 // per part: Rep running maxima and sums
	fn                   func(lo, hi int)
	invCap               float32
}

func compileFlash(c *compiler, k *lower.Kernel) (func() error, error) {
	a := *k.Attention
	f := &flash{x: c.x, a: a, q: c.bufs[a.Q], k: c.bufs[a.K], v: c.bufs[a.V], mask: c.bufs[a.Mask], out: c.bufs[a.Out]}
	if a.Sinks >= 0 {
		f.sinks = c.bufs[a.Sinks]
	}
	if a.SoftCap != 0 {
		f.invCap = float32(1 / float64(a.SoftCap))
	}
	for range c.x.pool.Workers() {
		f.acc = append(f.acc, make([]float32, a.Rep*a.Dv))
		f.m = append(f.m, make([]float32, a.Rep))
		f.l = append(f.l, make([]float32, a.Rep))
	}
	f.fn = f.do
	return f.run, nil
}

func (f *flash) units() int { return f.a.R * f.a.T * f.a.KVHeads }

func (f *flash) run() error {
	parts := len(f.acc)
	if parts == 1 || f.units() < 2 {
		f.part(0, 0, f.units())
		return nil
	}
	f.x.pool.Run(parts, f.fn)
	return nil
}

func (f *flash) do(lo, hi int) {
	n, parts := f.units(), len(f.acc)
	for p := lo; p < hi; p++ {
		f.part(p, n*p/parts, n*(p+1)/parts)
	}
}

// part computes units [u0, u1), a unit being one query row and one
// key/value head.
func (f *flash) part(p, u0, u1 int) {
	a := &f.a
	D, Dv, rep := a.D, a.Dv, a.Rep
	acc, m, l := f.acc[p], f.m[p], f.l[p]
	qw, kw, vw := a.Heads*D, a.KVHeads*D, a.KVHeads*Dv
	for u := u0; u < u1; u++ {
		g := u % a.KVHeads
		row := u / a.KVHeads // r·T + t
		r := row / a.T
		clear(acc)
		for i := range rep {
			if f.sinks != nil {
				m[i], l[i] = f.sinks.f[g*rep+i], 1
			} else {
				m[i], l[i] = float32(math.Inf(-1)), 0
			}
		}
		mask := f.mask.b[row*a.S : (row+1)*a.S]
		for s := 0; s < a.S; s++ {
			if mask[s] == 0 {
				continue
			}
			kr := f.k.f[(r*a.S+s)*kw+g*D : (r*a.S+s)*kw+(g+1)*D]
			vr := f.v.f[(r*a.S+s)*vw+g*Dv : (r*a.S+s)*vw+(g+1)*Dv]
			for i := range rep {
				h := g*rep + i
				q := f.q.f[row*qw+h*D : row*qw+(h+1)*D]
				sc := float32(dot64(q, kr)) * a.Scale
				if a.SoftCap != 0 {
					sc = float32(math.Tanh(float64(sc*f.invCap))) * a.SoftCap
				}
				o := acc[i*Dv : (i+1)*Dv]
				if sc > m[i] {
					c := float32(math.Exp(float64(m[i] - sc)))
					if l[i] != 0 {
						for j := range o {
							o[j] *= c
						}
					}
					l[i] *= c
					m[i] = sc
				}
				e := float32(math.Exp(float64(sc - m[i])))
				l[i] += e
				vr := vr[:len(o)]
				for j := range o {
					o[j] += e * vr[j]
				}
			}
		}
		for i := range rep {
			h := g*rep + i
			dst := f.out.f[row*a.Heads*Dv+h*Dv : row*a.Heads*Dv+(h+1)*Dv]
			inv := 1 / l[i]
			if l[i] == 0 {
				inv = float32(math.NaN())
			}
			for j, v := range acc[i*Dv : (i+1)*Dv] {
				dst[j] = v * inv
			}
		}
	}
}
