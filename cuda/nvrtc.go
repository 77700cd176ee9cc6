package cuda

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/pootlabs/poot/internal/atomicfile"
)

// NVRTC is an open NVRTC library, CUDA's run-time compiler.
type NVRTC struct {
	lib          *lib
	Major, Minor int
}

var nvrtcSyms = []string{
	"nvrtcVersion", "nvrtcGetErrorString", "nvrtcCreateProgram", "nvrtcCompileProgram", "nvrtcDestroyProgram",
	"nvrtcGetProgramLogSize", "nvrtcGetProgramLog", "nvrtcGetCUBINSize", "nvrtcGetCUBIN", "nvrtcGetPTXSize", "nvrtcGetPTX",
}

var (
	nvrtcMu   sync.Mutex
	nvrtcLibs = map[string]*NVRTC{}
)

// OpenNVRTC opens NVRTC (path "": libnvrtc.so, then the sonames of CUDA
// 13, 12 and 11.2+), once per process and path. It returns an
// *UnavailableError wrapping ErrNoNVRTC when none loads.
func OpenNVRTC(path string) (*NVRTC, error) {
	nvrtcMu.Lock()
	defer nvrtcMu.Unlock()
	if n := nvrtcLibs[path]; n != nil {
		return n, nil
	}
	names := []string{"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"}
	if path != "" {
		names = []string{path}
	}
	l, err := openLib(names, nvrtcSyms, ErrNoNVRTC)
	if err != nil {
		return nil, err
	}
	n := &NVRTC{lib: l}
	var major, minor int32
	if r := l.call("nvrtcVersion", uintptr(unsafe.Pointer(&major)), uintptr(unsafe.Pointer(&minor))); r != 0 {
		return nil, &UnavailableError{What: ErrNoNVRTC, Detail: fmt.Sprintf("nvrtcVersion fails (%d)", r)}
	}
	n.Major, n.Minor = int(major), int(minor)
	nvrtcLibs[path] = n
	return n, nil
}

// CompileError is CUDA C that NVRTC rejected, with its log.
type CompileError struct {
	Log string
}

// Error shows the start of the log.
func (e *CompileError) Error() string {
	return "cuda: NVRTC rejected the generated kernels:\n" + firstLines(e.Log, 40)
}

func (n *NVRTC) check(call string, r int32) error {
	if r == 0 {
		return nil
	}
	s, _, _ := purego.SyscallN(n.lib.fn["nvrtcGetErrorString"], uintptr(r))
	return &DriverError{Call: call, Code: int(r), Message: goString(s)}
}

// Compile compiles CUDA C with options (such as
// --gpu-architecture=sm_90) and returns the CUBIN when the architecture is
// a real one, else the PTX (NUL-terminated).
func (n *NVRTC) Compile(src string, opts []string) ([]byte, error) {
	var prog uintptr
	if err := n.check("nvrtcCreateProgram", n.lib.call("nvrtcCreateProgram", uintptr(unsafe.Pointer(&prog)),
		uintptr(unsafe.Pointer(cString(src))), uintptr(unsafe.Pointer(cString("poot.cu"))), 0, 0, 0)); err != nil {
		return nil, err
	}
	defer n.lib.call("nvrtcDestroyProgram", uintptr(unsafe.Pointer(&prog)))
	// The option array holds Go pointers, pinned for the call.
	var pin runtime.Pinner
	defer pin.Unpin()
	ptrs := make([]*byte, len(opts)+1)
	for i, o := range opts {
		ptrs[i] = cString(o)
		pin.Pin(ptrs[i])
	}
	r := n.lib.call("nvrtcCompileProgram", prog, uintptr(len(opts)), uintptr(unsafe.Pointer(&ptrs[0])))
	var size uintptr
	n.lib.call("nvrtcGetProgramLogSize", prog, uintptr(unsafe.Pointer(&size)))
	log := make([]byte, size+1)
	n.lib.call("nvrtcGetProgramLog", prog, uintptr(unsafe.Pointer(&log[0])))
	if r != 0 {
		return nil, &CompileError{Log: strings.TrimRight(string(log), "\x00")}
	}
	get, getSize := "nvrtcGetCUBIN", "nvrtcGetCUBINSize"
	if err := n.check(getSize, n.lib.call(getSize, prog, uintptr(unsafe.Pointer(&size)))); err != nil || size == 0 {
		get, getSize = "nvrtcGetPTX", "nvrtcGetPTXSize"
		if err := n.check(getSize, n.lib.call(getSize, prog, uintptr(unsafe.Pointer(&size)))); err != nil {
			return nil, err
		}
	}
	image := make([]byte, size)
	if size > 0 {
		if err := n.check(get, n.lib.call(get, prog, uintptr(unsafe.Pointer(&image[0])))); err != nil {
			return nil, err
		}
	}
	return image, nil
}

// CompileCached is Compile through a cache directory (dir "": the user
// cache directory's poot/cuda), keyed by a hash of the NVRTC version,
// the options and the source.
func (n *NVRTC) CompileCached(src string, opts []string, dir string) ([]byte, error) {
	dir, err := cacheDir(dir, "cuda")
	if err != nil {
		return n.Compile(src, opts)
	}
	h := sha256.Sum256([]byte(fmt.Sprintf("nvrtc %d.%d\n%s\n%s", n.Major, n.Minor, strings.Join(opts, " "), src)))
	path := filepath.Join(dir, hex.EncodeToString(h[:16])+".bin")
	if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
		return b, nil
	}
	image, err := n.Compile(src, opts)
	if err != nil {
		return nil, err
	}
	// A cache that cannot be written only costs a compile next time.
	_ = atomicfile.WriteFile(path, atomicfile.Replace, func(w io.Writer) error { _, err := w.Write(image); return err })
	return image, nil
}
