package tokenizer

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"slices"
	"testing"
)

func TestLlama2CMatchesGGUF(t *testing.T) {
	data, err := os.ReadFile(refPath(t, "tok512.bin"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := FromLlama2C(data)
	if err != nil {
		t.Fatal(err)
	}
	ref := loadGGUF(t, refPath(t, "stories260K-f32.gguf"))
	if tok.VocabSize() != ref.VocabSize() {
		t.Fatalf("VocabSize %d, GGUF %d", tok.VocabSize(), ref.VocabSize())
	}
	for id := range int32(tok.VocabSize()) {
		if tok.Piece(id) != ref.Piece(id) || tok.Score(id) != ref.Score(id) || tok.Type(id) != ref.Type(id) {
			t.Errorf("token %d: %q %v %v, GGUF %q %v %v", id, tok.Piece(id), tok.Score(id), tok.Type(id), ref.Piece(id), ref.Score(id), ref.Type(id))
		}
	}
	for _, text := range []string{"Once upon a time", "", " Lily's mom said: \"No!\"\n\tOK", "héllo 😀 12345"} {
		a, err1 := tok.Encode(text, EncodeOptions{AddBOS: true})
		b, err2 := ref.Encode(text, EncodeOptions{AddBOS: true})
		if err1 != nil || err2 != nil || !slices.Equal(a, b) {
			t.Errorf("%q: llama2.c %v %v, GGUF %v %v", text, a, err1, b, err2)
		}
	}
}

func TestLlama2CErrors(t *testing.T) {
	good := binary.LittleEndian.AppendUint32(nil, 4)
	good = binary.LittleEndian.AppendUint32(good, math.Float32bits(0))
	good = binary.LittleEndian.AppendUint32(good, 3)
	good = append(good, "abc"...)
	if _, err := FromLlama2C(good); err != nil {
		t.Fatalf("one-token vocabulary: %v", err)
	}
	for name, data := range map[string][]byte{
		"empty":            nil,
		"truncated header": good[:6],
		"truncated text":   good[:len(good)-1],
		"too long":         append(binary.LittleEndian.AppendUint32(nil, 2), good[4:]...),
	} {
		var le *LoadError
		if _, err := FromLlama2C(data); !errors.As(err, &le) {
			t.Errorf("%s: got %v, want a *LoadError", name, err)
		}
	}
}
