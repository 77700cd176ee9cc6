package tokenizer

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// mapMetadata is an in-memory Metadata for hand-built vocabularies.
type mapMetadata map[string]any

var errMissing = errors.New("missing")

func get[T any](m mapMetadata, key string) (T, error) {
	var zero T
	v, ok := m[key]
	if !ok {
		return zero, fmt.Errorf("%s: %w", key, errMissing)
	}
	x, ok := v.(T)
	if !ok {
		return zero, fmt.Errorf("%s: wrong type %T", key, v)
	}
	return x, nil
}

func (m mapMetadata) String(k string) (string, error)    { return get[string](m, k) }
func (m mapMetadata) Strings(k string) ([]string, error) { return get[[]string](m, k) }
func (m mapMetadata) Floats(k string) ([]float32, error) { return get[[]float32](m, k) }
func (m mapMetadata) Ints(k string) ([]int32, error)     { return get[[]int32](m, k) }
func (m mapMetadata) Uint(k string) (uint64, error)      { return get[uint64](m, k) }
func (m mapMetadata) Bool(k string) (bool, error)        { return get[bool](m, k) }
func (m mapMetadata) Has(k string) bool                  { _, ok := m[k]; return ok }
func (m mapMetadata) with(k string, v any) mapMetadata   { c := maps(m); c[k] = v; return c }
func maps(m mapMetadata) mapMetadata {
	c := mapMetadata{}
	for k, v := range m {
		c[k] = v
	}
	return c
}

// spmVocab builds a small SentencePiece vocabulary: <unk>, <s>, </s>, the
// 256 byte tokens, then pieces whose score rises with their length, then a
// user-defined and a control token.
func spmVocab() (mapMetadata, map[string]int32) {
	tokens := []string{"<unk>", "<s>", "</s>"}
	types := []int32{2, 3, 3}
	scores := []float32{0, 0, 0}
	for b := range 256 {
		tokens = append(tokens, byteTokenText(byte(b)))
		types = append(types, 6)
		scores = append(scores, 0)
	}
	pieces := []string{
		"▁", "h", "e", "l", "o", "w", "r", "d", "1", "2", "3", "é", "!",
		"▁h", "▁he", "▁hel", "▁hell", "▁hello", "ll", "lo",
		"▁w", "▁wo", "▁wor", "▁worl", "▁world", "▁▁", "▁▁▁", "12", "▁1",
	}
	for _, p := range pieces {
		tokens = append(tokens, p)
		types = append(types, 1)
		scores = append(scores, float32(len([]rune(p))))
	}
	tokens = append(tokens, "<|user|>", "<|im_end|>")
	types = append(types, 4, 3)
	scores = append(scores, 0, 0)
	ids := map[string]int32{}
	for i, s := range tokens {
		ids[s] = int32(i)
	}
	return mapMetadata{
		KeyModel:       "llama",
		KeyTokens:      tokens,
		KeyScores:      scores,
		KeyTokenType:   types,
		KeyBOS:         uint64(1),
		KeyEOS:         uint64(2),
		KeyUnknown:     uint64(0),
		KeyGeneralName: "tiny",
	}, ids
}

func mustLoad(t *testing.T, md Metadata) *Tokenizer {
	t.Helper()
	tok, err := FromGGUF(md)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func pieces(tok *Tokenizer, ids []int32) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = tok.Piece(id)
	}
	return out
}

func TestSPMHandBuilt(t *testing.T) {
	md, _ := spmVocab()
	tok := mustLoad(t, md)
	cases := []struct {
		text string
		opts EncodeOptions
		want []string
	}{
		{"hello world", EncodeOptions{}, []string{"▁hello", "▁world"}},
		{"hello world", EncodeOptions{AddBOS: true}, []string{"<s>", "▁hello", "▁world"}},
		{"", EncodeOptions{}, []string{}},
		{"", EncodeOptions{AddBOS: true}, []string{"<s>"}},
		// Leading and repeated spaces: "▁▁" and "▁h" tie on score and the
		// leftmost pair merges first, which strands "h".
		{" hello", EncodeOptions{}, []string{"▁▁", "h", "e", "ll", "o"}},
		{"hello   world", EncodeOptions{}, []string{"▁hello", "▁▁▁", "w", "o", "r", "l", "d"}},
		{"hello  world", EncodeOptions{}, []string{"▁hello", "▁▁", "w", "o", "r", "l", "d"}},
		// Digits merge like any other piece.
		{"123", EncodeOptions{}, []string{"▁1", "2", "3"}},
		// Characters missing from the vocabulary fall back to bytes.
		{"hé✓", EncodeOptions{}, []string{"▁h", "é", "<0xE2>", "<0x9C>", "<0x93>"}},
		{"😀", EncodeOptions{}, []string{"▁", "<0xF0>", "<0x9F>", "<0x98>", "<0x80>"}},
		// User-defined tokens are always cut out; the text after a special
		// token gets a space prefix again.
		{"hello<|user|>world", EncodeOptions{}, []string{"▁hello", "<|user|>", "▁world"}},
		// Control tokens only with ParseSpecial.
		{"hello<|im_end|>", EncodeOptions{ParseSpecial: true}, []string{"▁hello", "<|im_end|>"}},
		{"<s>hello", EncodeOptions{ParseSpecial: true}, []string{"<s>", "▁hello"}},
	}
	for _, c := range cases {
		ids, err := tok.Encode(c.text, c.opts)
		if err != nil {
			t.Fatalf("%q: %v", c.text, err)
		}
		got := pieces(tok, ids)
		if !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q, %+v) = %q, want %q", c.text, c.opts, got, c.want)
		}
	}
	// Without ParseSpecial a control token is plain text.
	ids, err := tok.Encode("<|im_end|>", EncodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(ids, tok.EOT()) {
		t.Errorf("control token recognised without ParseSpecial: %q", pieces(tok, ids))
	}
	if text, _ := tok.Decode(ids); text != " <|im_end|>" {
		t.Errorf("Decode = %q", text)
	}
	if tok.EOT() < 0 || !tok.IsEOG(tok.EOT()) || !tok.IsEOG(tok.EOS()) || tok.IsEOG(tok.BOS()) {
		t.Errorf("EOT %d, EOGs %v", tok.EOT(), tok.EOGs())
	}
	if !tok.AddBOS() || tok.AddEOS() {
		t.Errorf("AddBOS %v AddEOS %v", tok.AddBOS(), tok.AddEOS())
	}
}

func TestSPMAddSpacePrefixOff(t *testing.T) {
	md, _ := spmVocab()
	tok := mustLoad(t, md.with(KeyAddSpacePrefix, false))
	ids, _ := tok.Encode("hello", EncodeOptions{})
	if got := pieces(tok, ids); !slices.Equal(got, []string{"h", "e", "ll", "o"}) && !slices.Equal(got, []string{"h", "e", "l", "lo"}) {
		t.Errorf("no prefix: %q", got)
	}
}

func TestRStripAndLStrip(t *testing.T) {
	md, ids := spmVocab()
	tok := mustLoad(t, md)
	tok.attrs[ids["<|user|>"]] |= attrRStrip | attrLStrip
	got, _ := tok.Encode("hello  <|user|>  world", EncodeOptions{})
	if want := []string{"▁hello", "<|user|>", "▁world"}; !slices.Equal(pieces(tok, got), want) {
		t.Errorf("got %q, want %q", pieces(tok, got), want)
	}
}

func TestSpecialLongestFirst(t *testing.T) {
	md, _ := spmVocab()
	tokens := slices.Clone(md[KeyTokens].([]string))
	types := slices.Clone(md[KeyTokenType].([]int32))
	scores := slices.Clone(md[KeyScores].([]float32))
	tokens = append(tokens, "ab", "bcd")
	types = append(types, 4, 4)
	scores = append(scores, 0, 0)
	tok := mustLoad(t, md.with(KeyTokens, tokens).with(KeyTokenType, types).with(KeyScores, scores))
	// llama.cpp looks for the longer token everywhere first.
	ids, _ := tok.Encode("abcd", EncodeOptions{})
	if got := pieces(tok, ids); !slices.Equal(got, []string{"▁", "<0x61>", "bcd"}) {
		t.Errorf("got %q", got)
	}
}

func TestDecode(t *testing.T) {
	md, ids := spmVocab()
	tok := mustLoad(t, md)
	got, err := tok.Decode([]int32{1, ids["▁hello"], ids["<0xE2>"], ids["<0x9C>"], ids["<0x93>"], ids["<|user|>"], 2})
	if err != nil {
		t.Fatal(err)
	}
	if got != " hello✓<|user|>" {
		t.Errorf("Decode = %q", got)
	}
	_, err = tok.Decode([]int32{5, int32(tok.VocabSize())})
	var idErr *TokenIDError
	if !errors.As(err, &idErr) || idErr.ID != int32(tok.VocabSize()) {
		t.Errorf("out-of-range id: %v", err)
	}
	if _, err := tok.Decode([]int32{-1}); !errors.As(err, &idErr) {
		t.Errorf("negative id: %v", err)
	}
}

func TestStreamDecoderSplitsUTF8(t *testing.T) {
	md, ids := spmVocab()
	tok := mustLoad(t, md)
	seq := []int32{ids["▁hello"], ids["<0xE2>"], ids["<0x9C>"], ids["<0x93>"], ids["!"], ids["<0xF0>"], ids["<0x9F>"], ids["<0x98>"], ids["<0x80>"], ids["<0xE2>"]}
	d := NewStreamDecoder(tok)
	var outs []string
	for _, id := range seq {
		outs = append(outs, d.Add(id))
	}
	want := []string{" hello", "", "", "✓", "!", "", "", "", "😀", ""}
	if !slices.Equal(outs, want) {
		t.Errorf("Add outputs %q, want %q", outs, want)
	}
	if rest := d.Flush(); rest != "\xe2" {
		t.Errorf("Flush = %q", rest)
	}
	all, _ := tok.Decode(seq)
	if strings.Join(outs, "")+"\xe2" != all {
		t.Errorf("stream and Decode differ")
	}
	if d.Add(-5) != "" || d.Err() == nil {
		t.Errorf("bad id not reported")
	}
}

func TestFromGGUFErrors(t *testing.T) {
	md, _ := spmVocab()
	for name, bad := range map[string]mapMetadata{
		"no model":        maps(md),
		"unknown model":   md.with(KeyModel, "t5x"),
		"no tokens":       md.with(KeyTokens, 3),
		"short scores":    md.with(KeyScores, []float32{1}),
		"gpt2 no merges":  md.with(KeyModel, "gpt2"),
		"unknown pre":     md.with(KeyModel, "gpt2").with(KeyMerges, []string{}).with(KeyPre, "no-such-pre"),
		"duplicate token": md.with(KeyTokens, append(slices.Clone(md[KeyTokens].([]string)[:10]), "<s>")).with(KeyScores, make([]float32, 11)).with(KeyTokenType, make([]int32, 11)),
	} {
		if name == "no model" {
			delete(bad, KeyModel)
		}
		_, err := FromGGUF(bad)
		var le *LoadError
		if !errors.As(err, &le) {
			t.Errorf("%s: got %v, want a *LoadError", name, err)
		}
	}
	_, err := FromGGUF(md.with(KeyModel, "bert"))
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("bert: %v", err)
	}
}

func TestMissingBOS(t *testing.T) {
	md, _ := spmVocab()
	tok := mustLoad(t, md.with(KeyModel, "gpt2").with(KeyMerges, []string{}).with(KeyBOS, uint64(1<<40)).with(KeyEOS, uint64(1<<40)))
	// gpt2 defaults BOS/EOS to 11, which exists here; force absence.
	tok.bos = -1
	var mt *MissingTokenError
	if _, err := tok.Encode("x", EncodeOptions{AddBOS: true}); !errors.As(err, &mt) {
		t.Errorf("got %v", err)
	}
}
