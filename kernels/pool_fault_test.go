//go:build linux

package kernels_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot/internal/mmap"
	"github.com/pootlabs/poot/kernels"
)

// TestPoolFaultIsGuarded maps a file, truncates it underneath, and reads
// the lost pages from every worker of a pool: the SIGBUS that follows must
// come out of mmap.Guard on the caller as a *mmap.FaultError, whichever
// goroutine touched the page first, instead of killing the process.
func TestPoolFaultIsGuarded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "weights")
	const size = 1 << 20
	if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := mmap.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	data := m.Bytes()
	p := kernels.NewPool(4)
	defer p.Close()
	const page = 4096
	sums := make([]byte, size/page)
	err = mmap.Guard("reading the truncated file", func() error {
		p.Run(size/page, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				sums[i] = data[i*page]
			}
		})
		return nil
	})
	var fe *mmap.FaultError
	if !errors.As(err, &fe) || !errors.Is(err, mmap.ErrFault) {
		t.Fatalf("reading truncated mapped pages through the pool: got %v, want a *mmap.FaultError", err)
	}
}
