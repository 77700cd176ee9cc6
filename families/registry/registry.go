// Package registry lists the model families shipped with poot, one row
// each, and finds the family of a checkpoint by the architecture name it
// stores: general.architecture in a GGUF file, "architectures" (then
// "model_type") in a config.json. Adding a family is adding its row here.
package registry

import (
	"fmt"
	"slices"

	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/gemma3"
	"github.com/pootlabs/poot/families/llama"
	"github.com/pootlabs/poot/families/mixtral"
	"github.com/pootlabs/poot/families/qwen3moe"
	"github.com/pootlabs/poot/gguf"
)

// Shipped is the registry: every family poot ships, first match wins.
var Shipped = []families.Row{
	llama.Row,
	gemma3.Row,
	qwen3moe.Row,
	mixtral.Row,
}

// ByGGUFArchitecture returns the row that reads GGUF files of architecture
// arch.
func ByGGUFArchitecture(arch string) (families.Row, bool) {
	for _, r := range Shipped {
		if slices.Contains(r.GGUFArchitectures, arch) {
			return r, true
		}
	}
	return families.Row{}, false
}

// ByHFConfig returns the row that reads a config.json: the first entry of
// "architectures" that a row lists, else its "model_type".
func ByHFConfig(cfg map[string]any) (families.Row, bool) {
	if archs, ok := cfg["architectures"].([]any); ok {
		for _, a := range archs {
			s, _ := a.(string)
			for _, r := range Shipped {
				if slices.Contains(r.HFArchitectures, s) {
					return r, true
				}
			}
		}
	}
	if mt, ok := cfg["model_type"].(string); ok {
		for _, r := range Shipped {
			if slices.Contains(r.HFModelTypes, mt) {
				return r, true
			}
		}
	}
	return families.Row{}, false
}

// FromGGUF configures the model of a GGUF file.
func FromGGUF(f *gguf.File) (families.Model, error) {
	arch, err := f.Architecture()
	if err != nil {
		return nil, err
	}
	r, ok := ByGGUFArchitecture(arch)
	if !ok {
		return nil, &families.ConfigError{Source: "gguf", Key: gguf.KeyArchitecture, Err: families.ErrUnknownArchitecture, Detail: fmt.Sprintf("%q", arch)}
	}
	return r.FromGGUF(f)
}

// FromHF configures the model of a decoded config.json.
func FromHF(cfg map[string]any) (families.Model, error) {
	r, ok := ByHFConfig(cfg)
	if !ok {
		return nil, &families.ConfigError{Source: "config.json", Key: "architectures", Err: families.ErrUnknownArchitecture,
			Detail: fmt.Sprintf("architectures %v, model_type %v", cfg["architectures"], cfg["model_type"])}
	}
	return r.FromHF(cfg)
}
