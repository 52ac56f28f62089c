package catalog

import (
	"regexp"
	"testing"
)

// FuzzIDMatchers checks the hand-written matchers against the regular
// expressions they replace.
func FuzzIDMatchers(f *testing.F) {
	for _, s := range []string{"meta-llama/Llama-3.1-8B", "a/b", "/b", "a/", "a//b", ".a/b", "a/-b", "a/b/c",
		"0123456789abcdef0123456789abcdef01234567", "0123456789ABCDEF0123456789abcdef01234567", "", "org/na me", "é/x"} {
		f.Add(s)
	}
	id := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$`)
	commit := regexp.MustCompile(`^[0-9a-f]{40}$`)
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isRepoID(s), id.MatchString(s); got != want {
			t.Errorf("isRepoID(%q) = %v, regexp says %v", s, got, want)
		}
		if got, want := IsCommit(s), commit.MatchString(s); got != want {
			t.Errorf("IsCommit(%q) = %v, regexp says %v", s, got, want)
		}
	})
}
