package checkpoint

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync/atomic"
	"unicode/utf8"

	"github.com/ingotml/ingot/kernels"
	"github.com/x448/float16"
)

// MaxHeaderSize caps the JSON header of a safetensors file at the reference
// implementation's limit (100 MB). Real checkpoints use a few MiB at most; the cap
// keeps a hostile length prefix from driving a huge allocation.
const MaxHeaderSize = 100_000_000

// metadataKey is the reserved header entry holding free-form string metadata.
const metadataKey = "__metadata__"

// DType is a safetensors element type name as written in the header ("F32", "BF16", ...).
type DType string

// Element types known to the reader. F32, F16, BF16, I32 and I64 can be
// converted by Float32 / Int64; the others are only sized, so files holding
// them still parse and validate.
const (
	F64    DType = "F64"
	F32    DType = "F32"
	F16    DType = "F16"
	BF16   DType = "BF16"
	F8E4M3 DType = "F8_E4M3"
	F8E5M2 DType = "F8_E5M2"
	I64    DType = "I64"
	I32    DType = "I32"
	I16    DType = "I16"
	I8     DType = "I8"
	U64    DType = "U64"
	U32    DType = "U32"
	U16    DType = "U16"
	U8     DType = "U8"
	Bool   DType = "BOOL"
)

var dtypeSizes = map[DType]int{
	F64: 8, F32: 4, F16: 2, BF16: 2, F8E4M3: 1, F8E5M2: 1,
	I64: 8, I32: 4, I16: 2, I8: 1,
	U64: 8, U32: 4, U16: 2, U8: 1, Bool: 1,
}

// Size returns the size of one element in bytes, or 0 for an unknown dtype.
func (d DType) Size() int { return dtypeSizes[d] }

// TensorInfo describes one tensor of a safetensors file. Begin and End are
// byte offsets relative to the start of the data section.
type TensorInfo struct {
	Name  string
	DType DType
	Shape []int
	Begin int64
	End   int64
}

// NumElements returns the product of the shape (1 for a scalar).
func (t TensorInfo) NumElements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// FormatError reports a malformed safetensors file. Tensor is empty when the
// problem is not tied to one tensor (length prefix, JSON syntax, metadata).
type FormatError struct {
	File   string
	Tensor string
	Reason string
}

// Error formats the error as "safetensors <file>: tensor <name>: <reason>", with
// anything unprintable escaped (see Printable): names come from the file.
func (e *FormatError) Error() string {
	if e.Tensor == "" {
		return Printable(fmt.Sprintf("safetensors %s: %s", e.File, e.Reason))
	}
	return Printable(fmt.Sprintf("safetensors %s: tensor %s: %s", e.File, e.Tensor, e.Reason))
}

// ErrTensorNotFound is returned (wrapped with the file and tensor name) when a
// requested tensor is not in the file.
var ErrTensorNotFound = errors.New("tensor not found")

// ErrDTypeMismatch is returned (wrapped) when a tensor's dtype cannot be
// converted to the requested element type, e.g. Float32 on an I64 tensor.
var ErrDTypeMismatch = errors.New("dtype not convertible")

// ErrClosed is returned (wrapped with the file and tensor name) by reads after Close.
var ErrClosed = errors.New("file closed")

// Safetensors is a parsed safetensors file. ReadSafetensors memory-maps the file
// (or, where mapping is unavailable, reads each tensor's byte range on request), so
// opening a checkpoint costs its header, not its size. It is read-only and safe for
// concurrent use; Close must not race with reads.
type Safetensors struct {
	file    string
	tensors map[string]TensorInfo
	names   []string
	meta    map[string]string
	data    []byte      // the data section, in memory or mapped; TensorInfo offsets index into it
	mapping []byte      // the whole file's mapping (page-aligned), nil unless mapped
	ra      io.ReaderAt // fallback when data is nil: the open file, data section at dataOff
	dataOff int64
	release func() error // unmaps or closes; nil for in-memory files
	closed  bool
	pins    atomic.Int64 // open pins (Pin): the mapping outlives Close until they end
}

// ReadSafetensors opens and validates the safetensors file at path. Only the
// length prefix and the header are read; tensor bytes are reached through a
// memory mapping (or read range by range) when asked for, so a file's size, or
// bytes no tensor uses, cost no memory. Call Close to release the file.
func ReadSafetensors(path string) (*Safetensors, error) {
	f, st, err := OpenRegular(path)
	var nr *NotRegularError
	switch {
	case errors.As(err, &nr):
		return nil, &FormatError{File: path, Reason: nr.Error()}
	case err != nil:
		return nil, fmt.Errorf("safetensors %s: %w", path, err)
	}
	s, err := readSafetensors(path, f, st.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

// readSafetensors parses the open regular file f of size bytes; on success f belongs
// to the result.
func readSafetensors(path string, f *os.File, size int64) (*Safetensors, error) {
	var prefix [8]byte
	if _, err := f.ReadAt(prefix[:], 0); err != nil {
		return nil, &FormatError{File: path, Reason: fmt.Sprintf("file too short for the 8-byte header length (%d bytes)", size)}
	}
	n, err := checkHeaderLen(path, binary.LittleEndian.Uint64(prefix[:]), size)
	if err != nil {
		return nil, err
	}
	header := make([]byte, n)
	if _, err := f.ReadAt(header, 8); err != nil {
		return nil, fmt.Errorf("safetensors %s: reading header: %w", path, err)
	}
	s, err := parseHeader(path, header, size-8-n)
	if err != nil {
		return nil, err
	}
	if m, unmap, err := mmapFile(f, size); err == nil {
		f.Close()                   // the mapping outlives the descriptor
		forget := register(path, m) // so that CatchFault can name the file
		s.data, s.mapping, s.release = m[8+n:], m, func() error { forget(); return unmap() }
	} else {
		s.ra, s.dataOff, s.release = f, 8+n, f.Close
	}
	return s, nil
}

// mmapFile is mapFile, replaceable by tests of the read-ranges fallback.
var mmapFile = mapFile

// Close releases the file (its mapping or descriptor). Slices returned by Bytes
// must not be used afterwards; later reads return ErrClosed. Closing twice is a no-op.
func (s *Safetensors) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.data, s.ra = nil, nil
	return s.unpin()
}

// ParseSafetensors parses a whole safetensors file held in data; name is used
// in error messages. The result refers to data, which must not be modified
// afterwards.
func ParseSafetensors(name string, data []byte) (*Safetensors, error) {
	if len(data) < 8 {
		return nil, &FormatError{File: name, Reason: fmt.Sprintf("file too short for the 8-byte header length (%d bytes)", len(data))}
	}
	n, err := checkHeaderLen(name, binary.LittleEndian.Uint64(data), int64(len(data)))
	if err != nil {
		return nil, err
	}
	s, err := parseHeader(name, data[8:8+n], int64(len(data))-8-n)
	if err != nil {
		return nil, err
	}
	s.data = data[8+n:]
	return s, nil
}

// checkHeaderLen validates the length prefix against the cap and the file size.
func checkHeaderLen(file string, n uint64, fileSize int64) (int64, error) {
	if n > MaxHeaderSize {
		return 0, &FormatError{File: file, Reason: fmt.Sprintf("header length %d exceeds the %d-byte limit", n, MaxHeaderSize)}
	}
	if int64(n) > fileSize-8 {
		return 0, &FormatError{File: file, Reason: fmt.Sprintf("header length %d exceeds the %d bytes after the length prefix (truncated file?)", n, fileSize-8)}
	}
	return int64(n), nil
}

// MaxRank bounds the number of dimensions of a tensor, so a header cannot
// make the parser allocate a shape many times larger than itself.
const MaxRank = 64

// rawEntry mirrors one header entry. Shape and offsets stay raw so that
// intList can bound their length before allocating.
type rawEntry struct {
	DType       json.RawMessage `json:"dtype"`
	Shape       json.RawMessage `json:"shape"`
	DataOffsets json.RawMessage `json:"data_offsets"`
}

// parseHeader decodes and validates the JSON header against a data section of dataLen bytes.
func parseHeader(file string, header []byte, dataLen int64) (*Safetensors, error) {
	fail := func(tensor, format string, args ...any) error {
		return &FormatError{File: file, Tensor: tensor, Reason: fmt.Sprintf(format, args...)}
	}
	// The reference reads the header as a UTF-8 string that starts with '{': invalid
	// UTF-8 (which encoding/json would silently turn into U+FFFD, renaming a tensor)
	// and leading whitespace are errors there, so they are here.
	if !utf8.Valid(header) {
		return nil, fail("", "header is not valid UTF-8 (at byte %d)", invalidUTF8At(header))
	}
	if at := loneSurrogateAt(header); at >= 0 {
		return nil, fail("", "header is not valid UTF-8 (the \\u escape at byte %d is half a surrogate pair)", at)
	}
	if len(header) > 0 && header[0] != '{' {
		return nil, fail("", "header is not a JSON object")
	}
	// A valid header (every real one) is split by a scanner that trusts its syntax; only
	// an invalid one goes through encoding/json's tokenizer, which words the error. The
	// tokenizer alone took ~9 s and 3 GB of garbage for a million-tensor header.
	var members memberReader
	if json.Valid(header) {
		members = &validMembers{header: header, pos: 1}
	} else {
		dec := json.NewDecoder(bytes.NewReader(header))
		tok, err := dec.Token()
		if err != nil {
			return nil, fail("", "header is not valid JSON: %s", jsonReason(err))
		}
		if d, ok := tok.(json.Delim); !ok || d != '{' {
			return nil, fail("", "header is not a JSON object")
		}
		members = &tokenMembers{file: file, header: header, dec: dec}
	}
	// Size the map once: growing it by rehashing cost a second for a million tensors.
	// The hint never exceeds the entries the header has room for (each takes 48 bytes).
	hint := min(bytes.Count(header, []byte(`"data_offsets"`)), len(header)/48)
	s := &Safetensors{file: file, tensors: make(map[string]TensorInfo, hint), names: make([]string, 0, hint), meta: map[string]string{}}
	seenMeta := false
	for {
		name, raw, ok, err := members.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if name == metadataKey {
			if seenMeta {
				return nil, fail("", "duplicate %s entry", metadataKey)
			}
			seenMeta = true
			if err := s.parseMetadata(raw); err != nil {
				return nil, err
			}
			continue
		}
		if _, dup := s.tensors[name]; dup {
			return nil, fail(name, "duplicate tensor name")
		}
		info, err := parseEntry(name, raw, dataLen)
		if err != nil {
			return nil, fail(name, "%s", err.Error())
		}
		s.tensors[name] = info
		s.names = append(s.names, name)
	}
	sort.Strings(s.names)
	if err := s.checkLayout(dataLen); err != nil {
		return nil, err
	}
	return s, nil
}

// jsonReason words a decoder error; the decoder reports a cut-off header as a bare "EOF".
func jsonReason(err error) string {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "header ends early"
	}
	return err.Error()
}

// parseMetadata stores the __metadata__ object, which must map strings to strings.
func (s *Safetensors) parseMetadata(raw json.RawMessage) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return &FormatError{File: s.file, Reason: metadataKey + " is not a JSON object"}
	}
	for k, v := range m {
		var str string
		if err := json.Unmarshal(v, &str); err != nil || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			return &FormatError{File: s.file, Reason: fmt.Sprintf("%s value for key %q is not a string", metadataKey, k)}
		}
		s.meta[k] = str
	}
	return nil
}

// parseEntry validates one tensor entry; errors carry only the reason, the
// caller adds file and tensor name.
func parseEntry(name string, raw json.RawMessage, dataLen int64) (TensorInfo, error) {
	dtName, dims, offs, ok := scanEntry(raw)
	if !ok {
		var err error
		if dtName, dims, offs, err = decodeEntry(raw); err != nil {
			return TensorInfo{}, err
		}
	}
	return checkEntry(name, dtName, dims, offs, dataLen)
}

// decodeEntry reads an entry with encoding/json, wording what is wrong with it.
func decodeEntry(raw json.RawMessage) (dtName string, dims, offs []int64, err error) {
	var e rawEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		return "", nil, nil, fmt.Errorf("entry is not a JSON object of dtype/shape/data_offsets")
	}
	switch {
	case isNull(e.DType):
		return "", nil, nil, errors.New("missing dtype")
	case isNull(e.Shape):
		return "", nil, nil, errors.New("missing shape")
	case isNull(e.DataOffsets):
		return "", nil, nil, errors.New("missing data_offsets")
	case json.Unmarshal(e.DType, &dtName) != nil:
		return "", nil, nil, errors.New("dtype is not a string")
	}
	if dims, err = intList("shape", e.Shape, MaxRank); err != nil {
		return "", nil, nil, err
	}
	if offs, err = intList("data_offsets", e.DataOffsets, 2); err != nil {
		return "", nil, nil, err
	}
	return dtName, dims, offs, nil
}

// checkEntry validates a decoded entry against the data section.
func checkEntry(name, dtName string, dims, offs []int64, dataLen int64) (TensorInfo, error) {
	dt := DType(dtName)
	size := dt.Size()
	if size == 0 {
		return TensorInfo{}, fmt.Errorf("unknown dtype %q", dtName)
	}
	// The element count must fit in an int64 and so must the byte count.
	count := uint64(1)
	shape := make([]int, len(dims))
	for i, d := range dims {
		if d < 0 {
			return TensorInfo{}, fmt.Errorf("negative dimension %d in shape %v", d, dims)
		}
		if uint64(d) > math.MaxInt { // only where int is 32 bits
			return TensorInfo{}, fmt.Errorf("dimension %d too large in shape %v", d, dims)
		}
		hi, lo := bits.Mul64(count, uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			return TensorInfo{}, fmt.Errorf("shape %v overflows the element count", dims)
		}
		count = lo
		shape[i] = int(d)
	}
	hi, nbytes := bits.Mul64(count, uint64(size))
	if hi != 0 || nbytes > math.MaxInt64 {
		return TensorInfo{}, fmt.Errorf("shape %v overflows the byte count", dims)
	}
	if len(offs) != 2 {
		return TensorInfo{}, fmt.Errorf("data_offsets has %d values, want 2", len(offs))
	}
	begin, end := offs[0], offs[1]
	switch {
	case begin < 0:
		return TensorInfo{}, fmt.Errorf("negative begin offset %d", begin)
	case end < begin:
		return TensorInfo{}, fmt.Errorf("end offset %d before begin offset %d", end, begin)
	case end > dataLen:
		return TensorInfo{}, fmt.Errorf("data_offsets [%d, %d] outside the %d-byte data section", begin, end, dataLen)
	case uint64(end-begin) != nbytes:
		return TensorInfo{}, fmt.Errorf("data_offsets span %d bytes, but %s shape %v needs %d", end-begin, dt, dims, nbytes)
	}
	return TensorInfo{Name: name, DType: dt, Shape: shape, Begin: begin, End: end}, nil
}

func isNull(raw json.RawMessage) bool {
	return raw == nil || bytes.Equal(raw, []byte("null"))
}

// intList decodes a JSON array of at most limit 64-bit integers.
func intList(field string, raw json.RawMessage, limit int) ([]int64, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, fmt.Errorf("%s is not an array of integers", field)
	}
	var out []int64
	for dec.More() {
		if len(out) == limit {
			return nil, fmt.Errorf("%s has more than %d values", field, limit)
		}
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%s is not an array of integers", field)
		}
		n, ok := tok.(json.Number)
		if !ok {
			return nil, fmt.Errorf("%s is not an array of integers", field)
		}
		v, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s value %s is not a 64-bit integer", field, n)
		}
		out = append(out, v)
	}
	return out, nil
}

// File returns the file name given to ReadSafetensors or ParseSafetensors.
func (s *Safetensors) File() string { return s.file }

// Names returns the tensor names in sorted order (excluding __metadata__).
func (s *Safetensors) Names() []string {
	return append([]string(nil), s.names...)
}

// Info returns the description of the named tensor.
func (s *Safetensors) Info(name string) (TensorInfo, bool) {
	t, ok := s.tensors[name]
	if ok {
		t.Shape = slices.Clone(t.Shape)
	}
	return t, ok
}

// Metadata returns a copy of the header's __metadata__ map (empty if absent).
func (s *Safetensors) Metadata() map[string]string {
	m := make(map[string]string, len(s.meta))
	for k, v := range s.meta {
		m[k] = v
	}
	return m
}

// Bytes returns the raw little-endian bytes of the named tensor. From a mapped or
// in-memory file the slice aliases the file's data and must not be modified (nor
// used after Close); otherwise the tensor's byte range is read into a new slice.
func (s *Safetensors) Bytes(name string) ([]byte, TensorInfo, error) {
	t, ok := s.Info(name)
	switch {
	case !ok:
		return nil, TensorInfo{}, fmt.Errorf("safetensors %s: tensor %s: %w", s.file, name, ErrTensorNotFound)
	case s.closed:
		return nil, TensorInfo{}, fmt.Errorf("safetensors %s: tensor %s: %w", s.file, name, ErrClosed)
	case s.ra != nil:
		b := make([]byte, t.End-t.Begin)
		if _, err := s.ra.ReadAt(b, s.dataOff+t.Begin); err != nil {
			return nil, TensorInfo{}, fmt.Errorf("safetensors %s: tensor %s: %w", s.file, name, err)
		}
		return b, t, nil
	}
	return s.data[t.Begin:t.End:t.End], t, nil
}

// Float32 returns the named tensor converted to float32, with its shape.
// F32, F16 and BF16 tensors are supported; other dtypes give ErrDTypeMismatch.
func (s *Safetensors) Float32(name string) ([]float32, []int, error) {
	b, t, err := s.Bytes(name)
	if err != nil {
		return nil, nil, err
	}
	n := t.NumElements()
	out := make([]float32, n)
	switch t.DType {
	case F32, F16, BF16:
	default:
		return nil, nil, s.mismatch(t, "float32")
	}
	err = CatchTensorFault(name, func() error { // b may be a mapping (see CatchFault)
		switch t.DType {
		case F32:
			for i := range out {
				out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
			}
		case F16:
			for i := range out {
				out[i] = float16.Frombits(binary.LittleEndian.Uint16(b[2*i:])).Float32()
			}
		case BF16:
			// bfloat16 is the top half of a float32, so widening is exact.
			for i := range out {
				out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return out, t.Shape, nil
}

// Int64 returns the named tensor converted to int64, with its shape. I32 and
// I64 tensors are supported; other dtypes give ErrDTypeMismatch.
func (s *Safetensors) Int64(name string) ([]int64, []int, error) {
	b, t, err := s.Bytes(name)
	if err != nil {
		return nil, nil, err
	}
	n := t.NumElements()
	out := make([]int64, n)
	switch t.DType {
	case I64, I32:
	default:
		return nil, nil, s.mismatch(t, "int64")
	}
	err = CatchTensorFault(name, func() error { // b may be a mapping (see CatchFault)
		if t.DType == I64 {
			for i := range out {
				out[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
			}
			return nil
		}
		for i := range out {
			out[i] = int64(int32(binary.LittleEndian.Uint32(b[4*i:])))
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return out, t.Shape, nil
}

func (s *Safetensors) mismatch(t TensorInfo, want string) error {
	return fmt.Errorf("safetensors %s: tensor %s: %s to %s: %w", s.file, t.Name, t.DType, want, ErrDTypeMismatch)
}

// EngineDType maps a safetensors float dtype to the engine's; ok is false for the
// others (integers, float64, float8), which no float weight here may use.
func EngineDType(d DType) (dt kernels.DType, ok bool) {
	switch d {
	case F32:
		return kernels.Float32, true
	case F16:
		return kernels.Float16, true
	case BF16:
		return kernels.BFloat16, true
	}
	return 0, false
}
