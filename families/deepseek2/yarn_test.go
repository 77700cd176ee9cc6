package deepseek2

import (
	"math"
	"testing"

	"github.com/pootlabs/poot/families/familytest"
	"github.com/pootlabs/poot/gguf"
)

// llamaCpp is llama.cpp's arithmetic, in its float32, for a deepseek2 file
// with YaRN factor f and stored log multiplier stored (0 when absent): the
// load-time division (models/deepseek2.cpp), the context's attention
// factor (llama-context.cpp), ggml's YaRN rope, which multiplies cos and
// sin by attn_factor·(1 + 0.1·ln(1/freq_scale)), and the graph's softmax
// scale (models/deepseek2.cpp). It returns the factor of cos and sin and
// kq_scale·sqrt(head dim).
func llamaCpp(f, stored float32) (rope, score float64) {
	ln := func(x float32) float32 { return float32(math.Log(float64(x))) }
	getMScale := func(scale, m float32) float32 {
		if scale <= 1 {
			return 1
		}
		return 0.1*m*ln(scale) + 1
	}
	logMul := stored / 0.1
	freqScale := 1 / f
	factor := 1 / freqScale
	var attn float32
	if logMul != 0 {
		mscale := float32(1)
		if logMul != 1 {
			mscale = logMul
		}
		attn = getMScale(factor, mscale) / getMScale(factor, logMul)
	} else {
		attn = getMScale(factor, 1)
	}
	attn *= 1 / (1 + 0.1*ln(factor))
	ropeMul := attn * (1 + 0.1*ln(1/freqScale))
	org := attn * (1 + 0.1*ln(1/freqScale))
	mscale := org * (1 + 0.1*logMul*ln(1/freqScale))
	return float64(ropeMul), float64(mscale * mscale)
}

// TestYaRNAsLlamaCpp reads GGUF files with YaRN factors and log
// multipliers (none, DeepSeek-V2's 0.707, V3's 1) and checks the factors
// the model applies against llama.cpp's formulas.
func TestYaRNAsLlamaCpp(t *testing.T) {
	hf, err := FromHF(map[string]any{
		"model_type": "deepseek_v3", "vocab_size": 64.0, "hidden_size": 16.0, "num_hidden_layers": 1.0, "num_attention_heads": 2.0,
		"q_lora_rank": 8.0, "kv_lora_rank": 8.0, "qk_nope_head_dim": 4.0, "qk_rope_head_dim": 4.0, "v_head_dim": 4.0,
		"intermediate_size": 8.0, "first_k_dense_replace": 1.0, "max_position_embeddings": 64.0,
		"rope_scaling": map[string]any{"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16.0, "mscale": 1.0, "mscale_all_dim": 1.0},
	})
	if err != nil {
		t.Fatal(err)
	}
	base, err := hf.(*Model).GGUFMetadata()
	if err != nil {
		t.Fatal(err)
	}
	w := familytest.Synth(t, hf, 1)
	for _, factor := range []float32{1, 4, 40} {
		for _, stored := range []float32{0, 0.0707, 0.1} {
			var kvs []gguf.KV
			for _, kv := range base {
				switch kv.Key {
				case "deepseek2.rope.scaling.factor":
					kv.Value = gguf.ValueOf(factor)
				case "deepseek2.rope.scaling.yarn_log_multiplier":
					if stored == 0 {
						continue
					}
					kv.Value = gguf.ValueOf(stored)
				}
				kvs = append(kvs, kv)
			}
			f, err := gguf.Open(familytest.WriteGGUF(t, hf, kvs, w))
			if err != nil {
				t.Fatal(err)
			}
			m, err := FromGGUF(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			rope, score := m.(*Model).factors()
			wantRope, wantScore := llamaCpp(factor, stored)
			if math.Abs(rope-wantRope) > 1e-6*wantRope || math.Abs(score-wantScore) > 1e-6*wantScore {
				t.Errorf("factor %v, log multiplier %v: cos/sin ×%.7g, scores ×%.7g; llama.cpp ×%.7g, ×%.7g",
					factor, stored, rope, score, wantRope, wantScore)
			}
			// The model writes the file's keys back as they were.
			back, err := m.(*Model).GGUFMetadata()
			if err != nil {
				t.Errorf("factor %v, log multiplier %v: %v", factor, stored, err)
			}
			_, had := lookup(kvs, "deepseek2.rope.scaling.yarn_log_multiplier")
			if _, has := lookup(back, "deepseek2.rope.scaling.yarn_log_multiplier"); had != has {
				t.Errorf("factor %v, log multiplier %v: written back with a log multiplier: %v", factor, stored, has)
			}
		}
	}
}

func lookup(kvs []gguf.KV, key string) (gguf.Value, bool) {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return gguf.Value{}, false
}
