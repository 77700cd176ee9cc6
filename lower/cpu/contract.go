package cpu

import (
	"fmt"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/internal/hostexec"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/kernels"
)

// contract is the fast MatMul with a rank-2 weight: package kernels'
// products, activations prepared (quantized for packed weights) once per
// step, weight rows split across the pool. Consecutive contractions of the
// same activations with weights that take the same preparation (a layer's
// Q, K and V projections, an FFN's gate and up) share it: the first
// prepares, the others only read (shared). A decode step's preparation of
// a Q4_K product took 4-6 us on the Zen 4, as long as a tenth of the
// product, with the other workers waiting. Every contraction of a plan
// prepares into the same Acts (compiler.acts): they run one at a time,
// and a chain's preparation is dead once the next chain prepares, so the
// prepared activations (a prompt's quantized or transposed rows, T by K)
// take the room of one product, not of every product of every layer.
type contract struct {
	x       *Exec
	a, w, o *buf
	in      poot.ValueID
	wt      poot.DType
	prep    poot.DType // the dtype acts is prepared for: wt, or the first sharer's
	t, k, n int
	acts    *kernels.Acts
	shared  bool
}

func (ct *contract) run() error {
	if !ct.shared {
		if err := ct.acts.Prepare(ct.wt, ct.a.f[:ct.t*ct.k], ct.t, ct.k); err != nil {
			return err
		}
	}
	pool := ct.x.pool
	if ct.t*ct.n*ct.k < 1<<16 {
		pool = nil // waking the workers costs more than the product
	}
	return kernels.MatMul(pool, ct.wt, ct.o.f, ct.w.b, ct.acts, ct.n)
}

func compileContract(c *compiler, e *poot.Eqn) (func() error, error) {
	as, bs := c.shape(e.Inputs[0]), c.shape(e.Inputs[1])
	k := as[len(as)-1]
	ct := &contract{x: c.x, a: c.in(e, 0), w: c.in(e, 1), o: c.out(e), in: e.Inputs[0], wt: c.dtype(e.Inputs[1]),
		t: int(as.Size()) / k, k: k, n: bs[0], acts: c.acts}
	ct.prep = ct.wt
	if l := c.last; l != nil && l.in == ct.in && l.t == ct.t && l.k == ct.k && kernels.SamePreparation(l.prep, ct.wt) {
		ct.acts, ct.shared, ct.prep = l.acts, true, l.prep
	}
	c.last = ct
	return ct.run, nil
}

// indexed is the fast IndexedMatMul: each row's product with its own
// expert's matrix through package kernels, the expert's rows split across
// the pool.
type indexed struct {
	x          *Exec
	a, w, idx  *buf
	o          *buf
	wt         poot.DType
	r, k, n, e int
	expert     int // bytes of one expert's matrix
	acts       kernels.Acts
}

func (ix *indexed) run() error {
	if i := hostexec.OutOfRange(ix.idx.i[:ix.r], ix.e); i >= 0 {
		return fmt.Errorf("%w: row %d selects expert %d of %d", interp.ErrIndexRange, i, ix.idx.i[i], ix.e)
	}
	pool := ix.x.pool
	if ix.n*ix.k < 1<<16 {
		pool = nil
	}
	for i := 0; i < ix.r; i++ {
		ex := int(ix.idx.i[i])
		if err := ix.acts.Prepare(ix.wt, ix.a.f[i*ix.k:(i+1)*ix.k], 1, ix.k); err != nil {
			return err
		}
		w := ix.w.b[ex*ix.expert : (ex+1)*ix.expert]
		if err := kernels.MatMul(pool, ix.wt, ix.o.f[i*ix.n:(i+1)*ix.n], w, &ix.acts, ix.n); err != nil {
			return err
		}
	}
	return nil
}

func compileIndexed(c *compiler, e *poot.Eqn) (func() error, error) {
	xs, ws := c.shape(e.Inputs[0]), c.shape(e.Inputs[1])
	wt := c.dtype(e.Inputs[1])
	ix := &indexed{x: c.x, a: c.in(e, 0), w: c.in(e, 1), idx: c.in(e, 2), o: c.out(e), wt: wt,
		r: xs[0], k: xs[1], e: ws[0], n: ws[1], expert: ws[1] * int(wt.RowBytes(int64(ws[2])))}
	return ix.run, nil
}
