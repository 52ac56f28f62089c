package hub

import (
	"regexp"
	"strings"
	"testing"
)

// FuzzHashMatchers checks the hand-written matchers against the regular
// expressions they replace.
func FuzzHashMatchers(f *testing.F) {
	for _, s := range []string{"", "0123456789abcdef0123456789abcdef01234567", strings.Repeat("ab", 32), strings.Repeat("ab", 31) + "g1",
		"0123456789ABCDEF0123456789abcdef01234567", strings.Repeat("a", 41), strings.Repeat("0", 39)} {
		f.Add(s)
	}
	commit := regexp.MustCompile(`^[0-9a-f]{40}$`)
	etag := regexp.MustCompile(`^[0-9a-f]{40}$|^[0-9a-f]{64}$`)
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isCommit(s), commit.MatchString(s); got != want {
			t.Errorf("isCommit(%q) = %v, regexp says %v", s, got, want)
		}
		if got, want := isEtag(s), etag.MatchString(s); got != want {
			t.Errorf("isEtag(%q) = %v, regexp says %v", s, got, want)
		}
	})
}
