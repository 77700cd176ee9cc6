package lang

import (
	"fmt"
	"math"
	"strconv"
)

// keywords are the words the grammar reserves; no name may be one.
var keywords = map[string]bool{}

func init() {
	for _, w := range []string{
		"Let", "Set", "be", "a", "by", "tensor", "of", "Real", "Int", "item", "row", "rows", "from", "to",
		"rmsnorm", "l2norm", "layernorm", "one", "with", "weight", "across", "heads", "epsilon", "rope", "cos", "and", "sin",
		"position", "interleaved", "attention", "causal", "over", "groups", "up", "within", "window", "in",
		"chunks", "scaled", "capped", "at", "sinks", "swiglu", "gelu", "silu", "sigmoid", "argmax", "conv",
		"state", "taps", "decay", "bias", "rate", "gated", "delta", "gate", "beta", "norm", "moe", "router",
		"plus", "down", "choosing", "biased", "the", "top", "without", "renormalizing", "weighting",
		"inputs", "using", "clamped", "slope", "log", "tiled", "matmul", "hadamard", "joined", "first", "last", "every", "after",
	} {
		keywords[w] = true
	}
}

// IsName reports whether s can name a tensor: a letter or underscore, then
// letters, digits and underscores, and not a keyword.
func IsName(s string) bool {
	if s == "" || !isLetter(s[0]) || keywords[s] {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isLetter(s[i]) && !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// Parse reads one program. Errors are *SyntaxError values with the line and
// column of the offending token.
func Parse(src string) (*Program, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	return p.program()
}

type parser struct {
	toks []token
	i    int
}

// failure carries a syntax error out of the recursive descent.
type failure struct{ err *SyntaxError }

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) fail(t token, format string, args ...any) {
	panic(failure{&SyntaxError{Line: t.line, Col: t.col, Msg: fmt.Sprintf(format, args...)}})
}

// is reports whether the next token is the word w.
func (p *parser) is(w string) bool {
	t := p.peek()
	return t.kind == tWord && t.text == w
}

// followedBy reports whether the next tokens are the words ws.
func (p *parser) followedBy(ws ...string) bool {
	for k, w := range ws {
		if p.i+k >= len(p.toks) || p.toks[p.i+k].kind != tWord || p.toks[p.i+k].text != w {
			return false
		}
	}
	return true
}

// accept consumes the words ws if they come next, all of them, and reports
// whether they did. It consumes nothing when the first does not match.
func (p *parser) accept(ws ...string) bool {
	if !p.is(ws[0]) {
		return false
	}
	for _, w := range ws {
		p.expect(w)
	}
	return true
}

func (p *parser) expect(ws ...string) {
	for _, w := range ws {
		if t := p.next(); t.kind != tWord || t.text != w {
			p.fail(t, "expected %q, found %v", w, t)
		}
	}
}

func (p *parser) name() string {
	t := p.next()
	if t.kind != tWord {
		p.fail(t, "expected a name, found %v", t)
	}
	if keywords[t.text] {
		p.fail(t, "expected a name, found the keyword %q", t.text)
	}
	return t.text
}

// integer reads a signed integer.
func (p *parser) integer() int {
	t := p.next()
	if t.kind != tNumber {
		p.fail(t, "expected an integer, found %v", t)
	}
	n, err := strconv.Atoi(t.text)
	if err != nil {
		p.fail(t, "%q is not an integer the language can hold", t.text)
	}
	return n
}

// count reads a positive integer.
func (p *parser) count(what string) int {
	t := p.peek()
	n := p.integer()
	if n < 1 {
		p.fail(t, "%s must be at least 1, not %d", what, n)
	}
	return n
}

// real reads a finite number.
func (p *parser) real() float64 {
	t := p.next()
	if t.kind != tNumber {
		p.fail(t, "expected a number, found %v", t)
	}
	v, err := strconv.ParseFloat(t.text, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		p.fail(t, "%q is not a finite number", t.text)
	}
	return v
}

// nonzero reads a finite nonzero number, for a clause whose absence means
// zero.
func (p *parser) nonzero(what string) float64 {
	t := p.peek()
	v := p.real()
	if v == 0 {
		p.fail(t, "%s of 0 (leave the clause out)", what)
	}
	return v
}

func (p *parser) index() Index {
	t := p.peek()
	if t.kind == tNumber {
		return Index{Num: p.count("a row or position")}
	}
	return Index{Name: p.name()}
}

func (p *parser) heads() int {
	if !p.accept("across") {
		return 0
	}
	n := p.count("a head count")
	p.expect("heads")
	return n
}

func (p *parser) program() (prog *Program, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(failure)
			if !ok {
				panic(r)
			}
			prog, err = nil, f.err
		}
	}()
	t := p.next()
	if t.kind != tHeader {
		p.fail(t, `expected "##" and the program's name, found %v`, t)
	}
	prog = &Program{Name: p.name()}
	for p.peek().kind != tEOF {
		prog.Stmts = append(prog.Stmts, p.statement())
	}
	return prog, nil
}

func (p *parser) statement() Stmt {
	t := p.next()
	var s Stmt
	switch {
	case t.kind == tWord && t.text == "Let":
		s = p.let()
	case t.kind == tWord && t.text == "Set":
		s = p.set()
	default:
		p.fail(t, `expected a statement ("Let" or "Set"), found %v`, t)
	}
	if e := p.next(); e.kind != tPeriod {
		p.fail(e, `expected "." to end the statement, found %v`, e)
	}
	return s
}

func (p *parser) set() Stmt {
	switch {
	case p.accept("item"):
		item := p.count("an item")
		p.expect("of")
		name := p.name()
		p.expect("to")
		return SetItem{Name: name, Item: item, Value: p.integer()}
	case p.accept("row"):
		r := p.index()
		p.expect("of")
		target := p.name()
		p.expect("to")
		return SetRow{Target: target, Row: r, Value: p.name()}
	case p.accept("rows"):
		p.expect("from")
		r := p.index()
		p.expect("of")
		target := p.name()
		p.expect("to")
		return SetRows{Target: target, From: r, Value: p.name()}
	}
	t := p.next()
	p.fail(t, `expected "item", "row" or "rows" after "Set", found %v`, t)
	return nil
}

func (p *parser) let() Stmt {
	name := p.name()
	p.expect("be")
	if p.peek().kind == tNumber {
		return Scalar{Name: name, Value: p.integer()}
	}
	if p.accept("a") {
		rows := p.count("a row count")
		p.expect("by")
		cols := p.count("a column count")
		p.expect("tensor", "of")
		t := p.next()
		switch {
		case t.kind == tWord && t.text == "Real":
			return Declare{Name: name, Rows: rows, Cols: cols, Elem: Real}
		case t.kind == tWord && t.text == "Int":
			return Declare{Name: name, Rows: rows, Cols: cols, Elem: Int}
		}
		p.fail(t, `expected "Real" or "Int", found %v`, t)
	}
	return Let{Name: name, Expr: p.expr()}
}

func (p *parser) epsilon() float64 {
	if p.accept("with", "epsilon") {
		return p.real()
	}
	return DefaultEpsilon
}

func (p *parser) expr() Expr {
	t := p.peek()
	if t.kind != tWord {
		p.fail(t, "expected an expression, found %v", t)
	}
	switch {
	case p.accept("rmsnorm", "of"):
		e := RMSNorm{X: p.name()}
		// "with" opens the weight or the epsilon.
		if p.followedBy("with", "weight") {
			p.expect("with", "weight")
			e.OnePlus = p.accept("one", "plus")
			e.Weight = p.name()
		}
		e.Heads = p.heads()
		e.Epsilon = p.epsilon()
		return e
	case p.accept("layernorm", "of"):
		e := LayerNorm{X: p.name()}
		if p.followedBy("with", "weight") {
			p.expect("with", "weight")
			e.OnePlus = p.accept("one", "plus")
			e.Weight = p.name()
			if p.accept("and", "bias") {
				e.Bias = p.name()
			}
		} else if p.followedBy("with", "bias") {
			p.expect("with", "bias")
			e.Bias = p.name()
		}
		e.Epsilon = p.epsilon()
		return e
	case p.accept("l2norm", "of"):
		e := L2Norm{X: p.name()}
		e.Heads = p.heads()
		e.Epsilon = p.epsilon()
		return e
	case p.accept("rope", "of"):
		e := Rope{X: p.name()}
		p.expect("with", "cos")
		e.Cos = p.name()
		p.expect("and", "sin")
		e.Sin = p.name()
		if p.accept("from", "position") {
			i := p.index()
			e.From = &i
		}
		p.expect("across")
		e.Heads = p.count("a head count")
		p.expect("heads")
		e.Interleaved = p.accept("interleaved")
		return e
	case p.accept("attention", "of"):
		return p.attention(false)
	case p.accept("causal"):
		if p.accept("conv", "of") {
			e := CausalConv{X: p.name()}
			p.expect("with", "weight")
			e.Weight = p.name()
			p.expect("state")
			e.State = p.name()
			if p.accept("from", "position") {
				i := p.index()
				e.From = &i
			}
			p.expect("over")
			e.Taps = p.count("a tap count")
			p.expect("taps")
			return e
		}
		p.expect("attention", "of")
		return p.attention(true)
	case p.accept("swiglu", "of"):
		e := SwiGLU{Gate: p.name()}
		p.expect("and")
		e.Up = p.name()
		return e
	case p.is("gelu"), p.is("silu"), p.is("sigmoid"), p.is("argmax"):
		w := p.next().text
		p.expect("of")
		op := map[string]UnaryOp{"gelu": Gelu, "silu": Silu, "sigmoid": Sigmoid, "argmax": Argmax}[w]
		return Unary{Op: op, X: p.name()}
	case p.accept("decay", "of"):
		e := Decay{X: p.name()}
		p.expect("with", "bias")
		e.Bias = p.name()
		e.LogRate = p.accept("log")
		p.expect("rate")
		e.Rate = p.name()
		return e
	case p.accept("gated", "delta", "of"):
		e := GatedDelta{Q: p.name()}
		p.expect("over")
		e.K = p.name()
		p.expect("and")
		e.V = p.name()
		p.expect("with")
		e.SigmoidGate = p.accept("sigmoid")
		p.expect("gate")
		e.Gate = p.name()
		p.expect("beta")
		e.Beta = p.name()
		p.expect("decay")
		e.Decay = p.name()
		p.expect("state")
		e.State = p.name()
		if p.accept("from", "position") {
			i := p.index()
			e.From = &i
		}
		p.expect("norm")
		e.Norm = p.name()
		p.expect("with")
		e.Heads = p.count("a head count")
		p.expect("heads")
		e.Groups = p.count("a group count")
		p.expect("groups")
		e.Tiled = p.accept("tiled")
		e.Epsilon = p.epsilon()
		return e
	case p.accept("moe", "of"):
		return p.moe()
	case p.accept("row"):
		i := p.index()
		p.expect("of")
		return Row{Index: i, X: p.name()}
	case p.accept("rows"):
		idx := p.name()
		p.expect("of")
		return Rows{Indices: idx, X: p.name()}
	case p.accept("the"):
		e := Columns{}
		switch {
		case p.accept("first"):
			e.N = p.count("a column count")
		case p.accept("last"):
			e.Last = true
			e.N = p.count("a column count")
		case p.peek().kind == tNumber:
			e.N = p.count("a column count")
			p.expect("after", "the", "first")
			e.After = p.count("a column count")
		default:
			t := p.next()
			p.fail(t, `expected "first", "last" or a column count, found %v`, t)
		}
		p.expect("of", "every")
		e.Every = p.count("a column count")
		p.expect("of")
		e.X = p.name()
		return e
	}
	a := p.name()
	switch {
	case p.accept("matmul"):
		e := Binary{Op: MatMul, A: a, B: p.name()}
		e.Heads = p.heads()
		return e
	case p.accept("plus"):
		return Binary{Op: Plus, A: a, B: p.name()}
	case p.accept("hadamard"):
		return Binary{Op: Hadamard, A: a, B: p.name()}
	case p.accept("joined", "with"):
		e := Binary{Op: Joined, A: a, B: p.name()}
		e.Heads = p.heads()
		return e
	case p.accept("scaled", "by"):
		return Scaled{X: a, By: p.real()}
	case p.accept("capped", "at"):
		return Capped{X: a, At: p.real()}
	}
	n := p.next()
	p.fail(n, `expected "matmul", "plus", "hadamard", "joined with", "scaled by" or "capped at" after %q, found %v`, a, n)
	return nil
}

func (p *parser) attention(causal bool) Expr {
	e := Attention{Q: p.name(), Causal: causal}
	p.expect("over")
	e.K = p.name()
	p.expect("and")
	e.V = p.name()
	p.expect("with")
	e.Heads = p.count("a head count")
	p.expect("heads")
	e.Groups = p.count("a group count")
	p.expect("groups")
	if causal {
		p.expect("from")
		i := p.index()
		e.At = &i
	} else if p.accept("up", "to") {
		i := p.index()
		e.At = &i
	}
	if p.accept("within", "a", "window", "of") {
		e.Window = p.count("a window")
	}
	if p.accept("in", "chunks", "of") {
		e.Chunk = p.count("a chunk")
	}
	if p.accept("scaled", "by") {
		e.Scale = p.nonzero("a scale")
	}
	if p.accept("capped", "at") {
		e.Cap = p.nonzero("a cap")
	}
	if p.accept("with", "sinks") {
		e.Sinks = p.name()
	}
	return e
}

func (p *parser) moe() Expr {
	e := MoE{X: p.name()}
	bias := func() string {
		if p.accept("plus") {
			return p.name()
		}
		return ""
	}
	p.expect("with", "router")
	e.Router = p.name()
	e.RouterBias = bias()
	p.expect("gate")
	e.Gate = p.name()
	e.GateBias = bias()
	p.expect("up")
	e.Up = p.name()
	e.UpBias = bias()
	p.expect("down")
	e.Down = p.name()
	e.DownBias = bias()
	p.expect("choosing")
	e.K = p.count("an expert count")
	p.expect("of")
	e.E = p.count("an expert count")
	if p.accept("by", "sigmoid") {
		e.Sigmoid = true
		if p.accept("biased", "by") {
			e.SelectionBias = p.name()
		}
	}
	if p.accept("within", "the", "top") {
		e.TopGroups = p.count("a group count")
		p.expect("of")
		e.Groups = p.count("a group count")
		p.expect("groups")
	}
	e.NoRenormalize = p.accept("without", "renormalizing")
	if p.accept("scaled", "by") {
		e.Scale = p.nonzero("a scale")
	}
	e.WeightInputs = p.accept("weighting", "the", "inputs")
	if p.accept("using", "a", "swiglu", "clamped", "at") {
		e.Clamped = true
		e.Limit = p.real()
		p.expect("with", "slope")
		e.Alpha = p.real()
	}
	return e
}
