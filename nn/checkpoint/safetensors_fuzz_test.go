package checkpoint_test

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/ingotml/ingot/nn/checkpoint"
)

// FuzzParseSafetensors feeds arbitrary bytes to the parser. Any input must
// either parse into a self-consistent file or fail with a *FormatError;
// nothing may panic.
func FuzzParseSafetensors(f *testing.F) {
	f.Add(stBuild(f, map[string]string{"format": "pt"},
		stTensor{"w", checkpoint.F32, []int{2, 2}, stF32(1, 2, 3, 4)},
		stTensor{"h", checkpoint.F16, []int{2}, stU16(0x3C00, 0xC000)},
		stTensor{"b", checkpoint.BF16, []int{1, 2}, stU16(0x3F80, 0x4049)},
		stTensor{"i", checkpoint.I32, []int{1}, stI32(-7)},
		stTensor{"l", checkpoint.I64, []int{}, stI64(1 << 40)},
		stTensor{"e", checkpoint.U8, []int{0}, nil},
	))
	for _, c := range stCorruptions(f) {
		f.Add(c.file)
	}
	// Issue 24: a name with terminal escapes, a million-tensor header's shape in small.
	f.Add(stRaw(`{"\u001b[2J\u001b[32m[verdict] FLAT\u001b[0m\n":{"dtype":"F128","shape":[1],"data_offsets":[0,1]}}`, make([]byte, 1)))
	f.Add(stManyEmpty(50))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := checkpoint.ParseSafetensors("fuzz.st", data)
		if err != nil {
			var fe *checkpoint.FormatError
			if !errors.As(err, &fe) || fe.File != "fuzz.st" {
				t.Fatalf("error is not a FormatError naming the file: %v", err)
			}
			if msg := err.Error(); checkpoint.Printable(msg) != msg {
				t.Fatalf("message holds unprintable characters: %q", msg)
			}
			return
		}
		// The reference's layout: the tensors tile the data section exactly.
		var total int64
		for _, name := range s.Names() {
			info, _ := s.Info(name)
			total += info.End - info.Begin
		}
		if n := int64(binary.LittleEndian.Uint64(data)); total != int64(len(data))-8-n {
			t.Fatalf("tensors cover %d bytes of a %d-byte data section", total, int64(len(data))-8-n)
		}
		for _, name := range s.Names() {
			info, ok := s.Info(name)
			if !ok {
				t.Fatalf("Names lists %q but Info does not find it", name)
			}
			if info.Begin < 0 || info.End < info.Begin || info.End > int64(len(data)) {
				t.Fatalf("tensor %q has offsets [%d, %d] outside a %d-byte file", name, info.Begin, info.End, len(data))
			}
			if int64(info.NumElements())*int64(info.DType.Size()) != info.End-info.Begin {
				t.Fatalf("tensor %q: %d elements of %s do not fill [%d, %d]", name, info.NumElements(), info.DType, info.Begin, info.End)
			}
			checkConversion(t, name, info, func() (int, error) {
				v, _, err := s.Float32(name)
				return len(v), err
			}, checkpoint.F32, checkpoint.F16, checkpoint.BF16)
			checkConversion(t, name, info, func() (int, error) {
				v, _, err := s.Int64(name)
				return len(v), err
			}, checkpoint.I32, checkpoint.I64)
		}
	})
}

// checkConversion asserts a converter succeeds with one value per element for
// the dtypes it supports and reports ErrDTypeMismatch for all others.
func checkConversion(t *testing.T, name string, info checkpoint.TensorInfo, convert func() (int, error), supported ...checkpoint.DType) {
	t.Helper()
	n, err := convert()
	for _, d := range supported {
		if info.DType == d {
			if err != nil || n != info.NumElements() {
				t.Fatalf("tensor %q (%s): got %d values, err %v; want %d values", name, d, n, err, info.NumElements())
			}
			return
		}
	}
	if !errors.Is(err, checkpoint.ErrDTypeMismatch) {
		t.Fatalf("tensor %q (%s): want ErrDTypeMismatch, got %v", name, info.DType, err)
	}
}
