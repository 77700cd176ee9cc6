package load

import (
	"fmt"

	"github.com/pootlabs/poot/internal/mmap"
)

// Residency says where a checkpoint's tensor bytes are read from.
type Residency int

const (
	// Auto is Copied for files of at least AutoMinBytes that take at most
	// half the memory available, on a system with transparent huge pages
	// (Linux, with their mode "always" or "madvise"); Mapped otherwise.
	Auto Residency = iota
	// Mapped reads tensors from the files' memory maps: nothing is
	// copied, the page cache is shared with other processes, and a file
	// truncated while in use surfaces as ErrFault.
	Mapped
	// Copied copies the files into private memory advised for huge pages
	// when they are opened (half a second or so per 2 GiB from the page
	// cache) and drops the maps. Decode streams the weights from 2 MiB
	// pages instead of 4 KiB ones: measured on an AMD EPYC (Zen 5, two
	// threads), an F16 Llama-3.2-1B decodes 16 tokens/s mapped and 21–24
	// copied. Where huge pages are off the copy still happens, without
	// the gain.
	Copied
)

// AutoMinBytes is the smallest checkpoint Auto copies: below it a copy
// buys nothing measurable.
const AutoMinBytes = 64 << 20

// UnmarshalText reads "auto", "mmap" or "copy" (for flag.TextVar and
// encoding/json).
func (r *Residency) UnmarshalText(text []byte) error {
	for i, name := range residencyNames {
		if string(text) == name {
			*r = Residency(i)
			return nil
		}
	}
	return fmt.Errorf("load: residency %q: want auto, mmap or copy", text)
}

// MarshalText writes the name UnmarshalText reads.
func (r Residency) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

var residencyNames = [...]string{Auto: "auto", Mapped: "mmap", Copied: "copy"}

// String is the name UnmarshalText reads.
func (r Residency) String() string {
	if r < 0 || int(r) >= len(residencyNames) {
		return fmt.Sprintf("Residency(%d)", int(r))
	}
	return residencyNames[r]
}

// Resident reports whether the checkpoint's bytes were copied into memory
// (Copied, or Auto's choice), not read from memory maps.
func (c *Checkpoint) Resident() bool { return c.resident }

// hold applies r to an opened checkpoint.
func (c *Checkpoint) hold(r Residency) error {
	switch r {
	case Mapped:
		return nil
	case Auto:
		avail, ok := mmap.HugePages()
		if size := c.size(); !ok || size < AutoMinBytes || size > avail/2 {
			return nil
		}
	case Copied:
	default:
		return fmt.Errorf("load: %s: unknown residency %d", c.path, int(r))
	}
	var err error
	if c.gf != nil {
		err = c.gf.Resident()
	} else {
		err = c.st.Resident()
	}
	c.resident = err == nil
	return err
}

// size is the bytes of the checkpoint's weight files.
func (c *Checkpoint) size() int64 {
	if c.gf != nil {
		return c.gf.Size()
	}
	return c.st.Size()
}
