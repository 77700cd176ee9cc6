package sim

import (
	"fmt"
	"slices"
	"sort"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/rdu/bundle"
	"github.com/pootlabs/poot/rdu/lang"
)

// CompositionError is a bundle whose programs do not compose: a program
// that does not type, a declared name with no binding (or a binding for no
// name), a binding whose tensor, state or table has another shape than the
// declaration, or a program that reads something other than what the
// program before it leaves.
type CompositionError struct {
	Program string // "embed", "head", or "layer 3 (kind0)"
	Name    string
	Detail  string
	Err     error // the type error, when the program does not type
}

// Error formats the error on one line.
func (e *CompositionError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("rdu/sim: %s: %v", e.Program, e.Err)
	}
	return fmt.Sprintf("rdu/sim: %s: %s: %s", e.Program, e.Name, e.Detail)
}

// Unwrap returns the type error, if any.
func (e *CompositionError) Unwrap() error { return e.Err }

// Check certifies that a bundle composes: every program type-checks; each
// instance (the embedding, every layer through its kind, the head) binds
// exactly the names its program declares, each to a source of the
// declared shape; the runtime inputs are the manifest's; each program
// reads the previous one's result with its type; and the head leaves one
// row of logits and picks a token. It reads no weight.
func Check(b *bundle.Bundle) error {
	if err := b.Check(); err != nil {
		return err
	}
	m := &b.Manifest
	typed := map[string]*lang.Typed{}
	for _, name := range b.Names() {
		p, err := b.Program(name)
		if err != nil {
			return err
		}
		t, err := lang.Check(p)
		if err != nil {
			return &CompositionError{Program: name, Err: err}
		}
		typed[name] = t
	}
	kinds := map[string]bundle.Kind{}
	for _, k := range m.Kinds {
		kinds[k.Name] = k
	}
	inputs := map[string]bool{}
	for _, in := range m.Inputs {
		inputs[in.Name] = true
	}
	prev := lang.Type{}
	check := func(inst, prog string, bind map[string]bundle.Binding, input, output string, first bool) error {
		t := typed[prog]
		fail := func(name, format string, args ...any) error {
			return &CompositionError{Program: inst, Name: name, Detail: fmt.Sprintf(format, args...)}
		}
		var extra []string
		for name := range bind {
			if !slices.Contains(t.Declared, name) {
				extra = append(extra, name)
			}
		}
		if len(extra) > 0 {
			sort.Strings(extra)
			return fail(extra[0], "bound, but the program declares no such name")
		}
		for _, name := range t.Declared {
			bd, ok := bind[name]
			if !ok {
				return fail(name, "declared, but the manifest binds it to nothing")
			}
			ty := t.Types[name]
			if err := checkBinding(m, bd, ty, name == input, prev); err != nil {
				return fail(name, "%v", err)
			}
			if (ty.Scalar || bd.Source == bundle.SourceRuntime) && !inputs[name] {
				return fail(name, "a scalar that is not a runtime input")
			}
			if bd.Source == bundle.SourceInput && name != input {
				return fail(name, "bound to the hidden state, but the program reads it as %q", input)
			}
		}
		if name, detail := recurrentWrites(b.Programs[prog], bind); detail != "" {
			return fail(name, "%s", detail)
		}
		if input == "" && !first {
			return fail("", "reads no hidden state")
		}
		if input != "" {
			if _, ok := bind[input]; !ok {
				return fail(input, "the hidden state is not declared")
			}
		}
		rows := m.Rows()
		if inst == "head" && (m.LastOnly && m.Deployment.Kind == "prefill" || m.Deployment.Kind == "decode") {
			rows = 1
		}
		out, ok := t.Types[output]
		if !ok || out.Scalar || out.Rows != rows {
			return fail(output, "the program leaves no result %q of %d rows", output, rows)
		}
		prev = out
		return nil
	}
	if err := check("embed", m.Embed.Name, m.Embed.Bindings, "", m.Embed.Output, true); err != nil {
		return err
	}
	for _, k := range m.Kinds {
		if err := checkChips(m, k, b.Programs[k.Name]); err != nil {
			return err
		}
	}
	for _, l := range m.Layers {
		k := kinds[l.Kind]
		inst := fmt.Sprintf("layer %d (%s)", l.Layer, k.Name)
		if err := check(inst, k.Name, l.Bindings, k.Input, k.Output, false); err != nil {
			return err
		}
	}
	if err := check("head", m.Head.Name, m.Head.Bindings, m.Head.Input, m.Head.Output, false); err != nil {
		return err
	}
	if m.Output != m.Head.Output {
		return &CompositionError{Program: "head", Name: m.Output, Detail: "the manifest's logits are not the head's result"}
	}
	if nt, ok := typed[m.Head.Name].Types[m.Next]; m.Next != "" && (!ok || !nt.Scalar) {
		return &CompositionError{Program: "head", Name: m.Next, Detail: "the head picks no token (an Int scalar)"}
	}
	if m.Next == "" && m.Deployment.Kind == "decode" {
		return &CompositionError{Program: "head", Detail: "a decode head that picks no token"}
	}
	if m.Deployment.Kind == "batched" && len(m.Nexts) != m.Deployment.Batch {
		return &CompositionError{Program: "head", Detail: fmt.Sprintf("a batched head that picks %d tokens for %d sequences", len(m.Nexts), m.Deployment.Batch)}
	}
	for _, n := range m.Nexts {
		if nt, ok := typed[m.Head.Name].Types[n]; !ok || !nt.Scalar {
			return &CompositionError{Program: "head", Name: n, Detail: "the head picks no token (an Int scalar)"}
		}
	}
	return nil
}

// checkBinding checks one binding against its declared type.
func checkBinding(m *bundle.Manifest, b bundle.Binding, ty lang.Type, isInput bool, prev lang.Type) error {
	switch b.Source {
	case bundle.SourceRuntime:
		if !ty.Scalar && (ty.Elem != lang.Int || ty.Rows != 1 || ty.Cols != m.Rows()) {
			return fmt.Errorf("a runtime input declared as %v", ty)
		}
		return nil
	case bundle.SourceInput:
		if !isInput {
			return fmt.Errorf("bound to the hidden state")
		}
		if ty != prev {
			return fmt.Errorf("declared %v, the program before leaves %v", ty, prev)
		}
		return nil
	case bundle.SourceState:
		if ty.Scalar || ty.Elem != lang.Real || b.State == "" || b.Row < 0 {
			return fmt.Errorf("state %q (from row %d) declared %v", b.State, b.Row, ty)
		}
		if len(b.Slices) > 0 {
			axis, n, err := b.SliceAxis()
			if err != nil {
				return err
			}
			if want := map[string]int{"rows": ty.Rows, "cols": ty.Cols}[axis]; m.Deployment.TP == 0 || n != want {
				return fmt.Errorf("%s of state %q, %d together, declared %v in a deployment over %d chips", axis, b.State, n, ty, m.Deployment.TP)
			}
		}
		if b.Recurrent {
			if b.Row%max(ty.Rows, 1) != 0 {
				return fmt.Errorf("recurrent state %q declared %v from row %d", b.State, ty, b.Row)
			}
			return nil
		}
		if ty.Rows != m.Deployment.Ctx || b.Row%ty.Rows != 0 {
			return fmt.Errorf("state %q (from row %d) declared %v; a cache holds %d positions of Reals", b.State, b.Row, ty, m.Deployment.Ctx)
		}
		return nil
	case bundle.SourceScratch:
		if ty.Scalar || ty.Elem != lang.Real {
			return fmt.Errorf("scratch declared %v", ty)
		}
		return nil
	case bundle.SourceTable:
		t, ok := m.Table(b.Table)
		if !ok || ty.Scalar || t.Rows != ty.Rows || t.Cols != ty.Cols {
			return fmt.Errorf("table %q (%v) does not match the declaration %v", b.Table, ok, ty)
		}
		return nil
	case bundle.SourceWeight:
		if ty.Scalar || ty.Elem != lang.Real {
			return fmt.Errorf("a weight declared %v", ty)
		}
		s, ok := b.StoredShape()
		if _, _, err := b.SliceAxis(); err != nil || !ok || len(b.Slices) > 0 && m.Deployment.TP == 0 {
			return fmt.Errorf("tensor %q stored %v cut in slices %+v", b.Tensor, b.Shape, b.Slices)
		}
		switch {
		case b.Heads != nil:
			r, c := b.Heads.Declared()
			ok = !b.Transposed && len(b.Slices) == 0 && b.Heads.Valid() && r == ty.Rows && c == ty.Cols &&
				(poot.Shape(s)).Size() == int64(b.Heads.Heads*b.Heads.Rows*b.Heads.Cols)
		case b.Transposed:
			ok = len(s) == 2 && s[0] == ty.Cols && s[1] == ty.Rows
		case len(s) == 1:
			ok = ty.Rows == 1 && s[0] == ty.Cols
		case len(s) == 2:
			ok = s[0] == ty.Rows && s[1] == ty.Cols
		case len(s) == 3:
			ok = s[0]*s[1] == ty.Rows && s[2] == ty.Cols
		}
		if !ok {
			return fmt.Errorf("tensor %q stored %v (transposed %v) for a declaration %v", b.Tensor, s, b.Transposed, ty)
		}
		if dt, err := poot.ParseDType(b.DType); err != nil {
			return fmt.Errorf("tensor %q: %w", b.Tensor, err)
		} else if want := (poot.TensorType{DType: dt, Shape: poot.Shape(b.Shape)}).Bytes(); (b.File != "" || len(b.Parts) > 0) && b.Bytes != want {
			return fmt.Errorf("tensor %q is %s%v, %d bytes, but its range holds %d", b.Tensor, b.DType, s, want, b.Bytes)
		}
		if b.Heads != nil && b.Storage != bundle.StorageDense {
			return fmt.Errorf("tensor %q cut head by head is declared %s, not dense", b.Tensor, b.Storage)
		}
		switch b.Storage {
		case bundle.StorageDense:
		case bundle.StorageQ8_0:
			if b.DType != "q8_0" {
				return fmt.Errorf("declared Q8_0 but stored %s", b.DType)
			}
		default:
			return fmt.Errorf("storage %q", b.Storage)
		}
		return nil
	}
	return fmt.Errorf("unknown source %q", b.Source)
}

// checkChips certifies a tensor-parallel kind's placement: a statement
// runs on the chip of the name it binds or writes (the spine when the
// placement lists none) and reads only that chip's names and the
// spine's, except an all-reduce, whose folds sum one partial of each chip
// in chip order on the spine. One chip's bundle places nothing.
func checkChips(m *bundle.Manifest, k bundle.Kind, p *lang.Program) error {
	tp := m.Deployment.TP
	if tp == 0 {
		if len(k.Placement) > 0 || len(k.AllReduce) > 0 {
			return &CompositionError{Program: k.Name, Detail: "a one-chip bundle whose kind places names on chips"}
		}
		return nil
	}
	fail := func(i int, name, format string, args ...any) error {
		return &CompositionError{Program: k.Name, Name: name, Detail: fmt.Sprintf("statement %d: ", i) + fmt.Sprintf(format, args...)}
	}
	chip := func(n string) int {
		if c, ok := k.Placement[n]; ok {
			return c
		}
		return -1
	}
	for n, c := range k.Placement {
		if c < 0 || c >= tp {
			return fail(0, n, "placed on chip %d of %d", c, tp)
		}
	}
	// want[binder] is the fold (or one-chip copy) an all-reduce writes.
	want := map[string]lang.Expr{}
	for _, ar := range k.AllReduce {
		if len(ar.Partials) != tp || len(ar.Folds) != tp-1 || chip(ar.Out) != -1 {
			return fail(0, ar.Out, "an all-reduce of %d partials in %d folds over %d chips", len(ar.Partials), len(ar.Folds), tp)
		}
		for c, part := range ar.Partials {
			if chip(part) != c {
				return fail(0, part, "partial %d of the all-reduce into %s is on chip %d", c, ar.Out, chip(part))
			}
		}
		if tp == 1 {
			want[ar.Out] = lang.Scaled{X: ar.Partials[0], By: 1}
		}
		acc := ar.Partials[0]
		for i, f := range ar.Folds {
			if chip(f) != -1 || i == tp-2 && f != ar.Out {
				return fail(0, f, "a fold of the all-reduce into %s", ar.Out)
			}
			want[f] = lang.Binary{Op: lang.Plus, A: acc, B: ar.Partials[i+1]}
			acc = f
		}
	}
	for i, s := range p.Stmts {
		var binder string
		switch s := s.(type) {
		case lang.Let:
			binder = s.Name
			if w, ok := want[binder]; ok {
				if s.Expr != w {
					return fail(i, binder, "the all-reduce's fold is not the sum of the partials in chip order")
				}
				delete(want, binder)
				continue
			}
		case lang.SetRow:
			binder = s.Target
		case lang.SetRows:
			binder = s.Target
		default:
			continue
		}
		at := chip(binder)
		var bad string
		lang.Rename(&lang.Program{Stmts: []lang.Stmt{s}}, func(n string) string {
			if c := chip(n); c != -1 && c != at && bad == "" {
				bad = n
			}
			return n
		})
		if bad != "" {
			where := "the spine"
			if at >= 0 {
				where = fmt.Sprintf("chip %d", at)
			}
			return fail(i, binder, "runs on %s but reads %s of chip %d outside an all-reduce", where, bad, chip(bad))
		}
	}
	for n := range want {
		return fail(len(p.Stmts), n, "the all-reduce's fold is not written")
	}
	return nil
}

// recurrentWrites checks that the recurrent states of a program are
// written by its recurrent statements only, and that a recurrent statement
// writes only a recurrent state: a cache of positions is neither the
// window of a convolution nor the matrices of a delta rule.
func recurrentWrites(p *lang.Program, bind map[string]bundle.Binding) (string, string) {
	if p == nil {
		return "", ""
	}
	for _, s := range p.Stmts {
		state := ""
		switch s := s.(type) {
		case lang.Let:
			switch e := s.Expr.(type) {
			case lang.CausalConv:
				state = e.State
			case lang.GatedDelta:
				state = e.State
			}
			if state != "" && !bind[state].Recurrent {
				return state, "written by a recurrent statement, but not bound as a recurrent state"
			}
		case lang.SetRow:
			state = s.Target
		case lang.SetRows:
			state = s.Target
		}
		if _, ok := s.(lang.Let); !ok && state != "" && bind[state].Recurrent {
			return state, "a recurrent state written a row at a time"
		}
	}
	return "", ""
}
