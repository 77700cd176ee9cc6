package tokenizer

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pootlabs/poot/internal/mmap"
	"slices"
	"strings"
)

// hfFile is the part of a Hugging Face tokenizer.json that FromHFJSON reads.
type hfFile struct {
	AddedTokens []struct {
		ID         int32  `json:"id"`
		Content    string `json:"content"`
		LStrip     bool   `json:"lstrip"`
		RStrip     bool   `json:"rstrip"`
		Special    bool   `json:"special"`
		Normalized *bool  `json:"normalized"`
		SingleWord bool   `json:"single_word"`
	} `json:"added_tokens"`
	Normalizer    *hfComponent `json:"normalizer"`
	PreTokenizer  *hfComponent `json:"pre_tokenizer"`
	PostProcessor *hfComponent `json:"post_processor"`
	Decoder       *hfComponent `json:"decoder"`
	Model         struct {
		Type                    string           `json:"type"`
		UnkToken                *string          `json:"unk_token"`
		ByteFallback            bool             `json:"byte_fallback"`
		IgnoreMerges            bool             `json:"ignore_merges"`
		FuseUnk                 bool             `json:"fuse_unk"`
		Dropout                 *float64         `json:"dropout"`
		ContinuingSubwordPrefix *string          `json:"continuing_subword_prefix"`
		EndOfWordSuffix         *string          `json:"end_of_word_suffix"`
		Vocab                   map[string]int32 `json:"vocab"`
		Merges                  json.RawMessage  `json:"merges"`
	} `json:"model"`
}

// hfComponent is a normalizer, pre-tokenizer, post-processor or decoder;
// Sequence components nest.
type hfComponent struct {
	Type               string                     `json:"type"`
	Normalizers        []*hfComponent             `json:"normalizers"`
	PreTokenizers      []*hfComponent             `json:"pretokenizers"`
	Processors         []*hfComponent             `json:"processors"`
	Decoders           []*hfComponent             `json:"decoders"`
	Pattern            *hfPattern                 `json:"pattern"`
	Content            string                     `json:"content"`
	Prepend            string                     `json:"prepend"`
	Behavior           string                     `json:"behavior"`
	Invert             bool                       `json:"invert"`
	AddPrefixSpace     *bool                      `json:"add_prefix_space"`
	UseRegex           *bool                      `json:"use_regex"`
	Individual         bool                       `json:"individual_digits"`
	Replacement        string                     `json:"replacement"`
	PrependScheme      string                     `json:"prepend_scheme"`
	Split              *bool                      `json:"split"`
	StripLeft          *bool                      `json:"strip_left"`
	StripRight         *bool                      `json:"strip_right"`
	CleanText          *bool                      `json:"clean_text"`
	HandleChineseChars *bool                      `json:"handle_chinese_chars"`
	StripAccents       *bool                      `json:"strip_accents"`
	Lowercase          *bool                      `json:"lowercase"`
	Delimiter          string                     `json:"delimiter"`
	Start              int                        `json:"start"`
	Stop               int                        `json:"stop"`
	Prefix             string                     `json:"prefix"`
	Suffix             string                     `json:"suffix"`
	Cls                []json.RawMessage          `json:"cls"`
	Sep                []json.RawMessage          `json:"sep"`
	SpecialTokens      map[string]hfTemplateToken `json:"special_tokens"`
	Single             []struct {
		SpecialToken *struct {
			ID string `json:"id"`
		} `json:"SpecialToken"`
		Sequence *struct {
			ID string `json:"id"`
		} `json:"Sequence"`
	} `json:"single"`
}

type hfTemplateToken struct {
	IDs []int32 `json:"ids"`
}

type hfPattern struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

// HFConfig is the optional content of a Hugging Face tokenizer_config.json,
// which names the BOS and EOS tokens and whether to add them.
type HFConfig struct {
	BOSToken    string // e.g. "<s>"; empty: found from tokenizer.json
	EOSToken    string // e.g. "</s>"
	AddBOSToken *bool  // nil: decided by tokenizer.json's post-processor
	AddEOSToken *bool
	// EOSTokenIDs are further end-of-generation ids, from a config.json's
	// eos_token_id (see FromHFDir).
	EOSTokenIDs []int32
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

// parseModelConfigEOS reads config.json's eos_token_id, a number or a list.
func parseModelConfigEOS(data []byte) ([]int32, error) {
	var raw struct {
		EOS json.RawMessage `json:"eos_token_id"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, &LoadError{Source: "config.json", Err: err}
	}
	if len(raw.EOS) == 0 || string(raw.EOS) == "null" {
		return nil, nil
	}
	var one int32
	if json.Unmarshal(raw.EOS, &one) == nil {
		return []int32{one}, nil
	}
	var many []int32
	if err := json.Unmarshal(raw.EOS, &many); err != nil {
		return nil, &LoadError{Source: "config.json", Key: "eos_token_id", Err: err}
	}
	return many, nil
}

// FromHFDir loads the tokenizer of a Hugging Face model directory: its
// tokenizer.json (or tokenizer.json.gz), with tokenizer_config.json and
// config.json when present. No weights are needed.
func FromHFDir(dir string) (*Tokenizer, error) {
	// Reads are bounded and refuse what is not a regular file (a FIFO, a
	// link to /dev/zero), as the checkpoint loader's are.
	read := func(name string, limit int64) ([]byte, error) { return mmap.ReadFile(filepath.Join(dir, name), limit) }
	data, err := read("tokenizer.json", maxHFFile)
	if errors.Is(err, os.ErrNotExist) {
		var gz []byte
		if gz, err = read("tokenizer.json.gz", maxHFFile); err == nil {
			data, err = gunzip(gz)
		}
	}
	if err != nil {
		return nil, &LoadError{Source: "tokenizer.json", Err: err}
	}
	tokCfg, err := read("tokenizer_config.json", maxHFConfig)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, &LoadError{Source: "tokenizer_config.json", Err: err}
	}
	modelCfg, err := read("config.json", maxHFConfig)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, &LoadError{Source: "config.json", Err: err}
	}
	return FromHFFiles(data, tokCfg, modelCfg)
}

// FromHFFiles loads a tokenizer from the bytes of a model directory's
// tokenizer.json, tokenizer_config.json and config.json (either of the
// last two nil when absent), as FromHFDir does from the files.
func FromHFFiles(tokenizerJSON, tokenizerConfig, modelConfig []byte) (*Tokenizer, error) {
	var cfg HFConfig
	var err error
	if tokenizerConfig != nil {
		if cfg, err = ParseHFConfig(tokenizerConfig); err != nil {
			return nil, err
		}
	}
	if modelConfig != nil {
		if cfg.EOSTokenIDs, err = parseModelConfigEOS(modelConfig); err != nil {
			return nil, err
		}
	}
	return FromHFJSON(tokenizerJSON, cfg)
}

// The largest files FromHFDir reads: tokenizer.json (tens of megabytes in
// published models) and the small JSON files beside it.
const (
	maxHFFile   = 256 << 20
	maxHFConfig = 16 << 20
)

func gunzip(data []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

// FromHFJSON loads a Hugging Face tokenizer.json holding a BPE model and
// tokenizes as Hugging Face's tokenizers library does: added tokens cut out
// of the text as the file flags them, then the normalizer, pre-tokenizer,
// BPE model and post-processor the file names; Decode runs its decoder.
// A component or option this package does not implement (WordPiece and
// Unigram models, the Precompiled normalizer, …) is an error wrapping
// ErrUnsupported; a regular expression it cannot run is a *RegexError.
// config, if given, supplies tokenizer_config.json's special tokens (see
// ParseHFConfig); its add_bos_token and add_eos_token, when set, override
// the post-processor's choice, as Python transformers' Llama and Gemma
// tokenizers do.
func FromHFJSON(data []byte, config ...HFConfig) (*Tokenizer, error) {
	var f hfFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, hfError("", err)
	}
	if f.Model.Type != "BPE" && !(f.Model.Type == "" && f.Model.Merges != nil) {
		return nil, hfUnsupported("model.type", "model %q", f.Model.Type)
	}
	if d := f.Model.Dropout; d != nil && *d > 0 {
		return nil, hfUnsupported("model.dropout", "BPE dropout %v", *d)
	}
	var cfg HFConfig
	if len(config) > 0 {
		cfg = config[0]
	}
	t, err := hfVocabulary(&f)
	if err != nil {
		return nil, err
	}
	p := &hfPipeline{}
	t.hf = p
	if err := p.build(t, &f); err != nil {
		return nil, err
	}
	if err := p.specialTokens(t, &f, cfg); err != nil {
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
// filling holes.
func hfVocabulary(f *hfFile) (*Tokenizer, error) {
	n := 0
	for _, id := range f.Model.Vocab {
		if id < 0 {
			return nil, hfError("model.vocab", fmt.Errorf("negative id %d", id))
		}
		n = max(n, int(id)+1)
	}
	for _, at := range f.AddedTokens {
		if at.ID < 0 {
			return nil, hfError("added_tokens", fmt.Errorf("negative id %d", at.ID))
		}
		if at.Content == "" {
			return nil, hfError("added_tokens", fmt.Errorf("token %d is empty", at.ID))
		}
		n = max(n, int(at.ID)+1)
	}
	if n > maxHFVocab {
		return nil, hfError("model.vocab", fmt.Errorf("token id %d too large", n-1))
	}
	if holes := n - len(f.Model.Vocab) - len(f.AddedTokens); holes > maxHFHoles {
		return nil, hfError("model.vocab", fmt.Errorf("ids run to %d but only %d tokens are named: more than %d unnamed ids", n-1,
			len(f.Model.Vocab)+len(f.AddedTokens), maxHFHoles))
	}
	t := &Tokenizer{
		model:  SPM,
		tokens: make([]string, n),
		scores: make([]float32, n),
		attrs:  make([]attr, n),
		ids:    make(map[string]int32, n),
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
		t.attrs[at.ID] = attrUserDefined
		if at.Special {
			t.attrs[at.ID] = attrControl
		}
	}
	for i, s := range t.tokens {
		if s == "" && t.attrs[i] == 0 {
			t.tokens[i] = fmt.Sprintf("[PAD%d]", i)
			t.attrs[i] = attrUnused
		}
	}
	for i := len(t.tokens) - 1; i >= 0; i-- {
		t.ids[t.tokens[i]] = int32(i) // the lowest id of a text wins
	}
	for _, at := range f.AddedTokens {
		t.ids[at.Content] = at.ID // an added token wins over the vocabulary
	}
	return t, nil
}

// build reads every component of the file into p.
func (p *hfPipeline) build(t *Tokenizer, f *hfFile) error {
	var err error
	if p.normalizers, err = buildNormalizers(f.Normalizer); err != nil {
		return err
	}
	var byteLevel bool
	if p.pre, byteLevel, err = buildPreTokenizer(f.PreTokenizer); err != nil {
		return err
	}
	if err := p.bpe.build(t, f); err != nil {
		return err
	}
	added := map[string]bool{}
	p.special = make([]bool, len(t.tokens))
	for _, at := range f.AddedTokens {
		added[at.Content] = true
		p.special[at.ID] = at.Special
		tok := hfAdded{id: at.ID, content: at.Content, special: at.Special, lstrip: at.LStrip, rstrip: at.RStrip, singleWord: at.SingleWord}
		// normalized defaults to true for ordinary added tokens.
		if at.Normalized == nil && !at.Special || at.Normalized != nil && *at.Normalized {
			if tok.content, err = p.normalize(at.Content); err != nil {
				return hfError("added_tokens", err)
			}
			if tok.content == "" {
				continue
			}
			p.normAdded.add(tok)
		} else {
			p.rawAdded.add(tok)
		}
	}
	if p.decoders, err = buildDecoders(f.Decoder, added); err != nil {
		return err
	}
	p.joinWithSpaces = f.Decoder == nil
	for _, c := range f.Decoder.flatten() {
		byteLevel = byteLevel || c.Type == "ByteLevel"
	}
	if byteLevel {
		t.model, t.byteLevel = BPE, true
	}
	return p.postProcessor(t, f.PostProcessor)
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

// postProcessor reads the special tokens the post-processor puts around a
// sequence.
func (p *hfPipeline) postProcessor(t *Tokenizer, c *hfComponent) error {
	lookup := func(s string) (int32, error) {
		if id, ok := t.ids[s]; ok {
			return id, nil
		}
		return 0, hfError("post_processor", fmt.Errorf("special token %q is not in the vocabulary", s))
	}
	for _, c := range c.flatten() {
		switch c.Type {
		case "ByteLevel":
		case "TemplateProcessing":
			p.prefix, p.suffix = nil, nil
			seen := false
			for _, item := range c.Single {
				switch {
				case item.Sequence != nil:
					if item.Sequence.ID != "A" {
						return hfUnsupported("post_processor", "template sequence %q", item.Sequence.ID)
					}
					seen = true
				case item.SpecialToken != nil:
					ids := c.SpecialTokens[item.SpecialToken.ID].IDs
					if len(ids) == 0 {
						id, err := lookup(item.SpecialToken.ID)
						if err != nil {
							return err
						}
						ids = []int32{id}
					}
					for _, id := range ids {
						if id < 0 || int(id) >= len(t.tokens) {
							return hfError("post_processor", fmt.Errorf("template token id %d out of range", id))
						}
					}
					if seen {
						p.suffix = append(p.suffix, ids...)
					} else {
						p.prefix = append(p.prefix, ids...)
					}
				}
			}
		case "RobertaProcessing", "BertProcessing":
			var ends [2]int32
			for i, pair := range [][]json.RawMessage{c.Cls, c.Sep} {
				var s string
				if len(pair) != 2 || json.Unmarshal(pair[0], &s) != nil {
					return hfError("post_processor", fmt.Errorf("%s cls/sep is not [token, id]", c.Type))
				}
				id, err := lookup(s)
				if err != nil {
					return err
				}
				ends[i] = id
			}
			p.prefix, p.suffix = []int32{ends[0]}, []int32{ends[1]}
		default:
			return hfUnsupported("post_processor", "post-processor %q", c.Type)
		}
	}
	return nil
}

// specialTokens finds BOS, EOS (tokenizer_config.json's, else the
// post-processor's, else the usual texts), the unknown token and the
// end-of-generation set, and whether BOS and EOS are added.
func (p *hfPipeline) specialTokens(t *Tokenizer, f *hfFile, cfg HFConfig) error {
	t.bos, t.eos, t.eot, t.eom, t.unk, t.pad = -1, -1, -1, -1, -1, -1
	lookup := func(s string) int32 {
		if id, ok := t.ids[s]; ok && s != "" {
			return id
		}
		return -1
	}
	t.bos, t.eos = lookup(cfg.BOSToken), lookup(cfg.EOSToken)
	if t.bos < 0 && len(p.prefix) > 0 {
		t.bos = p.prefix[0]
	}
	if t.eos < 0 && len(p.suffix) > 0 {
		t.eos = p.suffix[len(p.suffix)-1]
	}
	for _, s := range []string{"<s>", "<|begin_of_text|>", "<bos>", "<|startoftext|>"} {
		if t.bos < 0 {
			t.bos = lookup(s)
		}
	}
	for _, s := range []string{"</s>", "<|end_of_text|>", "<|endoftext|>", "<eos>", "<|im_end|>"} {
		if t.eos < 0 {
			t.eos = lookup(s)
		}
	}
	if f.Model.UnkToken != nil {
		t.unk = lookup(*f.Model.UnkToken)
		if t.unk >= 0 {
			t.attrs[t.unk] = attrUnknown
		}
	}
	t.addBOS, t.addEOS = len(p.prefix) > 0, len(p.suffix) > 0
	if cfg.AddBOSToken != nil {
		t.addBOS = *cfg.AddBOSToken
		if t.addBOS && len(p.prefix) == 0 && t.bos >= 0 {
			p.prefix = []int32{t.bos}
		}
	}
	if cfg.AddEOSToken != nil {
		t.addEOS = *cfg.AddEOSToken
		if t.addEOS && len(p.suffix) == 0 && t.eos >= 0 {
			p.suffix = []int32{t.eos}
		}
	}
	// Generation ends at EOS, the config.json's EOS ids, and the special
	// tokens spelled like an end of turn.
	t.eog = map[int32]bool{}
	if t.eos >= 0 {
		t.eog[t.eos] = true
	}
	for _, id := range cfg.EOSTokenIDs {
		if id >= 0 && int(id) < len(t.tokens) {
			t.eog[id] = true
		}
	}
	isSpecial := func(id int32) bool { return id >= 0 && p.special[id] }
	for _, s := range endOfTurnTexts {
		if id := lookup(s); isSpecial(id) && t.eot < 0 {
			t.eot = id
		}
	}
	if id := lookup("<|eom_id|>"); isSpecial(id) {
		t.eom = id
	}
	for _, s := range endOfGenerationTexts {
		if id := lookup(s); isSpecial(id) {
			t.eog[id] = true
		}
	}
	for _, id := range []int32{t.eot, t.eom} {
		if id >= 0 {
			t.eog[id] = true
		}
	}
	for i := range t.byteTokens {
		t.byteTokens[i] = -1
		if id, ok := t.ids[byteTokenText(byte(i))]; ok {
			t.byteTokens[i] = id
		}
	}
	t.pieces = make([]string, len(t.tokens))
	for i := range t.tokens {
		if !p.special[i] {
			t.pieces[i] = p.decodeRaw(t, []int32{int32(i)})
		}
	}
	return nil
}

// parseHFMerges reads model.merges, either as "left right" strings or as
// [left, right] pairs, in rank order.
func parseHFMerges(raw json.RawMessage) ([]pair, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err == nil {
		out := make([]pair, len(strs))
		for i, m := range strs {
			left, right, ok := strings.Cut(m, " ")
			if !ok {
				return nil, fmt.Errorf("merge %d %q has no space", i, m)
			}
			out[i] = pair{left, right}
		}
		return out, nil
	}
	var pairs [][]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, errors.New("merges are neither strings nor pairs of strings")
	}
	out := make([]pair, len(pairs))
	for i, m := range pairs {
		if len(m) != 2 {
			return nil, fmt.Errorf("merge %d has %d parts", i, len(m))
		}
		out[i] = pair{m[0], m[1]}
	}
	return out, nil
}

// hfAdded is an added token as the text matcher needs it; content is
// normalized for tokens matched after normalization.
type hfAdded struct {
	id                                  int32
	content                             string
	special, lstrip, rstrip, singleWord bool
}

// addedSet finds added tokens in text: at the leftmost position where one
// matches, the longest one.
type addedSet struct {
	byText  map[string]hfAdded
	lengths []int // distinct content lengths, longest first
	first   [256]bool
}

func (a *addedSet) add(tok hfAdded) {
	if a.byText == nil {
		a.byText = map[string]hfAdded{}
	}
	if _, dup := a.byText[tok.content]; dup {
		return // the first of two tokens with one text wins
	}
	a.byText[tok.content] = tok
	a.first[tok.content[0]] = true
	if !slices.Contains(a.lengths, len(tok.content)) {
		a.lengths = append(a.lengths, len(tok.content))
		slices.Sort(a.lengths)
		slices.Reverse(a.lengths)
	}
}

// find returns the next match in text at or after from, skipping special
// tokens unless parseSpecial.
func (a *addedSet) find(text string, from int, parseSpecial bool) (hfAdded, int, bool) {
	if len(a.byText) == 0 {
		return hfAdded{}, 0, false
	}
	for i := from; i < len(text); i++ {
		if !a.first[text[i]] {
			continue
		}
		for _, n := range a.lengths {
			if i+n > len(text) {
				continue
			}
			if tok, ok := a.byText[text[i:i+n]]; ok && (parseSpecial || !tok.special) {
				return tok, i, true
			}
		}
	}
	return hfAdded{}, 0, false
}
