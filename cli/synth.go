package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/driver/synth"
)

// cmdSynth writes a random-weight checkpoint of any registered family.
func cmdSynth(args []string, stdout, stderr io.Writer) error {
	fs := flags("synth", "synth --family F [--preset NAME | --config FILE] --out PATH [--format gguf|safetensors] [--type f32|f16|bf16|q8_0|q4_0|q4_k|mxfp4] [--seed S] [--scale SD] [--force]", stdout)
	var family, preset, config, out, format, typ string
	fs.StringVar(&family, "family", "", "a registered family: "+join(synth.Families()))
	fs.StringVar(&preset, "preset", "", "a preset shape (default tiny): "+presetList())
	fs.StringVar(&config, "config", "", "a Hugging Face config.json for the family instead of a preset")
	fs.StringVar(&out, "out", "", "the GGUF file or safetensors directory to write")
	fs.StringVar(&format, "format", "gguf", "gguf or safetensors")
	fs.StringVar(&typ, "type", "f32", "stored type of the matrices: f32, f16, bf16, q8_0, q4_0, q4_k, mxfp4 (gguf only for the packed ones)")
	seed := fs.Uint64("seed", 1, "random seed of the weights")
	scale := fs.Float64("scale", synth.DefaultScale, "standard deviation of the matrices' entries (0.02 for the scale of small trained models)")
	list := fs.Bool("list", false, "list the presets and exit")
	force := fs.Bool("force", false, "replace an existing file or directory at --out")
	if err := fs.parse(args); err != nil {
		return err
	}
	if *list {
		for _, p := range synth.Presets() {
			fmt.Fprintf(stdout, "%-9s %-12s %s\n", p.Family, p.Name, p.Description)
		}
		return nil
	}
	if family == "" {
		return usagef("no family: give --family F (%s)", join(synth.Families()))
	}
	if out == "" {
		return usagef("no output: give --out PATH")
	}
	dt, err := poot.ParseDType(typ)
	if err != nil || !dt.Float() {
		return usagef("--type %q: want f32, f16, bf16, q8_0, q4_0, q4_k or mxfp4", typ)
	}
	if format != "gguf" && format != "safetensors" {
		return usagef("--format %q: want gguf or safetensors", format)
	}
	m, done, err := modelSource("", family, config, preset)
	if err != nil {
		return err
	}
	defer done()
	// An interrupt cancels the write, which then removes its temporary:
	// --out never holds a partial checkpoint.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var fellBack []string
	b := newBar(stderr)
	err = synth.Write(m, out, synth.Options{Format: format, Type: dt, Seed: *seed, Scale: *scale, Replace: *force, Context: ctx,
		Progress: func(d, t int64) {
			if t > 0 {
				b.draw("writing", float64(d)/float64(t))
			}
		},
		Fallback: func(name, why string) { fellBack = append(fellBack, name+" ("+why+")") }})
	b.clear()
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted; nothing was written to %s", out)
	case err != nil:
		return err
	}
	stored := dt.String()
	if len(fellBack) > 0 {
		stored = fmt.Sprintf("%s, %d matrices f32", dt, len(fellBack))
		fmt.Fprintf(stderr, "poot synth: note: %d matrices stay f32: %s\n", len(fellBack), strings.Join(fellBack, ", "))
	}
	_, err = fmt.Fprintf(stdout, "wrote %s: %s %s, %s, %s (%s)\n", out, family, orDefault(preset, "tiny", config), format, stored, sizeOf(out))
	return err
}

func orDefault(preset, def, config string) string {
	switch {
	case config != "":
		return "from " + config
	case preset == "":
		return def
	}
	return preset
}

func presetList() string {
	var s []string
	for _, p := range synth.Presets() {
		s = append(s, p.Family+"/"+p.Name)
	}
	return strings.Join(s, ", ")
}

// sizeOf formats the size of a file or the files of a directory.
func sizeOf(path string) string {
	var n int64
	fi, err := os.Stat(path)
	if err != nil {
		return "?"
	}
	if fi.IsDir() {
		es, _ := os.ReadDir(path)
		for _, e := range es {
			if i, err := e.Info(); err == nil {
				n += i.Size()
			}
		}
	} else {
		n = fi.Size()
	}
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
