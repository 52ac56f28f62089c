package units_test

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcfg/kvcfg/units"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"80GiB", 80 << 30},
		{"80GB", 80_000_000_000},
		{"81559MiB", 81559 << 20},
		{"1234", 1234},
		{"78.50GiB", 785 << 30 / 10},
		{" 1.5 TiB ", 3 << 39},
		{"10g", 10 << 30},
		{"2KiB", 2048},
		{"1e3", 1000},
		{"512B", 512},
	}
	for _, tt := range tests {
		got, err := units.ParseSize(tt.in)
		if err != nil {
			t.Errorf("ParseSize(%q): %v", tt.in, err)
			continue
		}
		if int64(got) != tt.want {
			t.Errorf("ParseSize(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
	for _, bad := range []string{"", "GiB", "80XB", "-5", "1.2.3GiB", "NaN", "abc"} {
		if _, err := units.ParseSize(bad); !errors.Is(err, units.ErrSyntax) {
			t.Errorf("ParseSize(%q) err = %v, want ErrSyntax", bad, err)
		}
	}
}

func TestSizeJSON(t *testing.T) {
	var v struct {
		A units.Size `json:"a"`
		B units.Size `json:"b"`
	}
	if err := json.Unmarshal([]byte(`{"a":"80GiB","b":1024}`), &v); err != nil {
		t.Fatal(err)
	}
	if v.A != 80<<30 || v.B != 1024 {
		t.Errorf("got %d %d", v.A, v.B)
	}
	if err := json.Unmarshal([]byte(`{"a":true}`), &v); err == nil {
		t.Error("bool accepted")
	}
	b, _ := json.Marshal(v)
	if string(b) != `{"a":85899345920,"b":1024}` {
		t.Errorf("marshal: %s", b)
	}
}

func TestFormat(t *testing.T) {
	if got := units.FormatBytes(27158102016); got != "25.29 GiB" {
		t.Errorf("FormatBytes = %q", got)
	}
	if got := units.EngineGB(27158102016); got != "25.29" {
		t.Errorf("EngineGB = %q", got)
	}
	if got := units.FormatBytes(-2048); got != "-2.00 KiB" {
		t.Errorf("FormatBytes neg = %q", got)
	}
}

// FormatBytes spells every size as the %.2f / %d format it replaces.
func TestFormatBytesTable(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1, "1 B"}, {1023, "1023 B"}, {-1023, "-1023 B"}, {1024, "1.00 KiB"},
		{1535, "1.50 KiB"}, {1<<20 - 1, "1024.00 KiB"}, {1 << 20, "1.00 MiB"},
		{17_179_869_184, "16.00 GiB"}, {85_520_809_984, "79.65 GiB"}, {1 << 40, "1.00 TiB"},
		{-27158102016, "-25.29 GiB"}, {math.MaxInt64, "8388608.00 TiB"}, {math.MinInt64, "-8388608.00 TiB"},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, units.FormatBytes(tt.n)); diff != "" {
			t.Errorf("FormatBytes(%d) (-want +got):\n%s", tt.n, diff)
		}
		if got := string(units.AppendBytes([]byte("x="), tt.n)); got != "x="+tt.want {
			t.Errorf("AppendBytes(x=, %d) = %q, want %q", tt.n, got, "x="+tt.want)
		}
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"80GiB", "80GB", "1e3", "", "9999999999999TiB", "1.5 mib"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := units.ParseSize(s)
		if err == nil && v < 0 {
			t.Fatalf("negative size %d for %q", v, s)
		}
	})
}

func TestGroup(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", -1234567: "-1,234,567", 1379200: "1,379,200",
		-999: "-999", -1000: "-1,000", math.MaxInt64: "9,223,372,036,854,775,807", math.MinInt64: "-9,223,372,036,854,775,808"} {
		if got := units.Group(n); got != want {
			t.Errorf("Group(%d) = %q, want %q", n, got, want)
		}
		if got := string(units.AppendGroup([]byte("x="), n)); got != "x="+want {
			t.Errorf("AppendGroup(x=, %d) = %q, want %q", n, got, "x="+want)
		}
	}
	if a := testing.AllocsPerRun(100, func() { units.Group(1379200) }); a > 1 {
		t.Errorf("Group allocates %v times, want 1 (the string)", a)
	}
}
