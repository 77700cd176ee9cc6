package tokenizer

import (
	"strings"
	"sync"
)

// EncodeOptions controls Encode.
type EncodeOptions struct {
	// AddBOS prepends the BOS token (for a tokenizer.json, the tokens its
	// post-processor puts before a sequence). Most callers pass t.AddBOS().
	AddBOS bool
	// AddEOS appends the EOS token (for a tokenizer.json, the tokens its
	// post-processor puts after a sequence). Most callers pass t.AddEOS().
	AddEOS bool
	// ParseSpecial recognises control tokens written in the text ("<s>",
	// "<|im_end|>"): for a tokenizer.json, the added tokens flagged
	// special. Without it they are tokenized as plain text. User-defined
	// tokens (added tokens not flagged special) are recognised either way.
	ParseSpecial bool
}

// fragment is a piece of the text being encoded: raw text [start, end) when
// id < 0, or a special token.
type fragment struct {
	id         int32
	start, end int
}

// Encode converts text to token ids.
//
// The text is first cut at special tokens (see EncodeOptions.ParseSpecial);
// every remaining fragment is then tokenized on its own. For SentencePiece
// vocabularies each fragment that starts the text or follows a special token
// gets a leading space, as in llama.cpp. A tokenizer.json vocabulary runs
// its own pipeline instead (see FromHFJSON). The only errors are a requested
// BOS or EOS the vocabulary lacks and, for a SentencePiece vocabulary without
// byte tokens or an unknown token, a character it cannot spell.
func (t *Tokenizer) Encode(text string, opts EncodeOptions) ([]int32, error) {
	if t.hf != nil {
		return t.hf.encode(t, text, opts)
	}
	out := make([]int32, 0, len(text)/3+2)
	if opts.AddBOS {
		if t.bos < 0 {
			return nil, &MissingTokenError{What: "BOS"}
		}
		out = append(out, t.bos)
	}
	var frags []fragment
	if text != "" {
		frags = t.partition(text, opts.ParseSpecial)
	}
	m := mergerPool.Get().(*merger)
	defer mergerPool.Put(m)
	prevSpecial := true
	for _, f := range frags {
		if f.id >= 0 {
			out = append(out, f.id)
			prevSpecial = true
			continue
		}
		piece := text[f.start:f.end]
		var err error
		switch t.model {
		case SPM:
			if t.addSpacePrefix && prevSpecial {
				piece = " " + piece
			}
			out, err = t.encodeSPM(piece, out, m)
		case BPE:
			out, err = t.encodeBPE(piece, out, m)
		}
		if err != nil {
			return nil, err
		}
		prevSpecial = false
	}
	if opts.AddEOS {
		if t.eos < 0 {
			return nil, &MissingTokenError{What: "EOS"}
		}
		out = append(out, t.eos)
	}
	return out, nil
}

// partition cuts text at occurrences of special tokens, longest tokens
// first, as llama.cpp's tokenizer_st_partition does. Control and unknown
// tokens are looked for only when parseSpecial is set. A token with the
// lstrip (rstrip) attribute swallows the white space before (after) it.
func (t *Tokenizer) partition(text string, parseSpecial bool) []fragment {
	frags := []fragment{{id: -1, start: 0, end: len(text)}}
	// Byte pairs occurring in text, to skip most special tokens cheaply.
	var present [256][256 / 64]uint64
	for i := 0; i+1 < len(text); i++ {
		a, b := text[i], text[i+1]
		present[a][b/64] |= 1 << (b % 64)
	}
	occurs := func(s string) bool {
		if len(s) == 1 {
			return strings.IndexByte(text, s[0]) >= 0
		}
		a, b := s[0], s[1]
		return present[a][b/64]&(1<<(b%64)) != 0 && strings.Contains(text, s)
	}
	var next []fragment
	for _, id := range t.special {
		a := t.attrs[id]
		if !parseSpecial && a&(attrControl|attrUnknown) != 0 {
			continue
		}
		s := t.tokens[id]
		if !occurs(s) {
			continue
		}
		next = next[:0]
		for _, f := range frags {
			if f.id >= 0 {
				next = append(next, f)
				continue
			}
			start, end := f.start, f.end
			for start < end {
				i := strings.Index(text[start:end], s)
				if i < 0 {
					next = append(next, fragment{id: -1, start: start, end: end})
					break
				}
				match := start + i
				leftEnd := match
				if a&attrLStrip != 0 {
					for leftEnd > start && isASCIISpace(text[leftEnd-1]) {
						leftEnd--
					}
				}
				if leftEnd > start {
					next = append(next, fragment{id: -1, start: start, end: leftEnd})
				}
				next = append(next, fragment{id: id, start: match, end: match + len(s)})
				start = match + len(s)
				if a&attrRStrip != 0 {
					for start < end && isASCIISpace(text[start]) {
						start++
					}
				}
			}
		}
		frags, next = next, frags
	}
	return frags
}

// isASCIISpace is C's isspace.
func isASCIISpace(c byte) bool { return c == ' ' || (c >= '\t' && c <= '\r') }

// utf8SeqLen is llama.cpp's unicode_len_utf8: the length of a UTF-8 sequence
// judged by its first byte alone (a stray continuation byte counts as one).
func utf8SeqLen(c byte) int {
	switch c >> 4 {
	case 0xC, 0xD:
		return 2
	case 0xE:
		return 3
	case 0xF:
		return 4
	}
	return 1
}

// symbol is a run of bytes [start, start+n) of the word being merged, linked
// to its neighbours; n == 0 once it has been merged into its left neighbour.
type symbol struct {
	start, n   int
	prev, next int
}

// bigram is a candidate merge of symbols left and right, whose combined
// length was size when it was queued.
type bigram struct {
	prio        float64 // higher merges first: the score, or minus the rank
	left, right int
	size        int
}

// merger holds the scratch space of one merge; mergers are pooled.
type merger struct {
	syms []symbol
	heap []bigram
	ids  []int32 // tokenizer.json BPE: the symbols' token ids
	// words caches the ids of byte-level BPE words already merged (for one
	// Tokenizer: owner), since running text repeats its words.
	owner *Tokenizer
	words map[string][]int32
}

// maxCachedWords bounds merger.words; the cache is dropped when full. Only
// words up to maxCachedWordLen bytes are cached.
const (
	maxCachedWords   = 4096
	maxCachedWordLen = 64
)

var mergerPool = sync.Pool{New: func() any { return new(merger) }}

func (b bigram) before(c bigram) bool {
	return b.prio > c.prio || (b.prio == c.prio && b.left < c.left)
}

func (m *merger) push(b bigram) {
	m.heap = append(m.heap, b)
	i := len(m.heap) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !m.heap[i].before(m.heap[p]) {
			break
		}
		m.heap[i], m.heap[p] = m.heap[p], m.heap[i]
		i = p
	}
}

func (m *merger) pop() bigram {
	h := m.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	i := 0
	for {
		l, r, best := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].before(h[best]) {
			best = l
		}
		if r < len(h) && h[r].before(h[best]) {
			best = r
		}
		if best == i {
			break
		}
		h[i], h[best] = h[best], h[i]
		i = best
	}
	m.heap = h
	return top
}

// merge splits word into characters and merges adjacent symbols, the best
// pair first, until no pair can merge. Pairs are ranked by the score of the
// merged piece (SentencePiece, no merge list) or by merge rank. It leaves
// the result in m.syms, linked from index 0.
func (t *Tokenizer) merge(word string, m *merger) {
	m.syms = m.syms[:0]
	m.heap = m.heap[:0]
	for off := 0; off < len(word); {
		n := min(utf8SeqLen(word[off]), len(word)-off)
		i := len(m.syms)
		next := i + 1
		if off+n == len(word) {
			next = -1
		}
		m.syms = append(m.syms, symbol{start: off, n: n, prev: i - 1, next: next})
		off += n
	}
	for i := 1; i < len(m.syms); i++ {
		t.queuePair(word, m, i-1, i)
	}
	for len(m.heap) > 0 {
		b := m.pop()
		l, r := &m.syms[b.left], &m.syms[b.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != b.size {
			continue // stale: one side has changed since it was queued
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			m.syms[r.next].prev = b.left
		}
		t.queuePair(word, m, l.prev, b.left)
		t.queuePair(word, m, b.left, l.next)
	}
}

// queuePair queues the merge of symbols left and right if it is allowed.
func (t *Tokenizer) queuePair(word string, m *merger, left, right int) {
	if left < 0 || right < 0 {
		return
	}
	l, r := m.syms[left], m.syms[right]
	var prio float64
	if t.ranks == nil {
		id, ok := t.ids[word[l.start:r.start+r.n]]
		if !ok {
			return
		}
		prio = float64(t.scores[id])
	} else {
		rank, ok := t.ranks[pair{word[l.start : l.start+l.n], word[r.start : r.start+r.n]}]
		if !ok {
			return
		}
		prio = -float64(rank)
	}
	m.push(bigram{prio: prio, left: left, right: right, size: l.n + r.n})
}

// encodeSPM tokenizes one SentencePiece text fragment (with its space
// prefix already added).
func (t *Tokenizer) encodeSPM(text string, out []int32, m *merger) ([]int32, error) {
	if t.escapeSpaces {
		text = strings.ReplaceAll(text, " ", spaceMark)
	}
	return t.mergeSPMWord(text, out, m)
}

func (t *Tokenizer) mergeSPMWord(word string, out []int32, m *merger) ([]int32, error) {
	t.merge(word, m)
	if len(m.syms) == 0 {
		return out, nil
	}
	for i := 0; i != -1; i = m.syms[i].next {
		s := m.syms[i]
		piece := word[s.start : s.start+s.n]
		if id, ok := t.ids[piece]; ok {
			out = append(out, id)
			continue
		}
		if !t.byteFallback {
			if t.unk >= 0 {
				out = append(out, t.unk)
			}
			continue
		}
		for j := 0; j < len(piece); j++ {
			id, err := t.byteToken(piece[j])
			if err != nil {
				return nil, err
			}
			out = append(out, id)
		}
	}
	return out, nil
}

// byteToken returns the token that spells byte b: "<0xNN>", else the byte
// itself as a one-byte token, else the unknown token (llama.cpp would fail).
func (t *Tokenizer) byteToken(b byte) (int32, error) {
	if id := t.byteTokens[b]; id >= 0 {
		return id, nil
	}
	if id, ok := t.ids[string([]byte{b})]; ok {
		return id, nil
	}
	if t.unk >= 0 {
		return t.unk, nil
	}
	return 0, &MissingTokenError{What: byteTokenText(b)}
}

// encodeBPE tokenizes one byte-level BPE text fragment.
func (t *Tokenizer) encodeBPE(text string, out []int32, m *merger) ([]int32, error) {
	for _, word := range t.pre.split(text) {
		if t.byteLevel {
			word = encodeByteLevel(word)
		}
		if t.pre.ignoreMerges {
			if id, ok := t.ids[word]; ok {
				out = append(out, id)
				continue
			}
		}
		if m.owner != t || len(m.words) >= maxCachedWords {
			m.owner = t
			m.words = make(map[string][]int32)
		}
		if ids, ok := m.words[word]; ok {
			out = append(out, ids...)
			continue
		}
		first := len(out)
		out = t.mergeBPEWord(word, out, m)
		if len(word) <= maxCachedWordLen {
			m.words[word] = append([]int32(nil), out[first:]...)
		}
	}
	return out, nil
}

// mergeBPEWord merges one pre-tokenized, byte-encoded word.
func (t *Tokenizer) mergeBPEWord(word string, out []int32, m *merger) []int32 {
	t.merge(word, m)
	if len(m.syms) == 0 {
		return out
	}
	for i := 0; i != -1; i = m.syms[i].next {
		s := m.syms[i]
		piece := word[s.start : s.start+s.n]
		if id, ok := t.ids[piece]; ok {
			out = append(out, id)
			continue
		}
		if t.byteFallback {
			for j := 0; j < len(piece); j++ {
				if id := t.byteTokens[piece[j]]; id >= 0 {
					out = append(out, id)
				}
			}
			continue
		}
		// llama.cpp tries each byte as a one-byte token and drops the
		// bytes that are not.
		for j := 0; j < len(piece); j++ {
			if id, ok := t.ids[piece[j:j+1]]; ok {
				out = append(out, id)
			}
		}
	}
	return out
}
