package checkpoint

import (
	"fmt"
	"sync"
)

// Pin keeps s's mapping alive for a caller that uses tensor bytes in place after s is
// closed (a device buffer that is a weight's mapped bytes, tensor.FromHost): the
// mapping is released when s is closed and every pin's release has been called. The
// release may be called from any goroutine; calling it more than once is a no-op.
// In-memory and read-range files need no pin (their bytes are copies).
func (s *Safetensors) Pin() (release func()) {
	s.pins.Add(1)
	var once sync.Once
	return func() { once.Do(func() { _ = s.unpin() }) }
}

// unpin drops one reference, the file's own (Close) or a pin's; the last one releases
// the mapping or the descriptor.
func (s *Safetensors) unpin() error {
	if s.pins.Add(-1) >= 0 || s.release == nil {
		return nil
	}
	if err := s.release(); err != nil {
		return fmt.Errorf("safetensors %s: close: %w", s.file, err)
	}
	return nil
}

// Mapped returns the named tensor's bytes for use in place after the checkpoint is
// closed, and the release that ends that use: the file's mapping is pinned (Pin). For
// a file read range by range the bytes are a private copy and release is nil.
func (c *Checkpoint) Mapped(name string) ([]byte, TensorInfo, func(), error) {
	st, ok := c.where[name]
	if !ok {
		return nil, TensorInfo{}, nil, &CheckpointError{Path: c.Dir, Tensor: name, Reason: "not in any weight file", Err: ErrTensorNotFound}
	}
	b, info, err := st.Bytes(name)
	if err != nil || st.ra != nil {
		return b, info, nil, err
	}
	return b, info, st.Pin(), nil
}

// Mapping is the whole mapping of the file that holds the named tensor: page-aligned,
// the bytes Mapped returns lie within it, and it lives as long as they do (while their
// pin is held). A device wraps it once per file to bind each tensor in place (Metal's
// no-copy buffer, graph.HostMapper). It is nil for a file read range by range, an
// in-memory one, or an unknown name.
func (c *Checkpoint) Mapping(name string) []byte {
	if st, ok := c.where[name]; ok && !st.closed {
		return st.mapping
	}
	return nil
}
