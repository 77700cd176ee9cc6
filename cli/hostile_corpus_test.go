package cli

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/familytest"
	"github.com/pootlabs/poot/families/llama"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/safetensors"
	"github.com/pootlabs/poot/tokenizer"
)

// The hostile corpus: small checkpoints, each wrong in one way, committed
// under testdata/hostile and run through the built command by
// TestHostileInputs. go test ./cli -run TestHostileCorpus
// -update-hostile writes them again; TestHostileCorpus checks that the
// committed files are what the generator writes.
var updateHostile = flag.Bool("update-hostile", false, "rewrite testdata/hostile")

const hostileDir = "testdata/hostile"

// hostileConfig is the tiny valid model every case starts from: 8 wide, 2
// layers, 2 query heads and 1 key/value head of 4, 16 tokens, tied head.
func hostileConfig() map[string]any {
	return map[string]any{
		"architectures": []any{"LlamaForCausalLM"}, "model_type": "llama",
		"hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
		"head_dim": 4, "intermediate_size": 16, "vocab_size": 16, "max_position_embeddings": 64,
		"rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": true,
	}
}

// hostileVocab is a 16-token SentencePiece vocabulary.
func hostileVocab(n int) ([]string, []float32, []int32) {
	base := []string{"<unk>", "<s>", "</s>", "▁", "▁a", "▁b", "a", "b", "c", "d", "e", "h", "i", "o", "▁hi", "▁o"}
	var toks []string
	var scores []float32
	var types []int32
	for i := range n {
		t := fmt.Sprintf("x%d", i)
		if i < len(base) {
			t = base[i]
		}
		toks = append(toks, t)
		scores = append(scores, -float32(i))
		typ := int32(1)
		switch {
		case i == 0:
			typ = 2
		case i < 3:
			typ = 3
		}
		types = append(types, typ)
	}
	return toks, scores, types
}

// weights returns the tensors of m, filled with a fixed pattern.
func hostileTensors(t *testing.T, m families.Model) []gguf.WriterTensor {
	var ts []gguf.WriterTensor
	for i, spec := range familytest.Tensors(t, m) {
		n := int(spec.Shape.Size())
		data := make([]byte, 4*n)
		for j := range n {
			v := float32(0.05 * math.Sin(float64(i*131+j)))
			if spec.Role == "norm" {
				v = 1
			}
			binary.LittleEndian.PutUint32(data[4*j:], math.Float32bits(v))
		}
		ts = append(ts, gguf.WriterTensor{Name: spec.Name, DType: poot.F32, Shape: spec.Shape.Clone(), Data: data})
	}
	return ts
}

// ggufCase is one hostile GGUF: metadata and tensor edits, then byte edits.
type ggufCase struct {
	kvs     func([]gguf.KV) []gguf.KV
	tensors func([]gguf.WriterTensor) []gguf.WriterTensor
	bytes   func([]byte) []byte
}

func setKV(key string, v gguf.Value) func([]gguf.KV) []gguf.KV {
	return func(kvs []gguf.KV) []gguf.KV {
		for i := range kvs {
			if kvs[i].Key == key {
				kvs[i].Value = v
				return kvs
			}
		}
		return append(kvs, gguf.KV{Key: key, Value: v})
	}
}

func dropKV(key string) func([]gguf.KV) []gguf.KV {
	return func(kvs []gguf.KV) []gguf.KV {
		return slices.DeleteFunc(kvs, func(kv gguf.KV) bool { return kv.Key == key })
	}
}

func vocabKVs(n int) func([]gguf.KV) []gguf.KV {
	return func(kvs []gguf.KV) []gguf.KV {
		toks, scores, types := hostileVocab(n)
		kvs = setKV(tokenizer.KeyTokens, gguf.ArrayOf(toks))(kvs)
		kvs = setKV(tokenizer.KeyScores, gguf.ArrayOf(scores))(kvs)
		return setKV(tokenizer.KeyTokenType, gguf.ArrayOf(types))(kvs)
	}
}

func dropTensor(name string) func([]gguf.WriterTensor) []gguf.WriterTensor {
	return func(ts []gguf.WriterTensor) []gguf.WriterTensor {
		return slices.DeleteFunc(ts, func(t gguf.WriterTensor) bool { return t.Name == name })
	}
}

func editTensor(name string, edit func(*gguf.WriterTensor)) func([]gguf.WriterTensor) []gguf.WriterTensor {
	return func(ts []gguf.WriterTensor) []gguf.WriterTensor {
		for i := range ts {
			if ts[i].Name == name {
				ts[i].Data = slices.Clone(ts[i].Data)
				edit(&ts[i])
			}
		}
		return ts
	}
}

// tensorInfo returns the offset of the named tensor's n_dims field.
func tensorInfo(b []byte, name string) int {
	var key []byte
	key = binary.LittleEndian.AppendUint64(key, uint64(len(name)))
	key = append(key, name...)
	return bytes.Index(b, key) + len(key)
}

func putU64(off int, v uint64) func([]byte) []byte {
	return func(b []byte) []byte { binary.LittleEndian.PutUint64(b[off:], v); return b }
}

// ggufCases are the hostile GGUF files by file name.
var ggufCases = map[string]ggufCase{
	"valid.gguf":          {},
	"layers-1e6.gguf":     {kvs: setKV("llama.block_count", gguf.ValueOf(uint32(1_000_000)))},
	"layers-4e9.gguf":     {kvs: setKV("llama.block_count", gguf.ValueOf(uint32(4_000_000_000)))},
	"layers-3.gguf":       {kvs: setKV("llama.block_count", gguf.ValueOf(uint32(3)))},
	"width-2e9.gguf":      {kvs: setKV("llama.embedding_length", gguf.ValueOf(uint32(2_000_000_000)))},
	"ffn-2e9.gguf":        {kvs: setKV("llama.feed_forward_length", gguf.ValueOf(uint32(2_000_000_000)))},
	"heads-0.gguf":        {kvs: setKV("llama.attention.head_count", gguf.ValueOf(uint32(0)))},
	"heads-3.gguf":        {kvs: setKV("llama.attention.head_count", gguf.ValueOf(uint32(3)))},
	"kv-heads-0.gguf":     {kvs: setKV("llama.attention.head_count_kv", gguf.ValueOf(uint32(0)))},
	"kv-heads-array.gguf": {kvs: setKV("llama.attention.head_count_kv", gguf.ArrayOf([]uint32{1, 1, 1}))},
	"head-dim-2e9.gguf":   {kvs: setKV("llama.attention.key_length", gguf.ValueOf(uint32(2_000_000_000)))},
	"experts-1e9.gguf":    {kvs: setKV("llama.expert_count", gguf.ValueOf(uint32(1_000_000_000)))},
	"experts-8.gguf": {kvs: func(k []gguf.KV) []gguf.KV {
		k = setKV("llama.expert_count", gguf.ValueOf(uint32(8)))(k)
		return setKV("llama.expert_used_count", gguf.ValueOf(uint32(2)))(k)
	}},
	"rope-dims-odd.gguf":   {kvs: setKV("llama.rope.dimension_count", gguf.ValueOf(uint32(3)))},
	"eps-negative.gguf":    {kvs: setKV("llama.attention.layer_norm_rms_epsilon", gguf.ValueOf(float32(-1)))},
	"vocab-size-key.gguf":  {kvs: setKV("llama.vocab_size", gguf.ValueOf(uint32(1<<30)))},
	"arch-unknown.gguf":    {kvs: setKV(gguf.KeyArchitecture, gguf.ValueOf("nonesuch"))},
	"arch-missing.gguf":    {kvs: dropKV(gguf.KeyArchitecture)},
	"arch-number.gguf":     {kvs: setKV(gguf.KeyArchitecture, gguf.ValueOf(uint32(7)))},
	"vocab-3-tokens.gguf":  {kvs: vocabKVs(3)},
	"vocab-17-tokens.gguf": {kvs: vocabKVs(17)},
	"no-tokenizer.gguf":    {kvs: func(k []gguf.KV) []gguf.KV { return dropKV(tokenizer.KeyTokens)(k) }},
	"no-token-embd.gguf":   {tensors: dropTensor("token_embd.weight")},
	"no-attn-q.gguf":       {tensors: dropTensor("blk.1.attn_q.weight")},
	"embd-rows-0.gguf":     {tensors: editTensor("token_embd.weight", func(t *gguf.WriterTensor) { t.Shape = poot.Shape{0, 8}; t.Data = nil })},
	"attn-q-shape.gguf":    {tensors: editTensor("blk.0.attn_q.weight", func(t *gguf.WriterTensor) { t.Shape = poot.Shape{4, 16} })},
	"attn-q-unknown-type.gguf": {tensors: editTensor("blk.0.attn_q.weight", func(t *gguf.WriterTensor) {
		t.DType, t.GGMLType, t.Shape, t.Data = poot.Invalid, gguf.GGMLTypeI8, poot.Shape{8, 8}, t.Data[:64]
	})},
	"nan-weights.gguf": {tensors: editTensor("blk.0.ffn_up.weight", func(t *gguf.WriterTensor) {
		binary.LittleEndian.PutUint32(t.Data[12:], math.Float32bits(float32(math.NaN())))
	})},
	"q8-inf-scale.gguf": {tensors: func(ts []gguf.WriterTensor) []gguf.WriterTensor {
		// An extra packed tensor (the model's rows are too short for
		// q8_0 blocks) whose second block's scale is +Inf.
		data := make([]byte, 2*34)
		binary.LittleEndian.PutUint16(data[34:], 0x7c00)
		return append(ts, gguf.WriterTensor{Name: "extra.q8_0", DType: poot.Q8_0, Shape: poot.Shape{2, 32}, Data: data})
	}},
	"truncated-data.gguf":    {bytes: func(b []byte) []byte { return b[:len(b)-100] }},
	"truncated-header.gguf":  {bytes: func(b []byte) []byte { return b[:40] }},
	"magic-only.gguf":        {bytes: func(b []byte) []byte { return b[:4] }},
	"version-1.gguf":         {bytes: func(b []byte) []byte { b[4] = 1; return b }},
	"big-endian.gguf":        {bytes: func(b []byte) []byte { copy(b[4:8], []byte{0, 0, 0, 3}); return b }},
	"tensor-count-huge.gguf": {bytes: putU64(8, 1<<62)},
	"kv-count-huge.gguf":     {bytes: putU64(16, math.MaxUint64)},
	"key-length-huge.gguf":   {bytes: putU64(24, 1<<62)},
	"dims-overflow.gguf": {bytes: func(b []byte) []byte {
		off := tensorInfo(b, "blk.0.attn_q.weight")
		binary.LittleEndian.PutUint64(b[off+4:], 1<<32)
		binary.LittleEndian.PutUint64(b[off+12:], 1<<32)
		return b
	}},
	"offset-huge.gguf": {bytes: func(b []byte) []byte {
		off := tensorInfo(b, "blk.0.attn_q.weight")
		binary.LittleEndian.PutUint64(b[off+4+16+4:], 1<<63)
		return b
	}},
	"offset-overlap.gguf": {bytes: func(b []byte) []byte {
		off := tensorInfo(b, "blk.0.attn_q.weight")
		binary.LittleEndian.PutUint64(b[off+4+16+4:], 0)
		return b
	}},
	"type-unknown.gguf": {bytes: func(b []byte) []byte {
		off := tensorInfo(b, "blk.0.attn_q.weight")
		binary.LittleEndian.PutUint32(b[off+4+16:], 9999)
		return b
	}},
	"duplicate-tensor.gguf": {bytes: func(b []byte) []byte {
		return bytes.Replace(b, []byte("blk.0.attn_k.weight"), []byte("blk.0.attn_q.weight"), 1)
	}},
	"duplicate-key.gguf": {bytes: func(b []byte) []byte {
		// Two keys of one length: the second becomes a copy of the first.
		return bytes.Replace(b, []byte("llama.rope.freq_base"), []byte("llama.context_length"), 1)
	}},
	"alignment-3.gguf": {kvs: setKV(gguf.KeyAlignment, gguf.ValueOf(uint32(3))), bytes: func(b []byte) []byte { return b }},
}

// writeGGUFCase writes one case; the alignment case is patched after
// writing, since the writer refuses it.
func writeGGUFCase(t *testing.T, path string, c ggufCase) {
	t.Helper()
	m, err := llama.FromHF(hostileConfig())
	if err != nil {
		t.Fatal(err)
	}
	d := m.(*families.Decoder)
	d.GGUF.Architecture = "llama"
	kvs, err := d.GGUFMetadata()
	if err != nil {
		t.Fatal(err)
	}
	kvs = append(kvs, gguf.KV{Key: tokenizer.KeyModel, Value: gguf.ValueOf("llama")})
	kvs = vocabKVs(16)(kvs)
	ts := hostileTensors(t, m)
	align := false
	if c.kvs != nil {
		kvs = c.kvs(kvs)
		if i := slices.IndexFunc(kvs, func(kv gguf.KV) bool { return kv.Key == gguf.KeyAlignment }); i >= 0 {
			kvs[i].Value = gguf.ValueOf(uint32(64))
			align = true
		}
	}
	if c.tensors != nil {
		ts = c.tensors(ts)
	}
	var buf bytes.Buffer
	if err := gguf.Write(&buf, kvs, ts, 0); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b := buf.Bytes()
	if align {
		// general.alignment = 64 written, then changed to 3.
		i := bytes.Index(b, []byte(gguf.KeyAlignment)) + len(gguf.KeyAlignment) + 4
		binary.LittleEndian.PutUint32(b[i:], 3)
	}
	if c.bytes != nil {
		b = c.bytes(b)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// stCase is one hostile safetensors directory: config edits, tensor
// edits, then edits of the files by name.
type stCase struct {
	config  func(map[string]any)
	tensors func([]safetensors.WriterTensor) []safetensors.WriterTensor
	files   func(map[string][]byte)
}

func setCfg(key string, v any) func(map[string]any) { return func(c map[string]any) { c[key] = v } }

func setFile(name, content string) func(map[string][]byte) {
	return func(f map[string][]byte) { f[name] = []byte(content) }
}

// stHeader replaces model.safetensors with a header and data.
func stHeader(header string, data int) func(map[string][]byte) {
	return func(f map[string][]byte) {
		b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
		b = append(b, header...)
		f[safetensors.SingleFile] = append(b, make([]byte, data)...)
	}
}

var stCases = map[string]stCase{
	"st-valid":        {},
	"st-layers-1e6":   {config: setCfg("num_hidden_layers", 1_000_000)},
	"st-layers-100":   {config: setCfg("num_hidden_layers", 100)},
	"st-layers-float": {config: setCfg("num_hidden_layers", 2.5)},
	"st-width-2e9":    {config: setCfg("hidden_size", 2_000_000_000)},
	"st-vocab-1e9":    {config: setCfg("vocab_size", 1_000_000_000)},
	"st-vocab-0":      {config: setCfg("vocab_size", 0)},
	"st-heads-0":      {config: setCfg("num_attention_heads", 0)},
	"st-heads-3":      {config: func(c map[string]any) { c["num_attention_heads"] = 3; delete(c, "head_dim") }},
	"st-experts-1e9": {config: func(c map[string]any) {
		c["model_type"], c["architectures"], c["num_local_experts"], c["num_experts_per_tok"] = "mixtral", []any{"MixtralForCausalLM"}, 1_000_000_000, 2
	}},
	"st-config-array":     {files: setFile(safetensors.ConfigFile, "[1, 2, 3]")},
	"st-config-garbage":   {files: setFile(safetensors.ConfigFile, "{\"hidden_size\": ")},
	"st-config-deep":      {files: setFile(safetensors.ConfigFile, string(bytes.Repeat([]byte("["), 100000)))},
	"st-header-huge":      {files: func(f map[string][]byte) { binary.LittleEndian.PutUint64(f[safetensors.SingleFile], 1<<62) }},
	"st-header-garbage":   {files: stHeader("{\"a\": {\"dtype\": ", 0)},
	"st-offsets-past":     {files: stHeader(`{"model.embed_tokens.weight":{"dtype":"F32","shape":[16,8],"data_offsets":[0,512]}}`, 100)},
	"st-shape-overflow":   {files: stHeader(`{"model.embed_tokens.weight":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,0]}}`, 0)},
	"st-shape-negative":   {files: stHeader(`{"model.embed_tokens.weight":{"dtype":"F32","shape":[-16,8],"data_offsets":[0,512]}}`, 512)},
	"st-dtype-unknown":    {files: stHeader(`{"model.embed_tokens.weight":{"dtype":"F99","shape":[16,8],"data_offsets":[0,512]}}`, 512)},
	"st-duplicate-tensor": {files: stHeader(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8)},
	"st-overlap":          {files: stHeader(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, 12)},
	"st-empty-weights":    {files: setFile(safetensors.SingleFile, "")},
	"st-no-weights":       {files: func(f map[string][]byte) { delete(f, safetensors.SingleFile) }},
	"st-index-escape": {files: func(f map[string][]byte) {
		delete(f, safetensors.SingleFile)
		f[safetensors.IndexFile] = []byte(`{"weight_map":{"model.embed_tokens.weight":"../../../etc/passwd"}}`)
	}},
	"st-index-missing-tensor": {files: func(f map[string][]byte) {
		f["model-00001-of-00001.safetensors"] = f[safetensors.SingleFile]
		delete(f, safetensors.SingleFile)
		f[safetensors.IndexFile] = []byte(`{"weight_map":{"model.embed_tokens.weight":"model-00001-of-00001.safetensors","nonesuch":"model-00001-of-00001.safetensors"}}`)
	}},
	"st-no-embedding": {tensors: func(ts []safetensors.WriterTensor) []safetensors.WriterTensor {
		return slices.DeleteFunc(ts, func(t safetensors.WriterTensor) bool { return t.Name == "model.embed_tokens.weight" })
	}},
	"st-tokenizer-huge-id": {files: setFile(safetensors.TokenizerFile, `{"model":{"type":"BPE","vocab":{"a":2000000},"merges":[]}}`)},
	"st-tokenizer-3":       {files: setFile(safetensors.TokenizerFile, `{"model":{"type":"BPE","vocab":{"<unk>":0,"<s>":1,"</s>":2},"merges":[]}}`)},
	"st-tokenizer-garbage": {files: setFile(safetensors.TokenizerFile, `{"model":`)},
}

// writeSTCase writes one safetensors directory case.
func writeSTCase(t *testing.T, dir string, c stCase) {
	t.Helper()
	m, err := llama.FromHF(hostileConfig())
	if err != nil {
		t.Fatal(err)
	}
	w := m.Weights()
	var ts []safetensors.WriterTensor
	for _, gt := range hostileTensors(t, m) {
		name, ok := w.Stored(gt.Name)
		if !ok {
			t.Fatalf("no stored name for %s", gt.Name)
		}
		ts = append(ts, safetensors.WriterTensor{Name: name, DType: safetensors.F32, Shape: gt.Shape, Data: gt.Data})
	}
	if c.tensors != nil {
		ts = c.tensors(ts)
	}
	cfg := hostileConfig()
	if c.config != nil {
		c.config(cfg)
	}
	js, _ := json.Marshal(cfg)
	var weights bytes.Buffer
	if err := safetensors.Write(&weights, ts, nil); err != nil {
		t.Fatal(err)
	}
	toks, _, _ := hostileVocab(16)
	vocab := map[string]int{}
	for i, s := range toks {
		vocab[s] = i
	}
	tj, _ := json.Marshal(map[string]any{
		"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": []any{}, "unk_token": "<unk>"},
		"normalizer": map[string]any{"type": "Sequence", "normalizers": []any{
			map[string]any{"type": "Prepend", "prepend": "▁"},
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"}}},
	})
	files := map[string][]byte{safetensors.ConfigFile: js, safetensors.SingleFile: weights.Bytes(), safetensors.TokenizerFile: tj}
	if c.files != nil {
		c.files(files)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// writeHostileCorpus writes every case under dir.
func writeHostileCorpus(t *testing.T, dir string) {
	for name, c := range ggufCases {
		writeGGUFCase(t, filepath.Join(dir, name), c)
	}
	for name, c := range stCases {
		writeSTCase(t, filepath.Join(dir, name), c)
	}
}

// TestHostileCorpus checks that testdata/hostile is what the generator
// writes (and rewrites it with -update-hostile).
func TestHostileCorpus(t *testing.T) {
	if *updateHostile {
		os.RemoveAll(hostileDir)
		os.MkdirAll(hostileDir, 0o755)
		writeHostileCorpus(t, hostileDir)
		return
	}
	fresh := t.TempDir()
	writeHostileCorpus(t, fresh)
	err := filepath.WalkDir(fresh, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(fresh, path)
		want, _ := os.ReadFile(path)
		got, err := os.ReadFile(filepath.Join(hostileDir, rel))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s differs from the generator's output (go test ./cli -run TestHostileCorpus -update-hostile)", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
