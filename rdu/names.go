package rdu

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pootlabs/poot/rdu/lang"
)

// Naming follows the seed: the hidden state a layer reads is "x" for the
// first layer and "xo<l-1>" after it, and the layer's result "xo<l>"; every
// per-layer tensor and intermediate carries its layer's index as a suffix
// (Wq0, x2n3); the tables every layer shares (rotary angles, position
// tables) and the runtime inputs (tok, pos) keep one name everywhere.

// LayerInput is the name of the hidden state layer l reads.
func LayerInput(l int) string {
	if l == 0 {
		return "x"
	}
	return fmt.Sprintf("xo%d", l-1)
}

// LayerOutput is the name of the hidden state layer l leaves.
func LayerOutput(l int) string { return fmt.Sprintf("xo%d", l) }

// StackedInput is the name of the stacked hidden state (a row a token of
// the chunk) layer l reads in a prefill bundle: "X" for the first layer,
// "bxo<l-1>" after it.
func StackedInput(l int) string {
	if l == 0 {
		return "X"
	}
	return fmt.Sprintf("bxo%d", l-1)
}

// StackedOutput is the name of the stacked hidden state layer l leaves.
func StackedOutput(l int) string { return fmt.Sprintf("bxo%d", l) }

// input and output name the hidden states of a deployment.
func input(stacked bool, l int) string {
	if stacked {
		return StackedInput(l)
	}
	return LayerInput(l)
}

func output(stacked bool, l int) string {
	if stacked {
		return StackedOutput(l)
	}
	return LayerOutput(l)
}

// weightRoles gives the short names of the canonical (GGUF-style) tensor
// names graphs declare their weights with: blk.<l>.<role>.weight or .bias.
var weightRoles = map[string]string{
	"attn_norm.weight":           "an",
	"attn_norm.bias":             "anb",
	"ffn_norm.bias":              "fnb",
	"ffn_gate.bias":              "Bg",
	"ffn_up.bias":                "Bu",
	"ffn_down.bias":              "Bd",
	"attn_q.weight":              "Wq",
	"attn_k.weight":              "Wk",
	"attn_v.weight":              "Wv",
	"attn_qkv.weight":            "Wqkv",
	"attn_output.weight":         "Wo",
	"attn_q.bias":                "Bq",
	"attn_k.bias":                "Bk",
	"attn_v.bias":                "Bv",
	"attn_qkv.bias":              "Bqkv",
	"attn_output.bias":           "Bo",
	"attn_q_norm.weight":         "Qn",
	"attn_k_norm.weight":         "Kn",
	"attn_sinks.weight":          "Sk",
	"attn_post_norm.weight":      "pan",
	"post_attention_norm.weight": "pan",
	"ffn_norm.weight":            "fn",
	"post_ffw_norm.weight":       "pfn",
	"ffn_gate.weight":            "Wg",
	"ffn_up.weight":              "Wu",
	"ffn_down.weight":            "Wd",
	"ffn_gate_inp.weight":        "Wr",
	"ffn_gate_inp.bias":          "Br",
	"exp_probs_b.bias":           "Bs",
	"ffn_gate_exps.weight":       "Wge",
	"ffn_up_exps.weight":         "Wue",
	"ffn_down_exps.weight":       "Wde",
	"ffn_gate_exps.bias":         "Bge",
	"ffn_up_exps.bias":           "Bue",
	"ffn_down_exps.bias":         "Bde",
	"ffn_gate_shexp.weight":      "Wsg",
	"ffn_up_shexp.weight":        "Wsu",
	"ffn_down_shexp.weight":      "Wsd",
	"ffn_gate_inp_shexp.weight":  "Wsgi",
	"attn_q_a.weight":            "Wqa",
	"attn_q_a_norm.weight":       "Qan",
	"attn_q_b.weight":            "Wqb",
	"attn_kv_a_mqa.weight":       "Wkva",
	"attn_kv_a_norm.weight":      "Kan",
	"attn_kv_b.weight":           "Wkvb",
	"attn_k_b.weight":            "Wkbt",
	"attn_v_b.weight":            "Wvbs",
	"attn_gate.weight":           "Wz",
	"ssm_in.weight":              "Wqkvz",
	"ssm_beta.weight":            "Wb",
	"ssm_alpha.weight":           "Wa",
	"ssm_ba.weight":              "Wba",
	"ssm_dt.bias":                "Dt",
	"ssm_a":                      "Al",
	"ssm_conv1d.weight":          "Wc",
	"ssm_norm.weight":            "Gn",
	"ssm_out.weight":             "Wo",
}

// globalRoles names the tensors outside the layers.
var globalRoles = map[string]string{
	"token_embd.weight":  "Emb",
	"output.weight":      "Wout",
	"output_norm.weight": "on",
	"output_norm.bias":   "onb",
	"output.bias":        "Bout",
}

// sanitize turns a tensor name into a name's base: letters and digits,
// starting with a letter and ending with one.
func sanitize(s string) string {
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' && sb.Len() > 0 {
			sb.WriteByte(c)
		}
	}
	out := sb.String()
	if out == "" {
		out = "t"
	}
	if c := out[len(out)-1]; c >= '0' && c <= '9' {
		out += "t"
	}
	return out
}

// weightBase is the base name of the constant called name, read by layer l
// (l < 0 outside the layers).
func weightBase(name string, l int) string {
	if l >= 0 {
		prefix := "blk." + strconv.Itoa(l) + "."
		if rest, ok := strings.CutPrefix(name, prefix); ok {
			if r, ok := weightRoles[rest]; ok {
				return r
			}
			return "W" + sanitize(strings.TrimSuffix(rest, ".weight"))
		}
	}
	if r, ok := globalRoles[name]; ok {
		return r
	}
	return "W" + sanitize(strings.TrimSuffix(name, ".weight"))
}

// stateBase is the base name of the state called name.
func stateBase(name string, l int) string {
	switch {
	case name == fmt.Sprintf("cache.k.%d", l):
		return "Kc"
	case name == fmt.Sprintf("cache.v.%d", l):
		return "Vc"
	case name == fmt.Sprintf("cache.conv.%d", l):
		return "Cs"
	case name == fmt.Sprintf("cache.delta.%d", l):
		return "St"
	case name == fmt.Sprintf("cache.latent.%d", l):
		return "Kc" // the seed's name: the latent rows serve as keys
	}
	return "S" + sanitize(strings.TrimSuffix(name, "."+strconv.Itoa(l)))
}

// namer hands out a program's names: base + the layer's suffix, unique in
// the program, never a keyword.
type namer struct {
	suffix string // the layer index, or "" outside the layers
	used   map[string]bool
	// local lists the names that carry the layer's suffix, which rebinding
	// renames.
	local []string
}

func newNamer(layer int) *namer {
	n := &namer{used: map[string]bool{}}
	if layer >= 0 {
		n.suffix = strconv.Itoa(layer)
	}
	return n
}

// fresh returns a new per-layer name from base.
func (n *namer) fresh(base string) string {
	name := base + n.suffix
	for k := 0; n.used[name] || !lang.IsName(name); k++ {
		name = base + string(rune('b'+k%24)) + strings.Repeat("z", k/24) + n.suffix
	}
	n.used[name] = true
	if n.suffix != "" {
		n.local = append(n.local, name)
	}
	return name
}

// freshSeq returns a new per-layer name from base for sequence b of a
// batch: the layer's suffix, then "_s" and b (Kc3_s1).
func (n *namer) freshSeq(base string, b int) string {
	seq := "_s" + strconv.Itoa(b)
	name := base + n.suffix + seq
	for k := 0; n.used[name] || !lang.IsName(name); k++ {
		name = base + string(rune('b'+k%24)) + strings.Repeat("z", k/24) + n.suffix + seq
	}
	n.used[name] = true
	if n.suffix != "" {
		n.local = append(n.local, name)
	}
	return name
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// fixed claims a name that does not follow the suffix rule (a shared
// table, a runtime input, the hidden state); it reports whether the name
// was free.
func (n *namer) fixed(name string) bool {
	if n.used[name] {
		return false
	}
	n.used[name] = true
	return true
}
