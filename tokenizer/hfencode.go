package tokenizer

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// hfPipeline is the encoding and decoding pipeline of a tokenizer.json.
type hfPipeline struct {
	normalizers []hfNormalizer
	pre         []hfPreStep
	bpe         hfBPE
	// rawAdded are the added tokens matched in the text as written,
	// normAdded those matched in the normalized text.
	rawAdded, normAdded addedSet
	special             []bool  // per id: an added token flagged special
	prefix, suffix      []int32 // the post-processor's tokens around a sequence
	decoders            []hfDecoder
	joinWithSpaces      bool // no decoder: tokens are joined with spaces
}

func (p *hfPipeline) normalize(s string) (string, error) {
	var err error
	for _, n := range p.normalizers {
		if s, err = n(s); err != nil {
			return "", err
		}
	}
	return s, nil
}

// encode is Encode for a tokenizer.json. Invalid UTF-8 is read as U+FFFD.
func (p *hfPipeline) encode(t *Tokenizer, text string, opts EncodeOptions) ([]int32, error) {
	text = strings.ToValidUTF8(text, "\uFFFD")
	var out []int32
	if opts.AddBOS {
		if len(p.prefix) == 0 {
			if t.bos < 0 {
				return nil, &MissingTokenError{What: "BOS"}
			}
			out = append(out, t.bos)
		}
		out = append(out, p.prefix...)
	}
	m := mergerPool.Get().(*merger)
	defer mergerPool.Put(m)
	var err error
	out, err = p.rawAdded.split(text, opts.ParseSpecial, out, func(section string, start int, out []int32) ([]int32, error) {
		norm, err := p.normalize(section)
		if err != nil {
			return nil, err
		}
		first := start == 0
		return p.normAdded.split(norm, opts.ParseSpecial, out, func(piece string, start int, out []int32) ([]int32, error) {
			pieces := []hfPiece{{text: piece, first: first && start == 0}}
			for _, step := range p.pre {
				if pieces, err = step(pieces); err != nil {
					return nil, err
				}
			}
			for _, w := range pieces {
				if out, err = p.bpe.encodeWord(t, w.text, out, m); err != nil {
					return nil, err
				}
			}
			return out, nil
		})
	})
	if err != nil {
		return nil, err
	}
	if opts.AddEOS {
		if len(p.suffix) == 0 {
			if t.eos < 0 {
				return nil, &MissingTokenError{What: "EOS"}
			}
			out = append(out, t.eos)
		}
		out = append(out, p.suffix...)
	}
	return out, nil
}

// split cuts text at the added tokens of a, appending their ids and
// passing the text between them (with its byte offset) to each.
func (a *addedSet) split(text string, parseSpecial bool, out []int32, each func(string, int, []int32) ([]int32, error)) ([]int32, error) {
	var err error
	done := 0 // text[:done] is handled
	for from := 0; from < len(text); {
		tok, i, ok := a.find(text, from, parseSpecial)
		if !ok {
			break
		}
		end := i + len(tok.content)
		if tok.singleWord && (isWordRuneBefore(text, i) || isWordRuneAfter(text, end)) {
			from = i + 1
			continue
		}
		start := i
		if tok.lstrip {
			start = done + len(strings.TrimRightFunc(text[done:i], unicode.IsSpace))
		}
		if tok.rstrip {
			end = len(text) - len(strings.TrimLeftFunc(text[end:], unicode.IsSpace))
		}
		if start > done {
			if out, err = each(text[done:start], done, out); err != nil {
				return nil, err
			}
		}
		out = append(out, tok.id)
		done, from = end, end
	}
	if done < len(text) {
		return each(text[done:], done, out)
	}
	return out, nil
}

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) }

func isWordRuneBefore(s string, i int) bool {
	r, n := utf8.DecodeLastRuneInString(s[:i])
	return n > 0 && isWordRune(r)
}

func isWordRuneAfter(s string, i int) bool {
	r, n := utf8.DecodeRuneInString(s[i:])
	return n > 0 && isWordRune(r)
}

// decodeRaw runs the decoder over the texts of ids, skipping special added
// tokens. Byte-level and byte-fallback tokens give raw bytes, which may not
// be valid UTF-8.
func (p *hfPipeline) decodeRaw(t *Tokenizer, ids []int32) string {
	toks := make([]string, 0, len(ids))
	for _, id := range ids {
		if !p.special[id] {
			toks = append(toks, t.tokens[id])
		}
	}
	if p.joinWithSpaces {
		return strings.Join(toks, " ")
	}
	for _, d := range p.decoders {
		toks = d(toks)
	}
	return strings.Join(toks, "")
}

// hfBPE is a tokenizer.json BPE model: merges act on token ids, and a
// character missing from the vocabulary becomes byte tokens or the unknown
// token, as in Hugging Face's implementation.
type hfBPE struct {
	merges       map[[2]int32]hfMerge
	unk          int32 // -1 (none, or not in the vocabulary): characters missing from the vocabulary are dropped
	fuseUnk      bool
	byteFallback bool
	ignoreMerges bool
	prefix       string // continuing_subword_prefix
	suffix       string // end_of_word_suffix
	vocab        map[string]int32
}

type hfMerge struct{ rank, id int32 }

func (b *hfBPE) build(t *Tokenizer, f *hfFile) error {
	m := &f.Model
	b.vocab = m.Vocab
	b.unk = -1
	if m.UnkToken != nil {
		if id, ok := t.ids[*m.UnkToken]; ok {
			b.unk = id
		}
	}
	b.fuseUnk, b.byteFallback, b.ignoreMerges = m.FuseUnk, m.ByteFallback, m.IgnoreMerges
	if m.ContinuingSubwordPrefix != nil {
		b.prefix = *m.ContinuingSubwordPrefix
	}
	if m.EndOfWordSuffix != nil {
		b.suffix = *m.EndOfWordSuffix
	}
	merges, err := parseHFMerges(m.Merges)
	if err != nil {
		return hfError("model.merges", err)
	}
	b.merges = make(map[[2]int32]hfMerge, len(merges))
	for i, mg := range merges {
		left, okL := m.Vocab[mg.left]
		right, okR := m.Vocab[mg.right]
		merged, okM := m.Vocab[mg.left+strings.TrimPrefix(mg.right, b.prefix)]
		if !okL || !okR || !okM {
			return hfError("model.merges", fmt.Errorf("merge %d %q %q: a part or the result is not in the vocabulary", i, mg.left, mg.right))
		}
		b.merges[[2]int32{left, right}] = hfMerge{rank: int32(i), id: merged}
	}
	return nil
}

// encodeWord appends the ids of one pre-tokenized word.
func (b *hfBPE) encodeWord(t *Tokenizer, word string, out []int32, m *merger) ([]int32, error) {
	if word == "" {
		return out, nil
	}
	if b.ignoreMerges {
		if id, ok := b.vocab[word]; ok {
			return append(out, id), nil
		}
	}
	if m.owner != t || len(m.words) >= maxCachedWords {
		m.owner = t
		m.words = make(map[string][]int32)
	}
	if ids, ok := m.words[word]; ok {
		return append(out, ids...), nil
	}
	first := len(out)
	// Initial symbols: one per character, or byte tokens, or unknown.
	m.ids = m.ids[:0]
	unkPending := false
	for i, r := range word {
		n := utf8.RuneLen(r)
		s := word[i : i+n]
		if i > 0 {
			s = b.prefix + s
		}
		if i+n == len(word) {
			s += b.suffix
		}
		if id, ok := b.vocab[s]; ok {
			m.ids = append(m.ids, id)
			unkPending = false
			continue
		}
		if b.byteFallback && b.appendByteTokens(t, s, m) {
			unkPending = false
			continue
		}
		if b.unk >= 0 && !(b.fuseUnk && unkPending) {
			m.ids = append(m.ids, b.unk)
			unkPending = true
		}
	}
	out = append(out, b.mergeIDs(m)...)
	if len(word) <= maxCachedWordLen {
		m.words[word] = append([]int32(nil), out[first:]...)
	}
	return out, nil
}

// appendByteTokens appends the <0xNN> tokens of s if all exist.
func (b *hfBPE) appendByteTokens(t *Tokenizer, s string, m *merger) bool {
	for i := 0; i < len(s); i++ {
		if t.byteTokens[s[i]] < 0 {
			return false
		}
	}
	for i := 0; i < len(s); i++ {
		m.ids = append(m.ids, t.byteTokens[s[i]])
	}
	return true
}

// mergeIDs merges m.ids, lowest rank first (leftmost on ties), and returns
// the merged ids.
func (b *hfBPE) mergeIDs(m *merger) []int32 {
	ids := m.ids
	m.syms = m.syms[:0]
	m.heap = m.heap[:0]
	for i := range ids {
		m.syms = append(m.syms, symbol{start: i, n: 1, prev: i - 1, next: i + 1})
	}
	if len(ids) == 0 {
		return nil
	}
	m.syms[len(ids)-1].next = -1
	queue := func(l int) {
		if l < 0 || m.syms[l].next < 0 {
			return
		}
		if mg, ok := b.merges[[2]int32{ids[l], ids[m.syms[l].next]}]; ok {
			m.push(bigram{prio: -float64(mg.rank), left: l, right: m.syms[l].next, size: int(mg.id)})
		}
	}
	for i := range ids {
		queue(i)
	}
	for len(m.heap) > 0 {
		top := m.pop()
		l := &m.syms[top.left]
		if l.n == 0 || l.next != top.right || m.syms[top.right].n == 0 {
			continue // stale
		}
		if mg, ok := b.merges[[2]int32{ids[top.left], ids[top.right]}]; !ok || int(mg.id) != top.size {
			continue
		}
		r := &m.syms[top.right]
		ids[top.left] = int32(top.size)
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			m.syms[r.next].prev = top.left
		}
		queue(l.prev)
		queue(top.left)
	}
	out := ids[:0]
	for i := 0; i >= 0; i = m.syms[i].next {
		out = append(out, ids[i])
	}
	return out
}
