package quant

import (
	"bytes"
	"github.com/kvcfg/kvcfg/dtype"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
)

// Benchmarks: for each conversion, in one binary and one run, the copy()
// roofline of the same byte volume, the Go codec at 1 and 2 workers and,
// with cgo, the scalar C reference (quant/internal/cref, -O3) at 1 and 2
// workers. Outputs are asserted byte-identical before timing. SetBytes is
// input + output bytes, so MB/s is comparable with the copy rows.
//
// The input is KVCFG_BENCH_MIB MiB of bf16 (default 256), i.e. 128 Mi
// elements; decode cases decode the same element count.

// cImpl is a C reference of one case: run converts elements [lo, hi).
type cImpl func(dstU8, scales []byte, dstU16 []uint16, src []uint16, payload, pscales []byte, lo, hi int)

// cImpls is filled by cref_test.go when cgo is available.
var cImpls = map[string]cImpl{}

type benchCase struct {
	name   string // format/op
	codec  string
	encode bool
}

var benchCases = []benchCase{
	{"fp8_e4m3/encode_bf16", "fp8_e4m3", true},
	{"fp8_e4m3/decode_bf16", "fp8_e4m3", false},
	{"fp8_e5m2/encode_bf16", "fp8_e5m2", true},
	{"fp8_e5m2/decode_bf16", "fp8_e5m2", false},
	{"fp8_e4m3fnuz/encode_bf16", "fp8_e4m3fnuz", true},
	{"fp8_e4m3fnuz/decode_bf16", "fp8_e4m3fnuz", false},
	{"mxfp8/encode_bf16", "mxfp8", true},
	{"mxfp8/decode_bf16", "mxfp8", false},
	{"fp4_mx_block16/encode_bf16", "fp4_mx_block16", true},
	{"fp4_mx_block16/decode_bf16", "fp4_mx_block16", false},
	{"mxfp4/encode_bf16", "mxfp4", true},
	{"mxfp4/decode_bf16", "mxfp4", false},
	{"nvfp4/encode_bf16", "nvfp4", true},
	{"nvfp4/decode_bf16", "nvfp4", false},
	{"int8_g64/encode_bf16", "int8_g64", true},
	{"int8_g64/decode_bf16", "int8_g64", false},
	{"int4_g32/encode_bf16", "int4_g32", true},
	{"int4_g32/decode_bf16", "int4_g32", false},
}

var (
	benchOnce sync.Once
	benchSrc  []uint16
)

func benchElements() int {
	mib := 256
	if s := os.Getenv("KVCFG_BENCH_MIB"); s != "" {
		if v, err := strconv.Atoi(s); err == nil && v > 0 {
			mib = v
		}
	}
	return mib << 19 / 64 * 64
}

// benchInput is realistic KV data: bf16 N(0, 1) with 1-in-64 outliers ×20
// and a zero block every 4096 elements (cheap to generate, unlike kvData).
func benchInput() []uint16 {
	benchOnce.Do(func() {
		n := benchElements()
		benchSrc = make([]uint16, n)
		rng := rand.New(rand.NewPCG(11, 12))
		var tab [4096]uint16
		for i := range tab {
			v := rng.NormFloat64()
			if i%64 == 7 {
				v *= 20
			}
			tab[i] = BF16FromF32(float32(v))
		}
		for i := range benchSrc {
			benchSrc[i] = tab[(i*2654435761>>7)&4095]
			if i%4096 < 16 {
				benchSrc[i] = 0
			}
		}
	})
	return benchSrc
}

// splitRange runs fn over [0, n) in up to workers unit-aligned ranges.
func splitRange(n, unit, workers int, fn func(lo, hi int)) {
	if workers <= 1 {
		fn(0, n)
		return
	}
	per := (n/workers + unit - 1) / unit * unit
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += per {
		hi := min(lo+per, n)
		wg.Add(1)
		go func() { defer wg.Done(); fn(lo, hi) }()
	}
	wg.Wait()
}

func BenchmarkKV(b *testing.B) {
	for _, bc := range benchCases {
		b.Run(bc.name, func(b *testing.B) { benchOne(b, bc) })
	}
}

func benchOne(b *testing.B, bc benchCase) {
	src := benchInput()
	n := len(src)
	var c Codec
	var err error
	if bc.codec == "fp8_e4m3fnuz" {
		c, err = FP8(dtype.FP8E4M3FNUZ, 1, NonSat)
	} else {
		c, err = ForKV(bc.codec)
	}
	if err != nil {
		b.Fatal(err)
	}
	f := c.Format()
	pBytes, sBytes := int(f.DataBytes(int64(n))), int(f.ScaleBytesFor(int64(n)))
	payload, scales := make([]byte, pBytes), make([]byte, sBytes)
	if err := Parallel(c, 2).EncodeBF16(payload, scales, src); err != nil {
		b.Fatal(err)
	}
	var inBytes, outBytes int64
	if bc.encode {
		inBytes, outBytes = int64(2*n), int64(pBytes+sBytes)
	} else {
		inBytes, outBytes = int64(pBytes+sBytes), int64(2*n)
	}
	unit := max(f.BlockSize, 2)

	// Go outputs and (if present) the C outputs, compared before timing.
	goP, goS := make([]byte, pBytes), make([]byte, sBytes)
	goD := make([]uint16, n)
	run := func(workers int) {
		pc := Parallel(c, workers)
		var err error
		if bc.encode {
			err = pc.EncodeBF16(goP, goS, src)
		} else {
			err = pc.DecodeBF16(goD, payload, scales)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	cfn := cImpls[bc.name]
	var cP, cS []byte
	var cD []uint16
	runC := func(workers int) {
		splitRange(n, unit, workers, func(lo, hi int) {
			cfn(cP, cS, cD, src, payload, scales, lo, hi)
		})
	}
	run(1) // also faults the output pages in before timing
	if cfn != nil {
		cP, cS, cD = make([]byte, pBytes), make([]byte, sBytes), make([]uint16, n)
		runC(2)
		if bc.encode {
			if !bytes.Equal(goP, cP) || !bytes.Equal(goS, cS) {
				b.Fatalf("%s: Go and C outputs differ", bc.name)
			}
		} else {
			for i := range goD {
				if goD[i] != cD[i] {
					b.Fatalf("%s: Go and C decode differ at %d: %#x vs %#x", bc.name, i, goD[i], cD[i])
				}
			}
		}
	}

	half := int((inBytes + outBytes) / 2)
	cs, cd := make([]byte, half), make([]byte, half)
	for i := range cs {
		cs[i] = byte(i)
	}
	copy(cd, cs)
	for w := 1; w <= 2; w++ {
		b.Run("copy/w"+strconv.Itoa(w), func(b *testing.B) {
			b.SetBytes(2 * int64(half))
			for b.Loop() {
				splitRange(half, 64, w, func(lo, hi int) { copy(cd[lo:hi], cs[lo:hi]) })
			}
		})
		b.Run("go/w"+strconv.Itoa(w), func(b *testing.B) {
			b.SetBytes(inBytes + outBytes)
			b.ReportAllocs()
			for b.Loop() {
				run(w)
			}
		})
		if cfn != nil {
			b.Run("c/w"+strconv.Itoa(w), func(b *testing.B) {
				b.SetBytes(inBytes + outBytes)
				for b.Loop() {
					runC(w)
				}
			})
		}
	}
	runtime.KeepAlive(cd)
}
