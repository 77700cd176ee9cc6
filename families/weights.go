package families

import (
	"strconv"
	"strings"

	"github.com/pootlabs/poot/load"
)

// WeightMap translates canonical (GGUF) tensor names to the names a
// container stores. GGUF stores the canonical names. Hugging Face
// checkpoints name non-layer tensors through Global and per-layer tensors
// "blk.N.<role>" as LayerPrefix+"N."+Layer[role].
//
// A Layer entry containing "{e}" names one tensor per expert
// (mlp.experts.{e}.gate_proj.weight) that together form the canonical
// stacked tensor [experts, …]; Stored does not resolve those, Parts lists
// them.
type WeightMap struct {
	Container   Container
	Global      map[string]string // canonical -> Hugging Face name
	LayerPrefix string            // "model.layers."
	Layer       map[string]string // role -> name after "<prefix>N."
	Experts     int               // number of experts, for Parts
	// Views are per-layer roles stored as part of a larger tensor: a
	// fused projection (gate and up in one matrix, a stack of experts
	// stored [E, in, out]). Each source's Tensor is named after
	// "<prefix>N." like a Layer entry; its Transposed and row fields say
	// how the canonical tensor is cut from the stored one. Views take
	// precedence over Layer.
	Views map[string]load.Source
}

// In returns the same map for another container.
func (m WeightMap) In(c Container) WeightMap { m.Container = c; return m }

// splitLayer parses "blk.N.role".
func splitLayer(name string) (int, string, bool) {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return 0, "", false
	}
	i := strings.IndexByte(rest, '.')
	if i <= 0 {
		return 0, "", false
	}
	n, err := strconv.Atoi(rest[:i])
	if err != nil || n < 0 {
		return 0, "", false
	}
	return n, rest[i+1:], true
}

// Stored returns the stored name of a canonical tensor name, and false when
// the map has none (or the tensor is stored as per-expert parts or as a
// view of a fused tensor).
func (m WeightMap) Stored(name string) (string, bool) {
	if m.Container == GGUF {
		return name, true
	}
	if s, ok := m.Global[name]; ok {
		return s, true
	}
	l, role, ok := splitLayer(name)
	if !ok {
		return "", false
	}
	if _, ok := m.Views[role]; ok {
		return "", false
	}
	s, ok := m.Layer[role]
	if !ok || strings.Contains(s, "{e}") {
		return "", false
	}
	return m.LayerPrefix + strconv.Itoa(l) + "." + s, true
}

// Parts returns, for a stacked expert tensor stored one tensor per expert,
// the stored names of the parts in expert order; nil otherwise.
func (m WeightMap) Parts(name string) []string {
	if m.Container == GGUF {
		return nil
	}
	l, role, ok := splitLayer(name)
	if !ok {
		return nil
	}
	s, ok := m.Layer[role]
	if !ok || !strings.Contains(s, "{e}") {
		return nil
	}
	out := make([]string, m.Experts)
	for e := range out {
		out[e] = m.LayerPrefix + strconv.Itoa(l) + "." + strings.ReplaceAll(s, "{e}", strconv.Itoa(e))
	}
	return out
}

// View returns the source of a canonical tensor stored as a view of a
// fused tensor, its Tensor the full stored name; false otherwise.
func (m WeightMap) View(name string) (load.Source, bool) {
	if m.Container == GGUF {
		return load.Source{}, false
	}
	l, role, ok := splitLayer(name)
	if !ok {
		return load.Source{}, false
	}
	src, ok := m.Views[role]
	if !ok {
		return load.Source{}, false
	}
	src.Tensor = m.LayerPrefix + strconv.Itoa(l) + "." + src.Tensor
	return src, true
}

// Names returns Stored as a function, the form load.Bind takes.
func (m WeightMap) Names() func(string) (string, bool) { return m.Stored }

// HFNames is the Hugging Face naming shared by Llama-like checkpoints
// (Llama, Mistral, Qwen2/3, Gemma): the table a family starts from and
// overrides where it differs.
func HFNames() WeightMap {
	return WeightMap{
		Global: map[string]string{
			"token_embd.weight":  "model.embed_tokens.weight",
			"output_norm.weight": "model.norm.weight",
			"output.weight":      "lm_head.weight",
			"output_norm.bias":   "model.norm.bias",
			"output.bias":        "lm_head.bias",
		},
		LayerPrefix: "model.layers.",
		Layer: map[string]string{
			"attn_norm.weight":   "input_layernorm.weight",
			"attn_q.weight":      "self_attn.q_proj.weight",
			"attn_k.weight":      "self_attn.k_proj.weight",
			"attn_v.weight":      "self_attn.v_proj.weight",
			"attn_q.bias":        "self_attn.q_proj.bias",
			"attn_k.bias":        "self_attn.k_proj.bias",
			"attn_v.bias":        "self_attn.v_proj.bias",
			"attn_output.weight": "self_attn.o_proj.weight",
			"attn_output.bias":   "self_attn.o_proj.bias",
			"attn_q_norm.weight": "self_attn.q_norm.weight",
			"attn_k_norm.weight": "self_attn.k_norm.weight",
			"ffn_norm.weight":    "post_attention_layernorm.weight",
			"ffn_gate.weight":    "mlp.gate_proj.weight",
			"ffn_up.weight":      "mlp.up_proj.weight",
			"ffn_down.weight":    "mlp.down_proj.weight",
			"attn_norm.bias":     "input_layernorm.bias",
			"ffn_norm.bias":      "post_attention_layernorm.bias",
			"ffn_gate.bias":      "mlp.gate_proj.bias",
			"ffn_up.bias":        "mlp.up_proj.bias",
			"ffn_down.bias":      "mlp.down_proj.bias",
		},
	}
}

// With returns a copy of m with the given per-layer roles renamed (an empty
// name removes the role).
func (m WeightMap) With(layer map[string]string) WeightMap {
	l := make(map[string]string, len(m.Layer)+len(layer))
	for k, v := range m.Layer {
		l[k] = v
	}
	for k, v := range layer {
		if v == "" {
			delete(l, k)
		} else {
			l[k] = v
		}
	}
	m.Layer = l
	return m
}

// Resolver returns the map as the loader's resolver: each canonical name
// to its stored tensor, or to the per-expert parts that load stacks.
func (m WeightMap) Resolver() load.Resolver {
	return func(name string) (load.Source, bool) {
		if v, ok := m.View(name); ok {
			return v, true
		}
		if parts := m.Parts(name); parts != nil {
			return load.Source{Parts: parts}, true
		}
		s, ok := m.Stored(name)
		return load.Source{Tensor: s}, ok
	}
}
