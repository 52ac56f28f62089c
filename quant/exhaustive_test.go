package quant

import (
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"sync"
	"testing"
)

var long = flag.Bool("long", false, "run the exhaustive 2^32 float32 tests (also KVCFG_LONG=1)")

func longTests() bool { return *long || os.Getenv("KVCFG_LONG") == "1" }

// refFormat is the slow reference of a narrow float written from the
// spec's value tables: the sorted non-negative finite values, the largest
// finite magnitude code, and the documented NaN / overflow codes.
type refFormat struct {
	vals   []float64 // value of magnitude code i, i = 0..maxMag
	signAt uint16    // sign bit
	fnuz   bool
	satAlw bool // always saturates (E2M1)
	over   [2]func(s uint16) uint16
	nan    [2]func(s uint16) uint16
}

func newRef(f Float) *refFormat {
	type def struct {
		ebits, mbits, bias int
		maxMag             int
	}
	d := map[Float]def{
		E4M3FN: {4, 3, 7, 0x7E}, E5M2: {5, 2, 15, 0x7B}, E4M3FNUZ: {4, 3, 8, 0x7F},
		E2M1: {2, 1, 1, 7}, BF16: {8, 7, 127, 0x7F7F}, FP16: {5, 10, 15, 0x7BFF},
	}[f]
	r := &refFormat{signAt: 1 << (d.ebits + d.mbits)}
	for c := 0; c <= d.maxMag; c++ {
		E, M := c>>d.mbits, c&(1<<d.mbits-1)
		var v float64
		if E == 0 { // subnormal: 2^(1-bias) · M/2^m
			v = math.Ldexp(float64(M)/math.Ldexp(1, d.mbits), 1-d.bias)
		} else { // 2^(E-bias) · (1 + M/2^m)
			v = math.Ldexp(1+float64(M)/math.Ldexp(1, d.mbits), E-d.bias)
		}
		r.vals = append(r.vals, v)
	}
	sb := r.signAt
	maxc := uint16(d.maxMag)
	sat := func(s uint16) uint16 { return s*sb | maxc }
	switch f {
	case E4M3FN:
		r.over = [2]func(uint16) uint16{func(s uint16) uint16 { return s*sb | 0x7F }, sat}
		r.nan = [2]func(uint16) uint16{func(s uint16) uint16 { return s*sb | 0x7F }, func(uint16) uint16 { return 0x7F }}
	case E5M2:
		r.over = [2]func(uint16) uint16{func(s uint16) uint16 { return s*sb | 0x7C }, sat}
		r.nan = [2]func(uint16) uint16{func(s uint16) uint16 { return s*sb | 0x7E }, func(uint16) uint16 { return 0x7F }}
	case E4M3FNUZ:
		r.fnuz = true
		r.over = [2]func(uint16) uint16{func(uint16) uint16 { return 0x80 }, sat}
		r.nan = [2]func(uint16) uint16{func(uint16) uint16 { return 0x80 }, func(uint16) uint16 { return 0x80 }}
	case E2M1:
		r.satAlw = true
		r.over = [2]func(uint16) uint16{sat, sat}
		n := func(s uint16) uint16 { return (1 - s) * 8 } // ml_dtypes: +NaN → 0x8, −NaN → 0x0
		r.nan = [2]func(uint16) uint16{n, n}
	case BF16:
		r.over = [2]func(uint16) uint16{func(s uint16) uint16 { return s*sb | 0x7F80 }, sat}
		n := func(uint16) uint16 { return 0x7FC0 }
		r.nan = [2]func(uint16) uint16{n, n}
	case FP16:
		r.over = [2]func(uint16) uint16{func(s uint16) uint16 { return s*sb | 0x7C00 }, sat}
		n := func(s uint16) uint16 { return s*sb | 0x7E00 }
		r.nan = [2]func(uint16) uint16{n, n}
	}
	return r
}

// encode rounds x to the nearest value, ties to the even code; the value
// past the maximum is max + (max − previous) with code maxMag+1.
func (r *refFormat) encode(x float32, ov Overflow) uint16 {
	s := uint16(math.Float32bits(x) >> 31)
	if x != x {
		return r.nan[ov](s)
	}
	a := math.Abs(float64(x))
	n := len(r.vals)
	maxv := r.vals[n-1]
	next := maxv + (maxv - r.vals[n-2])
	var code int
	if math.IsInf(a, 0) {
		code = n
	} else {
		i := sort.SearchFloat64s(r.vals, a) // first index with vals[i] >= a
		var lo, hi int
		var lov, hiv float64
		switch {
		case i < n && r.vals[i] == a:
			lo, hi, lov, hiv = i, i, a, a
		case i == n:
			lo, hi, lov, hiv = n-1, n, maxv, next
		default:
			lo, hi, lov, hiv = i-1, i, r.vals[i-1], r.vals[i]
		}
		switch dl, dh := a-lov, hiv-a; {
		case dl < dh:
			code = lo
		case dh < dl:
			code = hi
		case lo%2 == 0:
			code = lo
		default:
			code = hi
		}
	}
	if code >= n {
		return r.over[ov](s)
	}
	if code == 0 && r.fnuz {
		return 0
	}
	return s*r.signAt | uint16(code)
}

var allFloats = []Float{E4M3FN, E5M2, E4M3FNUZ, E2M1, BF16, FP16}

// TestExhaustive16 checks every encoder on all 65,536 bf16 and all 65,536
// fp16 inputs against the slow reference, for both overflow policies.
func TestExhaustive16(t *testing.T) {
	for _, f := range allFloats {
		r := newRef(f)
		for _, ov := range []Overflow{NonSat, SatFinite} {
			bad := 0
			var tab *fp8Tables
			if f.Bits() == 8 {
				tab = fp8TablesFor(f, ov)
			}
			for b := range 1 << 16 {
				for _, x := range []float32{BF16ToF32(uint16(b)), FP16ToF32(uint16(b))} {
					want := r.encode(x, ov)
					got := f.Encode(x, ov)
					if tab != nil {
						if lut := uint16(tab.enc[keyF32(math.Float32bits(x))]); lut != got {
							t.Errorf("%v/%v: table(%#08x) = %#x, Encode = %#x", f, ov, math.Float32bits(x), lut, got)
						}
					}
					if got != want && bad < 5 {
						t.Errorf("%v/%v: Encode(%#08x = %v) = %#x, reference %#x", f, ov, math.Float32bits(x), x, got, want)
						bad++
					}
				}
			}
			if f == BF16 {
				for b := range 1 << 16 {
					x := FP16ToF32(uint16(b))
					if got, want := BF16FromF32(x), r.encode(x, NonSat); got != want {
						t.Fatalf("BF16FromF32(%v) = %#x, want %#x", x, got, want)
					}
				}
			}
		}
	}
}

// TestE8M0Exhaustive checks the E8M0 cast on all bf16 and fp16 inputs
// against nearest-power-of-two rounding in the linear domain (ties up).
func TestE8M0Exhaustive(t *testing.T) {
	ref := func(x float32) uint8 {
		if !(x > 0) || math.IsInf(float64(x), 0) {
			return 0xFF
		}
		a := float64(x)
		for k := -127; k <= 127; k++ {
			if a < 1.5*math.Ldexp(1, k) {
				return uint8(k + 127)
			}
		}
		return 0xFF
	}
	for b := range 1 << 16 {
		for _, x := range []float32{BF16ToF32(uint16(b)), FP16ToF32(uint16(b))} {
			if got, want := EncodeE8M0(x), ref(x); got != want {
				t.Fatalf("EncodeE8M0(%v) = %#x, want %#x", x, got, want)
			}
		}
	}
	for c := range 255 {
		if got := EncodeE8M0(DecodeE8M0(uint8(c))); got != uint8(c) {
			t.Errorf("E8M0 round trip %#x → %#x", c, got)
		}
	}
}

// TestRoundTrip: every code decodes and re-encodes to itself, except NaN
// codes (one canonical NaN per sign), E4M3FNUZ's 0x80 and ±Inf under
// SatFinite.
func TestRoundTrip(t *testing.T) {
	for _, f := range allFloats {
		for c := range 1 << f.Bits() {
			v := f.Decode(uint16(c))
			if v != v {
				continue
			}
			for _, ov := range []Overflow{NonSat, SatFinite} {
				if ov == SatFinite && math.IsInf(float64(v), 0) {
					continue // SatFinite maps ±Inf to ±max by design
				}
				if got := f.Encode(v, ov); got != uint16(c) {
					t.Errorf("%v/%v: Encode(Decode(%#x) = %v) = %#x", f, ov, c, v, got)
				}
			}
		}
	}
}

// TestRandomF32 compares the table path and Encode with the reference on
// random float32 bit patterns (all exponents, NaN payloads, subnormals).
func TestRandomF32(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, f := range allFloats {
		r := newRef(f)
		for _, ov := range []Overflow{NonSat, SatFinite} {
			var tab *fp8Tables
			if f.Bits() == 8 {
				tab = fp8TablesFor(f, ov)
			}
			for range 200000 {
				u := rng.Uint32()
				x := math.Float32frombits(u)
				want := r.encode(x, ov)
				if got := f.Encode(x, ov); got != want {
					t.Fatalf("%v/%v: Encode(%#08x) = %#x, reference %#x", f, ov, u, got, want)
				}
				if tab != nil && uint16(tab.enc[keyF32(u)]) != want {
					t.Fatalf("%v/%v: table(%#08x) = %#x, reference %#x", f, ov, u, tab.enc[keyF32(u)], want)
				}
				if f == E2M1 && x == x {
					if got := e2m1Big().rne[keyMag(u&0x7FFFFFFF)]; uint16(got) != want&7 {
						t.Fatalf("e2m1RNE(%#08x) = %#x, reference %#x", u, got, want)
					}
				}
			}
		}
	}
}

// TestLongF32 runs every table encoder over all 2^32 float32 inputs against
// Encode (the routine of docs/quant.md#encoding-from-float32), and BF16FromF32 against BF16.Encode.
// Enabled by -long or KVCFG_LONG=1 (minutes of CPU).
func TestLongF32(t *testing.T) {
	if !longTests() {
		t.Skip("set KVCFG_LONG=1 or -long for the 2^32 sweep")
	}
	workers := runtime.GOMAXPROCS(0)
	var mu sync.Mutex
	var fails []string
	var wg sync.WaitGroup
	tabs := map[Float][2]*fp8Tables{}
	for _, f := range []Float{E4M3FN, E5M2, E4M3FNUZ} {
		tabs[f] = [2]*fp8Tables{fp8TablesFor(f, NonSat), fp8TablesFor(f, SatFinite)}
	}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for hi := uint32(w); hi < 1<<16; hi += uint32(workers) {
				for lo := range uint32(1 << 16) {
					u := hi<<16 | lo
					x := math.Float32frombits(u)
					k := keyF32(u)
					bad := ""
					for f, tt := range tabs {
						for ov, tab := range tt {
							if uint16(tab.enc[k]) != f.Encode(x, Overflow(ov)) {
								bad = f.String()
							}
						}
					}
					if x == x && uint16(e2m1Big().rne[keyMag(u&0x7FFFFFFF)]) != E2M1.Encode(x, SatFinite)&7 {
						bad = "e2m1"
					}
					if x == x && uint16(e2m1Big().up[keyMag(u&0x7FFFFFFF)]) != uint16(e2m1HalfUpSlow(float32(math.Abs(float64(x))))) {
						bad = "e2m1 half-up"
					}
					if BF16FromF32(x) != BF16.Encode(x, NonSat) {
						bad = "bf16"
					}
					if bad != "" {
						mu.Lock()
						if len(fails) < 10 {
							fails = append(fails, bad+": "+formatBits(u))
						}
						mu.Unlock()
					}
				}
			}
		}()
	}
	wg.Wait()
	if len(fails) > 0 {
		t.Fatalf("mismatches: %v", fails)
	}
}

func formatBits(u uint32) string {
	const hexd = "0123456789abcdef"
	b := []byte("0x00000000")
	for i := range 8 {
		b[9-i] = hexd[u>>(4*i)&0xF]
	}
	return string(b)
}

// The E2M1 magnitude tables, built from the bounds at init, agree with
// E2M1.Encode (round to nearest even, saturating) and SGLang's rule for
// every key.
func TestE2M1TablesMatchEncode(t *testing.T) {
	for k := range uint32(1 << 16) {
		if rne, up := e2m1Mag(k); rne != e2m1Big().rne[k] || up != e2m1Big().up[k] {
			t.Fatalf("key %#x: e2m1Mag gives %d, %d; the tables %d, %d", k, rne, up, e2m1Big().rne[k], e2m1Big().up[k])
		}
		a := (k & 0x7FFF) << 16
		if k>>15 != 0 {
			a |= 1
		}
		if a > 0x7F800000 {
			continue
		}
		x := math.Float32frombits(a)
		if got, want := e2m1Big().rne[k], uint8(E2M1.Encode(x, SatFinite)); got != want {
			t.Fatalf("key %#x (%g): RNE table %d, Encode %d", k, x, got, want)
		}
		if got, want := e2m1Big().up[k], e2m1HalfUpSlow(x); got != want {
			t.Fatalf("key %#x (%g): half-up table %d, rule %d", k, x, got, want)
		}
	}
}
