package lang

import (
	"fmt"
	"unicode/utf8"
)

// tokKind is a lexical class.
type tokKind uint8

const (
	tEOF    tokKind = iota
	tWord           // a name or a keyword
	tNumber         // an integer or a real
	tPeriod         // the end of a statement
	tHeader         // "##", which opens a program
)

// token is one lexeme with the line and column (from 1) it starts at.
type token struct {
	kind      tokKind
	text      string
	line, col int
}

// String describes the token for an error message.
func (t token) String() string {
	switch t.kind {
	case tEOF:
		return "the end of the text"
	case tPeriod:
		return `"."`
	case tHeader:
		return `"##"`
	}
	return fmt.Sprintf("%q", t.text)
}

// SyntaxError is a program that does not lex or parse: the line and
// column (from 1, in bytes) where it goes wrong, and what was expected.
type SyntaxError struct {
	Line, Col int
	Msg       string
}

// Error formats the error as "line L, column C: msg".
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("rdu/lang: line %d, column %d: %s", e.Line, e.Col, e.Msg)
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// lex splits src into tokens. Whitespace (spaces, tabs, carriage returns
// and newlines) separates them and is otherwise ignored.
func lex(src string) ([]token, error) {
	var toks []token
	line, col := 1, 1
	for i := 0; i < len(src); {
		c := src[i]
		start := token{line: line, col: col}
		advance := func(n int) {
			i += n
			col += n
		}
		switch {
		case c == '\n':
			i++
			line, col = line+1, 1
			continue
		case c == ' ' || c == '\t' || c == '\r':
			advance(1)
			continue
		case c == '#':
			if i+1 < len(src) && src[i+1] == '#' {
				start.kind, start.text = tHeader, "##"
				advance(2)
				toks = append(toks, start)
				continue
			}
			return nil, &SyntaxError{line, col, `a single "#" (a program opens with "##")`}
		case c == '.':
			start.kind, start.text = tPeriod, "."
			advance(1)
			toks = append(toks, start)
			continue
		case isLetter(c):
			j := i + 1
			for j < len(src) && (isLetter(src[j]) || isDigit(src[j])) {
				j++
			}
			start.kind, start.text = tWord, src[i:j]
			advance(j - i)
			toks = append(toks, start)
			continue
		case isDigit(c) || c == '-' && i+1 < len(src) && isDigit(src[i+1]):
			j := i + 1
			for j < len(src) && isDigit(src[j]) {
				j++
			}
			if j+1 < len(src) && src[j] == '.' && isDigit(src[j+1]) {
				j += 2
				for j < len(src) && isDigit(src[j]) {
					j++
				}
			}
			if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
				k := j + 1
				if k < len(src) && (src[k] == '+' || src[k] == '-') {
					k++
				}
				if k < len(src) && isDigit(src[k]) {
					for k < len(src) && isDigit(src[k]) {
						k++
					}
					j = k
				}
			}
			if j < len(src) && (isLetter(src[j]) || isDigit(src[j])) {
				return nil, &SyntaxError{line, col + j - i, fmt.Sprintf("a number runs into %q", src[j])}
			}
			start.kind, start.text = tNumber, src[i:j]
			advance(j - i)
			toks = append(toks, start)
			continue
		}
		r, _ := utf8.DecodeRuneInString(src[i:])
		return nil, &SyntaxError{line, col, fmt.Sprintf("unexpected character %q", r)}
	}
	toks = append(toks, token{kind: tEOF, line: line, col: col})
	return toks, nil
}
