//go:build linux || darwin

package mmap

import (
	"fmt"
	"math"
	"runtime"
	"sync"
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

// copyChunk is how many bytes one worker of Resident copies at a time.
var copyChunk = 64 << 20

// Resident moves a mapped file's bytes into private anonymous memory,
// advised for transparent huge pages (see HugePages), and drops the file's
// mapping. Streaming weights from 2 MiB pages instead of the page cache's
// 4 KiB ones spares the TLB misses and lets the hardware prefetchers run on
// past every 4 KiB boundary. The copy is read-only afterwards, as the
// mapping was. Slices from Bytes taken before must not be used after.
// A Map of heap bytes, an empty or a closed one is left as it is. A fault
// while copying (the file truncated meanwhile) is a *FaultError, and the
// Map is then unchanged.
func (m *Map) Resident() error {
	if m.closed || m.unmap == nil || len(m.data) == 0 {
		return nil
	}
	buf, err := Anonymous(len(m.data))
	if err != nil {
		return err
	}
	if err := copyGuarded(buf, m.data); err != nil {
		syscall.Munmap(buf)
		return err
	}
	if err := syscall.Mprotect(buf, syscall.PROT_READ); err != nil {
		syscall.Munmap(buf)
		return fmt.Errorf("mmap: making the resident copy read-only: %w", err)
	}
	old := m.data
	m.data = buf
	return syscall.Munmap(old)
}

// Anonymous returns n zeroed bytes of private memory outside Go's heap,
// advised for transparent huge pages, to be released with Free.
func Anonymous(n int) ([]byte, error) {
	buf, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil, fmt.Errorf("mmap: %d bytes of anonymous memory: %w", n, err)
	}
	adviseHuge(buf)
	return buf, nil
}

// Free releases memory from Anonymous.
func Free(b []byte) error { return syscall.Munmap(b) }

// copyGuarded copies src into dst, of the same length, by chunks on one
// goroutine per processor, each under its own Guard.
func copyGuarded(dst, src []byte) error {
	var next int
	var mu sync.Mutex
	var wg sync.WaitGroup
	var first error
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			err := Guard("copying a mapped file into memory", func() error {
				for {
					mu.Lock()
					lo := next
					next += copyChunk
					stop := first != nil
					mu.Unlock()
					if stop || lo >= len(src) {
						return nil
					}
					hi := min(len(src), lo+copyChunk)
					copy(dst[lo:hi], src[lo:hi])
				}
			})
			if err != nil {
				mu.Lock()
				first = err
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}
