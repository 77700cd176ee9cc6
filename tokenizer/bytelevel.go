package tokenizer

import "unicode/utf8"

// GPT-2's byte-level BPE spells every byte as a printable rune: the printable
// Latin-1 bytes stand for themselves and the other 68 bytes map, in order, to
// U+0100 onwards (so a space is "Ġ", U+0120, and a newline "Ċ", U+010A).
var byteToRune, runeToByte = func() ([256]rune, map[rune]byte) {
	var b2r [256]rune
	r2b := make(map[rune]byte, 256)
	next := rune(256)
	for b := range 256 {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		r := rune(b)
		if !printable {
			r = next
			next++
		}
		b2r[b] = r
		r2b[r] = byte(b)
	}
	return b2r, r2b
}()

// encodeByteLevel spells the bytes of s with the byte-to-rune map.
func encodeByteLevel(s string) string {
	buf := make([]byte, 0, len(s)*2)
	for i := 0; i < len(s); i++ {
		buf = utf8.AppendRune(buf, byteToRune[s[i]])
	}
	return string(buf)
}

// decodeByteLevel undoes encodeByteLevel. Runes outside the map are kept
// as they are.
func decodeByteLevel(s string) string {
	buf := make([]byte, 0, len(s))
	for _, r := range s {
		if b, ok := runeToByte[r]; ok {
			buf = append(buf, b)
		} else {
			buf = utf8.AppendRune(buf, r)
		}
	}
	return string(buf)
}
