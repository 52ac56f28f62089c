// Package doccheck holds only tests: the references from code comments to
// the documents under docs/ resolve, and no comment cites a section of a
// document that is not in the repository.
package doccheck

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository root (this package is internal/doccheck).
const root = "../.."

// trackedFiles lists the repository's files with the given suffix, from
// git when it is available, else by walking the tree; this package's own
// files, which spell out what they look for, are left out.
func trackedFiles(t *testing.T, suffix string) []string {
	t.Helper()
	if out, err := exec.Command("git", "-C", root, "ls-files").Output(); err == nil {
		var files []string
		for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if strings.HasSuffix(f, suffix) && !strings.HasPrefix(f, "internal/doccheck/") {
				files = append(files, f)
			}
		}
		return files
	}
	var files []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if rel, _ := filepath.Rel(root, p); strings.HasSuffix(p, suffix) && !strings.HasPrefix(rel, "internal/doccheck/") {
			files = append(files, rel)
		}
		return nil
	})
	return files
}

var heading = regexp.MustCompile(`^#{1,6}\s+(.*)$`)

// anchors returns the GitHub heading anchors of a markdown document: lower
// case, punctuation other than '-' and '_' dropped, spaces turned to '-'.
func anchors(t *testing.T, doc string) map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join(root, doc))
	if err != nil {
		return nil
	}
	defer f.Close()
	set := map[string]bool{}
	fence := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			fence = !fence
		}
		m := heading.FindStringSubmatch(line)
		if fence || m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(m[1])) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127 && r != '§' && r != '—' && r != '–' && r != '→':
				b.WriteRune(r)
			}
		}
		set[b.String()] = true
	}
	return set
}

var (
	docRef  = regexp.MustCompile(`docs/([A-Za-z0-9_-]+\.md)(#[a-z0-9_-]+)?`)
	moreRef = regexp.MustCompile(`(?:, | and | through |, and )#([a-z0-9_-]+)`)
)

// Every docs/NAME.md#anchor in a Go file names an existing document and
// heading; an anchor that follows on the same line (", #other") belongs to
// the document named before it.
func TestDocReferencesResolve(t *testing.T) {
	cache := map[string]map[string]bool{}
	n := 0
	for _, f := range trackedFiles(t, ".go") {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			refs := docRef.FindAllStringSubmatchIndex(line, -1)
			for k, r := range refs {
				doc := line[r[2]:r[3]]
				set, ok := cache[doc]
				if !ok {
					set = anchors(t, "docs/"+doc)
					cache[doc] = set
				}
				if set == nil {
					t.Errorf("%s:%d: docs/%s does not exist", f, i+1, doc)
					continue
				}
				var want []string
				if r[4] >= 0 {
					want = append(want, line[r[4]+1:r[5]])
				}
				end := len(line)
				if k+1 < len(refs) {
					end = refs[k+1][0]
				}
				for _, m := range moreRef.FindAllStringSubmatch(line[r[1]:end], -1) {
					want = append(want, m[1])
				}
				for _, a := range want {
					n++
					if !set[a] {
						t.Errorf("%s:%d: docs/%s has no heading #%s", f, i+1, doc, a)
					}
				}
			}
		}
	}
	if n < 50 {
		t.Errorf("only %d section references found; the scan is broken", n)
	}
}

// Comments cite documents in the repository by heading, not numbered
// sections of documents outside it.
func TestNoSectionSigns(t *testing.T) {
	for _, f := range trackedFiles(t, ".go") {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, "§") {
				t.Errorf("%s:%d: cites a numbered section (§); cite docs/NAME.md#heading instead: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}

var pathRef = regexp.MustCompile("`((?:[a-z]+/)*[a-z]+/?)`")

// The package paths docs/ARCHITECTURE.md names exist.
func TestArchitecturePackagesExist(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "docs/ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue // the package table's rows
		}
		cell := strings.SplitN(line, "|", 3)[1]
		for _, m := range pathRef.FindAllStringSubmatch(cell, -1) {
			p := strings.TrimSuffix(m[1], "/")
			if strings.Contains(p, "...") {
				continue
			}
			if st, err := os.Stat(filepath.Join(root, p)); err != nil || !st.IsDir() {
				t.Errorf("docs/ARCHITECTURE.md lists package %q, which does not exist", p)
			}
		}
	}
}

// mdLink is a markdown link's target: "](docs/fit.md#serving-a-workload)".
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// Every relative link in the repository's markdown files names an existing
// file, and an anchor into a markdown file names one of its headings.
func TestMarkdownLinksResolve(t *testing.T) {
	n := 0
	for _, f := range trackedFiles(t, ".md") {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		fence := false
		for i, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "```") {
				fence = !fence
			}
			if fence {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				n++
				path, anchor, _ := strings.Cut(target, "#")
				doc := f
				if path != "" {
					doc = filepath.ToSlash(filepath.Join(filepath.Dir(f), path))
				}
				if _, err := os.Stat(filepath.Join(root, doc)); err != nil {
					t.Errorf("%s:%d: link to %s, which does not exist", f, i+1, target)
					continue
				}
				if anchor != "" && strings.HasSuffix(doc, ".md") && !anchors(t, doc)[anchor] {
					t.Errorf("%s:%d: link to %s: %s has no heading #%s", f, i+1, target, doc, anchor)
				}
			}
		}
	}
	if n < 20 {
		t.Errorf("only %d relative links found; the scan is broken", n)
	}
}
