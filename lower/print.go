package lower

import (
	"fmt"
	"strings"

	"github.com/pootlabs/poot"
)

// String prints the plan: the arena size, then one line per kernel with
// its name, the scopes of its equations, its inputs and outputs with their
// storage, and its bytes and flops.
func (p *Plan) String() string {
	var sb strings.Builder
	var bytes, flops int64
	for _, k := range p.Kernels {
		bytes += k.Bytes
		flops += k.Flops
	}
	fmt.Fprintf(&sb, "plan for %s: %d kernels, %d init, arena %d bytes, %d bytes moved, %d flops per step\n",
		p.Target.Name, len(p.Kernels), len(p.Inits), p.ArenaBytes, bytes, flops)
	for i, k := range p.Kernels {
		fmt.Fprintf(&sb, "%4d %-24s %-28s %s -> %s  %dB %dF", i, k.Name(), p.scopes(k),
			p.values(k.Inputs), p.values(k.Outputs), k.Bytes, k.Flops)
		if k.Program != nil {
			fmt.Fprintf(&sb, "  [%d eqns, %d loads, %d ops, %d stores over %d]", len(k.Eqns), len(k.Program.Loads), len(k.Program.Code), len(k.Program.Stores), k.Program.Size)
		}
		if k.Kind == Rows {
			fmt.Fprintf(&sb, "  [%d eqns in %d parts, rows of %d]", len(k.Eqns), len(k.Parts), k.RowLen)
		}
		if a := k.Attention; a != nil {
			fmt.Fprintf(&sb, "  [R=%d T=%d S=%d H=%d Hkv=%d n_rep=%d D=%d Dv=%d scale=%g cap=%g sinks=%v]", a.R, a.T, a.S, a.Heads, a.KVHeads, a.Rep, a.D, a.Dv, a.Scale, a.SoftCap, a.Sinks >= 0)
		}
		if r := k.Rotary; r != nil {
			fmt.Fprintf(&sb, "  [T=%d H=%d D=%d dims=%d interleaved=%v]", r.T, r.Heads, r.D, r.N, r.Interleaved)
		}
		sb.WriteByte('\n')
	}
	for _, w := range p.Writebacks {
		fmt.Fprintf(&sb, "     writeback %s <- %s", p.Graph.Value(w.In).Name, p.value(w.Out))
		if w.Staged {
			fmt.Fprintf(&sb, " (staged @%d)", w.Stage)
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}

// scopes lists the distinct scopes of a kernel's equations.
func (p *Plan) scopes(k *Kernel) string {
	var seen []string
	for _, i := range k.Eqns {
		s := p.Graph.Scope(p.Graph.Eqn(i).Scope)
		if s == "" {
			s = "-"
		}
		if len(seen) == 0 || seen[len(seen)-1] != s {
			seen = append(seen, s)
		}
	}
	if len(seen) > 2 {
		seen = append(seen[:1], fmt.Sprintf("…(%d scopes)", len(seen)-1))
	}
	return strings.Join(seen, ",")
}

func (p *Plan) value(id poot.ValueID) string {
	l := p.Locs[id]
	t := p.Graph.Type(id)
	switch l.Space {
	case Arena:
		return fmt.Sprintf("%%%d:%v@%d", id, t, l.Offset)
	case None:
		return fmt.Sprintf("%%%d:%v", id, t)
	}
	return fmt.Sprintf("%%%d:%v@%s(%s)", id, t, l.Space, p.Graph.Value(l.Root).Name)
}

func (p *Plan) values(ids []poot.ValueID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = p.value(id)
	}
	return "(" + strings.Join(s, " ") + ")"
}
