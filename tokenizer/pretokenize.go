package tokenizer

import (
	"unicode"
)

// This file holds the BPE pre-tokenizers: the regular expressions that cut
// text into words before byte-pair merging. Go's regexp has no lookahead and
// its Unicode classes differ from PCRE's, so every expression is written out
// by hand as a small matcher over runes, the way llama.cpp's unicode.cpp does
// for its hottest expressions. llama.cpp runs its other expressions through
// std::regex, with two quirks that the matchers below reproduce:
//
//   - \s matches the ASCII spaces "\t\n\v\f\r " and every non-ASCII White_Space
//     rune (llama.cpp rewrites the latter to '\v' before matching);
//   - \p{L}, \p{N}, \p{P} are the Unicode general categories, except that a
//     non-ASCII white-space rune is never in any of them.
//
// A pre-tokenizer is a list of matchers applied in turn: each one refines
// every segment produced so far into its matches and the gaps between them.

// matcher reports the length in runes of the match of one expression that
// starts at seg[pos], or 0 when the expression does not match there. No
// expression here matches the empty string. Looking past the end of seg sees
// the end of the text: segments produced by earlier matchers are matched
// independently, as llama.cpp does.
type matcher func(seg []rune, pos int) int

// runeFlags classifies a rune the way the matchers need it.
type runeFlags uint8

const (
	flagIn     runeFlags = 1 << iota // set for every rune inside the segment
	flagSpace                        // \s
	flagLetter                       // \p{L}
	flagNumber                       // \p{N}
	flagPunct                        // \p{P}
)

var asciiFlags = func() (t [128]runeFlags) {
	for r := range rune(128) {
		f := flagIn
		switch {
		case r == ' ' || (r >= '\t' && r <= '\r'):
			f |= flagSpace
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
			f |= flagLetter
		case r >= '0' && r <= '9':
			f |= flagNumber
		case unicode.IsPunct(r):
			f |= flagPunct
		}
		t[r] = f
	}
	return t
}()

// classify returns the flags of r.
func classify(r rune) runeFlags {
	if r >= 0 && r < 128 {
		return asciiFlags[r]
	}
	switch {
	case unicode.Is(unicode.White_Space, r):
		return flagIn | flagSpace
	case unicode.IsLetter(r):
		return flagIn | flagLetter
	case unicode.IsNumber(r):
		return flagIn | flagNumber
	case unicode.IsPunct(r):
		return flagIn | flagPunct
	}
	return flagIn
}

// flagsAt returns the flags of seg[i], or 0 past either end of seg.
func flagsAt(seg []rune, i int) runeFlags {
	if i < 0 || i >= len(seg) {
		return 0
	}
	return classify(seg[i])
}

// runAt returns how many consecutive runes from seg[pos] have all of want.
func runAt(seg []rune, pos int, want runeFlags) int {
	n := 0
	for pos+n < len(seg) && classify(seg[pos+n])&want == want {
		n++
	}
	return n
}

// matchGPT2 implements the GPT-2 expression
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// exactly as llama.cpp's hand-written version does. It always matches at
// least one rune: a rune matched by nothing becomes a word of its own.
func matchGPT2(seg []rune, pos int) int {
	n := len(seg)
	c := seg[pos]
	if c == '\'' && pos+1 < n {
		switch c1 := seg[pos+1]; c1 {
		case 's', 't', 'm', 'd':
			return 2
		case 'r', 'v', 'l':
			if pos+2 < n {
				c2 := seg[pos+2]
				if (c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l') {
					return 3
				}
			}
		}
	}
	start := pos
	f := classify(c)
	if c == ' ' {
		f = flagsAt(seg, pos+1)
	}
	var want func(runeFlags) bool
	switch {
	case f&flagLetter != 0:
		want = func(g runeFlags) bool { return g&flagLetter != 0 }
	case f&flagNumber != 0:
		want = func(g runeFlags) bool { return g&flagNumber != 0 }
	case f&(flagSpace|flagLetter|flagNumber) == 0 && f&flagIn != 0:
		want = func(g runeFlags) bool { return g&(flagSpace|flagLetter|flagNumber) == 0 }
	}
	if want != nil {
		if c == ' ' {
			pos++
		}
		for pos < n && want(classify(seg[pos])) {
			pos++
		}
		return pos - start
	}
	return matchTrailingSpaces(seg, start)
}

// matchTrailingSpaces implements \s+(?!\S)|\s+ and, failing both, matches
// one rune.
func matchTrailingSpaces(seg []rune, pos int) int {
	ws := runAt(seg, pos, flagSpace)
	if ws > 1 && pos+ws < len(seg) {
		return ws - 1
	}
	if ws > 0 {
		return ws
	}
	return 1
}

// matchLlama3 implements the Llama 3 expression
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func matchLlama3(seg []rune, pos int) int { return matchLlama3Digits(seg, pos, 3) }

// matchQwen2 implements the Qwen2 expression, which is Llama 3's with single
// digits:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func matchQwen2(seg []rune, pos int) int { return matchLlama3Digits(seg, pos, 1) }

// matchLlama3Digits is the Llama 3 expression with \p{N}{1,maxDigits}.
func matchLlama3Digits(seg []rune, pos int, maxDigits int) int {
	n := len(seg)
	c := seg[pos]
	if c == '\'' && pos+1 < n {
		switch c1 := unicode.ToLower(seg[pos+1]); c1 {
		case 's', 't', 'm', 'd':
			return 2
		case 'r', 'v', 'l':
			if pos+2 < n {
				c2 := unicode.ToLower(seg[pos+2])
				if (c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l') {
					return 3
				}
			}
		}
	}
	f := classify(c)
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if c != '\r' && c != '\n' && f&flagNumber == 0 {
		if f&flagLetter != 0 || flagsAt(seg, pos+1)&flagLetter != 0 {
			return 1 + runAt(seg, pos+1, flagLetter)
		}
	}
	// \p{N}{1,maxDigits}
	if f&flagNumber != 0 {
		return min(runAt(seg, pos, flagNumber), maxDigits)
	}
	//  ?[^\s\p{L}\p{N}]+[\r\n]*
	f2 := f
	if c == ' ' {
		f2 = flagsAt(seg, pos+1)
	}
	if f2&(flagSpace|flagLetter|flagNumber) == 0 {
		end := pos
		if c == ' ' {
			end++
		}
		for end < n && classify(seg[end])&(flagSpace|flagLetter|flagNumber) == 0 {
			end++
		}
		for end < n && (seg[end] == '\r' || seg[end] == '\n') {
			end++
		}
		return end - pos
	}
	// \s*[\r\n]+
	ws := runAt(seg, pos, flagSpace)
	for i := ws - 1; i >= 0; i-- {
		if r := seg[pos+i]; r == '\r' || r == '\n' {
			return i + 1
		}
	}
	return matchTrailingSpaces(seg, pos)
}

// isSpace reports whether r is matched by \s.
func isSpace(r rune) bool { return classify(r)&flagSpace != 0 }

// isLetter reports whether r is matched by \p{L}.
func isLetter(r rune) bool { return classify(r)&flagLetter != 0 }

// isNumber reports whether r is matched by \p{N}.
func isNumber(r rune) bool { return classify(r)&flagNumber != 0 }

// isPunct reports whether r is matched by \p{P}.
func isPunct(r rune) bool { return classify(r)&flagPunct != 0 }

// runOf returns how many consecutive runes from seg[pos] satisfy in.
func runOf(seg []rune, pos int, in func(rune) bool) int {
	n := 0
	for pos+n < len(seg) && in(seg[pos+n]) {
		n++
	}
	return n
}

// optionalSpaceThen implements \s?X+ for a class X that excludes \s.
func optionalSpaceThen(seg []rune, pos int, in func(rune) bool) int {
	if isSpace(seg[pos]) {
		if pos+1 < len(seg) && in(seg[pos+1]) {
			return 1 + runOf(seg, pos+1, in)
		}
		return 0
	}
	return runOf(seg, pos, in)
}

// isPunctOrMathSymbol is the class [\p{P}\$\+<=>\^~\|].
func isPunctOrMathSymbol(r rune) bool {
	switch r {
	case '$', '+', '<', '=', '>', '^', '~', '|':
		return true
	}
	return isPunct(r)
}

// matchPunctRun implements [\p{P}\$\+<=>\^~\|]+ (llama.cpp's default BPE
// pre-tokenizer).
func matchPunctRun(seg []rune, pos int) int { return runOf(seg, pos, isPunctOrMathSymbol) }

// matchPunctRunBacktick implements [\p{P}\$\+<=>\^~\|`]+ (Falcon).
func matchPunctRunBacktick(seg []rune, pos int) int {
	return runOf(seg, pos, func(r rune) bool { return r == '`' || isPunctOrMathSymbol(r) })
}

// matchDigit implements \p{N}.
func matchDigit(seg []rune, pos int) int {
	if isNumber(seg[pos]) {
		return 1
	}
	return 0
}

// matchDigits implements \p{N}+.
func matchDigits(seg []rune, pos int) int { return runOf(seg, pos, isNumber) }

// matchThreeASCIIDigits implements [0-9][0-9][0-9].
func matchThreeASCIIDigits(seg []rune, pos int) int {
	if pos+3 > len(seg) {
		return 0
	}
	for _, r := range seg[pos : pos+3] {
		if r < '0' || r > '9' {
			return 0
		}
	}
	return 3
}

// matchNewline implements [\r\n].
func matchNewline(seg []rune, pos int) int {
	if seg[pos] == '\r' || seg[pos] == '\n' {
		return 1
	}
	return 0
}

// matchSpaceLetters implements \s?\p{L}+.
func matchSpaceLetters(seg []rune, pos int) int { return optionalSpaceThen(seg, pos, isLetter) }

// matchSpacePunct implements \s?\p{P}+.
func matchSpacePunct(seg []rune, pos int) int { return optionalSpaceThen(seg, pos, isPunct) }

// matchSpacesAtEnd implements \s+$. A run of spaces that failed to reach
// the end at pos-1 fails at pos too, which keeps the scan linear.
func matchSpacesAtEnd(seg []rune, pos int) int {
	if pos > 0 && isSpace(seg[pos-1]) {
		return 0
	}
	ws := runOf(seg, pos, isSpace)
	if ws > 0 && pos+ws == len(seg) {
		return ws
	}
	return 0
}

// runeRange is an inclusive range of code points.
type runeRange struct{ lo, hi rune }

// inRanges reports whether r lies in one of ranges. White-space runes never
// do: llama.cpp replaces non-ASCII white space before matching such classes.
func inRanges(r rune, ranges []runeRange) bool {
	if r > 127 && isSpace(r) {
		return false
	}
	for _, rr := range ranges {
		if r >= rr.lo && r <= rr.hi {
			return true
		}
	}
	return false
}

// cjkRanges is the class [一-龥ࠀ-一가-퟿].
var cjkRanges = []runeRange{{0x4E00, 0x9FA5}, {0x0800, 0x4E00}, {0xAC00, 0xD7FF}}

// matchCJK implements [一-龥ࠀ-一가-퟿]+ (DeepSeek).
func matchCJK(seg []rune, pos int) int {
	return runOf(seg, pos, func(r rune) bool { return inRanges(r, cjkRanges) })
}

// deepseekLetterRanges is DeepSeek LLM's explicit letter class
// [A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]
// written as code points, because several of its characters (U+1F7D, U+1FBE,
// U+1FD3, U+1FDB, U+2126, U+212A) change under Unicode normalization.
var deepseekLetterRanges = []runeRange{
	{0x41, 0x5A}, {0x61, 0x7A}, {0xB5, 0xB5}, {0xC0, 0xD6}, {0xD8, 0xF6}, {0xF8, 0x1BA},
	{0x1BC, 0x1BF}, {0x1C4, 0x293}, {0x295, 0x2AF}, {0x370, 0x373}, {0x376, 0x377},
	{0x37B, 0x37D}, {0x37F, 0x37F}, {0x386, 0x386}, {0x388, 0x38A}, {0x38C, 0x38C},
	{0x38E, 0x3A1}, {0x3A3, 0x3F5}, {0x3F7, 0x481}, {0x48A, 0x52F}, {0x531, 0x556},
	{0x10A0, 0x10C5}, {0x13A0, 0x13F5}, {0x13F8, 0x13FD}, {0x1C90, 0x1CBA}, {0x1CBD, 0x1CBF},
	{0x1D00, 0x1D2B}, {0x1D6B, 0x1D77}, {0x1D79, 0x1D9A}, {0x1E00, 0x1F15}, {0x1F18, 0x1F1D},
	{0x1F20, 0x1F45}, {0x1F48, 0x1F4D}, {0x1F50, 0x1F57}, {0x1F59, 0x1F59}, {0x1F5B, 0x1F5B},
	{0x1F5D, 0x1F5D}, {0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4}, {0x1FB6, 0x1FBC}, {0x1FBE, 0x1FBE},
	{0x1FC2, 0x1FC4}, {0x1FC6, 0x1FCC}, {0x1FD0, 0x1FD3}, {0x1FD6, 0x1FDB}, {0x1FE0, 0x1FEC},
	{0x1FF2, 0x1FF4}, {0x1FF6, 0x1FFC}, {0x2102, 0x2102}, {0x2107, 0x2107}, {0x210A, 0x2113},
	{0x2115, 0x2115}, {0x2119, 0x211D}, {0x2124, 0x2124}, {0x2126, 0x2126}, {0x2128, 0x2128},
	{0x212A, 0x212D}, {0x212F, 0x2134}, {0x2139, 0x2139}, {0x213C, 0x213F}, {0x2145, 0x2149},
	{0x214E, 0x214E}, {0x2183, 0x2184}, {0x2C00, 0x2C7B}, {0x2C7E, 0x2CE4}, {0x2CEB, 0x2CEE},
	{0x2CF2, 0x2CF3}, {0xA640, 0xA66D}, {0xA680, 0xA69B}, {0xA722, 0xA76F}, {0xA771, 0xA787},
	{0xA78B, 0xA78E}, {0xAB70, 0xABBF}, {0xFB00, 0xFB06}, {0xFB13, 0xFB17}, {0xFF21, 0xFF3A},
	{0xFF41, 0xFF5A}, {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
	{0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
}

// deepseekPunctRanges is DeepSeek LLM's class [!-/:-~！-／：-～‘-‟　-。].
var deepseekPunctRanges = []runeRange{
	{0x21, 0x2F}, {0x3A, 0x7E}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E}, {0x2018, 0x201F}, {0x3000, 0x3002},
}

// matchDeepseekLetters implements \s?[A-Za-zµÀ-Ö…𞤀-𞥃]+ (DeepSeek LLM).
func matchDeepseekLetters(seg []rune, pos int) int {
	return optionalSpaceThen(seg, pos, func(r rune) bool { return inRanges(r, deepseekLetterRanges) })
}

// matchDeepseekPunct implements \s?[!-/:-~！-／：-～‘-‟　-。]+ (DeepSeek LLM).
func matchDeepseekPunct(seg []rune, pos int) int {
	return optionalSpaceThen(seg, pos, func(r rune) bool { return inRanges(r, deepseekPunctRanges) })
}

// bloomStop reports whether r is in the class (\s|.,!?…。，、।۔،) at which
// BLOOM-style words stop.
func bloomStop(r rune) bool {
	switch r {
	case '(', '|', '.', ',', '!', '?', '…', '。', '，', '、', '।', '۔', '،', ')':
		return true
	}
	return isSpace(r)
}

// matchBloom implements  ?[^(\s|.,!?…。，、।۔،)]+ (BLOOM, Poro, GPT-3 Finnish).
func matchBloom(seg []rune, pos int) int {
	in := func(r rune) bool { return !bloomStop(r) }
	if seg[pos] == ' ' {
		if pos+1 < len(seg) && in(seg[pos+1]) {
			return 1 + runOf(seg, pos+1, in)
		}
	}
	return runOf(seg, pos, in)
}

// upperish is the class (?=[\p{L}])([^a-z]): a letter other than ASCII a-z.
// llama.cpp matches it on text whose non-ASCII letters have lost their case,
// so every non-ASCII letter is both upperish and lowerish.
func upperish(r rune) bool { return isLetter(r) && (r < 'a' || r > 'z') }

// lowerish is the class (?=[\p{L}])([^A-Z]): a letter other than ASCII A-Z.
func lowerish(r rune) bool { return isLetter(r) && (r < 'A' || r > 'Z') }

// matchCasedWord implements the two word alternatives shared by the Tekken
// and GPT-4o expressions,
//
//	[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+
//	[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*
//
// tried in that order with backtracking, and returns the end of the match or
// -1.
func matchCasedWord(seg []rune, pos int) int {
	n := len(seg)
	q := pos
	if c := seg[pos]; c != '\r' && c != '\n' && !isLetter(c) && !isNumber(c) {
		q++
	}
	up := runOf(seg, q, upperish)
	// Upper* Lower+: the longest upper run that a lower letter follows.
	for k := up; k >= 0; k-- {
		if q+k < n && lowerish(seg[q+k]) {
			return q + k + runOf(seg, q+k, lowerish)
		}
	}
	// Upper+ Lower*.
	if up > 0 {
		return q + up + runOf(seg, q+up, lowerish)
	}
	return -1
}

// contractionAt implements (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])
// at seg[pos], returning its length or 0.
func contractionAt(seg []rune, pos int) int {
	n := len(seg)
	if pos+1 >= n || seg[pos] != '\'' {
		return 0
	}
	lower := func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	switch c1 := lower(seg[pos+1]); c1 {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v', 'l':
		if pos+2 < n {
			c2 := lower(seg[pos+2])
			if (c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l') {
				return 3
			}
		}
	}
	return 0
}

// matchTekkenTail implements the alternatives after the words in the Tekken
// and GPT-4o expressions,
//
//	\p{N}{1,maxDigits}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
func matchTekkenTail(seg []rune, pos int, maxDigits int) int {
	n := len(seg)
	c := seg[pos]
	if isNumber(c) {
		return min(runOf(seg, pos, isNumber), maxDigits)
	}
	other := func(r rune) bool { return !isSpace(r) && !isLetter(r) && !isNumber(r) }
	start := pos
	if c == ' ' && pos+1 < n && other(seg[pos+1]) {
		start++
	}
	if other(seg[start]) {
		end := start + runOf(seg, start, other)
		for end < n && (seg[end] == '\r' || seg[end] == '\n' || seg[end] == '/') {
			end++
		}
		return end - pos
	}
	ws := runOf(seg, pos, isSpace)
	for i := ws - 1; i >= 0; i-- {
		if r := seg[pos+i]; r == '\r' || r == '\n' {
			return i + 1
		}
	}
	if ws == 0 {
		return 0
	}
	return matchTrailingSpaces(seg, pos)
}

// matchTekken implements llama.cpp's form of Mistral's Tekken expression
//
//	[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
func matchTekken(seg []rune, pos int) int {
	if end := matchCasedWord(seg, pos); end >= 0 {
		return end - pos
	}
	return matchTekkenTail(seg, pos, 1)
}

// matchGPT4o implements llama.cpp's form of the GPT-4o (o200k) expression
//
//	[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
func matchGPT4o(seg []rune, pos int) int {
	if end := matchCasedWord(seg, pos); end >= 0 {
		return end + contractionAt(seg, end) - pos
	}
	return matchTekkenTail(seg, pos, 3)
}

// preTokenizers maps llama.cpp's tokenizer.ggml.pre names onto the matchers
// it applies, in order, and says whether words found whole in the vocabulary
// skip merging (llama.cpp's ignore_merges).
type preTokenizer struct {
	matchers     []matcher
	ignoreMerges bool
}

var (
	preDefault   = preTokenizer{matchers: []matcher{matchPunctRun, matchGPT2, matchDigits, matchThreeASCIIDigits}}
	preGPT2      = preTokenizer{matchers: []matcher{matchGPT2}}
	preLlama3    = preTokenizer{matchers: []matcher{matchLlama3}, ignoreMerges: true}
	preQwen2     = preTokenizer{matchers: []matcher{matchQwen2}}
	preStarcoder = preTokenizer{matchers: []matcher{matchDigit, matchGPT2}}
	preFalcon    = preTokenizer{matchers: []matcher{matchPunctRunBacktick, matchGPT2, matchThreeASCIIDigits}}
	preDSCoder   = preTokenizer{matchers: []matcher{matchNewline, matchSpaceLetters, matchSpacePunct, matchCJK, matchDigit}}
	preDSLLM     = preTokenizer{matchers: []matcher{matchNewline, matchDeepseekLetters, matchDeepseekPunct, matchSpacesAtEnd, matchCJK, matchDigits}}
	preBloom     = preTokenizer{matchers: []matcher{matchBloom}}
	preTekken    = preTokenizer{matchers: []matcher{matchTekken}, ignoreMerges: true}
	preGPT4o     = preTokenizer{matchers: []matcher{matchGPT4o}}
)

// preTokenizerByName returns the pre-tokenizer llama.cpp uses for a
// tokenizer.ggml.pre value.
func preTokenizerByName(name string) (preTokenizer, bool) {
	switch name {
	case "", "default":
		return preDefault, true
	case "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano":
		return preLlama3, true
	case "dbrx", "smaug-bpe", "glm4", "chatglm-bpe":
		return preTokenizer{matchers: preLlama3.matchers}, true
	case "deepseek-llm":
		return preDSLLM, true
	case "deepseek-coder":
		return preDSCoder, true
	case "falcon":
		return preFalcon, true
	case "starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b", "mellum2":
		return preStarcoder, true
	case "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
		"modern-bert", "jina-v1-en", "jina-v2-code", "roberta-bpe", "exaone4", "mpt", "olmo", "jais",
		"trillion", "granite-docling":
		return preGPT2, true
	case "qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "stablelm2", "hunyuan", "solar-open", "megrez":
		return preQwen2, true
	case "poro-chat", "bloom", "gpt3-finnish":
		return preBloom, true
	case "tekken":
		return preTekken, true
	case "gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2":
		return preGPT4o, true
	}
	return preTokenizer{}, false
}

// split cuts text into the words of pre-tokenizer p. Invalid UTF-8 bytes
// become U+FFFD, as in llama.cpp.
func (p preTokenizer) split(text string) []string {
	runes := []rune(text)
	segs := []int{len(runes)}
	for _, m := range p.matchers {
		segs = refine(runes, segs, m)
	}
	words := make([]string, 0, len(segs))
	start := 0
	for _, n := range segs {
		words = append(words, string(runes[start:start+n]))
		start += n
	}
	return words
}

// refine splits each segment (given by its length) into the matches of m and
// the gaps between them, scanning left to right like a regex iterator.
func refine(runes []rune, segs []int, m matcher) []int {
	out := make([]int, 0, len(segs)*2)
	start := 0
	for _, n := range segs {
		seg := runes[start : start+n]
		gap := 0
		for pos := 0; pos < n; {
			l := m(seg, pos)
			if l <= 0 {
				pos++
				gap++
				continue
			}
			if gap > 0 {
				out = append(out, gap)
				gap = 0
			}
			l = min(l, n-pos)
			out = append(out, l)
			pos += l
		}
		if gap > 0 {
			out = append(out, gap)
		}
		start += n
	}
	return out
}
