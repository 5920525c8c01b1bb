package checkpoint

import (
	"encoding/json"
	"slices"
	"testing"
	"unicode/utf8"
)

// FuzzScanEntry: whatever the fast entry scanner accepts, encoding/json's decoder reads
// the same way, so the scanner changes speed only, never a result or an error.
func FuzzScanEntry(f *testing.F) {
	for _, s := range []string{
		`{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}`,
		`{ "data_offsets" : [ 0 , 24 ] , "shape" : [ 2 , 3 ] , "dtype" : "F32" }`,
		`{"dtype":"F32","shape":[],"data_offsets":[0,4],"extra":{"a":[1,"]"]}}`,
		`{"dtype":"F32","shape":[2],"data_offsets":[0,8],"dtype":"I32"}`,
		`{"DTYPE":"I32","dtype":"F32","shape":[1],"data_offsets":[0,4]}`,
		`{"dtype":"F\u0033\u0032","shape":[1],"data_offsets":[0,4]}`,
		`{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}`,
		`{"dtype":"F32","shape":[1e0],"data_offsets":[0,4]}`,
		`{"dtype":"F32","shape":[-0],"data_offsets":[0,0]}`,
		`{"dtype":"F32","shape":[9223372036854775808],"data_offsets":[0,4]}`,
		`{"dtype":null,"shape":[1],"data_offsets":[0,4]}`,
		`{"dtype":"F32","shape":[1],"data_offsets":[0,4,4]}`,
		`{"dtype":"F32","shape":[1],"data_offsets":null}`,
		`{"dt\u0079pe":"F32","shape":[1],"data_offsets":[0,4]}`,
		`{}`, `[]`, `5`, `"x"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) || !utf8.Valid(raw) {
			return // the scanner only sees members of a header that is valid JSON and UTF-8
		}
		dt, dims, offs, ok := scanEntry(raw)
		if !ok {
			return
		}
		wantDT, wantDims, wantOffs, err := decodeEntry(raw)
		if err != nil {
			t.Fatalf("scanner accepted %s, decoder refuses it: %v", raw, err)
		}
		if dt != wantDT || !slices.Equal(dims, wantDims) || !slices.Equal(offs, wantOffs) {
			t.Fatalf("%s: scanner read %q %v %v, decoder %q %v %v", raw, dt, dims, offs, wantDT, wantDims, wantOffs)
		}
	})
}
