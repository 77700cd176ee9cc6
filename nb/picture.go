package nb

import (
	"fmt"
	"html"
	"math"
	"strings"

	"github.com/pootlabs/poot"
)

// This file draws graphs and bar charts as SVG, by hand: a notebook needs
// a picture without a Graphviz binary, and a graph of folded composites in
// program order needs no general layout engine. Each node is a row, in the
// order the graph was recorded (a topological order), nested in bands for
// the scopes it was recorded in; each edge is an arc in the left margin
// from the row that computes a value to a row that reads it.

// Picture is an SVG drawing. Jupyter kernels that look for an SVG method
// (gophernotes does) show it as an image; it prints as its title.
type Picture struct {
	Title  string
	Source string // an SVG document
}

// SVG returns the SVG document.
func (p Picture) SVG() string { return p.Source }

// String returns the title.
func (p Picture) String() string { return p.Title }

// Picture draws the graph folded: each composite is one box, and so are
// the primitives of a scope that holds no composite; the boxes stand in
// recording order inside bands for their scopes, with arrows along the data
// flow. A depth above 0 folds every scope at that level of nesting into one
// box too: 1 draws a box per top-level scope (per layer of a model), 2 a
// box per scope inside those (attention, feed-forward). A graph in error
// draws its error.
func (g *Graph) Picture(depth int) Picture {
	if g != nil && g.deferred && len(g.pending) > 0 {
		return textPicture(strings.TrimSpace(g.pendingText()))
	}
	pg, err := g.printable()
	if err != nil {
		return textPicture("error: " + err.Error())
	}
	return drawGraph(pg, depth)
}

// SVG draws the graph as Picture(0) does; it makes a notebook show a
// Graph as a picture.
func (g *Graph) SVG() string { return g.Picture(0).Source }

// node is one box of a graph picture: a composite, a primitive equation,
// or a folded scope.
type node struct {
	label, note string // the name line, the line under it
	typ         string // the type of the value it computes last
	band        []string
	reads       []poot.ValueID
	equations   int
	output      bool
}

// graphNodes folds the graph's equations into nodes and says which node
// computes each value (-1 for inputs).
func graphNodes(pg *poot.Graph, depth int) ([]node, []int) {
	eqns := pg.Eqns()
	producer := make([]int, pg.NumValues())
	for i := range producer {
		producer[i] = -1
	}
	isOut := map[poot.ValueID]bool{}
	for _, id := range pg.Outputs() {
		isOut[id] = true
	}
	// Scopes holding a composite, or a scope inside them that does, keep
	// their primitives apart; the primitives of any other scope are folded.
	busy := map[string]bool{}
	for id := 1; id <= pg.NumComposites(); id++ {
		if c := pg.Composite(poot.CompositeID(id)); pg.Top(poot.CompositeID(id)) == poot.CompositeID(id) {
			for p := pg.Scope(c.Scope); p != ""; p = p[:max(strings.LastIndexByte(p, '/'), 0)] {
				busy[p] = true
			}
		}
	}
	var nodes []node
	folded := "" // the scope of the folded node being filled, if any
	for i := 0; i < len(eqns); i++ {
		e := eqns[i]
		scope, lo, hi := pg.Scope(e.Scope), i, i+1
		label, typ := e.Op.String(), pg.Type(e.Out).String()
		if top := pg.Top(e.Composite); top > 0 {
			c := pg.Composite(top)
			scope, lo, hi = pg.Scope(c.Scope), c.Lo, c.Hi
			label, typ = c.Name, pg.Type(c.Results[len(c.Results)-1]).String()
			if len(c.Attrs) > 0 {
				label += fmt.Sprintf("[%s]", c.Attrs)
			}
		}
		path, fold := splitScope(scope), depth
		if fold <= 0 || len(path) < fold {
			fold = 0
		}
		if fold == 0 && hi-lo == 1 && len(path) > 0 && !busy[scope] {
			fold = len(path)
		}
		if fold > 0 {
			if key := strings.Join(path[:fold], "/"); key != folded {
				nodes = append(nodes, node{label: path[fold-1] + "/", band: path[:fold-1]})
				folded = key
			}
		} else {
			folded = ""
			nodes = append(nodes, node{label: label, band: path})
		}
		k := len(nodes) - 1
		n := &nodes[k]
		n.typ, n.equations = typ, n.equations+hi-lo
		for j := lo; j < hi; j++ {
			for _, in := range eqns[j].Inputs {
				if producer[in] != k && !containsID(n.reads, in) {
					n.reads = append(n.reads, in)
				}
			}
			producer[eqns[j].Out] = k
			n.output = n.output || isOut[eqns[j].Out]
		}
		if n.equations > 1 {
			n.note = fmt.Sprintf("{%d equations}", n.equations)
		}
		i = hi - 1
	}
	return nodes, producer
}

func splitScope(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "/")
}

func containsID(ids []poot.ValueID, id poot.ValueID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// The geometry of graph pictures, in pixels.
const (
	gutter  = 150 // the margin the arcs run in
	boxW    = 520 // the width of a box at the outermost level
	indent  = 14  // each scope's band insets its rows by this
	nodeH   = 34  // a node's row
	labelH  = 18  // a scope's title row
	charW   = 6.6 // a character of 11px monospace, roughly
	svgFont = `font-family="monospace" font-size="11"`
)

func drawGraph(pg *poot.Graph, depth int) Picture {
	nodes, producer := graphNodes(pg, depth)
	title := strings.SplitN(pg.String(), "\n", 2)[0]
	var body strings.Builder
	y := 28.0
	centre := make([]float64, len(nodes))
	left := make([]float64, len(nodes))
	type open struct {
		name string
		top  float64
	}
	var bands []open
	closeTo := func(n int) {
		for len(bands) > n {
			b := bands[len(bands)-1]
			bands = bands[:len(bands)-1]
			x := float64(gutter + indent*len(bands))
			fmt.Fprintf(&body, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" rx="6" fill="#%s" fill-opacity="0.35" stroke="#9aa"/>`+"\n",
				x-4, b.top, float64(boxW-indent*len(bands))+8, y-b.top+2, bandColour(len(bands)))
		}
	}
	var rows strings.Builder
	for k, n := range nodes {
		common := 0
		for common < len(bands) && common < len(n.band) && bands[common].name == n.band[common] {
			common++
		}
		closeTo(common)
		for _, name := range n.band[common:] {
			x := float64(gutter + indent*len(bands))
			fmt.Fprintf(&rows, `<text x="%.0f" y="%.0f" %s font-weight="bold" fill="#355">%s</text>`+"\n", x+2, y+13, svgFont, esc(name, boxW/charW))
			bands = append(bands, open{name: name, top: y})
			y += labelH
		}
		x := float64(gutter + indent*len(bands))
		w := float64(boxW - indent*len(bands))
		left[k], centre[k] = x, y+nodeH/2-2
		stroke, sw := "#567", 1
		if n.output {
			stroke, sw = "#a33", 2
		}
		fmt.Fprintf(&rows, `<rect x="%.0f" y="%.0f" width="%.0f" height="%d" rx="3" fill="white" stroke="%s" stroke-width="%d"/>`+"\n", x, y+2, w, nodeH-6, stroke, sw)
		typeChars := len(n.typ) + 2
		fmt.Fprintf(&rows, `<text x="%.0f" y="%.0f" %s>%s</text>`+"\n", x+5, y+14, svgFont, esc(n.label, w/charW-float64(typeChars)-1))
		fmt.Fprintf(&rows, `<text x="%.0f" y="%.0f" %s text-anchor="end" fill="#258">%s</text>`+"\n", x+w-5, y+14, svgFont, esc(n.typ, 40))
		note := n.note
		if names := inputNames(pg, n.reads, producer); names != "" {
			note = strings.TrimSpace(note + " ← " + names)
		}
		if note != "" {
			fmt.Fprintf(&rows, `<text x="%.0f" y="%.0f" font-family="monospace" font-size="9" fill="#777">%s</text>`+"\n", x+5, y+25, esc(note, w/5.4-2))
		}
		y += nodeH
	}
	closeTo(0)
	var arcs strings.Builder
	for k, n := range nodes {
		from := map[int]bool{}
		for _, id := range n.reads {
			if p := producer[id]; p >= 0 && p != k && !from[p] {
				from[p] = true
				bend := math.Min(gutter-12, 10+2.5*float64(k-p))
				x0, x1 := left[p], left[k]
				fmt.Fprintf(&arcs, `<path d="M%.0f,%.0f C%.0f,%.0f %.0f,%.0f %.0f,%.0f" fill="none" stroke="#68a" stroke-opacity="0.7" marker-end="url(#arrow)"/>`+"\n",
					x0, centre[p], x0-bend, centre[p], x1-bend, centre[k], x1-1, centre[k])
			}
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%.0f" viewBox="0 0 %d %.0f">`+"\n", gutter+boxW+12, y+8, gutter+boxW+12, y+8)
	sb.WriteString(`<defs><marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#68a"/></marker></defs>` + "\n")
	fmt.Fprintf(&sb, `<text x="8" y="16" %s font-weight="bold">%s</text>`+"\n", svgFont, esc(title, (gutter+boxW)/charW))
	sb.WriteString(body.String())
	sb.WriteString(arcs.String())
	sb.WriteString(rows.String())
	sb.WriteString("</svg>\n")
	return Picture{Title: title, Source: sb.String()}
}

// bandColour tints the bands of nested scopes alternately.
func bandColour(level int) string {
	return [...]string{"dde8f0", "e8f0dd", "f0e8dd"}[level%3]
}

// inputNames lists the graph inputs among ids by name, at most three.
func inputNames(pg *poot.Graph, ids []poot.ValueID, producer []int) string {
	var names []string
	for _, id := range ids {
		if producer[id] < 0 {
			if v := pg.Value(id); v.Name != "" {
				names = append(names, v.Name)
			}
		}
	}
	if len(names) > 3 {
		names = append(names[:3], fmt.Sprintf("+%d", len(names)-3))
	}
	return strings.Join(names, ", ")
}

// esc shortens s to at most n characters and escapes it for SVG text.
func esc(s string, n float64) string {
	r := []rune(s)
	if limit := int(n); limit > 1 && len(r) > limit {
		r = append(r[:limit-1], '…')
	}
	return html.EscapeString(string(r))
}

// textPicture is a picture of lines of text: an error, or a graph that
// waits for data.
func textPicture(text string) Picture {
	lines := strings.Split(text, "\n")
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d">`+"\n", gutter+boxW, 12+16*len(lines))
	for i, l := range lines {
		fmt.Fprintf(&sb, `<text x="8" y="%d" %s>%s</text>`+"\n", 18+16*i, svgFont, esc(l, (gutter+boxW)/charW))
	}
	sb.WriteString("</svg>\n")
	return Picture{Title: lines[0], Source: sb.String()}
}

// Chart is a horizontal bar chart of labelled values: a notebook shows it
// as SVG, and it prints as text bars.
type Chart struct {
	Title  string
	Labels []string
	Values []float64
}

// BarChart returns a chart of values with their labels (a label missing
// at the end is blank).
func BarChart(title string, labels []string, values []float64) Chart {
	return Chart{Title: title, Labels: append([]string(nil), labels...), Values: append([]float64(nil), values...)}
}

func (c Chart) label(i int) string {
	if i < len(c.Labels) {
		return c.Labels[i]
	}
	return ""
}

// scale returns the least and greatest of 0 and the finite values.
func (c Chart) scale() (lo, hi float64) {
	for _, v := range c.Values {
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if hi == lo {
		hi = lo + 1
	}
	return lo, hi
}

// String prints the title and one line per value: label, bar, value.
func (c Chart) String() string {
	lo, hi := c.scale()
	width := 0
	for i := range c.Values {
		width = max(width, len([]rune(c.label(i))))
	}
	var sb strings.Builder
	sb.WriteString(c.Title)
	for i, v := range c.Values {
		n := 0
		if !math.IsNaN(v) {
			n = int(math.Round(30 * math.Min(math.Abs(v), hi-lo) / (hi - lo)))
		}
		l := c.label(i)
		fmt.Fprintf(&sb, "\n  %s%s %s %.4g", l, strings.Repeat(" ", width-len([]rune(l))), strings.Repeat("█", n), v)
	}
	return sb.String()
}

// SVG draws the bars, with a zero line when some values are negative.
func (c Chart) SVG() string {
	const labelW, barW, rowH, top = 160.0, 320.0, 20.0, 30.0
	lo, hi := c.scale()
	x := func(v float64) float64 { return labelW + barW*(math.Max(lo, math.Min(hi, v))-lo)/(hi-lo) }
	h := top + rowH*float64(len(c.Values)) + 10
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f">`+"\n", labelW+barW+90, h, labelW+barW+90, h)
	fmt.Fprintf(&sb, `<text x="8" y="18" %s font-weight="bold">%s</text>`+"\n", svgFont, esc(c.Title, (labelW+barW+80)/charW))
	for i, v := range c.Values {
		y := top + rowH*float64(i)
		fmt.Fprintf(&sb, `<text x="%.0f" y="%.0f" %s text-anchor="end">%s</text>`+"\n", labelW-6, y+13, svgFont, esc(c.label(i), labelW/charW-1))
		if !math.IsNaN(v) {
			a, b := math.Min(x(0), x(v)), math.Max(x(0), x(v))
			fmt.Fprintf(&sb, `<rect x="%.1f" y="%.0f" width="%.1f" height="%.0f" fill="#4a7fb0"/>`+"\n", a, y+3, math.Max(b-a, 0.5), rowH-6)
		}
		fmt.Fprintf(&sb, `<text x="%.0f" y="%.0f" %s fill="#333">%.4g</text>`+"\n", labelW+barW+6, y+13, svgFont, v)
	}
	if lo < 0 {
		fmt.Fprintf(&sb, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="#333"/>`+"\n", x(0), top-2, x(0), h-8)
	}
	sb.WriteString("</svg>\n")
	return sb.String()
}
