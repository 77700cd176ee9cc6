package rdu

import (
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/rdu/lang"
	"github.com/pootlabs/poot/rdu/sim"
)

// deepModel writes the tiny llama preset at the given depth (and, when
// wide, at width 256 with 8 heads) as a GGUF and opens it.
func deepModel(tb testing.TB, layers int, wide bool) *refModel {
	tb.Helper()
	p, err := synth.FindPreset("llama", "tiny")
	if err != nil {
		tb.Fatal(err)
	}
	cfg := maps.Clone(p.Config)
	cfg["num_hidden_layers"] = layers
	if wide {
		cfg["hidden_size"], cfg["intermediate_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"] = 256, 768, 8, 4
		delete(cfg, "head_dim")
	}
	m, err := synth.Model("llama", cfg)
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(tb.TempDir(), "deep.gguf")
	if err := synth.Write(m, path, synth.Options{Seed: 9}); err != nil {
		tb.Fatal(err)
	}
	c, err := load.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	mm, err := registry.FromCheckpoint(c)
	if err != nil {
		tb.Fatal(err)
	}
	return &refModel{c: c, m: mm}
}

// bundleBytes is what a bundle holds besides its manifest: the program
// files and the tables.
func bundleBytes(tb testing.TB, dir string) int64 {
	tb.Helper()
	var n int64
	for _, f := range []string{"embed.prog", "head.prog", "tables.bin"} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			tb.Fatal(err)
		}
		n += fi.Size()
	}
	kinds, _ := filepath.Glob(filepath.Join(dir, "kind*.prog"))
	for _, f := range kinds {
		fi, err := os.Stat(f)
		if err != nil {
			tb.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// BenchmarkLowerDepth lowers the same family at 8 and 64 layers. The work a
// kind at a time (lift-ms: lifting each kind once and binding the layers;
// certify-ms: certifying each kind once; write-ms: the programs and host
// tables) should not grow with depth, nor should the bundle less its
// manifest (bundle-bytes). What must read or name every layer is reported
// apart, with its cost a layer: tracing and binding (trace-ms), reading
// the step's layers into kinds (read-ms), and writing the manifest
// (manifest-ms).
func BenchmarkLowerDepth(b *testing.B) {
	for _, depth := range []int{8, 64} {
		b.Run(map[int]string{8: "layers=8", 64: "layers=64"}[depth], func(b *testing.B) {
			r := deepModel(b, depth, true)
			t0 := time.Now()
			g, err := r.m.Trace(families.StepSpec{Program: families.Decode, Shape: families.StepShape{Rows: 1, New: 1, Capacity: 256}}, poot.Limits{})
			if err != nil {
				b.Fatal(err)
			}
			bg, raw, err := load.Bind(g, r.c, r.m.Weights().Resolver())
			consts := interp.ConstMap(raw)
			if err != nil {
				b.Fatal(err)
			}
			trace := time.Since(t0)
			dir := b.TempDir()
			var size int64
			var read, lift, certify, write, manifest time.Duration
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				rd, err := readStep(bg)
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				bd, err := rd.lower(Options{Locate: CheckpointLocator(r.c, r.m.Weights().Resolver()), Consts: consts})
				if err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				m, err := sim.New(bd, sim.Files{})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := CertifyKinds(m, bg, consts, 2, DefaultTolerance); err != nil {
					b.Fatal(err)
				}
				t3 := time.Now()
				if err := bd.WritePrograms(dir); err != nil {
					b.Fatal(err)
				}
				t4 := time.Now()
				if err := bd.WriteManifest(dir); err != nil {
					b.Fatal(err)
				}
				t5 := time.Now()
				read, lift, certify = read+t1.Sub(t0), lift+t2.Sub(t1), certify+t3.Sub(t2)
				write, manifest = write+t4.Sub(t3), manifest+t5.Sub(t4)
				size = bundleBytes(b, dir)
			}
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
			b.ReportMetric(ms(lift), "lift-ms")
			b.ReportMetric(ms(certify), "certify-ms")
			b.ReportMetric(ms(write), "write-ms")
			b.ReportMetric(float64(trace.Microseconds())/1000, "trace-ms")
			b.ReportMetric(ms(read), "read-ms")
			b.ReportMetric(ms(manifest), "manifest-ms")
			b.ReportMetric(float64(size), "bundle-bytes")
		})
	}
}

// TestBundleSizeIndependentOfDepth: the programs and tables of a bundle are
// the same at 8 layers and at 64.
func TestBundleSizeIndependentOfDepth(t *testing.T) {
	var sizes []int64
	var kinds []string
	for _, depth := range []int{8, 64} {
		r := deepModel(t, depth, false)
		g, consts := r.step(t, 1, 64, families.LastToken)
		b := r.lower(t, g, consts)
		if len(b.Manifest.Kinds) != 1 || len(b.Manifest.Layers) != depth {
			t.Fatalf("%d layers: %d kinds, %d layers bound", depth, len(b.Manifest.Kinds), len(b.Manifest.Layers))
		}
		dir := t.TempDir()
		if err := b.Write(dir); err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, bundleBytes(t, dir))
		kinds = append(kinds, lang.Format(b.Programs["kind0"]))
	}
	// The head reads xo7 or xo63: the programs differ by those two
	// characters, the kind programs not at all.
	if d := sizes[1] - sizes[0]; d < 0 || float64(d) > 0.05*float64(sizes[0]) {
		t.Errorf("bundle less its manifest: %d bytes at 8 layers, %d at 64", sizes[0], sizes[1])
	}
	if kinds[0] != kinds[1] {
		t.Errorf("the kind program differs between 8 and 64 layers:\n%s\n%s", kinds[0], kinds[1])
	}
}
