package tokenizer

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
	"golang.org/x/text/cases"
	"golang.org/x/text/language"
	"golang.org/x/text/unicode/norm"
)

// This file holds the normalizers, pre-tokenizers and decoders of a
// tokenizer.json, each built from its JSON component as Hugging Face's
// tokenizers library defines it. Building a component the package does not
// implement is an error naming it.

// hfPiece is a piece of text between pre-tokenizer steps; first marks the
// piece that starts at offset 0 of the original text (Metaspace's "first"
// prepend scheme).
type hfPiece struct {
	text  string
	first bool
}

type (
	hfNormalizer func(string) (string, error)
	hfPreStep    func([]hfPiece) ([]hfPiece, error)
	hfDecoder    func([]string) []string
)

// hfUnsupported is the error for a component or option poot lacks.
func hfUnsupported(key, format string, args ...any) error {
	return hfError(key, fmt.Errorf(format+": %w", append(args, ErrUnsupported)...))
}

// hfPattern compiles a Replace or Split pattern: a literal String or an
// Oniguruma Regex.
type hfPatternMatcher struct {
	literal string
	re      *regexp2.Regexp
}

func newHFPattern(key string, p *hfPattern) (hfPatternMatcher, error) {
	switch {
	case p == nil:
		return hfPatternMatcher{}, hfError(key, fmt.Errorf("no pattern"))
	case p.Regex != nil:
		re, err := compileHFRegex(*p.Regex)
		if err != nil {
			return hfPatternMatcher{}, hfError(key, err)
		}
		return hfPatternMatcher{re: re}, nil
	case p.String != nil:
		return hfPatternMatcher{literal: *p.String}, nil
	}
	return hfPatternMatcher{}, hfError(key, fmt.Errorf("pattern is neither String nor Regex"))
}

// matches returns the byte spans [start, end) of the non-empty matches in s.
func (m hfPatternMatcher) matches(s string) ([][2]int, error) {
	var spans [][2]int
	if m.re == nil {
		if m.literal == "" {
			return nil, nil
		}
		for off := 0; ; {
			i := strings.Index(s[off:], m.literal)
			if i < 0 {
				return spans, nil
			}
			spans = append(spans, [2]int{off + i, off + i + len(m.literal)})
			off += i + len(m.literal)
		}
	}
	runes := []rune(s)
	// Rune offsets to byte offsets, walking forward as matches come in order.
	bytePos, runePos := 0, 0
	toByte := func(r int) int {
		for runePos < r {
			bytePos += utf8.RuneLen(runes[runePos])
			runePos++
		}
		return bytePos
	}
	err := m.re.FindRunesMatches(runes, 0, func(v regexp2.MatchView) bool {
		i, n, _ := v.GroupRange(0)
		if n > 0 {
			start := toByte(i)
			spans = append(spans, [2]int{start, toByte(i + n)})
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("tokenizer: matching %q: %w", m.re.String(), err)
	}
	return spans, nil
}

// replaceAll replaces every match in s by content.
func (m hfPatternMatcher) replaceAll(s, content string) (string, error) {
	spans, err := m.matches(s)
	if err != nil || len(spans) == 0 {
		return s, err
	}
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		b.WriteString(s[last:sp[0]])
		b.WriteString(content)
		last = sp[1]
	}
	b.WriteString(s[last:])
	return b.String(), nil
}

var lowerCaser = cases.Lower(language.Und)

func stripMarks(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.M, r) {
			return -1
		}
		return r
	}, s)
}

// buildNormalizers flattens a normalizer component into its steps.
func buildNormalizers(c *hfComponent) ([]hfNormalizer, error) {
	if c == nil {
		return nil, nil
	}
	pure := func(f func(string) string) []hfNormalizer {
		return []hfNormalizer{func(s string) (string, error) { return f(s), nil }}
	}
	switch c.Type {
	case "Sequence":
		var out []hfNormalizer
		for _, sub := range c.Normalizers {
			steps, err := buildNormalizers(sub)
			if err != nil {
				return nil, err
			}
			out = append(out, steps...)
		}
		return out, nil
	case "NFC":
		return pure(norm.NFC.String), nil
	case "NFD":
		return pure(norm.NFD.String), nil
	case "NFKC":
		return pure(norm.NFKC.String), nil
	case "NFKD":
		return pure(norm.NFKD.String), nil
	case "Lowercase":
		return pure(lowerCaser.String), nil
	case "StripAccents":
		return pure(stripMarks), nil
	case "Strip":
		left, right := c.StripLeft == nil || *c.StripLeft, c.StripRight == nil || *c.StripRight
		return pure(func(s string) string {
			if left {
				s = strings.TrimLeftFunc(s, unicode.IsSpace)
			}
			if right {
				s = strings.TrimRightFunc(s, unicode.IsSpace)
			}
			return s
		}), nil
	case "Prepend":
		return pure(func(s string) string {
			if s == "" {
				return s
			}
			return c.Prepend + s
		}), nil
	case "Replace":
		m, err := newHFPattern("normalizer.Replace", c.Pattern)
		if err != nil {
			return nil, err
		}
		return []hfNormalizer{func(s string) (string, error) { return m.replaceAll(s, c.Content) }}, nil
	case "BertNormalizer":
		return pure(c.bertNormalize), nil
	}
	return nil, hfUnsupported("normalizer", "normalizer %q", c.Type)
}

// bertNormalize is BERT's normalizer: control characters dropped, white
// space made spaces, CJK ideographs spaced, lowercasing and accent removal.
func (c *hfComponent) bertNormalize(s string) string {
	clean, chinese, lower := c.CleanText == nil || *c.CleanText, c.HandleChineseChars == nil || *c.HandleChineseChars, c.Lowercase == nil || *c.Lowercase
	var b strings.Builder
	for _, r := range s {
		switch {
		case clean && (r == 0 || r == utf8.RuneError || (r != '\t' && r != '\n' && r != '\r' && unicode.IsOneOf([]*unicode.RangeTable{unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs}, r))):
		case clean && (r == '\t' || r == '\n' || r == '\r' || unicode.Is(unicode.Zs, r)):
			b.WriteByte(' ')
		case chinese && isCJKIdeograph(r):
			b.WriteString(" " + string(r) + " ")
		default:
			b.WriteRune(r)
		}
	}
	s = b.String()
	if lower {
		s = lowerCaser.String(s)
	}
	if c.StripAccents != nil && *c.StripAccents || c.StripAccents == nil && lower {
		s = strings.Map(func(r rune) rune {
			if unicode.Is(unicode.Mn, r) {
				return -1
			}
			return r
		}, norm.NFD.String(s))
	}
	return s
}

func isCJKIdeograph(r rune) bool {
	for _, rg := range [][2]rune{{0x4E00, 0x9FFF}, {0x3400, 0x4DBF}, {0x20000, 0x2A6DF}, {0x2A700, 0x2B73F}, {0x2B740, 0x2B81F}, {0x2B820, 0x2CEAF}, {0xF900, 0xFAFF}, {0x2F800, 0x2FA1F}} {
		if r >= rg[0] && r <= rg[1] {
			return true
		}
	}
	return false
}

// splitBehavior is how a Split keeps the delimiters it finds.
type splitBehavior int

const (
	splitRemoved splitBehavior = iota
	splitIsolated
	splitMergedWithPrevious
	splitMergedWithNext
	splitContiguous
)

func parseSplitBehavior(key, s string) (splitBehavior, error) {
	switch s {
	case "Removed":
		return splitRemoved, nil
	case "Isolated", "":
		return splitIsolated, nil
	case "MergedWithPrevious":
		return splitMergedWithPrevious, nil
	case "MergedWithNext":
		return splitMergedWithNext, nil
	case "Contiguous":
		return splitContiguous, nil
	}
	return 0, hfUnsupported(key, "split behavior %q", s)
}

// splitSpans cuts s at the delimiter spans (sorted, disjoint), keeping them
// as behavior says; invert swaps delimiters and the text between them.
func splitSpans(s string, delims [][2]int, behavior splitBehavior, invert bool) []string {
	type span struct {
		start, end int
		delim      bool
	}
	var spans []span
	last := 0
	for _, d := range delims {
		if d[0] > last {
			spans = append(spans, span{last, d[0], invert})
		}
		spans = append(spans, span{d[0], d[1], !invert})
		last = d[1]
	}
	if last < len(s) {
		spans = append(spans, span{last, len(s), invert})
	}
	var out []span
	switch behavior {
	case splitRemoved:
		for _, sp := range spans {
			if !sp.delim {
				out = append(out, sp)
			}
		}
	case splitIsolated:
		out = spans
	case splitMergedWithPrevious:
		prevDelim := false
		for _, sp := range spans {
			if sp.delim && !prevDelim && len(out) > 0 {
				out[len(out)-1].end = sp.end
			} else {
				out = append(out, sp)
			}
			prevDelim = sp.delim
		}
	case splitMergedWithNext:
		prevDelim := false
		for i := len(spans) - 1; i >= 0; i-- {
			sp := spans[i]
			if sp.delim && !prevDelim && len(out) > 0 {
				out[len(out)-1].start = sp.start
			} else {
				out = append(out, sp)
			}
			prevDelim = sp.delim
		}
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	case splitContiguous:
		for i, sp := range spans {
			if i > 0 && sp.delim == spans[i-1].delim {
				out[len(out)-1].end = sp.end
			} else {
				out = append(out, sp)
			}
		}
	}
	words := make([]string, 0, len(out))
	for _, sp := range out {
		if sp.end > sp.start {
			words = append(words, s[sp.start:sp.end])
		}
	}
	return words
}

// runeSpans returns the spans of the runes of s satisfying in, one span per
// rune, or one per run when runs is set.
func runeSpans(s string, in func(rune) bool) [][2]int {
	var spans [][2]int
	for i, r := range s {
		if in(r) {
			spans = append(spans, [2]int{i, i + utf8.RuneLen(r)})
		}
	}
	return spans
}

// splitStep makes a pre-tokenizer step that splits every piece.
func splitStep(split func(string) ([]string, error)) hfPreStep {
	return func(pieces []hfPiece) ([]hfPiece, error) {
		out := make([]hfPiece, 0, len(pieces))
		for _, p := range pieces {
			words, err := split(p.text)
			if err != nil {
				return nil, err
			}
			for i, w := range words {
				out = append(out, hfPiece{text: w, first: p.first && i == 0})
			}
		}
		return out, nil
	}
}

// mapStep makes a pre-tokenizer step that rewrites every piece.
func mapStep(f func(hfPiece) (string, error)) hfPreStep {
	return func(pieces []hfPiece) ([]hfPiece, error) {
		for i, p := range pieces {
			s, err := f(p)
			if err != nil {
				return nil, err
			}
			pieces[i].text = s
		}
		return pieces, nil
	}
}

// gpt2Pattern is the expression of GPT-2's ByteLevel pre-tokenizer.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

func isHFPunct(r rune) bool {
	return r < utf8.RuneSelf && unicode.IsPrint(r) && !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != ' ' || unicode.IsPunct(r)
}

// buildPreTokenizer flattens a pre-tokenizer component into its steps and
// reports whether it includes ByteLevel.
func buildPreTokenizer(c *hfComponent) ([]hfPreStep, bool, error) {
	if c == nil {
		return nil, false, nil
	}
	const key = "pre_tokenizer"
	one := func(s hfPreStep) ([]hfPreStep, bool, error) { return []hfPreStep{s}, false, nil }
	byPattern := func(m hfPatternMatcher, behavior splitBehavior, invert bool) hfPreStep {
		return splitStep(func(s string) ([]string, error) {
			spans, err := m.matches(s)
			return splitSpans(s, spans, behavior, invert), err
		})
	}
	byRune := func(in func(rune) bool, behavior splitBehavior) hfPreStep {
		return splitStep(func(s string) ([]string, error) {
			return splitSpans(s, runeSpans(s, in), behavior, false), nil
		})
	}
	switch c.Type {
	case "Sequence":
		var out []hfPreStep
		byteLevel := false
		for _, sub := range c.PreTokenizers {
			steps, bl, err := buildPreTokenizer(sub)
			if err != nil {
				return nil, false, err
			}
			out = append(out, steps...)
			byteLevel = byteLevel || bl
		}
		return out, byteLevel, nil
	case "ByteLevel":
		var steps []hfPreStep
		if c.AddPrefixSpace != nil && *c.AddPrefixSpace {
			steps = append(steps, mapStep(func(p hfPiece) (string, error) {
				if strings.HasPrefix(p.text, " ") {
					return p.text, nil
				}
				return " " + p.text, nil
			}))
		}
		if c.UseRegex == nil || *c.UseRegex {
			re, err := compileHFRegex(gpt2Pattern)
			if err != nil {
				return nil, false, hfError(key, err)
			}
			steps = append(steps, byPattern(hfPatternMatcher{re: re}, splitIsolated, false))
		}
		steps = append(steps, mapStep(func(p hfPiece) (string, error) { return encodeByteLevel(p.text), nil }))
		return steps, true, nil
	case "Split":
		m, err := newHFPattern(key+".Split", c.Pattern)
		if err != nil {
			return nil, false, err
		}
		behavior, err := parseSplitBehavior(key, c.Behavior)
		if err != nil {
			return nil, false, err
		}
		return one(byPattern(m, behavior, c.Invert))
	case "Digits":
		if c.Individual {
			return one(byRune(unicode.IsNumber, splitIsolated))
		}
		return one(byRune(unicode.IsNumber, splitContiguous))
	case "Punctuation":
		behavior, err := parseSplitBehavior(key, c.Behavior)
		if err != nil {
			return nil, false, err
		}
		return one(byRune(isHFPunct, behavior))
	case "Whitespace":
		re, err := compileHFRegex(`\w+|[^\w\s]+`)
		if err != nil {
			return nil, false, hfError(key, err)
		}
		return one(byPattern(hfPatternMatcher{re: re}, splitRemoved, true))
	case "WhitespaceSplit":
		return one(byRune(unicode.IsSpace, splitRemoved))
	case "BertPreTokenizer":
		return []hfPreStep{byRune(unicode.IsSpace, splitRemoved), byRune(isHFPunct, splitIsolated)}, false, nil
	case "CharDelimiterSplit":
		d, n := utf8.DecodeRuneInString(c.Delimiter)
		if n == 0 || n != len(c.Delimiter) {
			return nil, false, hfError(key, fmt.Errorf("CharDelimiterSplit delimiter %q is not one character", c.Delimiter))
		}
		return one(byRune(func(r rune) bool { return r == d }, splitRemoved))
	case "Metaspace":
		return one(metaspaceStep(c))
	case "Replace":
		m, err := newHFPattern(key+".Replace", c.Pattern)
		if err != nil {
			return nil, false, err
		}
		return one(mapStep(func(p hfPiece) (string, error) { return m.replaceAll(p.text, c.Content) }))
	}
	return nil, false, hfUnsupported(key, "pre-tokenizer %q", c.Type)
}

// metaspaceScheme returns Metaspace's prepend scheme, reading the older
// add_prefix_space flag when the scheme is absent.
func (c *hfComponent) metaspaceScheme() string {
	if c.PrependScheme != "" {
		return c.PrependScheme
	}
	if c.AddPrefixSpace != nil && !*c.AddPrefixSpace {
		return "never"
	}
	return "always"
}

func (c *hfComponent) metaspaceReplacement() string {
	if c.Replacement == "" {
		return spaceMark
	}
	return c.Replacement
}

// metaspaceStep writes spaces as the replacement (usually "▁"), prepends
// one as the scheme says, and splits before each replacement if asked.
func metaspaceStep(c *hfComponent) hfPreStep {
	rep, scheme := c.metaspaceReplacement(), c.metaspaceScheme()
	split := c.Split == nil || *c.Split
	return func(pieces []hfPiece) ([]hfPiece, error) {
		var out []hfPiece
		for _, p := range pieces {
			s := strings.ReplaceAll(p.text, " ", rep)
			if !strings.HasPrefix(s, rep) && (scheme == "always" || scheme == "first" && p.first) {
				s = rep + s
			}
			words := []string{s}
			if split {
				words = splitSpans(s, hfPatternMatcher{literal: rep}.mustMatches(s), splitMergedWithNext, false)
			}
			for i, w := range words {
				out = append(out, hfPiece{text: w, first: p.first && i == 0})
			}
		}
		return out, nil
	}
}

// mustMatches is matches for a literal pattern, which cannot fail.
func (m hfPatternMatcher) mustMatches(s string) [][2]int {
	spans, _ := m.matches(s)
	return spans
}

// buildDecoders flattens a decoder component into its steps.
func buildDecoders(c *hfComponent, added map[string]bool) ([]hfDecoder, error) {
	if c == nil {
		return nil, nil
	}
	perToken := func(f func(i int, s string) string) []hfDecoder {
		return []hfDecoder{func(toks []string) []string {
			for i, s := range toks {
				toks[i] = f(i, s)
			}
			return toks
		}}
	}
	switch c.Type {
	case "Sequence":
		var out []hfDecoder
		for _, sub := range c.Decoders {
			steps, err := buildDecoders(sub, added)
			if err != nil {
				return nil, err
			}
			out = append(out, steps...)
		}
		return out, nil
	case "ByteLevel":
		return []hfDecoder{func(toks []string) []string {
			var out []string
			var run strings.Builder
			for _, s := range toks {
				if added[s] {
					if run.Len() > 0 {
						out = append(out, run.String())
						run.Reset()
					}
					out = append(out, s)
					continue
				}
				run.WriteString(decodeByteLevelToken(s))
			}
			if run.Len() > 0 {
				out = append(out, run.String())
			}
			return out
		}}, nil
	case "Metaspace":
		rep, scheme := c.metaspaceReplacement(), c.metaspaceScheme()
		return perToken(func(i int, s string) string {
			s = strings.ReplaceAll(s, rep, " ")
			if i == 0 && scheme != "never" {
				s = strings.TrimPrefix(s, " ")
			}
			return s
		}), nil
	case "Replace":
		m, err := newHFPattern("decoder.Replace", c.Pattern)
		if err != nil {
			return nil, err
		}
		return perToken(func(_ int, s string) string {
			out, err := m.replaceAll(s, c.Content)
			if err != nil {
				return s
			}
			return out
		}), nil
	case "ByteFallback":
		return []hfDecoder{func(toks []string) []string {
			var out []string
			var bytes []byte
			for _, s := range toks {
				if b, ok := parseByteToken(s); ok {
					bytes = append(bytes, b)
					continue
				}
				if len(bytes) > 0 {
					out = append(out, string(bytes))
					bytes = bytes[:0]
				}
				out = append(out, s)
			}
			if len(bytes) > 0 {
				out = append(out, string(bytes))
			}
			return out
		}}, nil
	case "Fuse":
		return []hfDecoder{func(toks []string) []string { return []string{strings.Join(toks, "")} }}, nil
	case "Strip":
		content, n := utf8.DecodeRuneInString(c.Content)
		if n != len(c.Content) || n == 0 {
			return nil, hfError("decoder", fmt.Errorf("Strip content %q is not one character", c.Content))
		}
		return perToken(func(_ int, s string) string {
			for k := 0; k < c.Start && strings.HasPrefix(s, string(content)); k++ {
				s = s[n:]
			}
			for k := 0; k < c.Stop && strings.HasSuffix(s, string(content)); k++ {
				s = s[:len(s)-n]
			}
			return s
		}), nil
	case "WordPiece":
		prefix := c.Prefix
		if prefix == "" {
			prefix = "##"
		}
		return perToken(func(i int, s string) string {
			if i > 0 {
				if rest, ok := strings.CutPrefix(s, prefix); ok {
					s = rest
				} else {
					s = " " + s
				}
			}
			return s
		}), nil
	case "BPEDecoder":
		suffix := c.Suffix
		if suffix == "" {
			suffix = "</w>"
		}
		return []hfDecoder{func(toks []string) []string {
			for i, s := range toks {
				rep := " "
				if i == len(toks)-1 {
					rep = ""
				}
				toks[i] = strings.ReplaceAll(s, suffix, rep)
			}
			return toks
		}}, nil
	}
	return nil, hfUnsupported("decoder", "decoder %q", c.Type)
}

// decodeByteLevelToken undoes the byte-to-rune map for one token; a token
// with a rune outside the map is kept as it is.
func decodeByteLevelToken(s string) string {
	buf := make([]byte, 0, len(s))
	for _, r := range s {
		b, ok := runeToByte[r]
		if !ok {
			return s
		}
		buf = append(buf, b)
	}
	return string(buf)
}

// validUTF8 replaces each maximal invalid subsequence of s by U+FFFD, as
// the WHATWG decoder (and Rust's from_utf8_lossy) do.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r != utf8.RuneError || n > 1 {
			b.WriteString(s[i : i+n])
			i += n
			continue
		}
		b.WriteRune(utf8.RuneError)
		i += invalidPrefixLen(s[i:])
	}
	return b.String()
}

// invalidPrefixLen returns the length of the maximal prefix of s that
// starts a UTF-8 sequence but does not complete it (at least 1).
func invalidPrefixLen(s string) int {
	c := s[0]
	var n int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		n = 2
	case c >= 0xE0 && c <= 0xEF:
		n = 3
		if c == 0xE0 {
			lo = 0xA0
		} else if c == 0xED {
			hi = 0x9F
		}
	case c >= 0xF0 && c <= 0xF4:
		n = 4
		if c == 0xF0 {
			lo = 0x90
		} else if c == 0xF4 {
			hi = 0x8F
		}
	default:
		return 1
	}
	i := 1
	for ; i < n && i < len(s); i++ {
		if s[i] < lo || s[i] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
	}
	return i
}
