package ops_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/ops"
	"github.com/pootlabs/poot/tensor"
	"pgregory.net/rapid"
)

// coreRope rotates x [T, H*D] naively: for each row, head and frequency
// index i, the pair (a, b) of channels is (i, i+n/2) for NeoX and
// (2i, 2i+1) for the interleaved layout, rotated by pos·inv[i]; channels
// n..D-1 pass; everything is scaled by mscale.
func coreRope(x []float64, pos []int, heads, d int, inv []float64, mscale float64, layout ops.RopeLayout) []float64 {
	out := append([]float64(nil), x...)
	n := 2 * len(inv)
	for t, p := range pos {
		for h := range heads {
			base := t*heads*d + h*d
			for i, f := range inv {
				a, b := i, i+n/2
				if layout == ops.RopeInterleaved {
					a, b = 2*i, 2*i+1
				}
				c, s := math.Cos(float64(p)*f)*mscale, math.Sin(float64(p)*f)*mscale
				xa, xb := x[base+a], x[base+b]
				out[base+a] = xa*c - xb*s
				out[base+b] = xb*c + xa*s
			}
		}
	}
	return out
}

var coreRopeConfigs = []struct {
	name string
	cfg  ops.RopeConfig
}{
	{"none", ops.RopeConfig{Dims: 16, Theta: 10000}},
	{"linear", ops.RopeConfig{Dims: 16, Theta: 10000, Scaling: ops.ScaleLinear, Factor: 4}},
	{"ntk", ops.RopeConfig{Dims: 16, Theta: 10000, Scaling: ops.ScaleNTK, Factor: 4}},
	{"yarn", ops.RopeConfig{Dims: 64, Theta: 10000, Scaling: ops.ScaleYaRN, Factor: 16, OrigContext: 4096}},
	{"yarn-deepseek", ops.RopeConfig{Dims: 64, Theta: 10000, Scaling: ops.ScaleYaRN, Factor: 40, OrigContext: 4096, MScale: 1, MScaleAllDim: 0.707}},
	{"llama3", ops.RopeConfig{Dims: 128, Theta: 500000, Scaling: ops.ScaleLlama3, Factor: 8, OrigContext: 8192, LowFreqFactor: 1, HighFreqFactor: 4}},
}

func TestRopeInvFreq(t *testing.T) {
	for _, c := range coreRopeConfigs {
		host, err := c.cfg.InvFreq()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		g := newCore()
		out := g.run(t, "RopeInvFreq("+c.name+")", ops.RopeInvFreq(g.b, c.cfg))
		coreCheck(t, "RopeInvFreq("+c.name+")", out[0], host)

		// Every scaling keeps the highest frequency (1) and divides the
		// lowest by the factor, up to its own blend: check the ends.
		n := len(host)
		if c.cfg.Scaling != ops.ScaleLinear && math.Abs(host[0]-1) > 1e-12 {
			t.Errorf("%s: highest frequency %v, want 1", c.name, host[0])
		}
		plain := math.Pow(c.cfg.Theta, -float64(2*(n-1))/float64(c.cfg.Dims))
		if c.cfg.Scaling != ops.ScaleNone && math.Abs(host[n-1]*c.cfg.Factor/plain-1) > 1e-9 {
			t.Errorf("%s: lowest frequency %v, want %v / %v", c.name, host[n-1], plain, c.cfg.Factor)
		}
	}
	// Llama 3.1's bands: wavelengths 2π·500000^(i/64) below 8192/4 are kept
	// (i ≤ 28), above 8192/1 divided (i ≥ 35), and interpolated between.
	l3 := coreRopeConfigs[5].cfg
	inv, _ := l3.InvFreq()
	plain := func(i int) float64 { return math.Pow(500000, -float64(2*i)/128) }
	if inv[10] != plain(10) || math.Abs(inv[40]-plain(40)/8) > 1e-15 {
		t.Errorf("llama3 bands: inv[10] %v (plain %v), inv[40] %v (plain/8 %v)", inv[10], plain(10), inv[40], plain(40)/8)
	}
	for i := 29; i <= 34; i++ {
		if !(inv[i] < plain(i) && inv[i] > plain(i)/8) {
			t.Errorf("llama3 band: inv[%d] %v not between %v and %v", i, inv[i], plain(i)/8, plain(i))
		}
	}
	if inv[28] != plain(28) || inv[35] != plain(35)/8 {
		t.Errorf("llama3 band edges: inv[28] %v, inv[35] %v", inv[28], inv[35])
	}
	// YaRN's attention factors.
	if f := coreRopeConfigs[3].cfg.AttentionFactor(); math.Abs(f-(0.1*math.Log(16)+1)) > 1e-15 {
		t.Errorf("yarn attention factor %v", f)
	}
	ds := coreRopeConfigs[4].cfg
	if f, want := ds.AttentionFactor(), (0.1*math.Log(40)+1)/(0.1*0.707*math.Log(40)+1); math.Abs(f-want) > 1e-15 {
		t.Errorf("deepseek attention factor %v, want %v", f, want)
	}
	// Invalid configurations are errors.
	for _, bad := range []ops.RopeConfig{{Dims: 7, Theta: 1e4}, {Dims: 8, Theta: 1}, {Dims: 8, Theta: 1e4, Scaling: ops.ScaleYaRN, Factor: 2}, {Dims: 8, Theta: 1e4, Scaling: ops.ScaleLlama3, Factor: 8, OrigContext: 8192, LowFreqFactor: 4, HighFreqFactor: 1}} {
		if _, err := bad.InvFreq(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestRopeAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	const heads, d = 3, 16
	pos := []int{0, 1, 5, 17, 30}
	xv := coreRand(r, len(pos)*heads*d, 2)
	for _, layout := range []ops.RopeLayout{ops.RopeNeoX, ops.RopeInterleaved} {
		for _, c := range []struct {
			name string
			cfg  ops.RopeConfig
		}{
			{"full", ops.RopeConfig{Dims: d, Theta: 10000}},
			{"partial", ops.RopeConfig{Dims: 6, Theta: 10000}},
			{"yarn", ops.RopeConfig{Dims: d, Theta: 10000, Scaling: ops.ScaleYaRN, Factor: 4, OrigContext: 64}},
			{"llama3", ops.RopeConfig{Dims: d, Theta: 500000, Scaling: ops.ScaleLlama3, Factor: 8, OrigContext: 64, LowFreqFactor: 1, HighFreqFactor: 4}},
		} {
			name := "RoPE(" + []string{"neox", "interleaved"}[layout] + ", " + c.name + ")"
			inv, err := c.cfg.InvFreq()
			if err != nil {
				t.Fatal(err)
			}
			g := newCore()
			p := g.positions(t, pos, 63)
			rot := ops.RopeTables(g.b, p, ops.RopeInvFreq(g.b, c.cfg), c.cfg.AttentionFactor(), layout)
			n0 := g.b.NumEqns()
			y := ops.RoPE(g.b, g.constant(t, "x", xv, len(pos), heads*d), heads, rot)
			t.Logf("%s: RoPE alone records %d equations", name, g.b.NumEqns()-n0)
			out := g.run(t, name+" with tables", y)
			coreCheck(t, name, out[0], coreRope(xv, pos, heads, d, inv, c.cfg.AttentionFactor(), layout))
		}
	}
	// The frequencies can also be a bound constant.
	cfg := ops.RopeConfig{Dims: d, Theta: 1e6}
	inv, _ := cfg.InvFreq()
	g := newCore()
	rot := ops.RopeTables(g.b, g.positions(t, pos, 63), g.constant(t, "rope.freqs", inv, d/2), 1, ops.RopeNeoX)
	out := g.run(t, "RoPE(constant table)", ops.RoPE(g.b, g.constant(t, "x", xv, len(pos), heads*d), heads, rot))
	coreCheck(t, "RoPE(constant table)", out[0], coreRope(xv, pos, heads, d, coreRound(inv), 1, ops.RopeNeoX))
}

// TestRopeLaws: a rotation preserves each head's norm and is the identity
// at position 0.
func TestRopeLaws(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		heads := rapid.IntRange(1, 4).Draw(rt, "heads")
		half := rapid.IntRange(1, 6).Draw(rt, "half")
		pass := rapid.IntRange(0, 3).Draw(rt, "pass")
		d := 2*half + pass
		layout := ops.RopeLayout(rapid.IntRange(0, 1).Draw(rt, "layout"))
		pos := rapid.SliceOfN(rapid.IntRange(0, 1000), 1, 4).Draw(rt, "pos")
		pos[0] = 0
		xv := coreRound(rapid.SliceOfN(rapid.Float64Range(-4, 4), len(pos)*heads*d, len(pos)*heads*d).Draw(rt, "x"))
		g := newCore()
		cfg := ops.RopeConfig{Dims: 2 * half, Theta: rapid.Float64Range(100, 1e6).Draw(rt, "theta")}
		rot := ops.RopeTables(g.b, g.positions(rt, pos, 1000), ops.RopeInvFreq(g.b, cfg), 1, layout)
		out := g.run(rt, "", ops.RoPE(g.b, g.constant(rt, "x", xv, len(pos), heads*d), heads, rot))[0]
		for i := 0; i < len(xv); i += d {
			var n0, n1 float64
			for j := range d {
				n0 += xv[i+j] * xv[i+j]
				n1 += out[i+j] * out[i+j]
			}
			if math.Abs(math.Sqrt(n0)-math.Sqrt(n1)) > 1e-5*math.Max(1, math.Sqrt(n0)) {
				rt.Fatalf("head at %d: norm %v became %v", i, math.Sqrt(n0), math.Sqrt(n1))
			}
		}
		for j := range heads * d {
			if out[j] != xv[j] {
				rt.Fatalf("position 0 changed channel %d: %v -> %v", j, xv[j], out[j])
			}
		}
	})
}

func TestAttnTemperature(t *testing.T) {
	pos := []int{0, 2, 3, 4, 7, 8, 100}
	const floor, scale = 4, 0.1
	g := newCore()
	p := g.positions(t, pos, 1000)
	temp := ops.AttnTemperature(g.b, p, floor, scale)
	xv := coreRand(rand.New(rand.NewPCG(13, 14)), len(pos)*3, 1)
	y := ops.ScaleRows(g.b, g.constant(t, "q", xv, len(pos), 3), temp)
	out := g.run(t, "AttnTemperature+ScaleRows", temp, y)
	want := make([]float64, len(pos))
	scaled := make([]float64, len(xv))
	for i, q := range pos {
		want[i] = math.Log(math.Floor(float64(q+1)/floor)+1)*scale + 1
		for j := range 3 {
			scaled[i*3+j] = xv[i*3+j] * want[i]
		}
	}
	coreCheck(t, "AttnTemperature", out[0], want)
	coreCheck(t, "ScaleRows", out[1], scaled)
}

// TestRopeShapes checks result shapes and the rotary-width check.
func TestRopeShapes(t *testing.T) {
	b := poot.NewBuilder[coreBrand](poot.Limits{})
	pos := b.Slot(poot.SlotPos, poot.Shape{3}, 0, 9)
	rot := ops.RopeTables(b, pos, ops.RopeInvFreq(b, ops.RopeConfig{Dims: 4, Theta: 1e4}), 1, ops.RopeInterleaved)
	y := ops.RoPE(b, b.Full(poot.T(poot.F32, 3, 2*8), 1), 2, rot)
	if s := b.Shape(y); !s.Equal(poot.Shape{3, 16}) || b.Err() != nil {
		t.Fatalf("shape %v, err %v", s, b.Err())
	}
	// More rotary dims than a head has is an error.
	ops.RoPE(b, b.Full(poot.T(poot.F32, 3, 2*3), 1), 2, rot)
	if b.Err() == nil {
		t.Errorf("rotating 4 dims of 3-wide heads was accepted")
	}
}

// coreRefRun is the part of a reference JSON the tiny-model test reads.
type coreRefRun struct {
	Prompt    []int       `json:"prompt_tokens"`
	Generated []int       `json:"generated_tokens"`
	Logits    [][]float64 `json:"logits_all_positions"`
}

// TestReferenceModelsMatchLlamaCpp runs the random-weight llama, qwen3 and
// gemma3 models and stories260K of ../shared/refmodels through the
// composites of this package
// (one prefill of every fed token) and compares the logits with llama.cpp's.
// It pins the conventions the README describes: llama's interleaved (NORM)
// rotary layout, qwen3's NeoX layout and per-head query/key norms, gemma3's
// sliding window, post-norms, embedding scale and tanh GeGLU.
func TestReferenceModelsMatchLlamaCpp(t *testing.T) {
	const dir = "../../shared/refmodels/" // ../shared beside the repository
	for _, c := range []struct {
		model string
		tol   float64 // absolute, on logits of magnitude ~1
	}{
		{"tiny-llama-f32", 1e-5},
		{"tiny-qwen3-f32", 1e-5},
		// ggml's GeLU reads an fp16 table: the reference is fp16-accurate.
		{"tiny-gemma3-f32", 1e-3},
		// ggml rounds activations to f16 for an f16 contraction.
		{"tiny-llama-f16", 1e-3},
		{"stories260K-f32", 1e-4},
		// ggml quantizes activations to q8_0 for a q8_0 contraction; poot
		// contracts exact activations with the stored weights.
		{"stories260K-q8_0", 0.5},
	} {
		t.Run(c.model, func(t *testing.T) {
			f, err := gguf.Open(dir + c.model + ".gguf")
			if err != nil {
				t.Skipf("reference model unavailable: %v", err)
			}
			defer f.Close()
			name := c.model + ".ref.json"
			if strings.HasPrefix(c.model, "stories") {
				name = c.model + ".llamacpp.ref.json"
			}
			raw, err := os.ReadFile(dir + name)
			if err != nil {
				t.Skipf("reference output unavailable: %v", err)
			}
			var ref coreRefRun
			if err := json.Unmarshal(raw, &ref); err != nil {
				t.Fatal(err)
			}
			tokens := append(append([]int{}, ref.Prompt...), ref.Generated...)[:len(ref.Logits)]
			got := coreTinyForward(t, f, tokens)
			worst := 0.0
			for i, row := range ref.Logits {
				for j, want := range row {
					worst = math.Max(worst, math.Abs(got[i*len(row)+j]-want))
				}
			}
			t.Logf("%s: %d positions, max |Δlogit| %.3g", c.model, len(tokens), worst)
			if !(worst < c.tol) {
				t.Errorf("%s: max |Δlogit| %.3g exceeds %g", c.model, worst, c.tol)
			}
		})
	}
}

// coreTinyForward traces a standard decoder over the file's weights, one
// prefill step of tokens, and returns the logits [T, vocab] flattened.
func coreTinyForward(t *testing.T, f *gguf.File, tokens []int) []float64 {
	arch, err := f.Architecture()
	if err != nil {
		t.Fatal(err)
	}
	key := func(k string, def float64) float64 {
		if v, err := f.Float(arch + "." + k); err == nil {
			return v
		}
		if v, err := f.Int(arch + "." + k); err == nil {
			return float64(v)
		}
		return def
	}
	dim := int(key("embedding_length", 0))
	layers := int(key("block_count", 0))
	heads := int(key("attention.head_count", 0))
	kvHeads := int(key("attention.head_count_kv", float64(heads)))
	hd := int(key("attention.key_length", float64(dim/heads)))
	eps := key("attention.layer_norm_rms_epsilon", 1e-5)
	theta := key("rope.freq_base", 10000)
	thetaLocal := key("rope.freq_base_swa", 10000)
	window := int(key("attention.sliding_window", 0))
	capacity := len(tokens)

	g := newCore()
	b := g.b
	w := func(name string) coreT {
		info, ok := f.Tensor(name)
		if !ok {
			return coreT{}
		}
		tt, err := info.TensorType()
		if err != nil {
			t.Fatal(err)
		}
		data, err := f.TensorData(name)
		if err != nil {
			t.Fatal(err)
		}
		v, err := tensor.View(tt, data)
		if err != nil {
			t.Fatal(err)
		}
		g.consts[name] = v
		return b.Constant(name, tt)
	}
	ids := make([]int32, len(tokens))
	for i, tok := range tokens {
		ids[i] = int32(tok)
	}
	tokT, err := tensor.FromI32(poot.Shape{len(ids)}, ids)
	if err != nil {
		t.Fatal(err)
	}
	g.slots[poot.SlotToken.String()] = tokT
	tok := b.Slot(poot.SlotToken, poot.Shape{len(ids)}, 0, 511)
	pos := g.positions(t, coreSpan(0, len(tokens)), capacity-1)

	embd := w("token_embd.weight")
	x := ops.AsF32(b, b.Gather(embd, tok))
	layout := ops.RopeInterleaved
	if arch != "llama" {
		layout = ops.RopeNeoX
	}
	ropeFor := func(base float64) ops.Rotary[coreBrand] {
		return ops.RopeTables(b, pos, ops.RopeInvFreq(b, ops.RopeConfig{Dims: hd, Theta: base}), 1, layout)
	}
	global, local := ropeFor(theta), ropeFor(thetaLocal)
	fullMask := ops.CausalMask(b, pos, capacity, 0, 0)
	localMask := ops.CausalMask(b, pos, capacity, window, 0)
	act := ops.SwiGLU[coreBrand]
	if arch == "gemma3" {
		x = ops.MulScalar(b, x, math.Sqrt(float64(dim)))
		act = ops.GeGLU[coreBrand]
	}
	var none coreT
	for l := range layers {
		b.Scope(fmt.Sprintf("layer.%d", l), func() {
			p := func(n string) coreT { return w(fmt.Sprintf("blk.%d.%s.weight", l, n)) }
			isLocal := arch == "gemma3" && l%3 < 2
			rot, mask := global, fullMask
			if isLocal {
				rot, mask = local, localMask
			}
			h := ops.RMSNorm(b, x, p("attn_norm"), eps)
			q, k, v := ops.Linear(b, h, p("attn_q"), none), ops.Linear(b, h, p("attn_k"), none), ops.Linear(b, h, p("attn_v"), none)
			if qn := p("attn_q_norm"); qn != none {
				q = ops.RMSNormHeads(b, q, qn, heads, eps)
				k = ops.RMSNormHeads(b, k, p("attn_k_norm"), kvHeads, eps)
			}
			q, k = ops.RoPE(b, q, heads, rot), ops.RoPE(b, k, kvHeads, rot)
			kc := g.cache(t, fmt.Sprintf("cache.k.%d", l), make([]float64, capacity*kvHeads*hd), capacity, kvHeads*hd)
			vc := g.cache(t, fmt.Sprintf("cache.v.%d", l), make([]float64, capacity*kvHeads*hd), capacity, kvHeads*hd)
			ctx, kn, vn := ops.CachedAttention(b, q, k, v, kc, vc, pos, mask, ops.AttentionConfig[coreBrand]{Heads: heads, KVHeads: kvHeads, HeadDim: hd})
			g.carry = append(g.carry, poot.Carry[coreBrand]{In: kc, Out: kn}, poot.Carry[coreBrand]{In: vc, Out: vn})
			o := ops.Linear(b, ctx, p("attn_output"), none)
			if pn := p("post_attention_norm"); pn != none {
				o = ops.RMSNorm(b, o, pn, eps)
			}
			x = b.Add(x, o)
			h = ops.RMSNorm(b, x, p("ffn_norm"), eps)
			ff := ops.GatedFFN(b, h, p("ffn_gate"), p("ffn_up"), p("ffn_down"), act)
			if pn := p("post_ffw_norm"); pn != none {
				ff = ops.RMSNorm(b, ff, pn, eps)
			}
			x = b.Add(x, ff)
		})
	}
	out := w("output.weight")
	if out == none {
		out = embd
	}
	logits := ops.Linear(b, ops.RMSNorm(b, x, w("output_norm.weight"), eps), out, none)
	return g.run(t, arch+" prefill", logits)[0]
}
