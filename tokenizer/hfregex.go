package tokenizer

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
)

// Hugging Face's tokenizers compile tokenizer.json expressions with
// Oniguruma (Ruby syntax). They are run here with regexp2, a backtracking
// engine with the lookahead, Unicode classes and inline groups those
// expressions use, after a translation that keeps Oniguruma's meaning where
// the two differ:
//
//   - (?i:…) folds ASCII letters only ([sS]), as transformers.js does;
//   - \w is Unicode word characters, \h a hex digit, \x{…} a code point;
//   - ^ and $ are line anchors (regexp2's Multiline), . excludes only \n;
//   - a possessive quantifier (X?+, X++) is read as the greedy one, which
//     gives the same matches in the expressions real tokenizers use.
//
// \s is White_Space in both engines. Any construct outside this list
// (back-references, \G, \K, nested classes, POSIX brackets, global flags) is
// a *RegexError rather than a guess.

// RegexError reports a tokenizer.json regular expression that this package
// cannot run as written.
type RegexError struct {
	Pattern string
	Offset  int // byte offset in Pattern of the construct at fault
	Reason  string
}

// Error implements error.
func (e *RegexError) Error() string {
	return fmt.Sprintf("regex %q at offset %d: %s", e.Pattern, e.Offset, e.Reason)
}

// Unwrap makes a RegexError an ErrUnsupported.
func (e *RegexError) Unwrap() error { return ErrUnsupported }

const wordClassBody = `\p{L}\p{M}\p{Nd}\p{Pc}`

// compileHFRegex translates and compiles an Oniguruma expression.
func compileHFRegex(pattern string) (*regexp2.Regexp, error) {
	expr, err := translateOniguruma(pattern)
	if err != nil {
		return nil, err
	}
	re, err := regexp2.Compile(expr, regexp2.Multiline, regexp2.OptionMaxBacktrackingStackSize(-1))
	if err != nil {
		return nil, &RegexError{Pattern: pattern, Reason: err.Error()}
	}
	return re, nil
}

func translateOniguruma(p string) (string, error) {
	var out strings.Builder
	fail := func(at int, format string, args ...any) (string, error) {
		return "", &RegexError{Pattern: p, Offset: at, Reason: fmt.Sprintf(format, args...)}
	}
	var folds []bool // per open group: whether the enclosing scope folds case
	// Per open group, whether it repeats something without bound; a group
	// that does, itself repeated without bound, backtracks exponentially
	// on some inputs ((a+)+b) and is refused rather than run.
	var unbounded []bool
	closedUnbounded := false // the group that just closed repeats inside
	fold := false
	afterQuantifier := false
	repeat := func(at int, open bool) error {
		if !open {
			return nil
		}
		if closedUnbounded {
			_, err := fail(at, "a group repeated without bound that repeats without bound inside (exponential backtracking)")
			return err
		}
		if len(unbounded) > 0 {
			unbounded[len(unbounded)-1] = true
		}
		return nil
	}
	for i := 0; i < len(p); {
		r, n := utf8.DecodeRuneInString(p[i:])
		quantifier := false
		closed := false
		switch {
		case r == '\\':
			s, m, err := translateEscape(p, i, false)
			if err != nil {
				return "", err
			}
			out.WriteString(s)
			n = m
		case r == '[':
			s, m, err := translateClass(p, i, fold)
			if err != nil {
				return "", err
			}
			out.WriteString(s)
			n = m
		case r == '(':
			rest := p[i:]
			var prefix, emit string
			for _, g := range []string{"(?:", "(?=", "(?!", "(?<=", "(?<!", "(?>", "(?i:"} {
				if strings.HasPrefix(rest, g) {
					prefix, emit = g, g
				}
			}
			switch {
			case prefix == "(?i:":
				emit = "(?:"
			case prefix == "" && strings.HasPrefix(rest, "(?"):
				return fail(i, "group syntax %q is not supported", rest[:min(len(rest), 4)])
			case prefix == "":
				prefix, emit = "(", "("
			}
			folds = append(folds, fold)
			unbounded = append(unbounded, false)
			fold = fold || prefix == "(?i:"
			out.WriteString(emit)
			n = len(prefix)
		case r == ')':
			if len(folds) == 0 {
				return fail(i, "unbalanced )")
			}
			fold = folds[len(folds)-1]
			folds = folds[:len(folds)-1]
			inner := unbounded[len(unbounded)-1]
			unbounded = unbounded[:len(unbounded)-1]
			if inner && len(unbounded) > 0 {
				unbounded[len(unbounded)-1] = true
			}
			closedUnbounded, closed = inner, true
			out.WriteByte(')')
		case r == '*' || r == '+' || r == '?':
			if afterQuantifier && r == '+' {
				break // possessive: read as greedy
			}
			if err := repeat(i, !afterQuantifier && r != '?'); err != nil {
				return "", err
			}
			out.WriteRune(r)
			quantifier = !afterQuantifier || r != '?'
		case r == '{':
			if q, m, ok := braceQuantifier(p[i:]); ok {
				if err := repeat(i, strings.HasSuffix(q, ",}")); err != nil {
					return "", err
				}
				out.WriteString(q)
				n = m
				quantifier = true
			} else {
				out.WriteString(`\{`)
			}
		case r == '}' || r == ']':
			out.WriteString(`\` + string(r))
		case fold && isASCIILetter(r):
			out.WriteString("[" + string(r|0x20) + string(r&^0x20) + "]")
		default:
			out.WriteString(p[i : i+n])
		}
		afterQuantifier = quantifier
		if !closed && !quantifier {
			closedUnbounded = false
		}
		i += n
	}
	if len(folds) != 0 {
		return fail(len(p), "unbalanced (")
	}
	return out.String(), nil
}

func isASCIILetter(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }

// braceQuantifier reads {n}, {n,}, {n,m} or {,m} at the start of s.
func braceQuantifier(s string) (string, int, bool) {
	end := strings.IndexByte(s, '}')
	if end < 2 {
		return "", 0, false
	}
	body := s[1:end]
	lo, hi, comma := strings.Cut(body, ",")
	digits := func(x string) bool {
		_, err := strconv.Atoi(x)
		return err == nil && !strings.HasPrefix(x, "+") && !strings.HasPrefix(x, "-")
	}
	switch {
	case !comma && digits(lo):
	case comma && lo == "" && digits(hi):
		body = "0," + hi
	case comma && digits(lo) && (hi == "" || digits(hi)):
	default:
		return "", 0, false
	}
	return "{" + body + "}", end + 1, true
}

// translateEscape translates the escape at p[i] ('\\'), inside a character
// class or not, returning its translation and length.
func translateEscape(p string, i int, inClass bool) (string, int, error) {
	fail := func(format string, args ...any) (string, int, error) {
		return "", 0, &RegexError{Pattern: p, Offset: i, Reason: fmt.Sprintf(format, args...)}
	}
	if i+1 >= len(p) {
		return fail("trailing backslash")
	}
	c, n := utf8.DecodeRuneInString(p[i+1:])
	switch c {
	case 'p', 'P':
		if i+2 < len(p) && p[i+2] == '{' {
			end := strings.IndexByte(p[i:], '}')
			if end < 0 {
				return fail("unterminated \\%c{", c)
			}
			return p[i : i+end+1], end + 1, nil
		}
		return fail("\\%c without {name}", c)
	case 's', 'S', 'd', 'D', 'n', 'r', 't', 'f', 'v', 'a', 'e':
		return p[i : i+2], 2, nil
	case 'b', 'B', 'A', 'z', 'Z':
		if inClass {
			return fail("\\%c in a character class", c)
		}
		return p[i : i+2], 2, nil
	case 'w', 'W', 'h', 'H':
		body := wordClassBody
		if c == 'h' || c == 'H' {
			body = "0-9A-Fa-f"
		}
		switch {
		case inClass && (c == 'w' || c == 'h'):
			return body, 2, nil
		case inClass:
			return fail("\\%c in a character class", c)
		case c == 'w' || c == 'h':
			return "[" + body + "]", 2, nil
		}
		return "[^" + body + "]", 2, nil
	case 'x':
		if i+2 < len(p) && p[i+2] == '{' {
			end := strings.IndexByte(p[i:], '}')
			v, err := strconv.ParseUint(p[i+3:i+max(end, 3)], 16, 32)
			if end < 0 || err != nil || v > utf8.MaxRune {
				return fail("bad \\x{...}")
			}
			if v > 0xFFFF {
				// \u takes four digits: a rune past the BMP is written as
				// itself (never a metacharacter).
				return string(rune(v)), end + 1, nil
			}
			return fmt.Sprintf(`\u%04X`, v), end + 1, nil
		}
		if i+4 <= len(p) {
			if _, err := strconv.ParseUint(p[i+2:i+4], 16, 8); err == nil {
				return p[i : i+4], 4, nil
			}
		}
		return fail("bad \\x escape")
	case 'u':
		if i+6 <= len(p) {
			if _, err := strconv.ParseUint(p[i+2:i+6], 16, 16); err == nil {
				return p[i : i+6], 6, nil
			}
		}
		return fail("bad \\u escape")
	}
	if c < utf8.RuneSelf && (c >= '0' && c <= '9' || isASCIILetter(c)) {
		return fail("escape \\%c is not supported", c)
	}
	return `\` + p[i+1:i+1+n], 1 + n, nil
}

// translateClass translates the character class starting at p[i] ('['),
// returning its translation and length. Nested classes, intersections and
// POSIX brackets are refused.
func translateClass(p string, i int, fold bool) (string, int, error) {
	fail := func(at int, reason string) (string, int, error) {
		return "", 0, &RegexError{Pattern: p, Offset: at, Reason: reason}
	}
	var out strings.Builder
	out.WriteByte('[')
	j := i + 1
	if j < len(p) && p[j] == '^' {
		out.WriteByte('^')
		j++
	}
	first := true
	var foldExtra []byte
	prev := rune(-1) // the last literal rune, for ranges
	for j < len(p) {
		r, n := utf8.DecodeRuneInString(p[j:])
		switch {
		case r == ']' && !first:
			out.Write(foldExtra)
			out.WriteByte(']')
			return out.String(), j + 1 - i, nil
		case r == '[':
			return fail(j, "nested character classes and POSIX brackets are not supported")
		case r == '&' && strings.HasPrefix(p[j:], "&&"):
			return fail(j, "character class intersection is not supported")
		case r == '\\':
			s, m, err := translateEscape(p, j, true)
			if err != nil {
				return "", 0, err
			}
			out.WriteString(s)
			prev = -1
			if m == 2 && !isASCIILetter(rune(p[j+1])) && p[j+1] < utf8.RuneSelf {
				prev = rune(p[j+1])
			}
			n = m
		case r == '-' && !first && j+1 < len(p) && p[j+1] != ']':
			out.WriteByte('-')
			hi, m := utf8.DecodeRuneInString(p[j+1:])
			if prev >= 0 && hi != '\\' && hi != '[' {
				out.WriteString(escapeClassRune(hi))
				if fold {
					if isASCIILetter(prev) {
						foldExtra = foldExtra[:len(foldExtra)-1] // the range covers it
					}
					foldExtra = append(foldExtra, foldRange(prev, hi)...)
				}
				n += m
			}
			prev = -1
		default:
			out.WriteString(escapeClassRune(r))
			if fold && isASCIILetter(r) {
				foldExtra = append(foldExtra, byte(r^0x20))
			}
			prev = r
		}
		first = false
		j += n
	}
	return fail(i, "unterminated character class")
}

// escapeClassRune writes r for use inside a regexp2 character class.
func escapeClassRune(r rune) string {
	switch r {
	case '\\', ']', '[', '^', '-':
		return `\` + string(r)
	}
	return string(r)
}

// foldRange returns the other-case counterpart of the ASCII letters in lo-hi.
func foldRange(lo, hi rune) string {
	var b strings.Builder
	for _, span := range [][2]rune{{'a', 'z'}, {'A', 'Z'}} {
		a, z := max(lo, span[0]), min(hi, span[1])
		if a <= z {
			b.WriteString(string(a^0x20) + "-" + string(z^0x20))
		}
	}
	return b.String()
}
