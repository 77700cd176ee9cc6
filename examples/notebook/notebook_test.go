package notebook

// This file runs the code cells of poot.ipynb as compiled Go, so that the
// notebook cannot rot: the text between a "// cell N" line and the next
// "// end" line is cell N of the notebook, character for character once
// the common indentation is removed and a final show(EXPR) is written as
// the bare EXPR that a notebook displays. TestNotebook runs the cells in
// order, and checks each cell's printed text and displayed value against
// the outputs saved in the notebook by a real run of the gophernotes
// kernel (see README.md); the fmt and nb of the cells are imported by
// cell 1. Cell code sticks to what gomacro accepts: Go 1.18
// syntax and library, no generics.

import (
	"encoding/json"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// cell 1
import (
	"fmt"
	"github.com/pootlabs/poot/nb"
)

// end

// cell 3
// A decoder block: norm, attention with rotary embeddings and one shared
// key/value head, and a gated feed-forward, over a residual stream.
type block struct{ eps float64 }

func (b block) Forward(g *nb.Graph, x nb.Value) (nb.Value, error) {
	d := x.Shape()[1]
	h := g.RMSNorm(x, g.Weight("attn_norm", d), b.eps)
	q := g.RoPE(g.Linear(h, g.Weight("wq", d, d), nb.Value{}), nb.Value{}, 2, nb.RoPEConfig{})
	k := g.RoPE(g.Linear(h, g.Weight("wk", d/2, d), nb.Value{}), nb.Value{}, 1, nb.RoPEConfig{})
	v := g.Linear(h, g.Weight("wv", d/2, d), nb.Value{})
	a := g.Attention(q, k, v, nb.Value{}, nb.AttentionConfig{Heads: 2, KVHeads: 1})
	x = g.Add(x, g.Linear(a, g.Weight("wo", d, d), nb.Value{}))
	var f nb.Value
	g.Scope("ffn", func() {
		f = g.GatedFFN(g.RMSNorm(x, g.Weight("ffn_norm", d), b.eps),
			g.Weight("gate", 2*d, d), g.Weight("up", 2*d, d), g.Weight("down", d, 2*d), "swiglu")
	})
	return g.Add(x, f), nil
}

// end

// notebook holds what the cells printed and displayed, cell by cell.
type notebook struct {
	t       *testing.T
	cell    int
	outputs map[int]string
	stdout  *os.File
	pipe    *os.File
	done    chan string
}

var nbk *notebook

// start ends the capture of the previous cell's output and begins cell n's.
func (n *notebook) start(cell int) {
	n.stop()
	r, w, err := os.Pipe()
	if err != nil {
		n.t.Fatal(err)
	}
	n.cell, n.stdout, n.pipe, n.done = cell, os.Stdout, w, make(chan string)
	os.Stdout = w
	go func() {
		b, _ := io.ReadAll(r)
		n.done <- string(b)
	}()
}

func (n *notebook) stop() {
	if n.pipe == nil {
		return
	}
	os.Stdout = n.stdout
	n.pipe.Close()
	n.outputs[n.cell] += <-n.done
	n.pipe = nil
}

// show displays the values of a cell's last expression as gophernotes
// does: when one value is not nil and has methods that render it (SVG,
// HTML), by those alone; else, unless every value is nil, as their text.
func show(vals ...interface{}) {
	nbk.stop()
	nonNil, rich := 0, ""
	for _, v := range vals {
		if v == nil {
			continue
		}
		nonNil++
		if r, ok := v.(interface{ HTML() string }); ok {
			rich += "text/html:\n" + r.HTML() + "\n"
		}
		if r, ok := v.(interface{ SVG() string }); ok {
			rich += "image/svg+xml:\n" + r.SVG() + "\n"
		}
	}
	switch {
	case nonNil == 1 && rich != "":
		nbk.outputs[nbk.cell] += rich
	case nonNil > 0:
		text := make([]string, len(vals))
		for i, v := range vals {
			text[i] = fmt.Sprint(v)
		}
		nbk.outputs[nbk.cell] += "text/plain:\n" + strings.Join(text, " ") + "\n"
	}
}

func TestNotebook(t *testing.T) {
	nbk = &notebook{t: t, outputs: map[int]string{}}
	defer nbk.stop()

	nbk.start(4)
	// cell 4
	g, y, err := nb.Trace(block{eps: 1e-5}, 4, 8)
	fmt.Println(y, err)
	show(g)
	// end

	nbk.start(6)
	// cell 6
	data := map[string][]float64{}
	for _, name := range g.Names() {
		v, _ := g.Lookup(name)
		vals := make([]float64, v.Size())
		for i := range vals {
			vals[i] = 0.1
			if name == "x" {
				vals[i] = float64(i) / 32
			}
		}
		data[name] = vals
	}
	show(g.Run(y, data))
	// end

	nbk.start(8)
	// cell 8
	soft, p, err := nb.TraceFunc(func(g *nb.Graph, x nb.Value) (nb.Value, error) {
		return g.Softmax(g.Mul(x, g.Scalar(2)), -1), nil
	}, 2, 3)
	fmt.Println(soft.Err(), err)
	show(soft.Run(p, map[string][]float64{"x": {1, 2, 3, 0, 0, 1}}))
	// end

	nbk.start(10)
	// cell 10
	bad := nb.New()
	bad.MatMul(bad.Input("a", 2, 3), bad.Input("b", 4, 5))
	show(bad.Err())
	// end

	nbk.start(12)
	// cell 12
	path := "../../../shared/refmodels/stories260K-f32.gguf"
	// end
	if _, err := os.Stat(path); err != nil {
		nbk.stop()
		checkOutputs(t, nbk.outputs, 12)
		t.Skipf("the cells from here on need stories260K: %v", err)
	}

	nbk.start(13)
	// cell 13
	m, err := nb.Open(path)
	if err != nil {
		panic(err)
	}
	show(m)
	// end

	nbk.start(14)
	// cell 14
	prompt := "Once upon a time"
	ids, err := m.Tokenize(prompt)
	fmt.Println(ids, err)
	show(m.NextTokens(prompt, 8))
	// end

	nbk.start(16)
	// cell 16
	text, err := m.GenerateFunc(prompt, 40, func(piece string) bool {
		fmt.Print(piece)
		return true
	})
	fmt.Println()
	show(err)
	// end

	nbk.start(17)
	// cell 17
	show(m.LogitsAll(ids))
	// end
	nbk.stop()
	if want, err := m.Generate(prompt, 40); err != nil || text != want {
		t.Errorf("streamed %q, Generate gives %q (%v)", text, want, err)
	}
	checkOutputs(t, nbk.outputs, len(readNotebook(t).Cells)+1)
}

// ipynb is the part of a notebook file that the test reads.
type ipynb struct {
	Cells []struct {
		Type    string          `json:"cell_type"`
		Source  json.RawMessage `json:"source"`
		Outputs []struct {
			Type string                     `json:"output_type"`
			Name string                     `json:"name"`
			Text json.RawMessage            `json:"text"`
			Data map[string]json.RawMessage `json:"data"`
		} `json:"outputs"`
	} `json:"cells"`
}

// joined reads a notebook's multi-line string: a string or a list of lines.
func joined(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var lines []string
	_ = json.Unmarshal(raw, &lines)
	return strings.Join(lines, "")
}

func readNotebook(t *testing.T) ipynb {
	t.Helper()
	b, err := os.ReadFile("poot.ipynb")
	if err != nil {
		t.Fatal(err)
	}
	var nb ipynb
	if err := json.Unmarshal(b, &nb); err != nil {
		t.Fatalf("poot.ipynb: %v", err)
	}
	return nb
}

var (
	cellStart = regexp.MustCompile(`^\s*// cell (\d+)$`)
	cellEnd   = regexp.MustCompile(`^\s*// end$`)
	showCall  = regexp.MustCompile(`^(\s*)show\((.*)\)$`)
)

// goCells extracts the cells of this file by number.
func goCells(t *testing.T) map[int]string {
	t.Helper()
	src, err := os.ReadFile("notebook_test.go")
	if err != nil {
		t.Fatal(err)
	}
	cells := map[int]string{}
	var lines []string
	cur := 0
	for _, l := range strings.Split(string(src), "\n") {
		switch {
		case cellStart.MatchString(l):
			cur, _ = strconv.Atoi(cellStart.FindStringSubmatch(l)[1])
			lines = nil
		case cur > 0 && cellEnd.MatchString(l):
			cells[cur] = dedent(lines)
			cur = 0
		case cur > 0:
			lines = append(lines, l)
		}
	}
	return cells
}

// dedent removes the tabs that every non-blank line starts with and the
// blank lines at the end, and writes a last line show(X) as X.
func dedent(lines []string) string {
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			n := len(l) - len(strings.TrimLeft(l, "\t"))
			if common < 0 || n < common {
				common = n
			}
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if len(l) >= common && common > 0 {
			l = l[common:]
		}
		out[i] = l
	}
	if n := len(out); n > 0 {
		if m := showCall.FindStringSubmatch(out[n-1]); m != nil {
			out[n-1] = m[1] + m[2]
		}
	}
	return strings.Join(out, "\n")
}

// The code cells of the notebook are the cells of this file, in order.
func TestNotebookCellsMatch(t *testing.T) {
	cells := goCells(t)
	var numbers []int
	for n := range cells {
		numbers = append(numbers, n)
	}
	sort.Ints(numbers)
	notebook := readNotebook(t)
	for i, c := range notebook.Cells {
		src := strings.TrimRight(joined(c.Source), "\n")
		want, isCode := cells[i+1]
		switch {
		case c.Type == "code" && !isCode:
			t.Errorf("notebook cell %d is code that this file lacks:\n%s", i+1, src)
		case c.Type != "code" && isCode:
			t.Errorf("notebook cell %d is %s, but this file has it as code", i+1, c.Type)
		case isCode && src != want:
			t.Errorf("notebook cell %d differs from this file's:\n--- notebook\n%s\n--- this file\n%s", i+1, src, want)
		}
	}
	if n := numbers[len(numbers)-1]; n > len(notebook.Cells) {
		t.Errorf("this file has cell %d, the notebook %d cells", n, len(notebook.Cells))
	}
}

// notebookPos is how a position in this file reads when the same code runs
// in the kernel: interpreted, in the notebook cell.
var notebookPos = regexp.MustCompile(`\(at notebook_test\.go:\d+\)`)

// gomacroWarning matches what gomacro prints about the generic functions
// of the standard library it skips.
var gomacroWarning = regexp.MustCompile(`(?m)^// warning: skipping import of .*\n`)

// checkOutputs compares what the cells before cell end printed and
// displayed here with the outputs the kernel saved in the notebook.
func checkOutputs(t *testing.T, got map[int]string, end int) {
	notebook := readNotebook(t)
	for i, c := range notebook.Cells {
		if c.Type != "code" || i+1 >= end {
			continue
		}
		saved := ""
		for _, o := range c.Outputs {
			switch o.Type {
			case "stream":
				saved += joined(o.Text)
			case "execute_result", "display_data":
				for _, mime := range []string{"text/html", "image/svg+xml", "text/plain"} {
					if d, ok := o.Data[mime]; ok && (mime != "text/plain" || len(o.Data) == 1) {
						saved += mime + ":\n" + joined(d) + "\n"
					}
				}
			case "error":
				t.Errorf("cell %d failed in the kernel", i+1)
			}
		}
		saved = gomacroWarning.ReplaceAllString(saved, "")
		mine := notebookPos.ReplaceAllString(got[i+1], "(at the notebook cell)")
		if saved != mine {
			t.Errorf("cell %d: the notebook saved\n%s\nand the cell prints here\n%s\n(rerun the notebook, see README.md)", i+1, saved, mine)
		}
	}
}
