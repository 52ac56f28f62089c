package safetensors_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kvcfg/kvcfg/format/safetensors"
)

// rawFile builds a file from a literal JSON header and n data bytes.
func rawFile(header string, n int) []byte {
	var b bytes.Buffer
	_ = binary.Write(&b, binary.LittleEndian, uint64(len(header)))
	b.WriteString(header)
	b.Write(make([]byte, n))
	return b.Bytes()
}

func TestReadHeader(t *testing.T) {
	var buf bytes.Buffer
	err := safetensors.Write(&buf, []safetensors.TensorData{
		{Name: "w", DType: "BF16", Shape: []int64{2, 3}, Data: make([]byte, 12)},
		{Name: "a", DType: "F32", Shape: []int64{}, Data: make([]byte, 4)},
		{Name: "q", DType: "F4", Shape: []int64{4}, Data: make([]byte, 2)},
	}, map[string]string{"format": "pt"})
	if err != nil {
		t.Fatal(err)
	}
	h, err := safetensors.ReadHeader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	want := &safetensors.Header{
		Tensors: []safetensors.TensorInfo{
			{Name: "a", DType: "F32", Shape: []int64{}, Begin: 12, End: 16},
			{Name: "q", DType: "F4", Shape: []int64{4}, Begin: 16, End: 18},
			{Name: "w", DType: "BF16", Shape: []int64{2, 3}, Begin: 0, End: 12},
		},
		Metadata:   map[string]string{"format": "pt"},
		DataOffset: int64(buf.Len() - 18),
	}
	if diff := cmp.Diff(want, h); diff != "" {
		t.Errorf("ReadHeader mismatch (-want +got):\n%s", diff)
	}
	if h.DataOffset%8 != 0 {
		t.Errorf("DataOffset %d not padded to 8", h.DataOffset)
	}
	if got := h.Tensors[2].Bytes(); got != 12 {
		t.Errorf("Bytes() = %d", got)
	}
}

func TestReadHeaderErrors(t *testing.T) {
	huge := make([]byte, 8)
	binary.LittleEndian.PutUint64(huge, 200<<20)
	tests := []struct {
		name string
		file []byte
		want error
	}{
		{"empty", nil, safetensors.ErrHeader},
		{"short length", []byte{1, 2, 3}, safetensors.ErrHeader},
		{"huge length", huge, safetensors.ErrHeader},
		{"truncated header", rawFile(`{"a":{}}`, 0)[:10], safetensors.ErrHeader},
		{"not json", rawFile(`{nope}   `, 0), safetensors.ErrHeader},
		{"array", rawFile(`[1,2]`, 0), safetensors.ErrHeader},
		{"unknown dtype", rawFile(`{"a":{"dtype":"F12","shape":[1],"data_offsets":[0,2]}}`, 2), safetensors.ErrDType},
		{"size lie", rawFile(`{"a":{"dtype":"BF16","shape":[4],"data_offsets":[0,6]}}`, 6), safetensors.ErrHeader},
		{"overlap", rawFile(`{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}}`, 6), safetensors.ErrHeader},
		{"reversed", rawFile(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[4,2]}}`, 4), safetensors.ErrHeader},
		{"negative dim", rawFile(`{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}}`, 0), safetensors.ErrHeader},
		{"overflow", rawFile(`{"a":{"dtype":"F64","shape":[4611686018427387904,4],"data_offsets":[0,0]}}`, 0), safetensors.ErrHeader},
		{"missing field", rawFile(`{"a":{"dtype":"U8","shape":[1]}}`, 1), safetensors.ErrHeader},
		{"extra field", rawFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":1}}`, 1), safetensors.ErrHeader},
		{"bad metadata", rawFile(`{"__metadata__":{"a":1}}`, 0), safetensors.ErrHeader},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := safetensors.ReadHeader(bytes.NewReader(tc.file))
			if !errors.Is(err, tc.want) {
				t.Errorf("error = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	data := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	if err := safetensors.Write(&buf, []safetensors.TensorData{{Name: "k", DType: "F16", Shape: []int64{2, 2}, Data: data}}, nil); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.safetensors")
	if err := os.WriteFile(good, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Open(good)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ti, b, err := f.ReadTensor("k")
	if err != nil || !bytes.Equal(b, data) || ti.Elements() != 4 {
		t.Errorf("ReadTensor = %v, %v, %v", ti, b, err)
	}
	if _, _, err := f.ReadTensor("v"); !errors.Is(err, safetensors.ErrNotFound) {
		t.Errorf("missing tensor error = %v", err)
	}
	for name, content := range map[string][]byte{
		"truncated": buf.Bytes()[:buf.Len()-1],
		"trailing":  append(append([]byte(nil), buf.Bytes()...), 0),
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, content, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := safetensors.Open(p); !errors.Is(err, safetensors.ErrData) {
			t.Errorf("%s: error = %v, want ErrData", name, err)
		}
	}
}

func TestDTypeBits(t *testing.T) {
	for s, want := range map[string]int{"BF16": 16, "F32": 32, "F8_E4M3": 8, "I8": 8, "F4": 4, "I64": 64} {
		if got, err := safetensors.DTypeBits(s); err != nil || got != want {
			t.Errorf("DTypeBits(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	if _, err := safetensors.DTypeBits("bf16"); !errors.Is(err, safetensors.ErrDType) {
		t.Errorf("lower-case dtype error = %v", err)
	}
}

func FuzzReadHeader(f *testing.F) {
	var buf bytes.Buffer
	_ = safetensors.Write(&buf, []safetensors.TensorData{
		{Name: "w", DType: "BF16", Shape: []int64{2, 3}, Data: make([]byte, 12)},
		{Name: "b", DType: "F32", Shape: []int64{1}, Data: make([]byte, 4)},
	}, map[string]string{"format": "pt"})
	f.Add(buf.Bytes())
	f.Add(rawFile(`{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}}`, 6))
	f.Add(rawFile(`{"__metadata__":{"a":"b"}}`, 0))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := safetensors.ReadHeader(bytes.NewReader(data))
		if err != nil {
			return
		}
		// invariants of an accepted header
		for i, ti := range h.Tensors {
			if i > 0 && h.Tensors[i-1].Name >= ti.Name {
				t.Fatalf("tensors not sorted by name")
			}
			bitsPer, err := safetensors.DTypeBits(ti.DType)
			if err != nil {
				t.Fatal(err)
			}
			if ti.Begin < 0 || ti.End < ti.Begin || ti.Elements()*int64(bitsPer) != 8*ti.Bytes() {
				t.Fatalf("accepted inconsistent tensor %+v", ti)
			}
		}
		if h.DataOffset < 10 || h.DataOffset > int64(len(data)) {
			t.Fatalf("DataOffset %d outside file of %d bytes", h.DataOffset, len(data))
		}
	})
}
