package gpu

import "testing"

func BenchmarkLookup(b *testing.B) {
	for _, name := range []string{"H100", "h100-80gb", "NVIDIA H200", "MI355X"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Lookup(name); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
