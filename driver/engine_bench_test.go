package driver_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/pootlabs/poot/driver"
)

// BenchmarkEngineThroughput reports the total generated tokens/s of the
// batching engine on the cpu backend with 1, 4 and 16 sequences in flight
// (each decode step as wide as the sequences): the tiny synthesized model,
// and the model named by POOT_BENCH_MODEL (a 1B-shaped Q8_0 checkpoint
// from poot synth --preset llama3.2-1b --type q8_0, say).
func BenchmarkEngineThroughput(b *testing.B) {
	models := map[string]string{"tiny": tinyPath}
	if p := os.Getenv("POOT_BENCH_MODEL"); p != "" {
		models["env"] = p
	}
	for name, path := range models {
		for _, parallel := range []int{1, 4, 16} {
			b.Run(fmt.Sprintf("%s/parallel=%d", name, parallel), func(b *testing.B) {
				e, err := driver.OpenEngine(path, driver.EngineOptions{Parallel: parallel, Capacity: 256})
				if err != nil {
					b.Fatal(err)
				}
				defer e.Close()
				const n = 32
				var tokens int
				var busy time.Duration
				for b.Loop() {
					t0 := time.Now()
					var wg sync.WaitGroup
					for i := range parallel {
						wg.Go(func() {
							prompt := []int32{1, int32(2 + i), 3, 4}
							if _, err := e.Generate(context.Background(), driver.Request{Prompt: prompt, GenerateOptions: driver.GenerateOptions{MaxTokens: n, IgnoreEOS: true}}, nil); err != nil {
								b.Error(err)
							}
						})
					}
					wg.Wait()
					busy += time.Since(t0)
					tokens += parallel * n
				}
				b.ReportMetric(float64(tokens)/busy.Seconds(), "tokens/s")
			})
		}
	}
}
