package cpu_test

import (
	"testing"

	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/lower/cpu"
)

func BenchmarkZZBig(b *testing.B) {
	c, err := load.Open("/tmp/llama1b-q4k.gguf")
	if err != nil {
		b.Skip(err)
	}
	mm, _ := registry.FromGGUF(c.GGUF())
	md := &model{m: mm, c: c}
	pg, pc := md.step(b, 32, 128)
	dg, dc := md.step(b, 1, 128)
	px, _ := cpu.Interpreter{}.CompileExec(pg, pc)
	dx, _ := cpu.Interpreter{}.CompileExec(dg, dc)
	st, _ := interp.NewState(pg)
	toks := make([]int32, 32)
	for i := range toks {
		toks[i] = int32(i*100 + 5)
	}
	ps := slots(b, toks, 0)
	ds := slots(b, []int32{9}, 32)
	b.Log(dx.Plan().String()[:3000])
	for range b.N {
		if _, err := px.Run(ps, st); err != nil {
			b.Fatal(err)
		}
		for range 4 {
			if _, err := dx.Run(ds, st); err != nil {
				b.Fatal(err)
			}
		}
	}
}
