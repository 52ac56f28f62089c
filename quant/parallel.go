package quant

import (
	"context"
	"fmt"
	"sync"

	"github.com/kvcfg/kvcfg/dtype"
)

// ChunkElements is the smallest piece of work Parallel hands to a goroutine
// (64 Ki elements): large enough that scheduling costs vanish next to the
// conversion itself.
const ChunkElements = 1 << 16

// Parallel returns a Codec that splits each call into contiguous,
// block-aligned chunks of at least ChunkElements elements over up to
// workers goroutines; workers ≤ 1 returns c itself. Results are identical
// to c's. Unlike c it allocates a little per call (one goroutine per extra
// worker).
func Parallel(c Codec, workers int) Codec {
	if workers <= 1 {
		return c
	}
	return &parallelCodec{c: c, workers: workers}
}

// ParallelContext is Parallel that stops with ctx's error when ctx is
// done: each goroutine converts its range ChunkElements·4 elements at a
// time and looks at ctx between pieces (with workers ≤ 1 too, on one
// goroutine). What was written before the stop is correct but partial.
func ParallelContext(ctx context.Context, c Codec, workers int) Codec {
	return &parallelCodec{c: c, workers: max(workers, 1), ctx: ctx}
}

type parallelCodec struct {
	c       Codec
	workers int
	ctx     context.Context // nil: never stop early
}

// ctxStep is how many elements a ParallelContext goroutine converts
// between two looks at the context (about a millisecond of work).
const ctxStep = 4 * ChunkElements

func (p *parallelCodec) Format() dtype.Format { return p.c.Format() }

// split calls fn on [lo, hi) element ranges, aligned to whole blocks and
// whole bytes, concurrently, and returns the first error.
func (p *parallelCodec) split(n int, fn func(lo, hi int) error) error {
	f := p.c.Format()
	unit := 2
	if f.BlockSize > 0 {
		unit = max(f.BlockSize, 2)
	}
	if p.ctx != nil {
		fn = p.stepped(unit, fn)
	}
	parts := min(p.workers, n/ChunkElements)
	if parts <= 1 || n%unit != 0 {
		return fn(0, n)
	}
	per := (n/parts + unit - 1) / unit * unit
	var wg sync.WaitGroup
	errs := make([]error, parts)
	for i := range parts {
		lo, hi := i*per, min((i+1)*per, n)
		if lo >= hi {
			break
		}
		if i == parts-1 {
			hi = n
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(lo, hi)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// stepped returns fn cut into pieces of ctxStep elements (whole units),
// with a look at the context before each.
func (p *parallelCodec) stepped(unit int, fn func(lo, hi int) error) func(lo, hi int) error {
	step := ctxStep / unit * unit
	return func(lo, hi int) error {
		for {
			if err := p.ctx.Err(); err != nil {
				return fmt.Errorf("quant: %w", err)
			}
			// A range whose length is not a whole number of units (only
			// the caller's own, unsplit) is converted in one piece.
			if hi-lo <= step || (hi-lo)%unit != 0 {
				return fn(lo, hi)
			}
			if err := fn(lo, lo+step); err != nil {
				return err
			}
			lo += step
		}
	}
}

// ranges returns the payload and scale byte ranges of elements [lo, hi).
func ranges(f dtype.Format, lo, hi int) (p0, p1, s0, s1 int) {
	p0, p1 = int(f.DataBytes(int64(lo))), int(f.DataBytes(int64(hi)))
	s0, s1 = int(f.ScaleBytesFor(int64(lo))), int(f.ScaleBytesFor(int64(hi)))
	return
}

func (p *parallelCodec) check(dst, scales []byte, n int) error {
	if err := checkEncode(p.c.Format(), dst, scales, n); err != nil {
		return err
	}
	return nil
}

func (p *parallelCodec) EncodeF32(dst, scales []byte, src []float32) error {
	if err := p.check(dst, scales, len(src)); err != nil {
		return err
	}
	f := p.c.Format()
	return p.split(len(src), func(lo, hi int) error {
		p0, p1, s0, s1 := ranges(f, lo, hi)
		return p.c.EncodeF32(dst[p0:p1], scales[s0:s1], src[lo:hi])
	})
}

func (p *parallelCodec) EncodeBF16(dst, scales []byte, src []uint16) error {
	if err := p.check(dst, scales, len(src)); err != nil {
		return err
	}
	f := p.c.Format()
	return p.split(len(src), func(lo, hi int) error {
		p0, p1, s0, s1 := ranges(f, lo, hi)
		return p.c.EncodeBF16(dst[p0:p1], scales[s0:s1], src[lo:hi])
	})
}

func (p *parallelCodec) DecodeF32(dst []float32, src, scales []byte) error {
	if err := p.check(src, scales, len(dst)); err != nil {
		return err
	}
	f := p.c.Format()
	return p.split(len(dst), func(lo, hi int) error {
		p0, p1, s0, s1 := ranges(f, lo, hi)
		return p.c.DecodeF32(dst[lo:hi], src[p0:p1], scales[s0:s1])
	})
}

func (p *parallelCodec) DecodeBF16(dst []uint16, src, scales []byte) error {
	if err := p.check(src, scales, len(dst)); err != nil {
		return err
	}
	f := p.c.Format()
	return p.split(len(dst), func(lo, hi int) error {
		p0, p1, s0, s1 := ranges(f, lo, hi)
		return p.c.DecodeBF16(dst[lo:hi], src[p0:p1], scales[s0:s1])
	})
}

// Shape checks a [tokens, heads, headDim] KV tensor against a codec's
// geometry as SGLang's batched quantizers do: blocks run along each token's
// flattened heads×headDim row, so heads·headDim must be a multiple of the
// block size and headDim even for 4-bit formats. It returns the payload
// and scale bytes per token: payload [tokens, heads, headDim·bits/8] and
// scales [tokens, heads·headDim/block·scaleBytes], both row-major, which is
// exactly what Encode* writes for the flattened tensor.
func Shape(f dtype.Format, tokens, heads, headDim int) (payloadPerToken, scalesPerToken int, err error) {
	if tokens < 0 || heads <= 0 || headDim <= 0 {
		return 0, 0, fmt.Errorf("%w: shape [%d, %d, %d]", ErrLength, tokens, heads, headDim)
	}
	row := heads * headDim
	if err := checkCount(f, row); err != nil {
		return 0, 0, err
	}
	if f.ElementBits == 4 && headDim%2 != 0 {
		return 0, 0, fmt.Errorf("%w: %s: head_dim %d is odd", ErrLength, f.Name, headDim)
	}
	return int(f.DataBytes(int64(row))), int(f.ScaleBytesFor(int64(row))), nil
}

// QuantizeKV quantizes a bf16 KV tensor of shape [tokens, heads, headDim]
// (row-major) like SGLang's batched_quantize: payload [tokens, heads,
// headDim·bits/8] and scales [tokens, heads·headDim/block·scaleBytes].
func QuantizeKV(c Codec, dst, scales []byte, src []uint16, tokens, heads, headDim int) error {
	if err := checkKV(c.Format(), len(src), tokens, heads, headDim); err != nil {
		return err
	}
	return c.EncodeBF16(dst, scales, src)
}

// DequantizeKV is the inverse of QuantizeKV into bf16 (SGLang's
// batched_dequantize).
func DequantizeKV(c Codec, dst []uint16, src, scales []byte, tokens, heads, headDim int) error {
	if err := checkKV(c.Format(), len(dst), tokens, heads, headDim); err != nil {
		return err
	}
	return c.DecodeBF16(dst, src, scales)
}

func checkKV(f dtype.Format, n, tokens, heads, headDim int) error {
	if _, _, err := Shape(f, tokens, heads, headDim); err != nil {
		return err
	}
	if n != tokens*heads*headDim {
		return fmt.Errorf("%w: %s: %d elements for shape [%d, %d, %d]", ErrLength, f.Name, n, tokens, heads, headDim)
	}
	return nil
}
