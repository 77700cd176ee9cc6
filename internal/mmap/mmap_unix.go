//go:build linux || darwin

package mmap

import (
	"fmt"
	"math"
	"os"
	"syscall"
)

// Open maps the whole file at path read-only. A zero-length file gives an
// empty Map without calling mmap (which rejects zero lengths).
func Open(path string) (*Map, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("mmap: %s: not a regular file", path)
	}
	size := st.Size()
	if size == 0 {
		return &Map{}, nil
	}
	if size < 0 || uint64(size) > math.MaxInt {
		return nil, fmt.Errorf("mmap: %s: size %d does not fit in memory", path, size)
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap: %s: %w", path, err)
	}
	return &Map{data: data, unmap: syscall.Munmap}, nil
}
