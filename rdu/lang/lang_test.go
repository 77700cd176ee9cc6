package lang

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

func readFile(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEveryFormRoundTrips: a program using every statement form parses,
// prints back to its own text (the printer's form is canonical), parses
// again to the same tree, and type-checks.
func TestEveryFormRoundTrips(t *testing.T) {
	src := readFile(t, "testdata/every_form.prog")
	p, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if got := Format(p); got != src {
		t.Errorf("printed text differs from the source:\n%s", diffLines(src, got))
	}
	q, err := Parse(Format(p))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, q) {
		t.Errorf("parse(print(p)) != p")
	}
	typed, err := Check(p)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]Type{
		"ct0":  {Rows: 1, Cols: 8},
		"cc0":  {Rows: 2, Cols: 8},
		"mo0":  {Rows: 1, Cols: 8},
		"fi0":  {Rows: 1, Cols: 8},
		"jn0":  {Rows: 1, Cols: 16},
		"mi0":  {Rows: 1, Cols: 4},
		"lb0":  {Rows: 1, Cols: 8},
		"X":    {Rows: 2, Cols: 8},
		"mm0":  {Rows: 1, Cols: 8},
		"next": {Scalar: true, Elem: Int},
		"od0":  {Rows: 1, Cols: 8},
		"hc0":  {Rows: 1, Cols: 8},
		"cv0":  {Rows: 1, Cols: 8},
		"dl0":  {Rows: 1, Cols: 8},
	} {
		if got := typed.Types[name]; got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
	if got := strings.Join(typed.Written, " "); got != "toks Kc0 Vc0 Cs0 St0" {
		t.Errorf("written tensors %q", got)
	}
}

func diffLines(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range max(len(al), len(bl)) {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return "line " + string(rune('0'+i%10)) + ":\nwant " + x + "\ngot  " + y
		}
	}
	return ""
}

// TestSyntaxErrors: a malformed program is a *SyntaxError at the line and
// column of the offending token.
func TestSyntaxErrors(t *testing.T) {
	for _, c := range []struct {
		src       string
		line, col int
		msg       string
	}{
		{"", 1, 1, `expected "##"`},
		{"## p\nLet x be a 1 by 4 tensor of Real\n", 3, 1, `expected "."`},
		{"## p\nLet x be a 0 by 4 tensor of Real.", 2, 12, "at least 1"},
		{"## p\nLet x be a 1 by 4 tensor of Float.", 2, 29, `"Real" or "Int"`},
		{"## p\nLet of be 1.", 2, 5, "keyword"},
		{"## p\n  Let y be x frobnicate z.", 2, 14, `"matmul"`},
		{"## p\nLet y be rmsnorm of x with weight w across 0 heads.", 2, 44, "at least 1"},
		{"## p\nLet y be x scaled by 1e999.", 2, 22, "finite"},
		{"## p\nLet y be attention of q over k and v with 2 heads 1 groups scaled by 0.", 2, 70, "leave the clause out"},
		{"## p\nLet y be causal attention of q over k and v with 2 heads 1 groups.", 2, 66, `expected "from"`},
		{"## p\nLet y be x $ z.", 2, 12, "unexpected character"},
		{"## p\n# comment", 2, 1, `single "#"`},
		{"## p\nLet x be 12ab.", 2, 12, "runs into"},
		{"## p\nSet col 1 of x to y.", 2, 5, `"item", "row" or "rows"`},
		{"## p\nLet x be 99999999999999999999.", 2, 10, "integer"},
		{"## p\nLet y be the 2 of every 4 of x.", 2, 16, `expected "after"`},
		{"## p\nLet y be layernorm of x with weight w and z.", 2, 43, `expected "bias"`},
	} {
		_, err := Parse(c.src)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%q: %v, want a syntax error", c.src, err)
			continue
		}
		if se.Line != c.line || se.Col != c.col || !strings.Contains(se.Msg, c.msg) {
			t.Errorf("%q: %v, want line %d, column %d, %q", c.src, err, c.line, c.col, c.msg)
		}
	}
}

// TestTypeErrors: programs that parse but break a typing rule are
// *TypeError values naming the statement.
func TestTypeErrors(t *testing.T) {
	decl := "## p\nLet pos be 1.\nLet x be a 1 by 8 tensor of Real.\nLet w be a 1 by 8 tensor of Real.\nLet W be a 8 by 4 tensor of Real.\nLet K be a 4 by 4 tensor of Real.\n"
	for _, c := range []struct {
		stmts string
		stmt  int
		msg   string
	}{
		{"Let y be rmsnorm of z with weight w.", 5, "not bound"},
		{"Let y be rmsnorm of x with weight W.", 5, "want a 1 by 8"},
		{"Let y be rmsnorm of x with weight w with epsilon 0.", 5, "epsilon 0 is not a positive"},
		{"Let y be rmsnorm of x with weight w with epsilon -1e-06.", 5, "not a positive"},
		{"Let y be x capped at -3.", 5, "cap -3 is not a positive"},
		{"Let y be W matmul x.", 5, "matmul"},
		{"Let x be x scaled by 2.", 5, "bound twice"},
		{"Let y be x matmul W.\nSet row pos of y to x.", 6, "only declared tensors"},
		{"Let y be x matmul W.\nSet row 5 of K to y.", 6, "outside 1…4"},
		{"Let y be x matmul W.\nLet at0 be attention of x over K and K with 3 heads 2 groups.", 6, "3 heads in 2 groups"},
		{"Let y be x matmul W.\nLet at0 be attention of y over K and K with 1 heads 1 groups capped at -1.", 6, "not a positive"},
		{"Let y be the first 3 of every 5 of x.", 5, "every 5 of 8"},
		{"Let y be the 3 after the first 2 of every 4 of x.", 5, "after the first 2 of every 4"},
		{"Let y be layernorm of x with weight w and bias W.", 5, "want a 1 by 8"},
		{"Let y be layernorm of x with bias w with epsilon 0.", 5, "epsilon 0 is not a positive"},
		{"Let n be argmax of K.", 5, "not one row"},
		{"Let y be row pos of n.", 5, "not a tensor"},
		{"Set item 1 of x to 2.", 5, "tensor of Int"},
	} {
		p, err := Parse(decl + c.stmts)
		if err != nil {
			t.Errorf("%q: %v", c.stmts, err)
			continue
		}
		_, err = Check(p)
		var te *TypeError
		if !errors.As(err, &te) || te.Stmt != c.stmt || !strings.Contains(te.Msg, c.msg) {
			t.Errorf("%q: %v, want statement %d: %q", c.stmts, err, c.stmt, c.msg)
		}
	}
}

// FuzzParse: the parser never panics, and a program it accepts prints to a
// text that parses back to the same tree and prints to the same text.
func FuzzParse(f *testing.F) {
	f.Add(readFile(f, "testdata/every_form.prog"))
	f.Add("## p\nLet x be 1.\n")
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Parse(src)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %v is not a *SyntaxError", err)
			}
			return
		}
		text := Format(p)
		q, err := Parse(text)
		if err != nil {
			t.Fatalf("printed text does not parse: %v\n%s", err, text)
		}
		if !reflect.DeepEqual(p, q) {
			t.Fatalf("parse(print(p)) != p\n%s", text)
		}
		if again := Format(q); again != text {
			t.Fatalf("printing is not stable:\n%s\n%s", text, again)
		}
		_, _ = Check(p) // must not panic
	})
}

// TestRenameReachesEveryName: renaming the program that uses every form
// renames every name it holds, in every form's every operand.
func TestRenameReachesEveryName(t *testing.T) {
	p, err := Parse(readFile(t, "testdata/every_form.prog"))
	if err != nil {
		t.Fatal(err)
	}
	toks, err := lex(Format(Rename(p, func(n string) string { return n + "_r" })))
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range toks[2:] { // the header and the program's name stay
		if tk.kind == tWord && !keywords[tk.text] && !strings.HasSuffix(tk.text, "_r") {
			t.Errorf("line %d: %q is not renamed", tk.line, tk.text)
		}
	}
}
