package quant

import (
	"fmt"

	"github.com/kvcfg/kvcfg/dtype"
)

// rowEncoder is a codec with an encoder of checked buffers.
type rowEncoder interface {
	encodeF32(dst, scales []byte, src []float32)
}

// rowDecoder is a codec with a decoder of checked buffers.
type rowDecoder interface {
	decodeF32(dst []float32, src, scales []byte)
}

// checkRows validates the arguments of EncodeRowsF32 and DecodeRowsF32
// (vals float32 values for rows of n) and returns the payload and scale
// bytes of a row.
func checkRows(f dtype.Format, data, scales []byte, vals, n int, rows []int32) (d, s int, err error) {
	if n < 0 {
		return 0, 0, fmt.Errorf("%w: %s: rows of %d elements", ErrLength, f.Name, n)
	}
	if err := checkCount(f, n); err != nil {
		return 0, 0, err
	}
	if len(rows) > 0 && (n == 0 || vals/n != len(rows) || vals%n != 0) || len(rows) == 0 && vals != 0 {
		return 0, 0, fmt.Errorf("%w: %s: %d values for %d rows of %d", ErrLength, f.Name, vals, len(rows), n)
	}
	d, s = int(f.DataBytes(int64(n))), int(f.ScaleBytesFor(int64(n)))
	// rows that fit both buffers: r < min(len(data)/d, len(scales)/s)
	limit := int64(len(data) / max(d, 1))
	if s > 0 {
		limit = min(limit, int64(len(scales)/s))
	}
	for _, r := range rows {
		if r < 0 || int64(r) >= limit {
			return 0, 0, fmt.Errorf("%w: %s: row %d outside a buffer of %d rows (%d payload and %d scale bytes, rows of %d and %d)",
				ErrLength, f.Name, r, limit, len(data), len(scales), d, s)
		}
	}
	return d, s, nil
}

// runLen returns the length of the run of consecutive rows at rows[i].
func runLen(rows []int32, i int) int {
	k := 1
	for i+k < len(rows) && rows[i+k] == rows[i]+int32(k) {
		k++
	}
	return k
}

// EncodeRowsF32 quantizes len(rows) rows of n float32 values (src is
// [len(rows), n], row-major) into rows of a row-major buffer: source row i
// goes to payload dst[r·D : (r+1)·D] and scales[r·S : (r+1)·S] with r =
// rows[i], D = Format().DataBytes(n) and S = Format().ScaleBytesFor(n). It
// is the result of one EncodeF32 per row (a row listed twice ends with its
// last source row), checked once: a KV pool's scattered rows pay the
// validation and set-up of one call, and runs of consecutive rows are
// encoded as one span. On error nothing is written.
func EncodeRowsF32(c Codec, dst, scales []byte, src []float32, n int, rows []int32) error {
	d, s, err := checkRows(c.Format(), dst, scales, len(src), n, rows)
	if err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	enc, ok := c.(rowEncoder)
	for i := 0; i < len(rows); {
		// a run of consecutive rows is one span in src, dst and scales
		k := runLen(rows, i)
		r := int(rows[i])
		dr, sr, xr := dst[r*d:(r+k)*d], scales[r*s:(r+k)*s], src[i*n:(i+k)*n]
		if ok {
			enc.encodeF32(dr, sr, xr)
		} else if err := c.EncodeF32(dr, sr, xr); err != nil {
			return err
		}
		i += k
	}
	return nil
}

// DecodeRowsF32 dequantizes rows of a row-major buffer into dst ([len(rows),
// n], row-major): row r = rows[i] (payload src[r·D : (r+1)·D], scales
// scales[r·S : (r+1)·S], D and S as for EncodeRowsF32) goes to dst[i·n :
// (i+1)·n]. It is the result of one DecodeF32 per row, checked once. On
// error nothing is written.
func DecodeRowsF32(c Codec, dst []float32, src, scales []byte, n int, rows []int32) error {
	d, s, err := checkRows(c.Format(), src, scales, len(dst), n, rows)
	if err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	dec, ok := c.(rowDecoder)
	for i := 0; i < len(rows); {
		k := runLen(rows, i)
		r := int(rows[i])
		sr, cr, xr := src[r*d:(r+k)*d], scales[r*s:(r+k)*s], dst[i*n:(i+k)*n]
		if ok {
			dec.decodeF32(xr, sr, cr)
		} else if err := c.DecodeF32(xr, sr, cr); err != nil {
			return err
		}
		i += k
	}
	return nil
}
