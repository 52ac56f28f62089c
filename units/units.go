// Package units parses and formats memory sizes: "80GiB", "80GB",
// "81559MiB", "1.5 TiB" and plain byte counts.
//
// Binary suffixes (KiB, MiB, GiB, TiB, and the short K, M, G, T) are powers
// of 1024; decimal suffixes (kB, MB, GB, TB) are powers of 1000. Note that
// SGLang prints "GB" in its logs but means GiB; pass those readings with a
// GiB suffix ("78.81GiB").
package units

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrSyntax reports a size string that cannot be parsed.
var ErrSyntax = errors.New("units: invalid size")

// Byte multiples.
const (
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
	TiB int64 = 1 << 40
)

// Size is a number of bytes. Its JSON form is a number of bytes; it also
// decodes strings such as "80GiB".
type Size int64

var suffixes = map[string]float64{
	"": 1, "b": 1,
	"k": 1 << 10, "kib": 1 << 10, "ki": 1 << 10,
	"m": 1 << 20, "mib": 1 << 20, "mi": 1 << 20,
	"g": 1 << 30, "gib": 1 << 30, "gi": 1 << 30,
	"t": 1 << 40, "tib": 1 << 40, "ti": 1 << 40,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
}

// ParseSize parses s ("80GiB", "80GB", "81559MiB", "1234", "78.81 GiB").
// Fractional values are rounded to the nearest byte.
func ParseSize(s string) (Size, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("%w: empty", ErrSyntax)
	}
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.' || t[i] == '+' || t[i] == 'e' && i > 0 && i+1 < len(t) && (t[i+1] >= '0' && t[i+1] <= '9' || t[i+1] == '-' || t[i+1] == '+')) {
		if t[i] == 'e' {
			i++ // keep the exponent sign with the mantissa
		}
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := suffixes[unit]
	if !ok || num == "" {
		return 0, fmt.Errorf("%w %q (use e.g. 80GiB, 80GB, 81559MiB or a byte count)", ErrSyntax, s)
	}
	if unit == "" || unit == "b" {
		if n, err := strconv.ParseInt(num, 10, 64); err == nil {
			if n < 0 {
				return 0, fmt.Errorf("%w %q: negative", ErrSyntax, s)
			}
			return Size(n), nil
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%w %q", ErrSyntax, s)
	}
	b := math.Round(v * mult)
	if b < 0 || b > math.MaxInt64/2 {
		return 0, fmt.Errorf("%w %q: out of range", ErrSyntax, s)
	}
	return Size(b), nil
}

// Bytes returns s as an int64.
func (s Size) Bytes() int64 { return int64(s) }

// GiB returns s in GiB as a float (the unit SGLang's profiler works in).
func (s Size) GiB() float64 { return float64(s) / float64(GiB) }

// MiB returns s in whole MiB (floor).
func (s Size) MiB() int64 { return int64(s) / MiB }

// String formats s with a binary suffix and two decimals ("78.50 GiB").
func (s Size) String() string { return FormatBytes(int64(s)) }

// Set implements pflag.Value (and flag.Value).
func (s *Size) Set(v string) error {
	p, err := ParseSize(v)
	if err != nil {
		return err
	}
	*s = p
	return nil
}

// Type implements pflag.Value.
func (s *Size) Type() string { return "size" }

// MarshalJSON writes the byte count.
func (s Size) MarshalJSON() ([]byte, error) { return []byte(strconv.FormatInt(int64(s), 10)), nil }

// UnmarshalJSON accepts a number of bytes or a size string.
func (s *Size) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err == nil {
		if strings.TrimSpace(str) == "" {
			*s = 0
			return nil
		}
		return s.Set(str)
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("%w: %s (want a byte count or a string like \"80GiB\")", ErrSyntax, b)
	}
	if f < 0 || math.IsNaN(f) || f > math.MaxInt64/2 {
		return fmt.Errorf("%w: %s out of range", ErrSyntax, b)
	}
	*s = Size(math.Round(f))
	return nil
}

// FormatBytes formats n bytes with a binary suffix: "512 B", "1.50 KiB",
// "25.29 GiB".
func FormatBytes(n int64) string {
	var b [24]byte
	return string(AppendBytes(b[:0], n))
}

// AppendBytes appends FormatBytes(n) to dst, so that a message with a size
// in it is built in one allocation.
func AppendBytes(dst []byte, n int64) []byte {
	// strconv's 'f' with precision 2 is fmt's %.2f; this runs on every plan.
	u := float64(n)
	if n < 0 {
		u = -u
		dst = append(dst, '-')
	}
	unit := ""
	switch {
	case u >= float64(TiB):
		u, unit = u/float64(TiB), " TiB"
	case u >= float64(GiB):
		u, unit = u/float64(GiB), " GiB"
	case u >= float64(MiB):
		u, unit = u/float64(MiB), " MiB"
	case u >= float64(KiB):
		u, unit = u/float64(KiB), " KiB"
	default:
		dst = strconv.AppendInt(dst, int64(u), 10)
		return append(dst, " B"...)
	}
	dst = strconv.AppendFloat(dst, u, 'f', 2, 64)
	return append(dst, unit...)
}

// EngineGB formats n bytes the way SGLang logs sizes: n / 2^30 with two
// decimals and no unit ("25.29").
func EngineGB(n int64) string { return fmt.Sprintf("%.2f", float64(n)/float64(GiB)) }

// Group writes n in decimal with a comma between thousands ("1,379,200").
func Group(n int64) string {
	var b [32]byte
	return string(AppendGroup(b[:0], n))
}

// AppendGroup appends Group(n) to dst.
func AppendGroup(dst []byte, n int64) []byte {
	var d [20]byte
	s := strconv.AppendInt(d[:0], n, 10)
	if s[0] == '-' {
		dst = append(dst, '-')
		s = s[1:]
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, c)
	}
	return dst
}
