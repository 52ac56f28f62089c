// Package npy reads NumPy .npy arrays of little-endian floats (float16,
// float32, float64, and bfloat16 as ml_dtypes writes it) into float32, for
// tools that measure quantization error on real tensors.
//
// Format (NumPy NEP 1): the magic "\x93NUMPY", a major and minor version
// byte, a header length (uint16 for version 1, uint32 for versions 2 and 3),
// then a Python dict literal such as
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces and a newline, then the raw C-order data.
package npy

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// MaxHeaderBytes bounds the dict header.
const MaxHeaderBytes = 1 << 20

// Errors reported by the package; every error wraps one of them.
var (
	// ErrFormat reports a malformed or truncated file.
	ErrFormat = errors.New("npy: invalid file")
	// ErrDType reports an element type the reader does not convert.
	ErrDType = errors.New("npy: unsupported dtype")
)

// Array is a decoded array.
type Array struct {
	// DType is the descr string as written ("<f4", "<f2", "<f8", "<V2"...).
	DType string
	// Shape is the array shape (empty for a scalar).
	Shape []int64
	// Data holds the elements in C order, widened to float32.
	Data []float32
}

// ErrTooLarge reports an array with more elements than the caller's
// bound.
var ErrTooLarge = errors.New("npy: array too large")

// chunkBytes is how much data ReadContext reads and converts between two
// looks at its context.
const chunkBytes = 1 << 20

// Read reads a whole .npy stream. maxElements bounds the array size (0 means
// 1<<31) so that a header cannot make it allocate without bound; the data
// must be exactly as long as the header says.
func Read(r io.Reader, maxElements int64) (*Array, error) {
	return ReadContext(context.Background(), r, maxElements)
}

// ReadContext is Read that stops with ctx's error when ctx is done: it
// reads and converts the data 1 MiB at a time and looks at ctx between
// pieces (a read that blocks is not interrupted; give it a reader that
// returns when ctx is done).
func ReadContext(ctx context.Context, r io.Reader, maxElements int64) (*Array, error) {
	if maxElements <= 0 {
		maxElements = 1 << 31
	}
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return nil, fmt.Errorf("%w: reading magic: %w", ErrFormat, err)
	}
	if string(pre[:6]) != "\x93NUMPY" {
		return nil, fmt.Errorf("%w: bad magic %q", ErrFormat, pre[:6])
	}
	var hlen uint32
	switch pre[6] {
	case 1:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrFormat, err)
		}
		hlen = uint32(binary.LittleEndian.Uint16(b[:]))
	case 2, 3:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrFormat, err)
		}
		hlen = binary.LittleEndian.Uint32(b[:])
	default:
		return nil, fmt.Errorf("%w: version %d.%d", ErrFormat, pre[6], pre[7])
	}
	if hlen > MaxHeaderBytes {
		return nil, fmt.Errorf("%w: header length %d", ErrFormat, hlen)
	}
	hdr := make([]byte, hlen)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, fmt.Errorf("%w: header says %d bytes: %w", ErrFormat, hlen, err)
	}
	descr, fortran, shape, err := parseDict(string(hdr))
	if err != nil {
		return nil, err
	}
	if fortran {
		return nil, fmt.Errorf("%w: fortran_order arrays are not supported", ErrFormat)
	}
	size, conv, err := converter(descr)
	if err != nil {
		return nil, err
	}
	n := int64(1)
	for _, d := range shape {
		if d < 0 || d > maxElements || (d > 0 && n > maxElements/d) {
			return nil, fmt.Errorf("%w: shape %v has more than %d elements", ErrTooLarge, shape, maxElements)
		}
		n *= d
	}
	out := &Array{DType: descr, Shape: shape, Data: make([]float32, n)}
	if err := readData(ctx, r, out.Data, size, conv); err != nil {
		return nil, fmt.Errorf("%w (header says %v %s = %d bytes)", err, shape, descr, n*int64(size))
	}
	var one [1]byte
	if k, _ := r.Read(one[:]); k != 0 {
		return nil, fmt.Errorf("%w: trailing bytes after %d data bytes", ErrFormat, n*int64(size))
	}
	return out, nil
}

// readData fills dst with the elements of r, size bytes each, converted
// by conv, a chunk at a time, looking at ctx between chunks.
func readData(ctx context.Context, r io.Reader, dst []float32, size int, conv func([]byte) float32) error {
	per := max(chunkBytes/size, 1)
	buf := make([]byte, min(len(dst), per)*size)
	for lo := 0; lo < len(dst); lo += per {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("npy: %w", err)
		}
		part := dst[lo:min(lo+per, len(dst))]
		raw := buf[:len(part)*size]
		if _, err := io.ReadFull(r, raw); err != nil {
			return fmt.Errorf("%w: data truncated: %w", ErrFormat, err)
		}
		for i := range part {
			part[i] = conv(raw[i*size:])
		}
	}
	return nil
}

func converter(descr string) (int, func([]byte) float32, error) {
	switch descr {
	case "<f4", "|f4":
		return 4, func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }, nil
	case "<f8":
		return 8, func(b []byte) float32 { return float32(math.Float64frombits(binary.LittleEndian.Uint64(b))) }, nil
	case "<f2":
		return 2, func(b []byte) float32 { return f16(binary.LittleEndian.Uint16(b)) }, nil
	case "<V2", "bfloat16", "<bfloat16":
		// ml_dtypes saves bfloat16 arrays as two-byte void records.
		return 2, func(b []byte) float32 { return math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16) }, nil
	}
	return 0, nil, fmt.Errorf("%w %q (accepted: <f2, <f4, <f8, <V2 as bfloat16)", ErrDType, descr)
}

func f16(c uint16) float32 {
	s := uint32(c&0x8000) << 16
	e := uint32(c>>10) & 0x1F
	m := uint32(c & 0x3FF)
	switch {
	case e == 0x1F:
		return math.Float32frombits(s | 0x7F800000 | m<<13)
	case e == 0:
		v := float32(m) * (1.0 / (1 << 24))
		return math.Float32frombits(s | math.Float32bits(v))
	}
	return math.Float32frombits(s | (e+112)<<23 | m<<13)
}

// parseDict reads the three keys of the header dict literal.
func parseDict(s string) (descr string, fortran bool, shape []int64, err error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		return "", false, nil, fmt.Errorf("%w: header %q is not a dict", ErrFormat, s)
	}
	body := s[1 : len(s)-1]
	seen := map[string]bool{}
	for len(strings.TrimSpace(body)) > 0 {
		body = strings.TrimSpace(body)
		key, rest, ok := quoted(body)
		if !ok {
			return "", false, nil, fmt.Errorf("%w: header key in %q", ErrFormat, body)
		}
		rest = strings.TrimSpace(rest)
		if !strings.HasPrefix(rest, ":") {
			return "", false, nil, fmt.Errorf("%w: missing ':' after %q", ErrFormat, key)
		}
		rest = strings.TrimSpace(rest[1:])
		seen[key] = true
		switch key {
		case "descr":
			descr, rest, ok = quoted(rest)
			if !ok {
				return "", false, nil, fmt.Errorf("%w: descr must be a string", ErrFormat)
			}
		case "fortran_order":
			switch {
			case strings.HasPrefix(rest, "False"):
				rest = rest[5:]
			case strings.HasPrefix(rest, "True"):
				fortran, rest = true, rest[4:]
			default:
				return "", false, nil, fmt.Errorf("%w: fortran_order must be True or False", ErrFormat)
			}
		case "shape":
			end := strings.IndexByte(rest, ')')
			if !strings.HasPrefix(rest, "(") || end < 0 {
				return "", false, nil, fmt.Errorf("%w: shape must be a tuple", ErrFormat)
			}
			shape = []int64{}
			for _, f := range strings.Split(rest[1:end], ",") {
				f = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(f), "L"))
				if f == "" {
					continue
				}
				d, perr := strconv.ParseInt(f, 10, 64)
				if perr != nil || d < 0 {
					return "", false, nil, fmt.Errorf("%w: shape dimension %q", ErrFormat, f)
				}
				shape = append(shape, d)
			}
			rest = rest[end+1:]
		default:
			return "", false, nil, fmt.Errorf("%w: unexpected header key %q", ErrFormat, key)
		}
		rest = strings.TrimSpace(rest)
		rest = strings.TrimPrefix(rest, ",")
		body = rest
	}
	if !seen["descr"] || !seen["fortran_order"] || !seen["shape"] {
		return "", false, nil, fmt.Errorf("%w: header needs descr, fortran_order and shape", ErrFormat)
	}
	return descr, fortran, shape, nil
}

// quoted reads a '...' or "..." string at the start of s.
func quoted(s string) (string, string, bool) {
	if len(s) < 2 || (s[0] != '\'' && s[0] != '"') {
		return "", s, false
	}
	end := strings.IndexByte(s[1:], s[0])
	if end < 0 {
		return "", s, false
	}
	return s[1 : 1+end], s[2+end:], true
}

// Write writes a float32 array as a version 1.0 .npy file ('<f4', C order).
func Write(w io.Writer, shape []int64, data []float32) error {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.FormatInt(d, 10)
	}
	tuple := strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	h := fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }", tuple)
	pad := 64 - (10+len(h)+1)%64
	h += strings.Repeat(" ", pad%64) + "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	_ = binary.Write(&b, binary.LittleEndian, uint16(len(h)))
	b.WriteString(h)
	for _, v := range data {
		_ = binary.Write(&b, binary.LittleEndian, math.Float32bits(v))
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("npy: %w", err)
	}
	return nil
}
