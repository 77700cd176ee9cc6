//go:build linux || darwin

package mmap

import (
	"fmt"
	"math"
	"syscall"
)

// openFlags keeps opening a FIFO from blocking until a writer appears.
const openFlags = syscall.O_NONBLOCK

// Open maps the whole regular file at path read-only. Anything else (a
// directory, a device such as /dev/zero, a FIFO) is a *FileError wrapping
// ErrNotRegular. A zero-length file gives an empty Map without calling mmap
// (which rejects zero lengths).
func Open(path string) (*Map, error) {
	f, size, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
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
