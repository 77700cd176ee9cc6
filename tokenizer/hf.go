package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// hfFile is the part of a Hugging Face tokenizer.json that FromHFJSON reads.
type hfFile struct {
	AddedTokens []struct {
		ID      int32  `json:"id"`
		Content string `json:"content"`
		LStrip  bool   `json:"lstrip"`
		RStrip  bool   `json:"rstrip"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
	Normalizer    *hfComponent `json:"normalizer"`
	PreTokenizer  *hfComponent `json:"pre_tokenizer"`
	PostProcessor *hfComponent `json:"post_processor"`
	Decoder       *hfComponent `json:"decoder"`
	Model         struct {
		Type         string           `json:"type"`
		UnkToken     *string          `json:"unk_token"`
		ByteFallback bool             `json:"byte_fallback"`
		IgnoreMerges bool             `json:"ignore_merges"`
		Vocab        map[string]int32 `json:"vocab"`
		Merges       json.RawMessage  `json:"merges"`
	} `json:"model"`
}

// hfComponent is a normalizer, pre-tokenizer, post-processor or decoder;
// Sequence components nest.
type hfComponent struct {
	Type           string         `json:"type"`
	Normalizers    []*hfComponent `json:"normalizers"`
	PreTokenizers  []*hfComponent `json:"pretokenizers"`
	Processors     []*hfComponent `json:"processors"`
	Decoders       []*hfComponent `json:"decoders"`
	Pattern        *hfPattern     `json:"pattern"`
	Content        string         `json:"content"`
	Prepend        string         `json:"prepend"`
	Behavior       string         `json:"behavior"`
	Invert         bool           `json:"invert"`
	AddPrefixSpace *bool          `json:"add_prefix_space"`
	UseRegex       *bool          `json:"use_regex"`
	Individual     bool           `json:"individual_digits"`
	Replacement    string         `json:"replacement"`
	PrependScheme  string         `json:"prepend_scheme"`
	Split          *bool          `json:"split"`
	Single         []struct {
		SpecialToken *struct {
			ID string `json:"id"`
		} `json:"SpecialToken"`
		Sequence *struct{} `json:"Sequence"`
	} `json:"single"`
}

type hfPattern struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

// flatten returns c's leaves in order, expanding Sequence components.
func (c *hfComponent) flatten() []*hfComponent {
	if c == nil {
		return nil
	}
	if c.Type != "Sequence" {
		return []*hfComponent{c}
	}
	var out []*hfComponent
	for _, list := range [][]*hfComponent{c.Normalizers, c.PreTokenizers, c.Processors, c.Decoders} {
		for _, sub := range list {
			out = append(out, sub.flatten()...)
		}
	}
	return out
}

// gpt2Regex is the pre-tokenizer expression of GPT-2's ByteLevel
// pre-tokenizer with use_regex.
const gpt2Regex = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// knownRegexes maps the Split expressions of known tokenizer.json files
// onto the matchers implementing them.
var knownRegexes = map[string]matcher{
	gpt2Regex: matchGPT2,
	`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`:                                                                           matchGPT2,
	`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`:                              matchLlama3,
	`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`: matchLlama3,
	`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`:                                   matchQwen2,
	`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`:      matchQwen2,
	// Tekken and GPT-4o, as in tokenizer.json and as adapted by llama.cpp;
	// both map to llama.cpp's matching (see matchCasedWord).
	`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`:                                                                                              matchTekken,
	`[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`:                                                                                                                          matchTekken,
	`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`:                               matchGPT4o,
	`[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`: matchGPT4o,
	`[\p{P}\$\+<=>\^~\|]+`:            matchPunctRun,
	`[\p{P}\$\+<=>\^~\|` + "`" + `]+`: matchPunctRunBacktick,
	`\p{N}`:                           matchDigit,
	`\p{N}+`:                          matchDigits,
	`\d`:                              matchDigit,
	`[0-9][0-9][0-9]`:                 matchThreeASCIIDigits,
	`[\r\n]`:                          matchNewline,
	`\s?\p{L}+`:                       matchSpaceLetters,
	`\s?\p{P}+`:                       matchSpacePunct,
	`\s+$`:                            matchSpacesAtEnd,
	`[一-龥ࠀ-一가-퟿]+`:                    matchCJK,
	`\s?[!-/:-~！-／：-～‘-‟　-。]+`: matchDeepseekPunct,
}

// regexMatcher returns the matcher for a tokenizer.json Split expression.
func regexMatcher(expr string) (matcher, bool) {
	if m, ok := knownRegexes[expr]; ok {
		return m, true
	}
	// DeepSeek LLM's long letter class is recognised by its start.
	if strings.HasPrefix(expr, `\s?[A-Za-zµÀ-Ö`) && strings.HasSuffix(expr, `]+`) {
		return matchDeepseekLetters, true
	}
	return nil, false
}

// HFConfig is the optional content of a Hugging Face tokenizer_config.json,
// which names the BOS and EOS tokens and whether to add them.
type HFConfig struct {
	BOSToken    string // e.g. "<s>"; empty: found from tokenizer.json
	EOSToken    string // e.g. "</s>"
	AddBOSToken *bool  // nil: decided from tokenizer.json
	AddEOSToken *bool
}

// ParseHFConfig reads the fields of HFConfig from tokenizer_config.json.
// Token fields may be strings or {"content": "..."} objects.
func ParseHFConfig(data []byte) (HFConfig, error) {
	var raw struct {
		BOS    json.RawMessage `json:"bos_token"`
		EOS    json.RawMessage `json:"eos_token"`
		AddBOS *bool           `json:"add_bos_token"`
		AddEOS *bool           `json:"add_eos_token"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return HFConfig{}, &LoadError{Source: "tokenizer_config.json", Err: err}
	}
	tokenText := func(m json.RawMessage) string {
		var s string
		if json.Unmarshal(m, &s) == nil {
			return s
		}
		var o struct {
			Content string `json:"content"`
		}
		if json.Unmarshal(m, &o) == nil {
			return o.Content
		}
		return ""
	}
	return HFConfig{BOSToken: tokenText(raw.BOS), EOSToken: tokenText(raw.EOS), AddBOSToken: raw.AddBOS, AddEOSToken: raw.AddEOS}, nil
}

// FromHFJSON loads a Hugging Face tokenizer.json holding a BPE model: either
// byte-level (a ByteLevel pre-tokenizer, as GPT-2, Llama 3 and Qwen2 use) or
// SentencePiece-like (spaces written "▁" by a Prepend/Replace normalizer or
// a Metaspace pre-tokenizer, usually with byte_fallback, as Llama 2 uses).
// Split pre-tokenizers must use one of the known expressions; others, and
// other models (WordPiece, Unigram), are errors wrapping ErrUnsupported.
// config, if given, supplies the BOS and EOS tokens from
// tokenizer_config.json (see ParseHFConfig).
func FromHFJSON(data []byte, config ...HFConfig) (*Tokenizer, error) {
	var f hfFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, hfError("", err)
	}
	if f.Model.Type != "BPE" && !(f.Model.Type == "" && f.Model.Merges != nil) {
		return nil, hfError("model.type", fmt.Errorf("model %q: %w", f.Model.Type, ErrUnsupported))
	}
	t, sp, err := hfVocabulary(&f)
	if err != nil {
		return nil, err
	}
	if t.ranks, err = parseHFMerges(f.Model.Merges); err != nil {
		return nil, hfError("model.merges", err)
	}
	t.byteFallback = f.Model.ByteFallback
	if err := hfNormalizer(t, &f); err != nil {
		return nil, err
	}
	if err := hfPreTokenizer(t, &f); err != nil {
		return nil, err
	}
	var cfg HFConfig
	if len(config) > 0 {
		cfg = config[0]
	}
	hfSpecialTokens(t, &f, cfg, &sp)
	if err := t.finish("tokenizer.json", sp, ""); err != nil {
		return nil, err
	}
	return t, nil
}

// hfError is a LoadError in tokenizer.json at key.
func hfError(key string, err error) error {
	return &LoadError{Source: "tokenizer.json", Key: key, Err: err}
}

// maxHFVocab bounds token ids; maxHFHoles bounds the ids that neither the
// vocabulary nor the added tokens name, which are filled with [PAD] entries:
// a small file naming one huge id must not cost memory in proportion to it.
const (
	maxHFVocab = 1 << 21
	maxHFHoles = 1 << 12
)

// hfVocabulary builds the token table from model.vocab and added_tokens,
// filling holes, and finds the unknown token.
func hfVocabulary(f *hfFile) (*Tokenizer, specialIDs, error) {
	sp := noSpecialIDs()
	n := 0
	for _, id := range f.Model.Vocab {
		if id < 0 {
			return nil, sp, hfError("model.vocab", fmt.Errorf("negative id %d", id))
		}
		n = max(n, int(id)+1)
	}
	for _, at := range f.AddedTokens {
		if at.ID < 0 {
			return nil, sp, hfError("added_tokens", fmt.Errorf("negative id %d", at.ID))
		}
		n = max(n, int(at.ID)+1)
	}
	if n > maxHFVocab {
		return nil, sp, hfError("model.vocab", fmt.Errorf("token id %d too large", n-1))
	}
	if holes := n - len(f.Model.Vocab) - len(f.AddedTokens); holes > maxHFHoles {
		return nil, sp, hfError("model.vocab", fmt.Errorf("ids run to %d but only %d tokens are named: more than %d unnamed ids", n-1,
			len(f.Model.Vocab)+len(f.AddedTokens), maxHFHoles))
	}
	t := &Tokenizer{
		tokens: make([]string, n),
		scores: make([]float32, n),
		attrs:  make([]attr, n),
	}
	for s, id := range f.Model.Vocab {
		t.tokens[id] = s
		t.attrs[id] = attrNormal
		if _, ok := parseByteToken(s); ok && f.Model.ByteFallback {
			t.attrs[id] = attrByte
		}
	}
	for _, at := range f.AddedTokens {
		t.tokens[at.ID] = at.Content
		a := attrUserDefined
		if at.Special {
			a = attrControl
		}
		if at.LStrip {
			a |= attrLStrip
		}
		if at.RStrip {
			a |= attrRStrip
		}
		t.attrs[at.ID] = a
	}
	for i, s := range t.tokens {
		if s == "" {
			t.tokens[i] = fmt.Sprintf("[PAD%d]", i)
			t.attrs[i] = attrUnused
		}
	}
	if f.Model.UnkToken != nil {
		if id, ok := f.Model.Vocab[*f.Model.UnkToken]; ok {
			sp.unk = id
			t.attrs[id] = attrUnknown
		}
	}
	return t, sp, nil
}

// hfNormalizer reads the normalizer's SentencePiece conventions (a "▁"
// prefix, spaces as "▁"); normalizations poot does not apply are errors.
func hfNormalizer(t *Tokenizer, f *hfFile) error {
	for _, c := range f.Normalizer.flatten() {
		switch {
		case c.Type == "Prepend" && c.Prepend == spaceMark:
			t.addSpacePrefix = true
		case c.Type == "Replace" && c.Pattern != nil && c.Pattern.String != nil && *c.Pattern.String == " " && c.Content == spaceMark:
			t.escapeSpaces = true
		case c.Type == "NFC":
			// Not applied, as in llama.cpp: text is expected in NFC already.
		case c.Type == "NFKC" || c.Type == "NFD" || c.Type == "NFKD" || c.Type == "Lowercase" || c.Type == "Strip" || c.Type == "StripAccents" || c.Type == "Replace" || c.Type == "Prepend" || c.Type == "Precompiled" || c.Type == "BertNormalizer":
			return hfError("normalizer", fmt.Errorf("normalizer %s: %w", c.Type, ErrUnsupported))
		}
	}
	return nil
}

// hfPreTokenizer reads the pre-tokenizer and decoder, which decide between
// byte-level BPE and SentencePiece-like BPE, and the splitting rules.
func hfPreTokenizer(t *Tokenizer, f *hfFile) error {
	var matchers []matcher
	for _, c := range f.PreTokenizer.flatten() {
		m, err := hfPreComponent(t, c)
		if err != nil {
			return err
		}
		if m != nil {
			matchers = append(matchers, m)
		}
	}
	if !t.byteLevel {
		for _, c := range f.Decoder.flatten() {
			if c.Type == "ByteLevel" {
				t.byteLevel = true
			}
		}
	}
	if t.byteLevel {
		if t.escapeSpaces || t.addSpacePrefix {
			return hfError("pre_tokenizer", fmt.Errorf("both byte-level and SentencePiece conventions: %w", ErrUnsupported))
		}
		t.model = BPE
		t.pre = preTokenizer{matchers: matchers, ignoreMerges: f.Model.IgnoreMerges}
		return nil
	}
	if len(matchers) > 0 {
		return hfError("pre_tokenizer", fmt.Errorf("Split or Digits without ByteLevel: %w", ErrUnsupported))
	}
	t.model = SPM
	return nil
}

// hfPreComponent applies one pre-tokenizer component, returning the
// matcher it splits with, if any.
func hfPreComponent(t *Tokenizer, c *hfComponent) (matcher, error) {
	unsupported := func(format string, args ...any) (matcher, error) {
		return nil, hfError("pre_tokenizer", fmt.Errorf(format+": %w", append(args, ErrUnsupported)...))
	}
	switch c.Type {
	case "ByteLevel":
		t.byteLevel = true
		if c.AddPrefixSpace != nil && *c.AddPrefixSpace {
			return unsupported("ByteLevel add_prefix_space")
		}
		if c.UseRegex == nil || *c.UseRegex {
			return matchGPT2, nil
		}
		return nil, nil
	case "Split":
		if c.Pattern == nil || c.Invert || (c.Behavior != "Isolated" && c.Behavior != "") {
			return unsupported("Split with behavior %q invert %v", c.Behavior, c.Invert)
		}
		switch {
		case c.Pattern.Regex != nil:
			m, ok := regexMatcher(*c.Pattern.Regex)
			if !ok {
				return unsupported("Split regex %q", *c.Pattern.Regex)
			}
			return m, nil
		case c.Pattern.String != nil && *c.Pattern.String != "":
			lit := []rune(*c.Pattern.String)
			return func(seg []rune, pos int) int {
				if pos+len(lit) <= len(seg) && string(seg[pos:pos+len(lit)]) == string(lit) {
					return len(lit)
				}
				return 0
			}, nil
		}
		return unsupported("Split without a pattern")
	case "Digits":
		if c.Individual {
			return matchDigit, nil
		}
		return matchDigits, nil
	case "Metaspace":
		if c.Replacement != "" && c.Replacement != spaceMark {
			return unsupported("Metaspace replacement %q", c.Replacement)
		}
		t.escapeSpaces = true
		switch c.PrependScheme {
		case "never":
		case "", "first", "always":
			if c.AddPrefixSpace == nil || *c.AddPrefixSpace {
				t.addSpacePrefix = true
				t.prefixFirstOnly = c.PrependScheme == "first"
			}
		}
		t.splitOnSpace = c.Split == nil || *c.Split
		return nil, nil
	}
	return unsupported("pre-tokenizer %s", c.Type)
}

// hfSpecialTokens finds BOS and EOS and whether they are added: the
// tokenizer_config.json, else the post-processor template, else the usual
// texts.
func hfSpecialTokens(t *Tokenizer, f *hfFile, cfg HFConfig, sp *specialIDs) {
	index := make(map[string]int32, len(t.tokens))
	for i := len(t.tokens) - 1; i >= 0; i-- {
		index[t.tokens[i]] = int32(i) // the lowest id of a text wins
	}
	lookup := func(s string) int32 {
		if id, ok := index[s]; ok {
			return id
		}
		return -1
	}
	if cfg.BOSToken != "" {
		sp.bos = lookup(cfg.BOSToken)
	}
	if cfg.EOSToken != "" {
		sp.eos = lookup(cfg.EOSToken)
	}
	for _, c := range f.PostProcessor.flatten() {
		if c.Type != "TemplateProcessing" {
			continue
		}
		seenSequence := false
		for _, item := range c.Single {
			switch {
			case item.Sequence != nil:
				seenSequence = true
			case item.SpecialToken != nil && !seenSequence:
				if sp.bos < 0 {
					sp.bos = lookup(item.SpecialToken.ID)
				}
				if sp.bos >= 0 && t.tokens[sp.bos] == item.SpecialToken.ID {
					t.addBOS = true
				}
			case item.SpecialToken != nil && seenSequence:
				if sp.eos < 0 {
					sp.eos = lookup(item.SpecialToken.ID)
				}
				if sp.eos >= 0 && t.tokens[sp.eos] == item.SpecialToken.ID {
					t.addEOS = true
				}
			}
		}
	}
	if sp.bos < 0 {
		for _, s := range []string{"<s>", "<|begin_of_text|>", "<bos>", "<|startoftext|>"} {
			if sp.bos = lookup(s); sp.bos >= 0 {
				break
			}
		}
	}
	if sp.eos < 0 {
		for _, s := range []string{"</s>", "<|end_of_text|>", "<|endoftext|>", "<eos>", "<|im_end|>"} {
			if sp.eos = lookup(s); sp.eos >= 0 {
				break
			}
		}
	}
	if cfg.AddBOSToken != nil {
		t.addBOS = *cfg.AddBOSToken
	}
	if cfg.AddEOSToken != nil {
		t.addEOS = *cfg.AddEOSToken
	}
}

// as [left, right] pairs; the rank is the index.
func parseHFMerges(raw json.RawMessage) (map[pair]int32, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return map[pair]int32{}, nil
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err == nil {
		ranks := make(map[pair]int32, len(strs))
		for i, m := range strs {
			left, right, ok := strings.Cut(m, " ")
			if !ok {
				return nil, fmt.Errorf("merge %d %q has no space", i, m)
			}
			p := pair{left, right}
			if _, dup := ranks[p]; !dup {
				ranks[p] = int32(i)
			}
		}
		return ranks, nil
	}
	var pairs [][]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, errors.New("merges are neither strings nor pairs of strings")
	}
	ranks := make(map[pair]int32, len(pairs))
	for i, m := range pairs {
		if len(m) != 2 {
			return nil, fmt.Errorf("merge %d has %d parts", i, len(m))
		}
		p := pair{m[0], m[1]}
		if _, dup := ranks[p]; !dup {
			ranks[p] = int32(i)
		}
	}
	return ranks, nil
}
