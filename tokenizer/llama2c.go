package tokenizer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
)

// FromLlama2C loads a vocabulary in llama2.c's tokenizer format (tok512.bin,
// tokenizer.bin): a uint32 max_token_length, then for every token a float32
// score, a uint32 byte length and the bytes, all little-endian, up to the end
// of the data. It is a SentencePiece vocabulary with the llama.cpp
// conventions: ids 0, 1, 2 are <unk>, BOS and EOS, "<0xNN>" tokens are byte
// tokens, and spaces in pieces become "▁", so pieces read as in the GGUF
// that llama.cpp's converter makes from the same file (BOS "\n<s>\n" is
// read as "<s>", EOS "\n</s>\n" as "</s>").
func FromLlama2C(data []byte) (*Tokenizer, error) {
	fail := func(off int, err error) (*Tokenizer, error) {
		return nil, &LoadError{Source: "llama2.c", Key: fmt.Sprintf("offset %d", off), Err: err}
	}
	if len(data) < 4 {
		return fail(0, errors.New("too short for the header"))
	}
	maxLen := binary.LittleEndian.Uint32(data)
	t := &Tokenizer{model: SPM, escapeSpaces: true, addSpacePrefix: true, byteFallback: true, addBOS: true}
	for off := 4; off < len(data); {
		if len(data)-off < 8 {
			return fail(off, errors.New("truncated token header"))
		}
		score := math.Float32frombits(binary.LittleEndian.Uint32(data[off:]))
		n := binary.LittleEndian.Uint32(data[off+4:])
		if uint64(n) > uint64(len(data)-off-8) {
			return fail(off, fmt.Errorf("token length %d exceeds the %d bytes left", n, len(data)-off-8))
		}
		if n > maxLen {
			return fail(off, fmt.Errorf("token length %d exceeds max_token_length %d", n, maxLen))
		}
		text := string(data[off+8 : off+8+int(n)])
		off += 8 + int(n)
		id := len(t.tokens)
		a := attrNormal
		switch {
		case id == 0:
			a = attrUnknown
		case id == 1 || id == 2:
			a = attrControl
			text = strings.TrimSpace(text)
		case isByteTokenText(text):
			a = attrByte
		default:
			text = strings.ReplaceAll(text, " ", spaceMark)
		}
		if text == "" {
			text = fmt.Sprintf("[EMPTY_%d]", id)
		}
		t.tokens = append(t.tokens, text)
		t.scores = append(t.scores, score)
		t.attrs = append(t.attrs, a)
	}
	sp := noSpecialIDs()
	sp.unk, sp.bos, sp.eos = 0, 1, 2
	if err := t.finish("llama2.c", sp, ""); err != nil {
		return nil, err
	}
	return t, nil
}

func isByteTokenText(s string) bool {
	_, ok := parseByteToken(s)
	return ok
}
