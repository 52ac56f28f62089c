// Package safetensors reads the header of a .safetensors file (tensor
// names, dtypes, shapes and byte ranges) and, for small tools, the bytes of
// one tensor. It validates everything a header can lie about before anyone
// trusts a size computed from it.
//
// Layout: an 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]},
// "__metadata__": {"k": "v"}}, then the data section; offsets are relative
// to the start of the data section, at byte 8+N.
package safetensors

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
	"sort"
	"strings"

	"github.com/kvcfg/kvcfg/internal/inputfile"
)

// MaxHeaderBytes bounds the JSON header (100 MiB, as the reference reader).
const MaxHeaderBytes = 100 << 20

// Errors reported by the package; every error wraps one of them.
var (
	// ErrHeader reports a malformed, truncated or inconsistent header.
	ErrHeader = errors.New("safetensors: invalid header")
	// ErrDType reports an unknown dtype string.
	ErrDType = errors.New("safetensors: unknown dtype")
	// ErrNotFound reports a tensor name that is not in the file.
	ErrNotFound = errors.New("safetensors: tensor not found")
	// ErrData reports a data section that does not match the header
	// (truncated file, trailing bytes).
	ErrData = errors.New("safetensors: data section does not match header")
)

// TensorInfo describes one tensor of a safetensors file.
type TensorInfo struct {
	// Name is the tensor name.
	Name string `json:"name"`
	// DType is the dtype as written ("BF16", "F16", "F32", "F8_E4M3", ...).
	DType string `json:"dtype"`
	// Shape is the tensor shape; empty for a scalar.
	Shape []int64 `json:"shape"`
	// Begin and End are byte offsets in the data section.
	Begin int64 `json:"begin"`
	End   int64 `json:"end"`
}

// Bytes returns the tensor's size in bytes, End-Begin.
func (t TensorInfo) Bytes() int64 { return t.End - t.Begin }

// Elements returns the number of elements (1 for a scalar).
func (t TensorInfo) Elements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Header is the parsed header of a safetensors file.
type Header struct {
	// Tensors is sorted by name.
	Tensors []TensorInfo `json:"tensors"`
	// Metadata is the optional "__metadata__" string map.
	Metadata map[string]string `json:"metadata,omitempty"`
	// DataOffset is where the data section starts: 8 + header length.
	DataOffset int64 `json:"data_offset"`
}

// DataBytes returns the size the data section must have: the largest End.
func (h *Header) DataBytes() int64 {
	var m int64
	for _, t := range h.Tensors {
		m = max(m, t.End)
	}
	return m
}

// Tensor returns the tensor with the given name.
func (h *Header) Tensor(name string) (TensorInfo, error) {
	i := sort.Search(len(h.Tensors), func(i int) bool { return h.Tensors[i].Name >= name })
	if i < len(h.Tensors) && h.Tensors[i].Name == name {
		return h.Tensors[i], nil
	}
	return TensorInfo{}, fmt.Errorf("%w: %q", ErrNotFound, name)
}

var dtypeBits = map[string]int{
	"BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
	"I16": 16, "U16": 16, "F16": 16, "BF16": 16,
	"I32": 32, "U32": 32, "F32": 32, "C64": 64,
	"I64": 64, "U64": 64, "F64": 64,
	"F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}

// DTypeBits returns the element width in bits of a safetensors dtype string.
func DTypeBits(s string) (int, error) {
	if b, ok := dtypeBits[s]; ok {
		return b, nil
	}
	names := make([]string, 0, len(dtypeBits))
	for n := range dtypeBits {
		names = append(names, n)
	}
	sort.Strings(names)
	return 0, fmt.Errorf("%w %q (accepted: %s)", ErrDType, s, strings.Join(names, ", "))
}

type rawTensor struct {
	DType       *string  `json:"dtype"`
	Shape       *[]int64 `json:"shape"`
	DataOffsets *[]int64 `json:"data_offsets"`
}

// ReadHeader reads and validates the header at the start of r: the length
// bound, the JSON, known dtypes, shape × element size = End − Begin, and
// byte ranges that are in order and do not overlap. It reads exactly
// DataOffset bytes.
func ReadHeader(r io.Reader) (*Header, error) {
	var lb [8]byte
	if _, err := io.ReadFull(r, lb[:]); err != nil {
		return nil, fmt.Errorf("%w: reading length: %w", ErrHeader, err)
	}
	n := binary.LittleEndian.Uint64(lb[:])
	if n > MaxHeaderBytes {
		return nil, fmt.Errorf("%w: header length %d exceeds %d bytes", ErrHeader, n, MaxHeaderBytes)
	}
	if n < 2 {
		return nil, fmt.Errorf("%w: header length %d", ErrHeader, n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("%w: header says %d bytes: %w", ErrHeader, n, err)
	}
	h, err := parseHeader(buf)
	if err != nil {
		return nil, err
	}
	h.DataOffset = 8 + int64(n)
	return h, nil
}

func parseHeader(buf []byte) (*Header, error) {
	// The format allows trailing spaces as padding.
	buf = bytes.TrimRight(buf, " ")
	if len(buf) == 0 || buf[0] != '{' {
		return nil, fmt.Errorf("%w: header is not a JSON object", ErrHeader)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(buf, &raw); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHeader, err)
	}
	h := &Header{}
	var errs []error
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &h.Metadata); err != nil {
				errs = append(errs, fmt.Errorf("%w: __metadata__ must map strings to strings: %w", ErrHeader, err))
			}
			continue
		}
		t, err := parseTensor(name, msg)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		h.Tensors = append(h.Tensors, t)
	}
	if len(errs) > 0 {
		sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
		return nil, errors.Join(errs...)
	}
	// ranges in order and non-overlapping
	byBegin := append([]TensorInfo(nil), h.Tensors...)
	sort.Slice(byBegin, func(i, j int) bool {
		if byBegin[i].Begin != byBegin[j].Begin {
			return byBegin[i].Begin < byBegin[j].Begin
		}
		return byBegin[i].End < byBegin[j].End
	})
	for i := 1; i < len(byBegin); i++ {
		if p, t := byBegin[i-1], byBegin[i]; t.Begin < p.End {
			return nil, fmt.Errorf("%w: tensors %q [%d, %d) and %q [%d, %d) overlap",
				ErrHeader, p.Name, p.Begin, p.End, t.Name, t.Begin, t.End)
		}
	}
	sort.Slice(h.Tensors, func(i, j int) bool { return h.Tensors[i].Name < h.Tensors[j].Name })
	return h, nil
}

func parseTensor(name string, msg json.RawMessage) (TensorInfo, error) {
	var rt rawTensor
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rt); err != nil {
		return TensorInfo{}, fmt.Errorf("%w: tensor %q: %w", ErrHeader, name, err)
	}
	if rt.DType == nil || rt.Shape == nil || rt.DataOffsets == nil {
		return TensorInfo{}, fmt.Errorf("%w: tensor %q needs dtype, shape and data_offsets", ErrHeader, name)
	}
	t := TensorInfo{Name: name, DType: *rt.DType, Shape: *rt.Shape}
	b, err := DTypeBits(t.DType)
	if err != nil {
		return TensorInfo{}, fmt.Errorf("tensor %q: %w", name, err)
	}
	if len(*rt.DataOffsets) != 2 {
		return TensorInfo{}, fmt.Errorf("%w: tensor %q: data_offsets must be [begin, end]", ErrHeader, name)
	}
	t.Begin, t.End = (*rt.DataOffsets)[0], (*rt.DataOffsets)[1]
	if t.Begin < 0 || t.End < t.Begin {
		return TensorInfo{}, fmt.Errorf("%w: tensor %q: data_offsets [%d, %d]", ErrHeader, name, t.Begin, t.End)
	}
	// shape × bits without overflow
	nbits := uint64(b)
	for _, d := range t.Shape {
		if d < 0 {
			return TensorInfo{}, fmt.Errorf("%w: tensor %q: negative dimension in shape %v", ErrHeader, name, t.Shape)
		}
		hi, lo := bits.Mul64(nbits, uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			return TensorInfo{}, fmt.Errorf("%w: tensor %q: shape %v overflows", ErrHeader, name, t.Shape)
		}
		nbits = lo
	}
	if nbits%8 != 0 || int64(nbits/8) != t.Bytes() {
		return TensorInfo{}, fmt.Errorf("%w: tensor %q: %s%v needs %d bits but data_offsets span %d bytes",
			ErrHeader, name, t.DType, t.Shape, nbits, t.Bytes())
	}
	return t, nil
}

// File is an open safetensors file whose header has been validated against
// the file size.
type File struct {
	Header
	f *os.File
}

// Open opens path, a regular file (a named pipe, device or directory is
// refused without being read), reads its header and checks that the data
// section is exactly as long as the header says (no truncation, no
// trailing bytes).
func Open(path string) (*File, error) {
	f, st, err := inputfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	h, err := ReadHeader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if have, want := st.Size()-h.DataOffset, h.DataBytes(); have != want {
		f.Close()
		return nil, fmt.Errorf("%s: %w: header describes %d data bytes, file has %d", path, ErrData, want, have)
	}
	return &File{Header: *h, f: f}, nil
}

// ReadTensor returns the raw little-endian bytes of a tensor.
func (f *File) ReadTensor(name string) (TensorInfo, []byte, error) {
	t, err := f.Tensor(name)
	if err != nil {
		return TensorInfo{}, nil, err
	}
	buf := make([]byte, t.Bytes())
	if _, err := f.f.ReadAt(buf, f.DataOffset+t.Begin); err != nil {
		return TensorInfo{}, nil, fmt.Errorf("%w: tensor %q: %w", ErrData, name, err)
	}
	return t, buf, nil
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// TensorData is a tensor to write: name, dtype, shape and raw
// little-endian bytes.
type TensorData struct {
	Name  string
	DType string
	Shape []int64
	Data  []byte
}

// Write writes a safetensors file holding ts in the given order (useful for
// fixtures and small exports); the header is padded with spaces to a
// multiple of 8 bytes as the reference writer does.
func Write(w io.Writer, ts []TensorData, metadata map[string]string) error {
	hdr := map[string]any{}
	if len(metadata) > 0 {
		hdr["__metadata__"] = metadata
	}
	var off int64
	for _, t := range ts {
		shape := t.Shape
		if shape == nil {
			shape = []int64{}
		}
		hdr[t.Name] = map[string]any{"dtype": t.DType, "shape": shape, "data_offsets": []int64{off, off + int64(len(t.Data))}}
		off += int64(len(t.Data))
	}
	js, err := json.Marshal(hdr)
	if err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	for len(js)%8 != 0 {
		js = append(js, ' ')
	}
	var lb [8]byte
	binary.LittleEndian.PutUint64(lb[:], uint64(len(js)))
	if _, err := w.Write(lb[:]); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	if _, err := w.Write(js); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	for _, t := range ts {
		if _, err := w.Write(t.Data); err != nil {
			return fmt.Errorf("safetensors: %w", err)
		}
	}
	return nil
}

// CheckLayout checks what ReadHeader cannot see without the file: the
// tensors cover the data section with no gap (each begins where the one
// before ends, the first at 0), and, when fileSize is not negative, the
// file is exactly 8 + header length + data bytes long. A header read with
// range requests is checked against the size the server reports.
func (h *Header) CheckLayout(fileSize int64) error {
	byBegin := append([]TensorInfo(nil), h.Tensors...)
	sort.Slice(byBegin, func(i, j int) bool {
		if byBegin[i].Begin != byBegin[j].Begin {
			return byBegin[i].Begin < byBegin[j].Begin
		}
		return byBegin[i].End < byBegin[j].End
	})
	var end int64
	for _, t := range byBegin {
		if t.Begin != end {
			return fmt.Errorf("%w: gap in the data section before tensor %q: bytes [%d, %d) belong to no tensor", ErrHeader, t.Name, end, t.Begin)
		}
		end = t.End
	}
	if fileSize >= 0 && h.DataOffset+end != fileSize {
		return fmt.Errorf("%w: header and tensors take %d bytes, the file has %d", ErrData, h.DataOffset+end, fileSize)
	}
	return nil
}
