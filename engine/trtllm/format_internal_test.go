package trtllm

import (
	"math"
	"testing"
)

// pyRepr follows Python's float repr.
func TestPyRepr(t *testing.T) {
	tests := []struct {
		x    float64
		want string
	}{
		{0.9, "0.9"},
		{float64(float32(0.9)), "0.8999999761581421"},
		{1, "1.0"},
		{80, "80.0"},
		{23.529411764705884, "23.529411764705884"},
		{1e-5, "1e-05"},
		{1e16, "1e+16"},
		{0, "0.0"},
		{math.Inf(1), "inf"},
		{math.NaN(), "nan"},
	}
	for _, tt := range tests {
		if got := pyRepr(tt.x); got != tt.want {
			t.Errorf("pyRepr(%v) = %q, want %q", tt.x, got, tt.want)
		}
	}
	if got := pyMinRepr(5, 5.5); got != "5" {
		t.Errorf("pyMinRepr(5, 5.5) = %q", got)
	}
	if got := pyMinRepr(6, 5.5); got != "5.5" {
		t.Errorf("pyMinRepr(6, 5.5) = %q", got)
	}
	if got := gib2(float64(5073376 * 35136)); got != "166.02" {
		t.Errorf("gib2 = %q", got)
	}
}

// The saturating helpers never overflow.
func TestSaturation(t *testing.T) {
	if got := satMul(math.MaxInt64/4, 8); got != math.MaxInt64/2 {
		t.Errorf("satMul = %d", got)
	}
	if floorInt(math.NaN()) != 0 || floorInt(-3) != 0 || ceilInt(1e300) != math.MaxInt64/2 || ceilInt(2.1) != 3 {
		t.Error("floorInt / ceilInt")
	}
	if cdiv(5, 0) != 0 || cdiv(65, 32) != 3 {
		t.Error("cdiv")
	}
}
