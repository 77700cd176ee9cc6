package familytest

import (
	"errors"
	"testing"

	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/interp"
)

// Report collects the figures of one reference check.
type Report struct {
	Prefill   float64 // max |Δlogit| of one all-token prefill vs the reference
	Decode    float64 // max |Δlogit| of prefill(prompt) + single-token decodes
	Greedy    int     // greedy tokens that match the reference, in order
	Positions int
}

// CheckReference runs the model over ref's tokens and compares with
// llama.cpp: one prefill returning every position's logits, then a greedy
// run (prefill of the prompt, then one decode step per token). tol bounds
// the absolute logit difference; with greedy set, every greedy token must
// match (otherwise the matching prefix is only reported).
func CheckReference(t *testing.T, m families.Model, bind Binder, ref *Ref, capacity int, tol float64, greedy bool) Report {
	t.Helper()
	var rep Report
	toks := ref.Tokens()
	n := len(ref.Logits)
	rep.Positions = n
	vocab := m.Schema().Vocab

	r := NewRunner(m, bind)
	shape := families.StepShape{Rows: 1, New: n, Capacity: capacity, Logits: families.AllTokens}
	logits, err := r.Step(shape, toks[:n], Seq(0, n), nil, nil)
	if err != nil {
		t.Fatalf("prefill: %v", err)
	}
	first := -1 // the first position over tolerance; the maximum is over all
	for i := range n {
		d := MaxDiff(logits[i*vocab:(i+1)*vocab], ref.Logits[i])
		rep.Prefill = max(rep.Prefill, d)
		if !(d <= tol) && first < 0 {
			first = i
		}
	}
	if first >= 0 {
		t.Errorf("prefill: max |Δlogit| %.3g over %d positions > %.3g, first at position %d", rep.Prefill, n, tol, first)
	}

	r = NewRunner(m, bind)
	np := len(ref.Prompt)
	last, err := r.Step(families.StepShape{Rows: 1, New: np, Capacity: capacity}, ref.Prompt, Seq(0, np), nil, nil)
	if err != nil {
		t.Fatalf("prefill prompt: %v", err)
	}
	rep.Decode = MaxDiff(last, ref.Logits[np-1])
	matching := true
	for i, want := range ref.Generated {
		got := ArgMax(last)
		if got != want && matching {
			if greedy {
				t.Errorf("greedy token %d: got %d, llama.cpp %d", i, got, want)
			}
			matching = false
		}
		if matching {
			rep.Greedy++
		}
		if np+i >= n {
			break
		}
		// Feed the reference token, so that one divergence does not hide
		// the logits of every later position.
		last, err = r.Step(families.StepShape{Rows: 1, New: 1, Capacity: capacity}, []int32{want}, []int32{int32(np + i)}, nil, nil)
		if err != nil {
			t.Fatalf("decode %d: %v", i, err)
		}
		d := MaxDiff(last, ref.Logits[np+i])
		rep.Decode = max(rep.Decode, d)
		if d > tol {
			t.Errorf("decode position %d: max |Δlogit| %.3g > %.3g", np+i, d, tol)
		}
	}
	t.Logf("%s: %d positions: prefill max|Δ| %.3g, decode max|Δ| %.3g, greedy %d/%d tokens match",
		ref.Model, n, rep.Prefill, rep.Decode, rep.Greedy, len(ref.Generated))
	return rep
}

// CheckLayouts checks the step laws on toks: prefill of N then a decode
// equals one prefill of N+1; prefill in chunks of 1 and of 3 tokens gives
// every position one prefill gives (toks needs at least 6 tokens: two rows
// of three for the batched law); two rows in one step equal each row run
// alone; a paged cache (with pages handed out in a scrambled order) equals
// a contiguous one, and rows at different positions share a paged step. Every
// comparison allows only float noise (1e-5). It runs on the oracle;
// CheckLayoutsOn runs the same laws on any interpreter.
func CheckLayouts(t *testing.T, m families.Model, bind Binder, toks []int32, capacity int) {
	t.Helper()
	CheckLayoutsOn(t, nil, m, bind, toks, capacity, 1e-5)
}

// CheckLayoutsOn checks CheckLayouts' laws on the interpreter in (the
// oracle when nil), each comparison within tol. When the interpreter
// refuses a law's step shape (an error that is interp.ErrUnsupported, such
// as a batch of rows the streamed lowering does not write), the test is
// skipped from that law on with the refusal as its reason; any other error
// fails it. The oracle and the default cpu backend must run every family:
// a refusal by either fails the test.
func CheckLayoutsOn(t *testing.T, in interp.Interpreter, m families.Model, bind Binder, toks []int32, capacity int, tol float64) {
	t.Helper()
	NewRunner := func(m families.Model, bind Binder) *Runner {
		r := NewRunner(m, bind)
		r.Interp = in
		return r
	}
	fatal := func(err error) {
		t.Helper()
		if errors.Is(err, interp.ErrUnsupported) && !MustRun(in) {
			t.Skipf("%v", err)
		}
		t.Fatal(err)
	}
	vocab := m.Schema().Vocab
	n := len(toks)
	if n < 6 {
		t.Fatalf("need at least 6 tokens, have %d", n)
	}
	all := families.StepShape{Rows: 1, New: n, Capacity: capacity, Logits: families.AllTokens}
	full, err := NewRunner(m, bind).Step(all, toks, Seq(0, n), nil, nil)
	if err != nil {
		fatal(err)
	}
	lastRow := full[(n-1)*vocab:]

	// Prefill N-1, decode 1.
	r := NewRunner(m, bind)
	if _, err := r.Step(families.StepShape{Rows: 1, New: n - 1, Capacity: capacity}, toks[:n-1], Seq(0, n-1), nil, nil); err != nil {
		fatal(err)
	}
	dec, err := r.Step(families.StepShape{Rows: 1, New: 1, Capacity: capacity}, toks[n-1:], []int32{int32(n - 1)}, nil, nil)
	if err != nil {
		fatal(err)
	}
	if d := MaxDiff32(dec, lastRow); d > tol {
		t.Errorf("prefill %d + decode 1 vs prefill %d: max |Δ| %.3g", n-1, n, d)
	}

	// Prefill in chunks of 1 and of 3 tokens (the last chunk shorter),
	// each chunk's logits at every position: the same rows as one prefill.
	for _, size := range []int{1, 3} {
		r := NewRunner(m, bind)
		for at := 0; at < n; at += size {
			k := min(size, n-at)
			got, err := r.Step(families.StepShape{Rows: 1, New: k, Capacity: capacity, Logits: families.AllTokens}, toks[at:at+k], Seq(at, k), nil, nil)
			if err != nil {
				fatal(err)
			}
			if d := MaxDiff32(got, full[at*vocab:(at+k)*vocab]); d > tol {
				t.Errorf("prefill in chunks of %d: positions %d..%d differ from one prefill by %.3g", size, at, at+k-1, d)
			}
		}
	}

	// Two rows, contiguous: row 0 is toks, row 1 is toks reversed; two
	// steps of 3 tokens each, compared with each row alone.
	h := 3
	rev := make([]int32, n)
	for i := range toks {
		rev[i] = toks[n-1-i]
	}
	alone := func(seq []int32) ([]float32, []float32) {
		r := NewRunner(m, bind)
		s := families.StepShape{Rows: 1, New: h, Capacity: capacity, Logits: families.AllTokens}
		a, err := r.Step(s, seq[:h], Seq(0, h), nil, nil)
		if err != nil {
			fatal(err)
		}
		b, err := r.Step(s, seq[h:2*h], Seq(h, h), nil, nil)
		if err != nil {
			fatal(err)
		}
		return a, b
	}
	a0, b0 := alone(toks)
	a1, b1 := alone(rev)
	r = NewRunner(m, bind)
	two := families.StepShape{Rows: 2, New: h, Capacity: capacity, Logits: families.AllTokens}
	ab1, err := r.Step(two, cat(toks[:h], rev[:h]), cat(Seq(0, h), Seq(0, h)), nil, nil)
	if err != nil {
		fatal(err)
	}
	ab2, err := r.Step(two, cat(toks[h:2*h], rev[h:2*h]), cat(Seq(h, h), Seq(h, h)), nil, nil)
	if err != nil {
		fatal(err)
	}
	if d := max(MaxDiff32(ab1, catf(a0, a1)), MaxDiff32(ab2, catf(b0, b1))); d > tol {
		t.Errorf("batch of two rows vs rows alone: max |Δ| %.3g", d)
	}

	// Paged: page size 4, pages of the row handed out in reverse order
	// inside a pool with spare pages.
	const page = 4
	pages := (capacity + page - 1) / page
	pool := pages + 3
	slotMap := make([]int32, capacity)
	for p := range capacity {
		phys := pool - 1 - p/page
		slotMap[p] = int32(phys*page + p%page)
	}
	write := func(pos []int32) []int32 {
		out := make([]int32, len(pos))
		for i, p := range pos {
			out[i] = slotMap[p]
		}
		return out
	}
	paged := families.StepShape{Rows: 1, New: n - 1, Capacity: capacity, Layout: families.Paged, PageSize: page, Pages: pool}
	r = NewRunner(m, bind)
	pre := Seq(0, n-1)
	if _, err := r.Step(paged, toks[:n-1], pre, slotMap, write(pre)); err != nil {
		fatal(err)
	}
	paged.New = 1
	pdec, err := r.Step(paged, toks[n-1:], []int32{int32(n - 1)}, slotMap, write([]int32{int32(n - 1)}))
	if err != nil {
		fatal(err)
	}
	if d := MaxDiff32(pdec, dec); d > tol {
		t.Errorf("paged vs contiguous decode: max |Δ| %.3g", d)
	}
	pagedAll := families.StepShape{Rows: 1, New: n, Capacity: capacity, Layout: families.Paged, PageSize: page, Pages: pool, Logits: families.AllTokens}
	pfull, err := NewRunner(m, bind).Step(pagedAll, toks, Seq(0, n), slotMap, write(Seq(0, n)))
	if err != nil {
		fatal(err)
	}
	if d := MaxDiff32(pfull, full); d > tol {
		t.Errorf("paged vs contiguous prefill (every position): max |Δ| %.3g", d)
	}

	// Two rows at different positions in one paged step: row 0 decodes
	// toks[n-1] at position n-1 after a prefill of n-1 tokens, row 1 starts
	// rev at position 0, in pages of its own.
	r = NewRunner(m, bind)
	one := families.StepShape{Rows: 1, New: n - 1, Capacity: capacity, Layout: families.Paged, PageSize: page, Pages: 2 * pool}
	if _, err := r.Step(one, toks[:n-1], pre, slotMap, write(pre)); err != nil {
		fatal(err)
	}
	map1 := make([]int32, capacity)
	for p := range map1 {
		map1[p] = slotMap[p] + int32(pool*page)
	}
	mixed := families.StepShape{Rows: 2, New: 1, Capacity: capacity, Layout: families.Paged, PageSize: page, Pages: 2 * pool}
	got, err := r.Step(mixed, []int32{toks[n-1], rev[0]}, []int32{int32(n - 1), 0}, cat(slotMap, map1), []int32{slotMap[n-1], map1[0]})
	if err != nil {
		fatal(err)
	}
	first, err := NewRunner(m, bind).Step(families.StepShape{Rows: 1, New: 1, Capacity: capacity}, rev[:1], []int32{0}, nil, nil)
	if err != nil {
		fatal(err)
	}
	if d := max(MaxDiff32(got[:vocab], dec), MaxDiff32(got[vocab:], first)); d > tol {
		t.Errorf("rows at different positions in one step vs alone: max |Δ| %.3g", d)
	}
}

// MustRun reports whether the interpreter in (the oracle when nil) must
// run every family: the oracle and the default cpu backend.
func MustRun(in interp.Interpreter) bool {
	return in == nil || in.Name() == "oracle" || in.Name() == "cpu"
}

func cat(a, b []int32) []int32      { return append(append([]int32{}, a...), b...) }
func catf(a, b []float32) []float32 { return append(append([]float32{}, a...), b...) }
