package trtllm

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// gibF is 2^30 as a float, the unit of TensorRT-LLM's memory log lines.
const gibF = float64(1 << 30)

// GiB is 2^30 bytes.
const GiB = int64(1) << 30

// gib2 formats bytes as TensorRT-LLM's f"{b / GB:.2f}" and C++ "%0.2f".
func gib2(b float64) string { return strconv.FormatFloat(b/gibF, 'f', 2, 64) }

// pyRepr formats a float64 as Python's repr: the shortest round-trip digits,
// fixed notation for 1e-4 ≤ |x| < 1e16 (with ".0" for integral values),
// exponent notation otherwise.
func pyRepr(x float64) string {
	switch {
	case math.IsNaN(x):
		return "nan"
	case math.IsInf(x, 1):
		return "inf"
	case math.IsInf(x, -1):
		return "-inf"
	case x == 0:
		if math.Signbit(x) {
			return "-0.0"
		}
		return "0.0"
	}
	a := math.Abs(x)
	if a >= 1e-4 && a < 1e16 {
		s := strconv.FormatFloat(x, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	return strconv.FormatFloat(x, 'e', -1, 64)
}

// fractionRepr is the fraction as the profile logs it: the C++ float widened
// to double (1.0, 1.1 and engine builds) or the Python float (latest).
func fractionRepr(f float64, r rules) string {
	if r.float32Fraction {
		return pyRepr(float64(float32(f)))
	}
	return pyRepr(f)
}

// fractionValue is the fraction the profile computes with.
func fractionValue(f float64, r rules) float64 {
	if r.float32Fraction {
		return float64(float32(f))
	}
	return f
}

// floorInt converts a non-negative float to int64, saturating instead of
// overflowing and mapping NaN and negatives to 0.
func floorInt(x float64) int64 {
	switch {
	case math.IsNaN(x) || x <= 0:
		return 0
	case x >= math.MaxInt64/2:
		return math.MaxInt64 / 2
	}
	return int64(math.Floor(x))
}

// ceilInt is floorInt rounding up.
func ceilInt(x float64) int64 {
	switch {
	case math.IsNaN(x) || x <= 0:
		return 0
	case x >= math.MaxInt64/2:
		return math.MaxInt64 / 2
	}
	return int64(math.Ceil(x))
}

// cdiv is ceil(a/b) for non-negative a and positive b.
func cdiv(a, b int64) int64 {
	if b <= 0 {
		return 0
	}
	return (a + b - 1) / b
}

// satMul multiplies non-negative numbers, saturating at MaxInt64/2.
func satMul(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > (math.MaxInt64/2)/b {
		return math.MaxInt64 / 2
	}
	return a * b
}

// pyList formats ints as a Python list ("[86720]", "[128, 131072]").
func pyList(v []int) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.Itoa(x)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// pyMinRepr renders Python's min(a, b) of an int a and a float b: the int
// when it is not larger, else the float's repr.
func pyMinRepr(a int64, b float64) string {
	if float64(a) <= b {
		return strconv.FormatInt(a, 10)
	}
	return pyRepr(b)
}

// cFloat is C's "%f".
func cFloat(f float64) string { return fmt.Sprintf("%f", f) }
