package safetensors

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pootlabs/poot/internal/atomicfile"
	"github.com/pootlabs/poot/internal/mmap"
)

// The file names of a Hugging Face model directory.
const (
	ConfigFile           = "config.json"
	SingleFile           = "model.safetensors"
	IndexFile            = "model.safetensors.index.json"
	TokenizerFile        = "tokenizer.json"
	TokenizerConfigFile  = "tokenizer_config.json"
	GenerationConfigFile = "generation_config.json"
)

// Caps on the side files of a model directory, which are read whole and
// decoded: a link to /dev/zero, or a file of gigabytes, is refused before it
// is read. The largest published tokenizer.json files are tens of megabytes;
// config files are kilobytes, and an index lists each tensor once.
const (
	MaxConfigSize    = 16 << 20  // config.json, generation_config.json, tokenizer_config.json
	MaxIndexSize     = 64 << 20  // model.safetensors.index.json
	MaxTokenizerSize = 256 << 20 // tokenizer.json
)

// Dir is a Hugging Face model directory: config.json, the weights in one
// model.safetensors or in shards listed by model.safetensors.index.json, and
// optionally tokenizer.json and generation_config.json. Tensors are looked up
// by name across all shards.
type Dir struct {
	path      string
	config    []byte
	configMap map[string]any
	tokenizer []byte
	tokConfig []byte
	genConfig []byte
	shards    []*File
	names     []string       // shard file names, parallel to shards
	where     map[string]int // tensor name -> shard index
	order     []TensorInfo   // all tensors, shard by shard
}

type indexJSON struct {
	WeightMap map[string]string `json:"weight_map"`
}

// OpenDir opens the model directory at dir. It prefers model.safetensors and
// falls back to the index; a tensor name present in two shards, or listed in
// the index but absent from its shard, is an error. Every file it reads must
// be a regular file (a link to one is fine) and the side files are read
// with the caps above: anything else is an *mmap.FileError naming the file.
func OpenDir(dir string) (*Dir, error) {
	d := &Dir{path: dir, where: map[string]int{}}
	var err error
	if d.config, err = mmap.ReadFile(filepath.Join(dir, ConfigFile), MaxConfigSize); err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	if err := json.Unmarshal(d.config, &d.configMap); err != nil || d.configMap == nil {
		return nil, fmt.Errorf("safetensors: %s: not a JSON object: %v", filepath.Join(dir, ConfigFile), oneLine(err))
	}
	if d.tokenizer, err = readOptional(filepath.Join(dir, TokenizerFile), MaxTokenizerSize); err != nil {
		return nil, err
	}
	if d.tokConfig, err = readOptional(filepath.Join(dir, TokenizerConfigFile), MaxConfigSize); err != nil {
		return nil, err
	}
	if d.genConfig, err = readOptional(filepath.Join(dir, GenerationConfigFile), MaxConfigSize); err != nil {
		return nil, err
	}

	shardNames, weightMap, err := findShards(dir)
	if err != nil {
		return nil, err
	}
	for _, name := range shardNames {
		f, err := Open(filepath.Join(dir, name))
		if err != nil {
			d.Close()
			return nil, err
		}
		i := len(d.shards)
		d.shards = append(d.shards, f)
		d.names = append(d.names, name)
		for _, t := range f.tensors {
			if j, dup := d.where[t.Name]; dup {
				d.Close()
				return nil, fmt.Errorf("safetensors: %s: tensor %q is in both %s and %s", dir, t.Name, d.names[j], name)
			}
			d.where[t.Name] = i
			d.order = append(d.order, t)
		}
	}
	for _, tensor := range slices.Sorted(maps.Keys(weightMap)) {
		shard := weightMap[tensor]
		i, ok := d.where[tensor]
		if !ok || d.names[i] != shard {
			d.Close()
			return nil, fmt.Errorf("safetensors: %s: %s lists tensor %q in %s, which does not hold it", dir, IndexFile, tensor, shard)
		}
	}
	return d, nil
}

// findShards returns the weight files of dir in a stable order, and the
// index's weight map when there is one.
func findShards(dir string) ([]string, map[string]string, error) {
	if _, err := os.Stat(filepath.Join(dir, SingleFile)); err == nil {
		return []string{SingleFile}, nil, nil
	}
	raw, err := mmap.ReadFile(filepath.Join(dir, IndexFile), MaxIndexSize)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("safetensors: %s has neither %s nor %s", dir, SingleFile, IndexFile)
		}
		return nil, nil, fmt.Errorf("safetensors: %w", err)
	}
	var idx indexJSON
	if err := json.Unmarshal(raw, &idx); err != nil {
		return nil, nil, fmt.Errorf("safetensors: %s: %w", filepath.Join(dir, IndexFile), err)
	}
	if len(idx.WeightMap) == 0 {
		return nil, nil, fmt.Errorf("safetensors: %s: empty weight_map", filepath.Join(dir, IndexFile))
	}
	seen := map[string]bool{}
	var names []string
	for _, shard := range idx.WeightMap {
		// Shards must be plain names inside dir: the index is untrusted.
		if shard == "" || shard != filepath.Base(shard) || shard == "." || shard == ".." || strings.ContainsAny(shard, `/\`) {
			return nil, nil, fmt.Errorf("safetensors: %s: shard name %q is not a plain file name", filepath.Join(dir, IndexFile), shard)
		}
		if !seen[shard] {
			seen[shard] = true
			names = append(names, shard)
		}
	}
	slices.Sort(names)
	return names, idx.WeightMap, nil
}

// oneLine gives a JSON error's text, or "empty" for the null that decodes
// to a nil map without an error.
func oneLine(err error) string {
	if err == nil {
		return "null"
	}
	return err.Error()
}

func readOptional(path string, limit int64) ([]byte, error) {
	b, err := mmap.ReadFile(path, limit)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	return b, nil
}

// Path is the directory the Dir was opened from.
func (d *Dir) Path() string { return d.path }

// ConfigJSON returns config.json as read.
func (d *Dir) ConfigJSON() []byte { return d.config }

// Config returns config.json decoded (numbers as float64). The map is shared
// with the Dir and must not be modified.
func (d *Dir) Config() map[string]any { return d.configMap }

// TokenizerJSON returns tokenizer.json, or nil when the directory has none.
func (d *Dir) TokenizerJSON() []byte { return d.tokenizer }

// TokenizerConfigJSON returns tokenizer_config.json, or nil when the
// directory has none.
func (d *Dir) TokenizerConfigJSON() []byte { return d.tokConfig }

// GenerationConfigJSON returns generation_config.json, or nil when absent.
func (d *Dir) GenerationConfigJSON() []byte { return d.genConfig }

// Shards returns the weight files' names, in the order they were opened.
func (d *Dir) Shards() []string { return slices.Clone(d.names) }

// NumTensors is the number of tensors across all shards.
func (d *Dir) NumTensors() int { return len(d.order) }

// Tensors returns every tensor, shard by shard in header order.
func (d *Dir) Tensors() []TensorInfo { return slices.Clone(d.order) }

// Tensor returns the description of the named tensor.
func (d *Dir) Tensor(name string) (TensorInfo, bool) {
	i, ok := d.where[name]
	if !ok {
		return TensorInfo{}, false
	}
	return d.shards[i].Tensor(name)
}

// TensorData returns the named tensor's bytes as a view into its shard's
// map; see File.TensorData.
func (d *Dir) TensorData(name string) ([]byte, error) {
	i, ok := d.where[name]
	if !ok {
		return nil, &TensorError{Name: name, Err: ErrTensorNotFound}
	}
	return d.shards[i].TensorData(name)
}

// RawTensorData returns the named tensor's bytes whatever its dtype.
func (d *Dir) RawTensorData(name string) ([]byte, error) {
	i, ok := d.where[name]
	if !ok {
		return nil, &TensorError{Name: name, Err: ErrTensorNotFound}
	}
	return d.shards[i].RawTensorData(name)
}

// Close releases every shard's map.
func (d *Dir) Close() error {
	var errs []error
	for _, f := range d.shards {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

// Resident makes every shard resident (see File.Resident).
func (d *Dir) Resident() error {
	for _, f := range d.shards {
		if err := f.Resident(); err != nil {
			return err
		}
	}
	return nil
}

// Size is the weight files' total length in bytes.
func (d *Dir) Size() int64 {
	var n int64
	for _, f := range d.shards {
		n += int64(f.m.Len())
	}
	return n
}

// DirContents is a model directory to write: config.json (which must be a
// JSON object), the tensors, and further files by name (tokenizer.json,
// tokenizer_config.json). The tensors go in one model.safetensors when they
// fit in ShardSize bytes (or ShardSize <= 0), otherwise in shards named
// model-00001-of-0000N.safetensors of at most ShardSize bytes of data each (a
// larger tensor gets a shard of its own) plus model.safetensors.index.json.
type DirContents struct {
	Config    []byte
	Tensors   []WriterTensor
	ShardSize int64
	Files     map[string][]byte
	// Replace allows replacing a directory that exists at the path;
	// without it that is an error wrapping atomicfile.ErrExists.
	Replace bool
}

// Write writes the directory at dir atomically: it is built beside dir
// under a temporary name and renamed into place once complete, so dir never
// holds a partial checkpoint, and a reader with the old files mapped keeps
// them intact.
func (c DirContents) Write(dir string) error {
	var probe map[string]any
	if err := json.Unmarshal(c.Config, &probe); err != nil || probe == nil {
		return fmt.Errorf("safetensors: write: config is not a JSON object: %v", oneLine(err))
	}
	for name := range c.Files {
		if name != filepath.Base(name) || name == ConfigFile || name == SingleFile || name == IndexFile {
			return fmt.Errorf("safetensors: write: extra file name %q is not a plain name or is reserved", name)
		}
	}
	mode := atomicfile.NoReplace
	if c.Replace {
		mode = atomicfile.Replace
	}
	err := atomicfile.WriteDir(dir, mode, func(tmp string) error {
		if err := writeTensorsDir(tmp, c.Config, c.Tensors, c.ShardSize); err != nil {
			return err
		}
		for _, name := range slices.Sorted(maps.Keys(c.Files)) {
			if err := os.WriteFile(filepath.Join(tmp, name), c.Files[name], 0o644); err != nil {
				return fmt.Errorf("safetensors: write: %w", err)
			}
		}
		return nil
	})
	var ee *atomicfile.ExistsError
	if err != nil && !errors.As(err, &ee) && !strings.HasPrefix(err.Error(), "safetensors:") {
		return fmt.Errorf("safetensors: write: %w", err)
	}
	return err
}

// WriteDir writes a model directory of config.json and the tensors,
// replacing what is at dir; see DirContents.
func WriteDir(dir string, config []byte, tensors []WriterTensor, shardSize int64) error {
	return DirContents{Config: config, Tensors: tensors, ShardSize: shardSize, Replace: true}.Write(dir)
}

// writeTensorsDir writes config.json and the weight files into the
// existing directory dir.
func writeTensorsDir(dir string, config []byte, tensors []WriterTensor, shardSize int64) error {
	sizes := make([]int64, len(tensors))
	seen := make(map[string]bool, len(tensors))
	var total int64
	for i, t := range tensors {
		if seen[t.Name] {
			return fmt.Errorf("safetensors: write: duplicate tensor name %q", t.Name)
		}
		seen[t.Name] = true
		var err error
		if sizes[i], err = t.size(); err != nil {
			return err
		}
		total += sizes[i]
	}
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), config, 0o644); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	md := map[string]string{"format": "pt"}
	if shardSize <= 0 || total <= shardSize {
		return writeFile(filepath.Join(dir, SingleFile), tensors, md)
	}

	var groups [][]WriterTensor
	var cur []WriterTensor
	var curSize int64
	for i, t := range tensors {
		if len(cur) > 0 && curSize+sizes[i] > shardSize {
			groups = append(groups, cur)
			cur, curSize = nil, 0
		}
		cur = append(cur, t)
		curSize += sizes[i]
	}
	groups = append(groups, cur)

	weightMap := map[string]string{}
	for g, group := range groups {
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", g+1, len(groups))
		if err := writeFile(filepath.Join(dir, name), group, md); err != nil {
			return err
		}
		for _, t := range group {
			weightMap[t.Name] = name
		}
	}
	index, err := json.MarshalIndent(map[string]any{
		"metadata":   map[string]any{"total_size": total},
		"weight_map": weightMap,
	}, "", "  ")
	if err != nil {
		return fmt.Errorf("safetensors: write: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, IndexFile), append(index, '\n'), 0o644)
}
