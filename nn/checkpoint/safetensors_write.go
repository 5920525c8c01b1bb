package checkpoint

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"sort"
)

// WriteTensor is one tensor to write: raw little-endian bytes of DType and Shape.
type WriteTensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []byte
}

// WriteSafetensors writes tensors (sorted by name, back to back) and meta as a
// safetensors file at path. The header is padded with spaces to a multiple of 8 bytes
// so every tensor starts aligned, as the reference writer does.
func WriteSafetensors(path string, meta map[string]string, tensors []WriteTensor) (err error) {
	sorted := append([]WriteTensor(nil), tensors...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	header := map[string]any{}
	if len(meta) > 0 {
		header[metadataKey] = meta
	}
	off := 0
	for _, t := range sorted {
		n := t.DType.Size()
		for _, d := range t.Shape {
			n *= d
		}
		if t.DType.Size() == 0 || n != len(t.Data) {
			return fmt.Errorf("safetensors %s: tensor %s: %d bytes for %s %v", path, t.Name, len(t.Data), t.DType, t.Shape)
		}
		if _, dup := header[t.Name]; dup {
			return fmt.Errorf("safetensors %s: tensor %s: duplicate name", path, t.Name)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		header[t.Name] = map[string]any{"dtype": t.DType, "shape": shape, "data_offsets": []int{off, off + n}}
		off += n
	}
	h, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("safetensors %s: %w", path, err)
	}
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("safetensors %s: %w", path, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("safetensors %s: %w", path, cerr)
		}
	}()
	w := bufio.NewWriter(f)
	if err := binary.Write(w, binary.LittleEndian, uint64(len(h))); err != nil {
		return fmt.Errorf("safetensors %s: %w", path, err)
	}
	w.Write(h)
	for _, t := range sorted {
		w.Write(t.Data)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("safetensors %s: %w", path, err)
	}
	return nil
}
