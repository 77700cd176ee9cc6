package cuda

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/lower"
)

//go:embed prelude.cuh
var prelude string

//go:embed host.h
var hostShim string

// ErrNoCompiler: the host harness found no C++ compiler.
var ErrNoCompiler = errors.New("cuda: no C++ compiler for the host harness")

// HostInterpreter runs the CUDA backend's generated kernels on the CPU:
// the same kernel text, compiled by the system C++ compiler against a
// shim header that runs each block's threads as fibers switched at
// barriers. It exists to check the generated kernels without a GPU; it
// is slow.
type HostInterpreter struct {
	// Options switch planner passes off.
	Options lower.Options
	// Compiler is the C++ compiler (default: $CXX, else g++).
	Compiler string
	// CacheDir keeps compiled modules by a hash of their source (default:
	// the user cache directory's poot/cuda-host).
	CacheDir string
	// Gen chooses the kernels as for a device of capability Gen.SM (the
	// zero value: sm_80, tensor-core GEMMs included).
	Gen GenOptions
}

// Name returns "cuda-host".
func (HostInterpreter) Name() string { return "cuda-host" }

// Compile plans g, generates its kernels and compiles them for the host.
func (in HostInterpreter) Compile(g *poot.Graph, consts interp.Consts) (interp.Executable, error) {
	return in.CompileExec(g, consts)
}

// CompileExec is Compile returning the concrete executable.
func (in HostInterpreter) CompileExec(g *poot.Graph, consts interp.Consts) (*Exec, error) {
	cxx := in.Compiler
	if cxx == "" {
		cxx = os.Getenv("CXX")
	}
	if cxx == "" {
		cxx = "g++"
	}
	path, err := exec.LookPath(cxx)
	if err != nil {
		return nil, &UnavailableError{What: ErrNoCompiler, Detail: err.Error()}
	}
	return compile(&hostDevice{cxx: path, cache: in.CacheDir}, g, consts, in.Options, in.Gen)
}

// HostSource is the C++ translation unit of a module for the host: the
// shim, the prelude, the kernels, and a launcher per kernel.
func HostSource(m *Module) string {
	var sb strings.Builder
	sb.WriteString(hostShim)
	sb.WriteString(prelude)
	sb.WriteString(m.Source())
	for _, k := range m.Kernels {
		args := make([]string, len(k.Params))
		for i, t := range k.Params {
			args[i] = fmt.Sprintf("*(%s*)a[%d]", t, i)
		}
		fmt.Fprintf(&sb, "static void pt_body_%s(void** a) { %s(%s); }\n", k.Name, k.Name, strings.Join(args, ", "))
		fmt.Fprintf(&sb, "extern \"C\" int pt_launch_%s(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, void** a) {\n"+
			"  return pt_run(gx, gy, gz, bx, by, bz, pt_body_%s, a);\n}\n", k.Name, k.Name)
	}
	return sb.String()
}

// hostDevice is "device" memory mapped outside the Go heap and kernels
// compiled into a shared library called through purego.
type hostDevice struct {
	cxx, cache string
	lib        uintptr
	borrowed   bool     // lib is shared with other devices (not closed)
	maps       [][]byte // sorted by address
}

func cacheDir(dir, sub string) (string, error) {
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		dir = filepath.Join(base, "poot", sub)
	}
	return dir, os.MkdirAll(dir, 0o755)
}

func (d *hostDevice) load(m *Module) (map[string]uintptr, error) {
	if d.lib == 0 {
		lib, err := d.build(m)
		if err != nil {
			return nil, err
		}
		d.lib = lib
	}
	fns := map[string]uintptr{}
	for _, k := range m.Kernels {
		f, err := purego.Dlsym(d.lib, "pt_launch_"+k.Name)
		if err != nil {
			return nil, fmt.Errorf("cuda: host module lacks %s: %w", k.Name, err)
		}
		fns[k.Name] = f
	}
	return fns, nil
}

// build compiles m into a shared library (or finds it in the cache) and
// opens it.
func (d *hostDevice) build(m *Module) (uintptr, error) {
	so, err := d.library(m)
	if err != nil {
		return 0, err
	}
	lib, err := purego.Dlopen(so, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return 0, fmt.Errorf("cuda: loading the host module: %w", err)
	}
	return lib, nil
}

// library compiles m into a shared library, or finds it in the cache, and
// returns its path.
func (d *hostDevice) library(m *Module) (string, error) {
	src := HostSource(m)
	flags := []string{"-std=c++17", "-O1", "-fPIC", "-shared", "-ffp-contract=off", "-w"}
	h := sha256.Sum256([]byte(src + strings.Join(flags, " ") + d.cxx))
	dir, err := cacheDir(d.cache, "cuda-host")
	if err != nil {
		return "", err
	}
	so := filepath.Join(dir, hex.EncodeToString(h[:12])+".so")
	if _, err := os.Stat(so); err != nil {
		tmp, err := os.MkdirTemp(dir, "build")
		if err != nil {
			return "", err
		}
		defer os.RemoveAll(tmp)
		cpp := filepath.Join(tmp, "module.cpp")
		if err := os.WriteFile(cpp, []byte(src), 0o644); err != nil {
			return "", err
		}
		out := filepath.Join(tmp, "module.so")
		cmd := exec.Command(d.cxx, append(flags, "-o", out, cpp)...)
		if msg, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("cuda: the host compiler failed on the generated kernels: %v\n%s", err, firstLines(string(msg), 40))
		}
		if err := os.Rename(out, so); err != nil {
			return "", err
		}
	}
	return so, nil
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

func (d *hostDevice) alloc(n int64) (uint64, error) {
	b, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return 0, fmt.Errorf("cuda: host allocation of %d bytes: %w", n, err)
	}
	at := func(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }
	i, _ := slices.BinarySearchFunc(d.maps, at(b), func(m []byte, a uint64) int { return compare(at(m), a) })
	d.maps = slices.Insert(d.maps, i, b)
	return at(b), nil
}

func compare(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// mem returns the n bytes at device address a.
func (d *hostDevice) mem(a uint64, n int64) ([]byte, error) {
	for _, m := range d.maps {
		base := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(m))))
		if a >= base && a+uint64(n) <= base+uint64(len(m)) {
			return m[a-base : a-base+uint64(n)], nil
		}
	}
	return nil, fmt.Errorf("cuda: no host allocation holds [%#x, +%d)", a, n)
}

func (d *hostDevice) upload(dst uint64, src []byte) error {
	b, err := d.mem(dst, int64(len(src)))
	if err == nil {
		copy(b, src)
	}
	return err
}

func (d *hostDevice) download(dst []byte, src uint64) error {
	b, err := d.mem(src, int64(len(dst)))
	if err == nil {
		copy(dst, b)
	}
	return err
}

func (d *hostDevice) copyD(dst, src uint64, n int64) error {
	a, err := d.mem(dst, n)
	if err != nil {
		return err
	}
	b, err := d.mem(src, n)
	if err == nil {
		copy(a, b)
	}
	return err
}

// peer: host-harness devices all live in this process's memory.
func (d *hostDevice) peer(o device) bool {
	_, ok := o.(*hostDevice)
	return ok
}

func (d *hostDevice) copyPeer(dst uint64, o device, src uint64, n int64) error {
	a, err := d.mem(dst, n)
	if err != nil {
		return err
	}
	b, err := o.(*hostDevice).mem(src, n)
	if err == nil {
		copy(a, b)
	}
	return err
}

func (d *hostDevice) step(work func() error) error { return work() }

func (d *hostDevice) launch(fn uintptr, l *Launch, params uintptr) error {
	g, b := l.Grid, l.Block
	r, _, _ := purego.SyscallN(fn, uintptr(g[0]), uintptr(g[1]), uintptr(g[2]), uintptr(b[0]), uintptr(b[1]), uintptr(b[2]), params)
	switch int32(r) {
	case 0:
		return nil
	case -1:
		return errors.New("host harness: a block cannot pass a barrier (deadlock)")
	case -3:
		return errors.New("host harness: an mma.sync ran without all 32 lanes of its warp")
	}
	return fmt.Errorf("host harness: launch failed (%d)", int32(r))
}

func (d *hostDevice) close() {
	for _, m := range d.maps {
		syscall.Munmap(m)
	}
	d.maps = nil
	if d.lib != 0 && !d.borrowed {
		purego.Dlclose(d.lib)
		d.lib = 0
	}
}
