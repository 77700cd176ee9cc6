// Package registry lists the model families shipped with poot, one row
// each, and finds the family of a checkpoint by the architecture name it
// stores: general.architecture in a GGUF file, "architectures" (then
// "model_type") in a config.json. Adding a family is adding its row here.
package registry

import (
	"fmt"
	"slices"

	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/deepseek2"
	"github.com/pootlabs/poot/families/falcon"
	"github.com/pootlabs/poot/families/gemma3"
	"github.com/pootlabs/poot/families/gptneox"
	"github.com/pootlabs/poot/families/gptoss"
	"github.com/pootlabs/poot/families/granite"
	"github.com/pootlabs/poot/families/llama"
	"github.com/pootlabs/poot/families/llama4"
	"github.com/pootlabs/poot/families/mixtral"
	"github.com/pootlabs/poot/families/olmo2"
	"github.com/pootlabs/poot/families/phi2"
	"github.com/pootlabs/poot/families/phi3"
	"github.com/pootlabs/poot/families/qwen3moe"
	"github.com/pootlabs/poot/families/qwen3next"
	"github.com/pootlabs/poot/families/stablelm"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/load"
)

// Shipped is the registry: every family poot ships, first match wins.
var Shipped = []families.Row{
	llama.Row,
	gemma3.Row,
	qwen3moe.Row,
	mixtral.Row,
	llama4.Row,
	gptoss.Row,
	qwen3next.Row,
	qwen3next.Qwen35Row,
	qwen3next.Qwen35MoERow,
	deepseek2.Row,
	olmo2.Row,
	phi2.Row,
	stablelm.Row,
	gptneox.Row,
	falcon.Row,
	phi3.Row,
	granite.Row,
}

// Refused names the architectures poot knows and does not run, by GGUF
// architecture and Hugging Face architecture, with the feature that the
// IR's layer language has no form for yet. Opening one is an
// ErrUnsupported error naming the feature, not "unknown architecture",
// and never a model loaded wrongly.
var Refused = []struct {
	GGUF, HF []string
	Feature  string
}{
	{[]string{"gemma3n"}, []string{"Gemma3nForCausalLM", "Gemma3nForConditionalGeneration"},
		"per-layer embeddings and the AltUp/Laurel blocks of Gemma 3n"},
	{[]string{"deepseek32"}, []string{"DeepseekV32ForCausalLM"},
		"the sparse attention indexer of DeepSeek-V3.2 (lightning indexer selecting top-k keys)"},
	{[]string{"deepseek4"}, []string{"DeepseekV4ForCausalLM"},
		"hyper-connections (several residual streams mixed by Sinkhorn-normalised matrices) of DeepSeek-V4"},
}

// refused returns the feature of a refused architecture.
// Register adds rows to Shipped, after the shipped ones; a row whose
// family is registered already is left out, so registering twice is
// harmless.
func Register(rows ...families.Row) {
	for _, r := range rows {
		if !slices.ContainsFunc(Shipped, func(s families.Row) bool { return s.Family == r.Family }) {
			Shipped = append(Shipped, r)
		}
	}
}

func refused(gguf string, hf []any) (string, bool) {
	for _, r := range Refused {
		if slices.Contains(r.GGUF, gguf) {
			return r.Feature, true
		}
		for _, a := range hf {
			if s, _ := a.(string); s != "" && slices.Contains(r.HF, s) {
				return r.Feature, true
			}
		}
	}
	return "", false
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

// FromGGUF configures the model of a GGUF file and checks it against the
// file's tensor table (families.CheckTensors): a model it returns reads
// only tensors the file stores, with the shapes they are stored with.
func FromGGUF(f *gguf.File) (families.Model, error) {
	arch, err := f.Architecture()
	if err != nil {
		return nil, err
	}
	r, ok := ByGGUFArchitecture(arch)
	if feature, no := refused(arch, nil); !ok && no {
		return nil, &families.ConfigError{Source: "gguf", Key: gguf.KeyArchitecture, Err: families.ErrUnsupported, Detail: fmt.Sprintf("%q: %s", arch, feature)}
	}
	if !ok {
		return nil, &families.ConfigError{Source: "gguf", Key: gguf.KeyArchitecture, Err: families.ErrUnknownArchitecture, Detail: fmt.Sprintf("%q", arch)}
	}
	m, err := r.FromGGUF(f)
	if err != nil {
		return nil, err
	}
	if err := families.CheckTensors(m, families.GGUFTable(f)); err != nil {
		return nil, err
	}
	return m, nil
}

// FromCheckpoint configures the model of an opened checkpoint (a GGUF
// file's metadata, a safetensors directory's config.json) and checks it
// against the checkpoint's tensor table before anything is traced, so that
// a layer count or a width the checkpoint does not hold is an error naming
// the first missing or misshapen tensor, never a trace of a model the file
// cannot fill.
func FromCheckpoint(c *load.Checkpoint) (families.Model, error) {
	if f := c.GGUF(); f != nil {
		return FromGGUF(f)
	}
	cfg := c.HFConfig()
	if cfg == nil {
		return nil, fmt.Errorf("registry: %s: no config.json", c.Path())
	}
	m, err := FromHF(cfg)
	if err != nil {
		return nil, err
	}
	if err := families.CheckTensors(m, c); err != nil {
		return nil, err
	}
	return m, nil
}

// FromHF configures the model of a decoded config.json.
func FromHF(cfg map[string]any) (families.Model, error) {
	r, ok := ByHFConfig(cfg)
	archs, _ := cfg["architectures"].([]any)
	if feature, no := refused("", archs); !ok && no {
		return nil, &families.ConfigError{Source: "config.json", Key: "architectures", Err: families.ErrUnsupported, Detail: fmt.Sprintf("%v: %s", archs, feature)}
	}
	if !ok {
		return nil, &families.ConfigError{Source: "config.json", Key: "architectures", Err: families.ErrUnknownArchitecture,
			Detail: fmt.Sprintf("architectures %v, model_type %v", cfg["architectures"], cfg["model_type"])}
	}
	return r.FromHF(cfg)
}
