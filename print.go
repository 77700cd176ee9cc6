package poot

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// String prints the graph in its text form, composites folded (see Print).
func (g *Graph) String() string {
	var sb strings.Builder
	_ = g.Print(&sb, PrintOptions{})
	return sb.String()
}

// PrintOptions choose how Print and DOT show a graph.
type PrintOptions struct {
	// Unfold shows every primitive equation of every composite's body;
	// by default a composite is one line (one node) with its attributes.
	Unfold bool
}

// Format writes the graph as text with composites folded; it is Print with
// the zero PrintOptions.
func (g *Graph) Format(w io.Writer) error { return g.Print(w, PrintOptions{}) }

// Print writes the graph as text: a summary line, the inputs, then one
// equation a line grouped under the scope it was recorded in, then the
// outputs, state pairs and witnesses. Unless o.Unfold is set, a composite
// is one line under the scope it was called in, its body left out:
//
//	graph: 2 constants, 1 slot, 0 states, 3 equations (3 dispatches)
//	  %0 = const "w" f32[4,8]
//	  %1 = slot token i32[1] in [0, 511]
//	layer.0/ffn:
//	  %2 : f32[1,8] = gather %0 %1
//	  %5 : f32[1,8] = rmsnorm[epsilon=1e-06] %2 %3  {4 equations}
//	outputs: %5
func (g *Graph) Print(w io.Writer, o PrintOptions) error {
	bw := bufio.NewWriter(w)
	nk := map[Kind]int{}
	for _, v := range g.values {
		nk[v.Kind]++
	}
	fmt.Fprintf(bw, "graph: %s, %s, %s, %s (%d dispatches)",
		plural(nk[Const], "constant"), plural(nk[Slot], "slot"), plural(nk[State], "state"),
		plural(len(g.eqns), "equation"), DispatchCount(g))
	if len(g.composites) > 0 {
		fmt.Fprintf(bw, ", %s", plural(len(g.composites), "composite"))
	}
	bw.WriteByte('\n')
	for i, v := range g.values {
		if v.Kind == Device {
			continue
		}
		fmt.Fprintf(bw, "  %%%d = %v %q %v", i, v.Kind, v.Name, v.Type)
		if v.Ranged() {
			fmt.Fprintf(bw, " in [%d, %d]", v.Min, v.Max)
		}
		bw.WriteByte('\n')
	}
	cur := ScopeID(-1)
	header := func(s ScopeID) {
		if s == cur {
			return
		}
		cur = s
		name := g.scopes[cur]
		if name == "" {
			name = "(root)"
		}
		fmt.Fprintf(bw, "%s:\n", name)
	}
	for i := 0; i < len(g.eqns); i++ {
		e := g.eqns[i]
		if top := g.Top(e.Composite); top > 0 && !o.Unfold {
			c := g.composites[top-1]
			header(c.Scope)
			bw.WriteString("  ")
			bw.WriteString(g.FormatComposite(top))
			bw.WriteByte('\n')
			i = c.Hi - 1
			continue
		}
		header(e.Scope)
		bw.WriteString("  ")
		bw.WriteString(g.FormatEqn(e))
		bw.WriteByte('\n')
	}
	fmt.Fprintf(bw, "outputs:%s\n", idList(g.outputs))
	for _, s := range g.states {
		fmt.Fprintf(bw, "state %q: %%%d <- %%%d\n", g.values[s.In].Name, s.In, s.Out)
	}
	for _, wt := range g.witnesses {
		fmt.Fprintf(bw, "witness %q: %%%d\n", wt.Name, wt.Value)
	}
	return bw.Flush()
}

// FormatComposite formats composite id on one line, as
// "%9 : f32[1,64] = rmsnorm[epsilon=1e-06] %5 %6  {4 equations}"; an absent
// optional operand prints as "_".
func (g *Graph) FormatComposite(id CompositeID) string {
	c := g.Composite(id)
	if c.Name == "" {
		return fmt.Sprintf("composite %d (unknown)", id)
	}
	var sb strings.Builder
	for i, r := range c.Results {
		if i > 0 {
			sb.WriteByte(' ')
		}
		fmt.Fprintf(&sb, "%%%d", r)
	}
	sb.WriteString(" :")
	for i, r := range c.Results {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, " %v", g.Type(r))
	}
	fmt.Fprintf(&sb, " = %s", c.Name)
	if len(c.Attrs) > 0 {
		fmt.Fprintf(&sb, "[%s]", c.Attrs)
	}
	for _, op := range c.Operands {
		if op < 0 {
			sb.WriteString(" _")
		} else {
			fmt.Fprintf(&sb, " %%%d", op)
		}
	}
	fmt.Fprintf(&sb, "  {%s}", plural(c.Hi-c.Lo, "equation"))
	return sb.String()
}

// FormatEqn formats one equation as "%7 : f32[1,64] = mul %5 %6".
func (g *Graph) FormatEqn(e Eqn) string {
	return fmt.Sprintf("%%%d : %v = %v%s%s", e.Out, g.Type(e.Out), e.Op, formatParams(e.Op, e.Params), idList(e.Inputs))
}

func idList(ids []ValueID) string {
	var sb strings.Builder
	for _, id := range ids {
		sb.WriteString(" %")
		sb.WriteString(strconv.Itoa(int(id)))
	}
	return sb.String()
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// DOT writes the equations of scope (all of them for "") as a Graphviz
// digraph: one node per equation and per input it reads, edges along the
// data flow, and one cluster per scope. Unless o.Unfold is set, each
// composite is one node labelled with its name and attributes.
func (g *Graph) DOT(w io.Writer, scope string, o PrintOptions) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("digraph poot {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n")
	prod := g.Producers()
	idx := g.ScopeEqns(scope)
	inScope := make(map[int]bool, len(idx))
	for _, i := range idx {
		inScope[i] = true
	}
	// node names the node equation i is drawn in: its own, or its
	// outermost composite's.
	node := func(i int) string {
		if top := g.Top(g.eqns[i].Composite); top > 0 && !o.Unfold {
			return fmt.Sprintf("c%d", top)
		}
		return fmt.Sprintf("e%d", i)
	}
	type drawn struct {
		name  string
		label string
		reads []ValueID
	}
	byScope := map[ScopeID][]drawn{}
	var order []ScopeID
	add := func(s ScopeID, d drawn) {
		if _, ok := byScope[s]; !ok {
			order = append(order, s)
		}
		byScope[s] = append(byScope[s], d)
	}
	var nodes []drawn
	for k := 0; k < len(idx); k++ {
		i := idx[k]
		e := g.eqns[i]
		if top := g.Top(e.Composite); top > 0 && !o.Unfold {
			c := g.composites[top-1]
			types := make([]string, len(c.Results))
			for j, r := range c.Results {
				types[j] = g.Type(r).String()
			}
			label := c.Name
			if len(c.Attrs) > 0 {
				label += "[" + c.Attrs.String() + "]"
			}
			d := drawn{name: node(i), label: label + "\n" + strings.Join(types, ", "), reads: c.Operands}
			add(c.Scope, d)
			nodes = append(nodes, d)
			for k+1 < len(idx) && idx[k+1] < c.Hi {
				k++
			}
			continue
		}
		d := drawn{name: node(i), label: fmt.Sprintf("%v%s\n%v", e.Op, formatParams(e.Op, e.Params), g.Type(e.Out)), reads: e.Inputs}
		add(e.Scope, d)
		nodes = append(nodes, d)
	}
	for ci, s := range order {
		fmt.Fprintf(bw, "  subgraph cluster_%d {\n    label=%q;\n", ci, g.scopes[s])
		for _, d := range byScope[s] {
			fmt.Fprintf(bw, "    %s [label=%q];\n", d.name, d.label)
		}
		bw.WriteString("  }\n")
	}
	inputs := map[ValueID]bool{}
	for _, d := range nodes {
		for _, in := range d.reads {
			if in < 0 {
				continue
			}
			switch p := prod[in]; {
			case p >= 0 && inScope[p]:
				fmt.Fprintf(bw, "  %s -> %s;\n", node(p), d.name)
			default:
				if !inputs[in] {
					inputs[in] = true
					v := g.values[in]
					label := fmt.Sprintf("%%%d %v", in, v.Type)
					if v.Kind != Device {
						label = fmt.Sprintf("%v %s\n%v", v.Kind, v.Name, v.Type)
					}
					fmt.Fprintf(bw, "  v%d [shape=ellipse, label=%q];\n", in, label)
				}
				fmt.Fprintf(bw, "  v%d -> %s;\n", in, d.name)
			}
		}
	}
	bw.WriteString("}\n")
	return bw.Flush()
}
