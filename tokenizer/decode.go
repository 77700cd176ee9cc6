package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// Decode converts token ids to text: the concatenation of each token's text,
// with "▁" turned back into spaces (SentencePiece), the byte-to-rune map
// undone (byte-level BPE), byte tokens as their bytes, and control and
// unknown tokens (BOS, EOS, …) omitted. The leading space that encoding a
// SentencePiece text adds is kept, as llama.cpp's token pieces keep it. The
// result may be invalid UTF-8 when ids ends inside a multi-byte character.
// An id outside the vocabulary is a *TokenIDError.
//
// A tokenizer.json vocabulary runs its decoder over the tokens instead,
// skipping the added tokens flagged special, and returns valid UTF-8 (each
// broken sequence becomes U+FFFD), as Hugging Face's decode does; it does not
// apply clean_up_tokenization_spaces.
func (t *Tokenizer) Decode(ids []int32) (string, error) {
	for _, id := range ids {
		if id < 0 || int(id) >= len(t.pieces) {
			return "", &TokenIDError{ID: id, VocabSize: len(t.pieces)}
		}
	}
	if t.hf != nil {
		return validUTF8(t.hf.decodeRaw(t, ids)), nil
	}
	var sb strings.Builder
	for _, id := range ids {
		sb.WriteString(t.pieces[id])
	}
	return sb.String(), nil
}

// TokenText returns what token id contributes to Decode's output, or "" for
// an id out of range.
func (t *Tokenizer) TokenText(id int32) string {
	if id < 0 || int(id) >= len(t.pieces) {
		return ""
	}
	return t.pieces[id]
}

// StreamDecoder decodes tokens one at a time, as they are generated. Add
// returns only whole UTF-8 characters: the bytes of a character split across
// tokens (byte tokens <0xE2> <0x9C> <0x85>, or a byte-level piece ending
// mid-character) are held back until it is complete. The concatenation of
// everything Add and Flush return equals Decode of all the ids.
//
// For a tokenizer.json vocabulary, whose decoder treats the first token
// differently (a leading space stripped), each token is decoded after the
// last one that gave text, and the difference is returned.
type StreamDecoder struct {
	t       *Tokenizer
	pending []byte
	err     error
	// tokenizer.json: the ids decoded together, the raw text of them
	// already returned, and the bytes held back after it.
	window     []int32
	done, held string
}

// NewStreamDecoder returns a StreamDecoder for t.
func NewStreamDecoder(t *Tokenizer) *StreamDecoder { return &StreamDecoder{t: t} }

// Add decodes token id and returns the text that is now complete. An id
// outside the vocabulary adds nothing; Err reports it.
func (d *StreamDecoder) Add(id int32) string {
	if id < 0 || int(id) >= len(d.t.pieces) {
		if d.err == nil {
			d.err = &TokenIDError{ID: id, VocabSize: len(d.t.pieces)}
		}
		return ""
	}
	if d.t.hf != nil {
		return d.addHF(id)
	}
	piece := d.t.pieces[id]
	if len(d.pending) == 0 && utf8.FullRuneInString(lastRuneStart(piece)) {
		return piece
	}
	d.pending = append(d.pending, piece...)
	cut := len(d.pending) - len(lastRuneStart(string(d.pending)))
	if utf8.FullRune(d.pending[cut:]) {
		cut = len(d.pending)
	}
	out := string(d.pending[:cut])
	d.pending = append(d.pending[:0], d.pending[cut:]...)
	return out
}

// Flush returns the bytes still held back (an incomplete character, as
// raw bytes) and resets the decoder.
func (d *StreamDecoder) Flush() string {
	out := string(d.pending)
	d.pending = d.pending[:0]
	if d.t.hf != nil {
		out = validUTF8(d.held)
		d.window, d.done, d.held = d.window[:0], "", ""
	}
	return out
}

func (d *StreamDecoder) addHF(id int32) string {
	d.window = append(d.window, id)
	full := d.t.hf.decodeRaw(d.t, d.window)
	common := 0
	for common < len(full) && common < len(d.done) && full[common] == d.done[common] {
		common++
	}
	tail := full[common:]
	cut := len(tail) - len(lastRuneStart(tail))
	if utf8.FullRuneInString(tail[cut:]) {
		cut = len(tail)
	}
	out := tail[:cut]
	d.done, d.held = full[:common+cut], tail[cut:]
	if d.held == "" {
		// Keep the last token as context, once it gives text of its own.
		last := d.window[len(d.window)-1:]
		if ctx := d.t.hf.decodeRaw(d.t, last); ctx != "" {
			d.window = append(d.window[:0], last...)
			d.done = ctx
		}
	}
	return validUTF8(out)
}

// Err returns the first out-of-range id passed to Add, as a *TokenIDError.
func (d *StreamDecoder) Err() error { return d.err }

// lastRuneStart returns the tail of s from the start of its last character:
// the last byte that is not a UTF-8 continuation byte, looking back at most
// three bytes (a longer run cannot be one character).
func lastRuneStart(s string) string {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if !isContinuation(s[i]) {
			return s[i:]
		}
	}
	return ""
}

func isContinuation(c byte) bool { return c&0xC0 == 0x80 }
