package driver_test

import (
	"context"
	"os"
	"testing"

	"github.com/pootlabs/poot/driver"
)

// BenchmarkDecode reports decode tokens/s per interpreter: the tiny
// synthesized model always, stories260K when ../shared is there, and any
// model named by POOT_BENCH_MODEL (a synthesized llama3.2-1b, say).
func BenchmarkDecode(b *testing.B) {
	models := map[string]string{"tiny": tinyPath}
	if _, err := os.Stat("../../shared/refmodels/stories260K-f32.gguf"); err == nil {
		models["stories260K"] = "../../shared/refmodels/stories260K-f32.gguf"
	}
	if p := os.Getenv("POOT_BENCH_MODEL"); p != "" {
		models["env"] = p
	}
	for name, path := range models {
		for _, in := range []string{"oracle", "cpu"} {
			b.Run(name+"/"+in, func(b *testing.B) {
				s, err := driver.Open(path, driver.Options{Interp: in, Capacity: 256})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				const n = 32
				var gen float64
				for b.Loop() {
					s.Reset()
					st, err := s.GenerateTokens(context.Background(), []int32{1, 2, 3, 4}, driver.GenerateOptions{MaxTokens: n, IgnoreEOS: true}, nil)
					if err != nil {
						b.Fatal(err)
					}
					gen += st.GeneratedTokensPerSecond()
				}
				b.ReportMetric(gen/float64(b.N), "tokens/s")
			})
		}
	}
}
