package quant

import "fmt"

// rowEncoder is a codec with an encoder of checked buffers.
type rowEncoder interface {
	encodeF32(dst, scales []byte, src []float32)
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
	f := c.Format()
	if n < 0 {
		return fmt.Errorf("%w: %s: rows of %d elements", ErrLength, f.Name, n)
	}
	if err := checkCount(f, n); err != nil {
		return err
	}
	if len(rows) > 0 && (n == 0 || len(src)/n != len(rows) || len(src)%n != 0) || len(rows) == 0 && len(src) != 0 {
		return fmt.Errorf("%w: %s: %d values for %d rows of %d", ErrLength, f.Name, len(src), len(rows), n)
	}
	d, s := int(f.DataBytes(int64(n))), int(f.ScaleBytesFor(int64(n)))
	// rows that fit both buffers: r < min(len(dst)/d, len(scales)/s)
	limit := int64(len(dst) / max(d, 1))
	if s > 0 {
		limit = min(limit, int64(len(scales)/s))
	}
	for _, r := range rows {
		if r < 0 || int64(r) >= limit {
			return fmt.Errorf("%w: %s: row %d outside a buffer of %d rows (%d payload and %d scale bytes, rows of %d and %d)",
				ErrLength, f.Name, r, limit, len(dst), len(scales), d, s)
		}
	}
	if n == 0 {
		return nil
	}
	enc, ok := c.(rowEncoder)
	for i := 0; i < len(rows); {
		// a run of consecutive rows is one span in src, dst and scales
		k := 1
		for i+k < len(rows) && rows[i+k] == rows[i]+int32(k) {
			k++
		}
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
