package npy_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kvcfg/kvcfg/format/npy"
)

func file(header string, data []byte) []byte {
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	_ = binary.Write(&b, binary.LittleEndian, uint16(len(header)))
	b.WriteString(header)
	b.Write(data)
	return b.Bytes()
}

func TestRoundTrip(t *testing.T) {
	var b bytes.Buffer
	data := []float32{1, -2, 3.5, 0, 1e-3, 7}
	if err := npy.Write(&b, []int64{2, 3}, data); err != nil {
		t.Fatal(err)
	}
	if (b.Len()-6*4)%64 != 0 {
		t.Errorf("header not aligned to 64: %d", b.Len()-24)
	}
	a, err := npy.Read(bytes.NewReader(b.Bytes()), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := &npy.Array{DType: "<f4", Shape: []int64{2, 3}, Data: data}
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("Read mismatch (-want +got):\n%s", diff)
	}
}

func TestDTypes(t *testing.T) {
	tests := []struct {
		descr string
		data  []byte
		want  []float32
	}{
		{"<f2", []byte{0x00, 0x3c, 0x00, 0xc0}, []float32{1, -2}},
		{"<V2", []byte{0x80, 0x3f, 0x40, 0xc0}, []float32{1, -3}},
		{"<f8", []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0, 0, 0, 0, 0, 0x04, 0xc0}, []float32{1, -2.5}},
	}
	for _, tc := range tests {
		a, err := npy.Read(bytes.NewReader(file("{'descr': '"+tc.descr+"', 'fortran_order': False, 'shape': (2,), }\n", tc.data)), 0)
		if err != nil {
			t.Fatalf("%s: %v", tc.descr, err)
		}
		if diff := cmp.Diff(tc.want, a.Data); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.descr, diff)
		}
	}
}

func TestErrors(t *testing.T) {
	f4 := "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n"
	tests := []struct {
		name string
		file []byte
		want error
	}{
		{"magic", []byte("PK\x03\x04xxxxxxxx"), npy.ErrFormat},
		{"truncated data", file(f4, make([]byte, 7)), npy.ErrFormat},
		{"trailing data", file(f4, make([]byte, 9)), npy.ErrFormat},
		{"header lies", file("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000,), }\n", make([]byte, 8)), npy.ErrFormat},
		{"dtype", file("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }\n", make([]byte, 8)), npy.ErrDType},
		{"big endian", file("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }\n", make([]byte, 8)), npy.ErrDType},
		{"fortran", file("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }\n", make([]byte, 8)), npy.ErrFormat},
		{"huge shape", file("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }\n", nil), npy.ErrTooLarge},
		{"bad dict", file("nope\n", nil), npy.ErrFormat},
		{"missing key", file("{'descr': '<f4', 'shape': (2,), }\n", make([]byte, 8)), npy.ErrFormat},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := npy.Read(bytes.NewReader(tc.file), 1<<20); !errors.Is(err, tc.want) {
				t.Errorf("error = %v, want %v", err, tc.want)
			}
		})
	}
}

func FuzzRead(f *testing.F) {
	var b bytes.Buffer
	_ = npy.Write(&b, []int64{2, 2}, []float32{1, 2, 3, 4})
	f.Add(b.Bytes())
	f.Add(file("{'descr': '<f2', 'fortran_order': False, 'shape': (), }\n", []byte{0, 0x3c}))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := npy.Read(bytes.NewReader(data), 1<<16)
		if err != nil {
			return
		}
		n := int64(1)
		for _, d := range a.Shape {
			n *= d
		}
		if n != int64(len(a.Data)) {
			t.Fatalf("shape %v but %d elements", a.Shape, len(a.Data))
		}
	})
}

// TestReadContextCanceled: a canceled context stops the read before the
// data, with the context's error.
func TestReadContextCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f := file("{'descr': '<f4', 'fortran_order': False, 'shape': (3000000,), }\n", make([]byte, 12_000_000))
	if _, err := npy.ReadContext(ctx, bytes.NewReader(f), 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	if a, err := npy.ReadContext(context.Background(), bytes.NewReader(f), 0); err != nil || len(a.Data) != 3_000_000 {
		t.Fatalf("uncanceled read: %v", err)
	}
}
