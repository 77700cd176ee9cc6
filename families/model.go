package families

import (
	"fmt"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/gguf"
)

// Model is one configured model of a family, ready to trace. It is not
// generic: each family traces with a brand of its own choosing and returns
// the brand-free graph.
type Model interface {
	// Family is the registry name of the model's family ("llama").
	Family() string
	// Schema gives the facts a driver needs to size steps.
	Schema() Schema
	// Trace checks spec against the schema and records the step's graph,
	// charging limits. A spec the model cannot run is a *StepError.
	// The weights a model reads and the states it carries are read from
	// its trace (Tensors, States), not listed a second time.
	Trace(spec StepSpec, limits poot.Limits) (*poot.Graph, error)
	// Weights is the weight map: canonical names to stored names for the
	// container the model was configured from.
	Weights() WeightMap
}

// Layered is implemented by models that can name their layer structure:
// LayerKinds gives one entry per layer, the mixer and the feed-forward
// joined by "+" ("attention+dense", "attention(window 128)+moe",
// "gated_delta+moe", "latent_attention+moe(shared)"). Inspecting a model
// prints it.
type Layered interface {
	LayerKinds() []string
}

// Schema is what a driver needs to know about a model to shape its steps.
type Schema struct {
	Vocab      int // rows of the token embedding; tokens lie in [0, Vocab)
	Dim        int // width of the residual stream
	Layers     int
	MaxContext int // the context length the checkpoint declares; 0 if none
}

// Check validates a step shape against the schema.
func (s Schema) Check(family string, shape StepShape) error {
	if err := shape.Validate(); err != nil {
		if se, ok := err.(*StepError); ok {
			se.Model = family
		}
		return err
	}
	if s.MaxContext > 0 && shape.Capacity > s.MaxContext {
		return &StepError{Model: family, Field: "Capacity", Detail: fmt.Sprintf("capacity %d exceeds the model's context length %d", shape.Capacity, s.MaxContext)}
	}
	return nil
}

// TensorSpec describes one weight a model reads (see Tensors).
type TensorSpec struct {
	Name  string     // canonical (GGUF) name
	Shape poot.Shape // poot order, [out_features, in_features] for matrices
	// Role says what the tensor is, for synthesisers: "norm" (initialise
	// near one), "bias", "sinks", "decay", "conv", "rope_freqs", "weight".
	// Only "weight" matrices take a synthesiser's requested stored type.
	Role string
}

// Container says where a checkpoint came from, which decides its tensor
// names.
type Container uint8

// The containers.
const (
	GGUF        Container = iota // a GGUF file: canonical names as stored
	Safetensors                  // a safetensors directory with Hugging Face names
)

// Row is one family's entry in the registry: the names it answers to and
// how it configures a model from each container's metadata.
type Row struct {
	// Family is the family's name ("llama").
	Family string
	// GGUFArchitectures are the general.architecture values it reads.
	GGUFArchitectures []string
	// HFArchitectures are the config.json "architectures" entries it reads
	// ("LlamaForCausalLM"); HFModelTypes the "model_type" values.
	HFArchitectures []string
	HFModelTypes    []string
	// FromGGUF configures a model from a GGUF file's metadata and tensor
	// table.
	FromGGUF func(f *gguf.File) (Model, error)
	// FromHF configures a model from a decoded config.json.
	FromHF func(cfg map[string]any) (Model, error)
}
