package poot

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// String prints the graph in its text form (see Format).
func (g *Graph) String() string {
	var sb strings.Builder
	_ = g.Format(&sb)
	return sb.String()
}

// Format writes the graph as text: a summary line, the inputs, then one
// equation a line grouped under the scope it was recorded in, then the
// outputs, state pairs and witnesses:
//
//	graph: 2 constants, 1 slot, 0 states, 3 equations (3 dispatches)
//	  %0 = const "w" f32[4,8]
//	  %1 = slot token i32[1] in [0, 511]
//	layer.0/ffn:
//	  %2 : f32[1,8] = gather %0 %1
//	outputs: %4
func (g *Graph) Format(w io.Writer) error {
	bw := bufio.NewWriter(w)
	nk := map[Kind]int{}
	for _, v := range g.values {
		nk[v.Kind]++
	}
	fmt.Fprintf(bw, "graph: %s, %s, %s, %s (%d dispatches)\n",
		plural(nk[Const], "constant"), plural(nk[Slot], "slot"), plural(nk[State], "state"),
		plural(len(g.eqns), "equation"), DispatchCount(g))
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
	for _, e := range g.eqns {
		if e.Scope != cur {
			cur = e.Scope
			name := g.scopes[cur]
			if name == "" {
				name = "(root)"
			}
			fmt.Fprintf(bw, "%s:\n", name)
		}
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
// data flow, and one cluster per scope.
func (g *Graph) DOT(w io.Writer, scope string) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("digraph poot {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n")
	prod := g.Producers()
	idx := g.ScopeEqns(scope)
	inScope := make(map[int]bool, len(idx))
	for _, i := range idx {
		inScope[i] = true
	}
	byScope := map[ScopeID][]int{}
	var order []ScopeID
	for _, i := range idx {
		s := g.eqns[i].Scope
		if _, ok := byScope[s]; !ok {
			order = append(order, s)
		}
		byScope[s] = append(byScope[s], i)
	}
	for ci, s := range order {
		fmt.Fprintf(bw, "  subgraph cluster_%d {\n    label=%q;\n", ci, g.scopes[s])
		for _, i := range byScope[s] {
			e := g.eqns[i]
			fmt.Fprintf(bw, "    e%d [label=%q];\n", i, fmt.Sprintf("%v%s\n%v", e.Op, formatParams(e.Op, e.Params), g.Type(e.Out)))
		}
		bw.WriteString("  }\n")
	}
	drawn := map[ValueID]bool{}
	for _, i := range idx {
		for _, in := range g.eqns[i].Inputs {
			switch p := prod[in]; {
			case p >= 0 && inScope[p]:
				fmt.Fprintf(bw, "  e%d -> e%d;\n", p, i)
			default:
				if !drawn[in] {
					drawn[in] = true
					v := g.values[in]
					label := fmt.Sprintf("%%%d %v", in, v.Type)
					if v.Kind != Device {
						label = fmt.Sprintf("%v %s\n%v", v.Kind, v.Name, v.Type)
					}
					fmt.Fprintf(bw, "  v%d [shape=ellipse, label=%q];\n", in, label)
				}
				fmt.Fprintf(bw, "  v%d -> e%d;\n", in, i)
			}
		}
	}
	bw.WriteString("}\n")
	return bw.Flush()
}
