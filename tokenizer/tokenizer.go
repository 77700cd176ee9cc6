package tokenizer

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Model is the tokenization algorithm of a vocabulary.
type Model int

const (
	// SPM is SentencePiece-style BPE (GGUF tokenizer.ggml.model "llama"):
	// pieces carry "▁" for spaces and unknown characters fall back to <0xNN>
	// byte tokens. Pieces merge by score, or by merge rank when the
	// vocabulary came with a merge list (a Hugging Face tokenizer.json).
	SPM Model = iota + 1
	// BPE is GPT-2 byte-level BPE (GGUF tokenizer.ggml.model "gpt2"): words
	// from a pre-tokenizer, bytes mapped to printable runes, merges by rank.
	BPE
)

// String returns the GGUF name of m.
func (m Model) String() string {
	switch m {
	case SPM:
		return "llama"
	case BPE:
		return "gpt2"
	}
	return "unknown"
}

// TokenType is the kind of a vocabulary entry, numbered as in GGUF's
// tokenizer.ggml.token_type.
type TokenType int32

// The token types of GGUF.
const (
	// TypeUndefined is a token without a known type; it decodes to nothing.
	TypeUndefined TokenType = 0
	// TypeNormal is an ordinary piece of text.
	TypeNormal TokenType = 1
	// TypeUnknown is the unknown token (<unk>).
	TypeUnknown TokenType = 2
	// TypeControl is a control token (BOS, EOS, <|im_end|>): recognised in
	// text only with EncodeOptions.ParseSpecial, and omitted by Decode.
	TypeControl TokenType = 3
	// TypeUserDefined is a token always cut out of text whole before
	// tokenizing, and decoded verbatim.
	TypeUserDefined TokenType = 4
	// TypeUnused is a reserved token.
	TypeUnused TokenType = 5
	// TypeByte is a byte-fallback token <0xNN>.
	TypeByte TokenType = 6
)

// attr is llama.cpp's per-token attribute set. Loading can add bits to a
// token's type (an end-of-generation text is made a control token even when
// the file says user-defined), so a set, not a single type, is kept.
type attr uint16

const (
	attrUnknown attr = 1 << iota
	attrUnused
	attrNormal
	attrControl
	attrUserDefined
	attrByte
	attrLStrip
	attrRStrip
)

func attrOf(t TokenType) attr {
	switch t {
	case TypeNormal:
		return attrNormal
	case TypeUnknown:
		return attrUnknown
	case TypeControl:
		return attrControl
	case TypeUserDefined:
		return attrUserDefined
	case TypeUnused:
		return attrUnused
	case TypeByte:
		return attrByte
	}
	return 0
}

// pair is a BPE merge: two adjacent pieces.
type pair struct{ left, right string }

// Tokenizer encodes text to token ids and decodes ids to text. It is
// immutable after loading and safe for concurrent use.
type Tokenizer struct {
	model  Model
	tokens []string
	scores []float32
	attrs  []attr
	ids    map[string]int32

	// ranks holds the BPE merges; nil for SPM, whose pieces merge by score.
	ranks map[pair]int32
	pre   preTokenizer // BPE word splitting

	byteLevel      bool // BPE: words are spelled with the byte-to-rune map
	escapeSpaces   bool // SPM: spaces are written "▁"
	addSpacePrefix bool // SPM: a space is prepended to each text fragment
	byteFallback   bool // unknown pieces are spelled with <0xNN> tokens

	byteTokens [256]int32 // <0xNN> token per byte, or -1

	special []int32 // tokens cut out of the text before tokenizing, longest first

	bos, eos, eot, eom, unk, pad int32
	eog                          map[int32]bool
	addBOS, addEOS               bool

	pieces []string // Decode output per token (empty for control tokens)

	// hf, when set, is the tokenizer.json pipeline that Encode and Decode
	// run instead of llama.cpp's algorithms.
	hf *hfPipeline
}

// VocabSize returns the number of tokens.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// Model returns the tokenization algorithm.
func (t *Tokenizer) Model() Model { return t.model }

// BOS returns the beginning-of-sequence token id, or -1 if there is none.
func (t *Tokenizer) BOS() int32 { return t.bos }

// EOS returns the end-of-sequence token id, or -1 if there is none.
func (t *Tokenizer) EOS() int32 { return t.eos }

// EOT returns the end-of-turn token id (tokenizer.ggml.eot_token_id, or a
// token spelled like one: "<|eot_id|>", "<|im_end|>", "<|end|>",
// "<end_of_turn>", "<|endoftext|>", …), or -1 if there is none.
func (t *Tokenizer) EOT() int32 { return t.eot }

// Unknown returns the unknown-token id, or -1 if there is none.
func (t *Tokenizer) Unknown() int32 { return t.unk }

// AddBOS reports whether the vocabulary asks for a BOS token at the start of
// a prompt (tokenizer.ggml.add_bos_token; by default true for SPM and false
// for BPE, as in llama.cpp).
func (t *Tokenizer) AddBOS() bool { return t.addBOS }

// AddEOS reports whether the vocabulary asks for an EOS token at the end of
// a prompt (tokenizer.ggml.add_eos_token).
func (t *Tokenizer) AddEOS() bool { return t.addEOS }

// IsEOG reports whether id ends generation: EOS, EOT, EOM, and every token
// whose text is on llama.cpp's list of end-of-generation texts.
func (t *Tokenizer) IsEOG(id int32) bool { return t.eog[id] }

// EOGs returns the end-of-generation token ids in increasing order.
func (t *Tokenizer) EOGs() []int32 {
	out := make([]int32, 0, len(t.eog))
	for id := range t.eog {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// Piece returns the vocabulary text of token id ("▁Once", "<0x0A>", "Ġthe",
// "<s>"), or "" for an id out of range.
func (t *Tokenizer) Piece(id int32) string {
	if id < 0 || int(id) >= len(t.tokens) {
		return ""
	}
	return t.tokens[id]
}

// Score returns the score of token id (0 for an id out of range).
func (t *Tokenizer) Score(id int32) float32 {
	if id < 0 || int(id) >= len(t.scores) {
		return 0
	}
	return t.scores[id]
}

// Type returns the type of token id after loading adjustments (an
// end-of-generation token is TypeControl), or TypeUndefined for an id out of
// range.
func (t *Tokenizer) Type(id int32) TokenType {
	if id < 0 || int(id) >= len(t.attrs) {
		return TypeUndefined
	}
	a := t.attrs[id]
	switch {
	case a&attrControl != 0:
		return TypeControl
	case a&attrUnknown != 0:
		return TypeUnknown
	case a&attrUserDefined != 0:
		return TypeUserDefined
	case a&attrByte != 0:
		return TypeByte
	case a&attrUnused != 0:
		return TypeUnused
	case a&attrNormal != 0:
		return TypeNormal
	}
	return TypeUndefined
}

// Lookup returns the id of the token whose vocabulary text is exactly piece.
func (t *Tokenizer) Lookup(piece string) (int32, bool) {
	id, ok := t.ids[piece]
	return id, ok
}

// endOfTurnTexts are texts llama.cpp takes as the end-of-turn token when
// tokenizer.ggml.eot_token_id is absent.
var endOfTurnTexts = []string{
	"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
	"<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>",
}

// endOfGenerationTexts are texts that llama.cpp treats as ending generation
// (and therefore as control tokens) whatever the file says.
var endOfGenerationTexts = []string{
	"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
	"<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
	"<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
	"<｜end▁of▁sentence｜>", "[e~[",
}

// fillInTheMiddleTexts are the FIM token texts llama.cpp forces to control;
// the last three groups (pad, repo, file separator) also end generation.
var fillInTheMiddleTexts = [][]string{
	{"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"},
	{"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"},
	{"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"},
	{"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"},
	{"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"},
	{"<|file_sep|>"},
}

// specialIDs are the special token ids a loader found in its source; -1
// means absent.
type specialIDs struct {
	bos, eos, eot, eom, unk, pad int32
	fim                          [6]int32 // prefix, suffix, middle, pad, repo, file separator
}

func noSpecialIDs() specialIDs {
	s := specialIDs{bos: -1, eos: -1, eot: -1, eom: -1, unk: -1, pad: -1}
	for i := range s.fim {
		s.fim[i] = -1
	}
	return s
}

// finish builds the lookup tables shared by every loader and applies
// llama.cpp's load-time adjustments of token attributes. The caller has set
// model, tokens, scores, attrs and the model-specific flags.
func (t *Tokenizer) finish(source string, sp specialIDs, modelName string) error {
	n := len(t.tokens)
	t.ids = make(map[string]int32, n)
	for i, s := range t.tokens {
		if s == "" {
			s = fmt.Sprintf("[EMPTY_%d]", i)
			t.tokens[i] = s
		}
		if _, dup := t.ids[s]; dup {
			return &LoadError{Source: source, Key: "tokens", Err: &duplicateTokenError{text: s, first: t.ids[s], second: int32(i)}}
		}
		t.ids[s] = int32(i)
	}
	inRange := func(id int32) int32 {
		if id < 0 || int(id) >= n {
			return -1
		}
		return id
	}
	t.bos, t.eos, t.eot, t.eom, t.unk, t.pad = inRange(sp.bos), inRange(sp.eos), inRange(sp.eot), inRange(sp.eom), inRange(sp.unk), inRange(sp.pad)

	forceControl := func(id int32) { t.attrs[id] |= attrControl }
	if t.eot < 0 {
		for _, s := range endOfTurnTexts {
			if id, ok := t.ids[s]; ok {
				t.eot = id
				forceControl(id)
				break
			}
		}
	}
	if t.eom < 0 {
		if id, ok := t.ids["<|eom_id|>"]; ok {
			t.eom = id
			forceControl(id)
		}
	}
	t.eog = map[int32]bool{}
	for i, texts := range fillInTheMiddleTexts {
		id := inRange(sp.fim[i])
		if id < 0 {
			for _, s := range texts {
				if j, ok := t.ids[s]; ok {
					id = j
					forceControl(j)
					break
				}
			}
		}
		if id >= 0 && i >= 3 {
			t.eog[id] = true
		}
	}
	for _, s := range endOfGenerationTexts {
		if id, ok := t.ids[s]; ok {
			t.eog[id] = true
			forceControl(id)
		}
	}
	// gpt-oss renders these markers as text.
	for _, s := range []string{"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"} {
		if id, ok := t.ids[s]; ok {
			t.attrs[id] = attrUserDefined
		}
	}
	for _, id := range []int32{t.eos, t.eot, t.eom} {
		if id >= 0 {
			t.eog[id] = true
		}
	}
	// o200k-harmony and solar-open end turns with <|return|>/<|call|>, so
	// their <|end|> is plain text.
	has := func(s string) bool { id, ok := t.ids[s]; return ok && t.eog[id] }
	if has("<|end|>") && ((has("<|return|>") && has("<|call|>")) || (has("<|calls|>") && has("<|flush|>"))) {
		id := t.ids["<|end|>"]
		delete(t.eog, id)
		t.attrs[id] = attrUserDefined
	}
	if has("<|tool_response>") && has("</s>") {
		id := t.ids["</s>"]
		delete(t.eog, id)
		t.attrs[id] = attrNormal
	}

	for i, a := range t.attrs {
		if a&(attrControl|attrUserDefined|attrUnknown) != 0 {
			t.special = append(t.special, int32(i))
		}
	}
	slices.SortStableFunc(t.special, func(a, b int32) int {
		return cmp.Compare(len(t.tokens[b]), len(t.tokens[a]))
	})
	name := strings.ToLower(modelName)
	if strings.Contains(name, "phi-3") || strings.Contains(name, "phi3") {
		for _, id := range t.special {
			t.attrs[id] |= attrRStrip
		}
		if id, ok := t.ids["</s>"]; ok {
			t.attrs[id] |= attrRStrip
		}
		for _, s := range []string{"<unk>", "<s>", "<|endoftext|>"} {
			if id, ok := t.ids[s]; ok {
				t.attrs[id] &^= attrRStrip
			}
		}
	}

	for i := range t.byteTokens {
		t.byteTokens[i] = -1
		if id, ok := t.ids[byteTokenText(byte(i))]; ok {
			t.byteTokens[i] = id
		}
	}
	t.pieces = make([]string, n)
	for i := range t.tokens {
		t.pieces[i] = t.decodePiece(int32(i))
	}
	return nil
}

type duplicateTokenError struct {
	text          string
	first, second int32
}

func (e *duplicateTokenError) Error() string {
	return fmt.Sprintf("duplicate token %q at ids %d and %d", e.text, e.first, e.second)
}

const hexDigits = "0123456789ABCDEF"

// byteTokenText returns the SentencePiece byte token text "<0xNN>".
func byteTokenText(b byte) string {
	return string([]byte{'<', '0', 'x', hexDigits[b>>4], hexDigits[b&15], '>'})
}

// parseByteToken returns the byte of a "<0xNN>" token text.
func parseByteToken(s string) (byte, bool) {
	if len(s) != 6 || s[:3] != "<0x" || s[5] != '>' {
		return 0, false
	}
	hi, ok1 := hexValue(s[3])
	lo, ok2 := hexValue(s[4])
	return hi<<4 | lo, ok1 && ok2
}

func hexValue(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// decodePiece returns the text token id stands for in Decode: nothing for
// control and unknown tokens, user-defined tokens verbatim, byte tokens as
// their byte, and normal tokens with "▁" or the byte-to-rune map undone.
func (t *Tokenizer) decodePiece(id int32) string {
	a := t.attrs[id]
	text := t.tokens[id]
	switch {
	case a&(attrControl|attrUnknown) != 0:
		return ""
	case a&attrUserDefined != 0:
		return text
	case a&attrNormal != 0:
		if t.byteLevel {
			return decodeByteLevel(text)
		}
		return strings.ReplaceAll(text, spaceMark, " ")
	case a&attrByte != 0:
		if b, ok := parseByteToken(text); ok {
			return string([]byte{b})
		}
		return ""
	}
	return ""
}

// spaceMark is U+2581, the SentencePiece spelling of a space.
const spaceMark = "\u2581"
