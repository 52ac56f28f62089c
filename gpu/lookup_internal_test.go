package gpu

import (
	"strings"
	"testing"
)

// Lookup by scan finds what an index of every normalized name, alias and
// nvidia-smi name (the first entry wins) finds, for every spelling of
// every name and for names that are not there.
func TestLookupMatchesIndex(t *testing.T) {
	m := map[string]int{}
	var names []string
	for i, g := range catalog {
		for _, n := range append(append([]string{g.Name}, g.Aliases...), g.SMINames...) {
			if _, dup := m[normalize(n)]; !dup {
				m[normalize(n)] = i
			}
			names = append(names, n)
		}
	}
	for _, n := range names {
		for _, in := range []string{n, strings.ToUpper(n), strings.ToLower(n), " " + n + " ", strings.ReplaceAll(n, "-", "_"),
			strings.ReplaceAll(n, "-", " "), "NVIDIA " + n, "amd_" + n, n + "x", "é" + n} {
			want, ok := m[normalize(in)]
			if !ok {
				if k, cut := strings.CutPrefix(normalize(in), "nvidia-"); cut {
					want, ok = m[k]
				} else if k, cut := strings.CutPrefix(normalize(in), "amd-"); cut {
					want, ok = m[k]
				}
			}
			g, err := Lookup(in)
			switch {
			case ok && (err != nil || g.Name != catalog[want].Name):
				t.Errorf("Lookup(%q) = %q, %v; want %q", in, g.Name, err, catalog[want].Name)
			case !ok && err == nil:
				t.Errorf("Lookup(%q) = %q, want an error", in, g.Name)
			}
		}
	}
	for _, in := range []string{"", "  ", "NVIDIA", "nvidia-", "AMD ", "É", "h100é", strings.Repeat("h", 100)} {
		if g, err := Lookup(in); err == nil {
			t.Errorf("Lookup(%q) = %q", in, g.Name)
		}
	}
}

// index compares catalog names byte by byte after normByte, which is
// normalize only for ASCII names without surrounding space.
func TestCatalogNamesASCII(t *testing.T) {
	for _, g := range catalog {
		for _, n := range append(append([]string{g.Name}, g.Aliases...), g.SMINames...) {
			if !isASCII(n) || strings.TrimSpace(n) != n {
				t.Errorf("%q: not ASCII or has surrounding space", n)
			}
		}
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
