package gpu

import "testing"

func TestPerfOf(t *testing.T) {
	p, ok := PerfOf("h100")
	if !ok || p.HBMBytesPerS != 3.35e12 || p.BF16FLOPS != 989e12 || p.Source == "" {
		t.Fatalf("H100: %+v %v", p, ok)
	}
	if _, ok := PerfOf("T4"); ok {
		t.Error("T4 has no figures in the table")
	}
	for name := range perf {
		if _, err := Lookup(name); err != nil {
			t.Errorf("perf row %q is not a catalog name: %v", name, err)
		}
	}
}
