//go:build amd64 && !purego

package quant

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestAVX2KernelsVEXOnly checks that the generated AVX2 kernels use only
// registers a VEX encoding reaches (X0–X15, Y0–Y15) and no mask registers:
// avo allocates from all 32 vector registers, and the assembler would
// silently encode the upper ones with EVEX, an AVX-512 instruction.
func TestAVX2KernelsVEXOnly(t *testing.T) {
	b, err := os.ReadFile("kernels_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	evex := regexp.MustCompile(`\b([XY](1[6-9]|2[0-9]|3[01])|Z[0-9]+|K[0-7])\b`)
	fn, n := "", 0
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "TEXT ") {
			fn = line
			if strings.Contains(line, "AVX2(") {
				n++
			}
			continue
		}
		if strings.Contains(fn, "AVX2(") && evex.MatchString(line) {
			t.Errorf("%s: %s", strings.Fields(fn)[1], strings.TrimSpace(line))
		}
	}
	if n == 0 {
		t.Fatal("no AVX2 kernels found")
	}
}
