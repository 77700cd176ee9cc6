package synth

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// corpus is the English the built-in vocabulary's merges are learnt from:
// short, plain sentences of the kind small story models are trained on.
const corpus = `Once upon a time, there was a little girl named Lily. She loved to play
outside in the park with her friends. One day, she saw a big red ball under a
tree. She wanted to play with it, but it was too high. Lily asked her mom for
help. Her mom said, "Let us get the ball together." They went to the tree and
her mom took the ball down. Lily was very happy and she said thank you. Then
they played with the ball all day long. The sun was warm and the sky was blue.
A little boy named Tom came to the park too. He had a small dog called Max.
Max liked to run and jump and bark at the birds. Tom and Lily became good
friends. They shared the ball and laughed together. When it was time to go
home, Lily gave Tom a hug. She was sad to leave, but she knew they would play
again tomorrow. That night, Lily dreamed about the park, the ball and her new
friend. The end. Every morning the cat sat by the window and looked at the
garden. It wanted to catch the butterfly that flew over the flowers. One day
the cat jumped out of the window and ran after it. The butterfly was fast,
and the cat was slow, so it could not catch it. The cat was tired and went
back into the house, where it found a bowl of milk. It drank the milk and
fell asleep in the sun. There was a big old house on the hill. In the house
lived an old man who liked to read books. He had many books about animals,
stars and the sea. Children from the town came to visit him, and he read them
stories. They listened and asked many questions, and he was always kind.
`

// Vocabulary is a SentencePiece-style BPE vocabulary: pieces with "▁" for
// spaces, their scores (higher merges first), their GGUF token types, and
// the merges that build the multi-character pieces, in rank order.
type Vocabulary struct {
	Tokens []string
	Scores []float32
	Types  []int32
	Merges []string // "left right", rank order
}

// Token types as GGUF numbers them.
const (
	typeNormal  = 1
	typeUnknown = 2
	typeControl = 3
	typeByte    = 6
)

// MinVocab is the size of the built-in vocabulary before merges: <unk>,
// <s>, </s>, the 256 byte tokens and the corpus's characters.
func MinVocab() int { return len(baseVocab().Tokens) }

func baseVocab() *Vocabulary {
	v := &Vocabulary{}
	add := func(piece string, score float32, typ int32) {
		v.Tokens = append(v.Tokens, piece)
		v.Scores = append(v.Scores, score)
		v.Types = append(v.Types, typ)
	}
	add("<unk>", 0, typeUnknown)
	add("<s>", 0, typeControl)
	add("</s>", 0, typeControl)
	for b := range 256 {
		add(fmt.Sprintf("<0x%02X>", b), 0, typeByte)
	}
	var chars []string
	seen := map[string]bool{}
	for _, r := range "▁" + strings.Join(strings.Fields(corpus), "") {
		if s := string(r); !seen[s] {
			seen[s] = true
			chars = append(chars, s)
		}
	}
	slices.Sort(chars)
	for i, c := range chars {
		add(c, float32(-1e4-float64(i)), typeNormal)
	}
	return v
}

// BuildVocabulary returns a byte-fallback SentencePiece vocabulary of
// exactly size tokens: <unk> (0), <s> (1, BOS), </s> (2, EOS), the byte
// tokens <0x00>…<0xFF>, the corpus's characters, then BPE merges learnt
// from a small built-in English corpus with score −rank, and when the corpus
// runs out of merges, filler pieces no text encodes to. size must be at
// least MinVocab().
func BuildVocabulary(size int) (*Vocabulary, error) {
	v := baseVocab()
	if size < len(v.Tokens) {
		return nil, fmt.Errorf("vocabulary of %d tokens: the built-in one needs at least %d", size, len(v.Tokens))
	}
	known := map[string]bool{}
	for _, t := range v.Tokens {
		known[t] = true
	}
	// Words as symbol sequences, with their counts.
	counts := map[string]int{}
	for _, w := range strings.Fields(corpus) {
		counts["▁"+w]++
	}
	type word struct {
		syms  []string
		count int
	}
	var words []word
	for _, w := range slices.Sorted(maps.Keys(counts)) {
		var syms []string
		for _, r := range w {
			syms = append(syms, string(r))
		}
		words = append(words, word{syms, counts[w]})
	}
	rank := 0
	for len(v.Tokens) < size {
		pairs := map[[2]string]int{}
		for _, w := range words {
			for i := 0; i+1 < len(w.syms); i++ {
				pairs[[2]string{w.syms[i], w.syms[i+1]}] += w.count
			}
		}
		var best [2]string
		bestN := 0
		for p, n := range pairs {
			if known[p[0]+p[1]] {
				continue
			}
			if n > bestN || (n == bestN && (p[0]+" "+p[1]) < (best[0]+" "+best[1])) {
				best, bestN = p, n
			}
		}
		if bestN < 1 {
			break
		}
		merged := best[0] + best[1]
		known[merged] = true
		v.Tokens = append(v.Tokens, merged)
		v.Scores = append(v.Scores, float32(-rank))
		v.Types = append(v.Types, typeNormal)
		v.Merges = append(v.Merges, best[0]+" "+best[1])
		rank++
		for wi := range words {
			s := words[wi].syms
			out := s[:0:0]
			for i := 0; i < len(s); i++ {
				if i+1 < len(s) && s[i] == best[0] && s[i+1] == best[1] {
					out = append(out, merged)
					i++
					continue
				}
				out = append(out, s[i])
			}
			words[wi].syms = out
		}
	}
	// Fillers: normal pieces no merge chain reaches, so every id decodes
	// to some text.
	for i := 0; len(v.Tokens) < size; i++ {
		v.Tokens = append(v.Tokens, fmt.Sprintf("▁x%d", i))
		v.Scores = append(v.Scores, float32(-1e6-float64(i)))
		v.Types = append(v.Types, typeNormal)
	}
	return v, nil
}
