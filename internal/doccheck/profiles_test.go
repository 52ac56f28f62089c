package doccheck

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/engine/vllm"
)

// vllmProfileList is a list of vLLM profiles as the docs write it: from 0.6
// on, items separated by ", ", " or ", " and " or "|", ending in latest.
var vllmProfileList = regexp.MustCompile(`\b0\.6((?:(?:, | or | and |\|)(?:0\.\d+))*(?:,? or |,? and |\||, )latest)\b`)

// Every list of vLLM's version profiles in the docs, the README and the
// Go sources (the flag help) is the whole list, vllm.Profiles() in order
// (issue 32: the docs listed different sets), and the profile table of
// docs/vllm-rules.md has one row per profile.
func TestVLLMProfileLists(t *testing.T) {
	var want []string
	for _, p := range vllm.Profiles() {
		want = append(want, string(p))
	}
	files := append(trackedFiles(t, ".md"), trackedFiles(t, ".go")...)
	found := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range vllmProfileList.FindAllString(string(b), -1) {
			found++
			got := regexp.MustCompile(`0\.\d+|latest`).FindAllString(m, -1)
			if !slices.Equal(got, want) {
				t.Errorf("%s lists vLLM profiles %q, want %q (vllm.Profiles())", f, m, strings.Join(want, ", "))
			}
		}
	}
	if found < 3 {
		t.Errorf("found %d lists of vLLM profiles, want the flag help, usage.md and library.md at least", found)
	}
	b, err := os.ReadFile(filepath.Join(root, "docs", "vllm-rules.md"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\| [^|]+ \\| V").FindAllStringSubmatch(string(b), -1) {
		rows = append(rows, m[1])
	}
	if !slices.Equal(rows, want) {
		t.Errorf("docs/vllm-rules.md's profile table has %q, want %q", rows, want)
	}
}
