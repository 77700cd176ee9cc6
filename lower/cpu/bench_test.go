package cpu_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/lower/cpu"
)

// smallLlama is a Llama-shaped config at a scale a CI machine runs in
// seconds: dim 512, 4 layers, 8 heads / 4 kv heads, ffn 1536, vocab 4096.
func smallLlama() map[string]any {
	return map[string]any{
		"architectures": []any{"LlamaForCausalLM"}, "model_type": "llama",
		"hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 4,
		"intermediate_size": 1536, "vocab_size": 4096, "max_position_embeddings": 2048,
		"rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": false,
	}
}

// synthModel writes the small Llama with matrices of dtype dt and opens it.
func synthModel(b *testing.B, dt poot.DType) *model {
	b.Helper()
	m, err := synth.Model("llama", smallLlama())
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "small.gguf")
	if err := synth.Write(m, path, synth.Options{Type: dt, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	c, err := load.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	mm, err := registry.FromGGUF(c.GGUF())
	if err != nil {
		b.Fatal(err)
	}
	return &model{m: mm, c: c}
}

// BenchmarkSmallLlama reports prompt (64 tokens in one step) and
// generation (decode steps at position 64) tokens/s of the small Llama on
// the CPU backend, for F16, Q8_0 and Q4_K matrices: the kernels the
// llama.cpp comparison covers, at a smaller scale.
func BenchmarkSmallLlama(b *testing.B) {
	for _, dt := range []poot.DType{poot.F16, poot.Q8_0, poot.Q4_K} {
		md := synthModel(b, dt)
		const capacity, prompt = 256, 64
		pg, pc := md.step(b, prompt, capacity)
		dg, dc := md.step(b, 1, capacity)
		px, err := cpu.Interpreter{}.CompileExec(pg, pc)
		if err != nil {
			b.Fatal(err)
		}
		dx, err := cpu.Interpreter{}.CompileExec(dg, dc)
		if err != nil {
			b.Fatal(err)
		}
		state, err := interp.NewState(pg)
		if err != nil {
			b.Fatal(err)
		}
		toks := make([]int32, prompt)
		for i := range toks {
			toks[i] = int32(i*37%4000 + 1)
		}
		ps := slots(b, toks, 0)
		b.Run(fmt.Sprintf("%v/prompt%d", dt, prompt), func(b *testing.B) {
			outs, err := px.Run(ps, state)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			t0 := time.Now()
			for range b.N {
				if err := px.RunInto(ps, state, outs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*prompt)/time.Since(t0).Seconds(), "tokens/s")
		})
		ds := slots(b, []int32{7}, prompt)
		b.Run(fmt.Sprintf("%v/gen", dt), func(b *testing.B) {
			outs, err := dx.Run(ds, state)
			if err != nil {
				b.Fatal(err)
			}
			// The bytes a step moves, as the planner counts them.
			var moved int64
			for _, k := range dx.Plan().Kernels {
				moved += k.Bytes
			}
			b.ResetTimer()
			t0 := time.Now()
			for range b.N {
				if err := dx.RunInto(ds, state, outs); err != nil {
					b.Fatal(err)
				}
			}
			sec := time.Since(t0).Seconds()
			b.ReportMetric(float64(b.N)/sec, "tokens/s")
			b.ReportMetric(float64(moved)*float64(b.N)/sec/1e9, "GB/s")
		})
	}
}

// BenchmarkStories260K reports decode tokens/s of the stories260K reference
// models at position 64 of a 256-token cache.
func BenchmarkStories260K(b *testing.B) {
	for _, file := range []string{"stories260K-f32.gguf", "stories260K-q8_0.gguf", "stories260K-q4_0.gguf"} {
		b.Run(file, func(b *testing.B) {
			md := openModel(b, file)
			g, consts := md.step(b, 1, 256)
			x, err := cpu.Interpreter{}.CompileExec(g, consts)
			if err != nil {
				b.Fatal(err)
			}
			state, err := interp.NewState(g)
			if err != nil {
				b.Fatal(err)
			}
			s := slots(b, []int32{7}, 64)
			outs, err := x.Run(s, state)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			t0 := time.Now()
			for range b.N {
				if err := x.RunInto(s, state, outs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "tokens/s")
		})
	}
}
