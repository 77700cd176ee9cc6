package tokenizer

import (
	"fmt"
	"strings"
)

// Metadata is read access to GGUF key-value metadata. *gguf.File implements
// it. Each getter fails when the key is absent or holds another type; Has
// tells the two apart.
type Metadata interface {
	String(key string) (string, error)
	Strings(key string) ([]string, error)
	Floats(key string) ([]float32, error)
	Ints(key string) ([]int32, error)
	Uint(key string) (uint64, error)
	Bool(key string) (bool, error)
	Has(key string) bool
}

// GGUF metadata keys read by FromGGUF.
const (
	// KeyModel names the tokenizer model: "llama" or "gpt2".
	KeyModel = "tokenizer.ggml.model"
	// KeyPre names the BPE pre-tokenizer ("llama-bpe", "qwen2", …).
	KeyPre = "tokenizer.ggml.pre"
	// KeyTokens is the array of token texts.
	KeyTokens = "tokenizer.ggml.tokens"
	// KeyScores is the array of token scores (SentencePiece merge order).
	KeyScores = "tokenizer.ggml.scores"
	// KeyTokenType is the array of token types (see TokenType).
	KeyTokenType = "tokenizer.ggml.token_type"
	// KeyMerges is the array of BPE merges, "left right", in rank order.
	KeyMerges = "tokenizer.ggml.merges"
	// KeyBOS is the beginning-of-sequence token id.
	KeyBOS = "tokenizer.ggml.bos_token_id"
	// KeyEOS is the end-of-sequence token id.
	KeyEOS = "tokenizer.ggml.eos_token_id"
	// KeyEOT is the end-of-turn token id.
	KeyEOT = "tokenizer.ggml.eot_token_id"
	// KeyEOM is the end-of-message token id.
	KeyEOM = "tokenizer.ggml.eom_token_id"
	// KeyUnknown is the unknown token id.
	KeyUnknown = "tokenizer.ggml.unknown_token_id"
	// KeyPadding is the padding token id.
	KeyPadding = "tokenizer.ggml.padding_token_id"
	// KeyAddBOS says whether prompts start with BOS.
	KeyAddBOS = "tokenizer.ggml.add_bos_token"
	// KeyAddEOS says whether prompts end with EOS.
	KeyAddEOS = "tokenizer.ggml.add_eos_token"
	// KeyAddSpacePrefix says whether SentencePiece text gets a leading space.
	KeyAddSpacePrefix = "tokenizer.ggml.add_space_prefix"
	// KeyGeneralName is the model name; Phi-3 names switch on llama.cpp's
	// rstrip of special tokens.
	KeyGeneralName = "general.name"
)

// fimKeys are the fill-in-the-middle token keys, in specialIDs.fim order.
var fimKeys = [6][]string{
	{"tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.prefix_token_id"},
	{"tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.suffix_token_id"},
	{"tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.middle_token_id"},
	{"tokenizer.ggml.fim_pad_token_id"},
	{"tokenizer.ggml.fim_rep_token_id"},
	{"tokenizer.ggml.fim_sep_token_id"},
}

// FromGGUF loads the vocabulary stored in GGUF metadata. It supports
// tokenizer.ggml.model "llama" (SentencePiece) and "gpt2" (byte-level BPE,
// with the pre-tokenizers listed in the package documentation); other models
// and unknown tokenizer.ggml.pre values are errors wrapping ErrUnsupported.
// Defaults follow llama.cpp: BOS 1, EOS 2, unknown 0 and add_bos true for
// SentencePiece; BOS and EOS 11 for BPE.
func FromGGUF(md Metadata) (*Tokenizer, error) {
	fail := func(key string, err error) (*Tokenizer, error) {
		return nil, &LoadError{Source: "gguf", Key: key, Err: err}
	}
	model, err := md.String(KeyModel)
	if err != nil {
		return fail(KeyModel, err)
	}
	tokens, err := md.Strings(KeyTokens)
	if err != nil {
		return fail(KeyTokens, err)
	}
	n := len(tokens)
	t := &Tokenizer{
		tokens: make([]string, n),
		scores: make([]float32, n),
		attrs:  make([]attr, n),
	}
	for i, s := range tokens {
		if s == "" {
			s = fmt.Sprintf("[EMPTY_%d]", i)
		}
		t.tokens[i] = s
		t.attrs[i] = attrNormal
	}
	if md.Has(KeyScores) {
		scores, err := md.Floats(KeyScores)
		if err != nil {
			ints, ierr := md.Ints(KeyScores)
			if ierr != nil {
				return fail(KeyScores, err)
			}
			scores = make([]float32, len(ints))
			for i, v := range ints {
				scores[i] = float32(v)
			}
		}
		if len(scores) < n {
			return fail(KeyScores, fmt.Errorf("%d scores for %d tokens", len(scores), n))
		}
		copy(t.scores, scores)
	}
	if md.Has(KeyTokenType) {
		types, err := md.Ints(KeyTokenType)
		if err != nil {
			return fail(KeyTokenType, err)
		}
		if len(types) < n {
			return fail(KeyTokenType, fmt.Errorf("%d token types for %d tokens", len(types), n))
		}
		for i := range t.attrs {
			t.attrs[i] = attrOf(TokenType(types[i]))
		}
	}

	sp := noSpecialIDs()
	pre := ""
	switch model {
	case "llama":
		t.model = SPM
		t.escapeSpaces = true
		t.addSpacePrefix = true
		t.byteFallback = true
		t.addBOS = true
		sp.bos, sp.eos, sp.unk = 1, 2, 0
	case "gpt2":
		t.model = BPE
		t.byteLevel = true
		sp.bos, sp.eos = 11, 11
		merges, err := md.Strings(KeyMerges)
		if err != nil {
			return fail(KeyMerges, err)
		}
		t.ranks = ranksFromStrings(merges)
		if md.Has(KeyPre) {
			if pre, err = md.String(KeyPre); err != nil {
				return fail(KeyPre, err)
			}
		}
		p, ok := preTokenizerByName(pre)
		if !ok {
			return fail(KeyPre, fmt.Errorf("pre-tokenizer %q: %w", pre, ErrUnsupported))
		}
		t.pre = p
		switch pre {
		case "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano", "tekken":
			t.addBOS = true
		case "glm4", "chatglm-bpe":
			sp.bos = -1
		}
	default:
		return fail(KeyModel, fmt.Errorf("tokenizer model %q: %w", model, ErrUnsupported))
	}
	if md.Has(KeyAddSpacePrefix) {
		v, err := md.Bool(KeyAddSpacePrefix)
		if err != nil {
			return fail(KeyAddSpacePrefix, err)
		}
		t.addSpacePrefix = v && t.model == SPM
	}

	for _, k := range []struct {
		key string
		id  *int32
	}{{KeyBOS, &sp.bos}, {KeyEOS, &sp.eos}, {KeyEOT, &sp.eot}, {KeyEOM, &sp.eom}, {KeyUnknown, &sp.unk}, {KeyPadding, &sp.pad}} {
		if err := readID(md, k.key, n, k.id); err != nil {
			return fail(k.key, err)
		}
	}
	for i, keys := range fimKeys {
		for _, key := range keys {
			if err := readID(md, key, n, &sp.fim[i]); err != nil {
				return fail(key, err)
			}
		}
	}
	for _, k := range []struct {
		key string
		v   *bool
	}{{KeyAddBOS, &t.addBOS}, {KeyAddEOS, &t.addEOS}} {
		if md.Has(k.key) {
			v, err := md.Bool(k.key)
			if err != nil {
				return fail(k.key, err)
			}
			*k.v = v
		}
	}
	name := ""
	if md.Has(KeyGeneralName) {
		name, _ = md.String(KeyGeneralName)
	}
	if err := t.finish("gguf", sp, name); err != nil {
		return nil, err
	}
	return t, nil
}

// readID reads an optional token id; an id outside the vocabulary is
// ignored, as llama.cpp ignores it.
func readID(md Metadata, key string, n int, id *int32) error {
	if !md.Has(key) {
		return nil
	}
	v, err := md.Uint(key)
	if err != nil {
		return err
	}
	if v < uint64(n) {
		*id = int32(v)
	}
	return nil
}

// ranksFromStrings builds BPE merge ranks from "left right" strings; the
// rank is the index. As in llama.cpp the pieces split at the first space
// after the first byte, and the first of duplicate merges wins.
func ranksFromStrings(merges []string) map[pair]int32 {
	ranks := make(map[pair]int32, len(merges))
	for i, m := range merges {
		var p pair
		if len(m) > 1 {
			if j := strings.IndexByte(m[1:], ' '); j >= 0 {
				p = pair{m[:j+1], m[j+2:]}
			}
		}
		if _, dup := ranks[p]; !dup {
			ranks[p] = int32(i)
		}
	}
	return ranks
}
