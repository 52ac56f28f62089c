package readmecheck

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	// The program uses these packages. Importing them here makes a change
	// to them (or to what they import) invalidate go test's cached result,
	// which otherwise sees only the documents and go.sum.
	_ "github.com/kvcfg/kvcfg/plan"
	_ "github.com/kvcfg/kvcfg/units"
)

const modulePath = "github.com/kvcfg/kvcfg"

// libraryDoc holds the library program, relative to the repository root
// (the README links to it).
const libraryDoc = "docs/library.md"

// fence is one fenced code block of a markdown file.
type fence struct {
	lang, body string
}

// fences returns the fenced code blocks of md in order. A block opens with
// a line starting with ``` (the rest of the line is its language) and closes
// with a line that is exactly ```.
func fences(md string) ([]fence, error) {
	var out []fence
	var cur *fence
	var body strings.Builder
	for _, line := range strings.Split(md, "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &fence{lang: strings.TrimSpace(strings.TrimPrefix(line, "```"))}
			body.Reset()
		case cur != nil && strings.TrimRight(line, " ") == "```":
			cur.body = body.String()
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			body.WriteString(line)
			body.WriteByte('\n')
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("readmecheck: a ```%s block is never closed", cur.lang)
	}
	return out, nil
}

// libraryProgram returns the document's one Go program (a ```go block with
// `package main`) and the ```text block right after it (its output).
func libraryProgram(md string) (program, output string, err error) {
	fs, err := fences(md)
	if err != nil {
		return "", "", err
	}
	found := -1
	for i, f := range fs {
		if f.lang == "go" && (strings.HasPrefix(f.body, "package main\n") || strings.Contains(f.body, "\npackage main\n")) {
			if found >= 0 {
				return "", "", errors.New("readmecheck: more than one ```go block with package main")
			}
			found = i
		}
	}
	if found < 0 {
		return "", "", errors.New("readmecheck: no ```go block with package main")
	}
	if found+1 >= len(fs) || fs[found+1].lang != "text" {
		return "", "", errors.New("readmecheck: the program's block is not followed by a ```text block with its output")
	}
	return fs[found].body, fs[found+1].body, nil
}

func TestLibraryProgram(t *testing.T) {
	goCmd := findGo(t) // GOROOT/bin/go of the toolchain running the test, when PATH lacks it
	root, err := repoRoot(goCmd)
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(root, libraryDoc))
	if err != nil {
		t.Fatal(err)
	}
	program, want, err := libraryProgram(string(md))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := fmt.Sprintf("module example.com/readme\n\ngo %s\n\nrequire %s v0.0.0\n\nreplace %s => %s\n",
		goVersion(t, filepath.Join(root, "go.mod")), modulePath, modulePath, root)
	for name, data := range map[string]string{"main.go": program, "go.mod": gomod, "go.sum": string(sum)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	exe := filepath.Join(dir, "readme")
	if runtime.GOOS == "windows" {
		exe += ".exe"
	}
	build := exec.Command(goCmd, "build", "-o", exe, ".")
	build.Dir = dir
	// Offline: the module cache already holds every dependency (the
	// repository's own build needed them); -mod=mod lets go add the
	// requirements the replaced module brings.
	build.Env = append(os.Environ(), "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"),
		"GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("the "+libraryDoc+" program does not build outside the module: %v\n%s\n--- go.mod\n%s--- main.go\n%s", err, out, gomod, program)
	}
	run := exec.Command(exe)
	run.Dir = dir
	var stdout, stderr bytes.Buffer
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Run(); err != nil {
		t.Fatalf("the "+libraryDoc+" program fails: %v\n%s", err, stderr.String())
	}
	if got := stdout.String(); got != want {
		t.Errorf("the %s program prints\n%s\nthe page shows\n%s", libraryDoc, got, want)
	}
}

// repoRoot is the directory of the main module's go.mod, checked to be
// this module's.
func repoRoot(goCmd string) (string, error) {
	out, err := exec.Command(goCmd, "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("readmecheck: go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	data, err := os.ReadFile(gomod)
	if err != nil {
		return "", fmt.Errorf("readmecheck: %w", err)
	}
	if !bytes.HasPrefix(data, []byte("module "+modulePath+"\n")) {
		return "", fmt.Errorf("readmecheck: %s is not module %s", gomod, modulePath)
	}
	return filepath.Dir(gomod), nil
}

// goVersion is the go directive of the go.mod at path.
func goVersion(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "go "); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("%s has no go directive", path)
	return ""
}

func TestLibraryProgramExtraction(t *testing.T) {
	tests := []struct {
		name, md      string
		program, want string
		err           string
	}{
		{"program and output", "x\n```go\npackage main\n\nfunc main() {}\n```\n\n```text\nhi\n```\n",
			"package main\n\nfunc main() {}\n", "hi\n", ""},
		{"comment above package", "```go\n// Doc.\npackage main\n```\n```text\n```\n", "// Doc.\npackage main\n", "", ""},
		{"snippets are skipped", "```go\nx := 1\n```\n```go\npackage main\n```\n```text\nout\n```\n", "package main\n", "out\n", ""},
		{"no program", "```go\nx := 1\n```\n", "", "", "no ```go block"},
		{"two programs", "```go\npackage main\n```\n```text\n```\n```go\npackage main\n```\n", "", "", "more than one"},
		{"no output block", "```go\npackage main\n```\n```sh\nls\n```\n", "", "", "not followed"},
		{"unclosed", "```go\npackage main\n", "", "", "never closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			program, want, err := libraryProgram(tt.md)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil || program != tt.program || want != tt.want {
				t.Errorf("got %q, %q, %v; want %q, %q", program, want, err, tt.program, tt.want)
			}
		})
	}
}

// readmeLimit is the most lines README.md may have: the rest belongs in
// docs/.
const readmeLimit = 200

// The README is short, opens with the two commands and the one install
// line, and every ./cmd/NAME that it or a page under docs/ names exists.
func TestReadme(t *testing.T) {
	goCmd := findGo(t)
	root, err := repoRoot(goCmd)
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(md)
	if n := strings.Count(readme, "\n"); n >= readmeLimit {
		t.Errorf("README.md has %d lines; keep it under %d (move the rest to docs/)", n, readmeLimit)
	}
	for _, want := range []string{
		"\ngo run ./cmd/kvcfg plan\n",
		"\ngo test ./...\n",
		"go install " + modulePath + "/cmd/kvcfg@latest",
		"go install ./cmd/kvcfg",
	} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md lacks %q", strings.TrimSpace(want))
		}
	}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	for _, path := range append([]string{filepath.Join(root, "README.md")}, docs...) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, path)
		for _, m := range cmdRef.FindAllStringSubmatch(string(data), -1) {
			if st, err := os.Stat(filepath.Join(root, "cmd", m[1])); err != nil || !st.IsDir() {
				t.Errorf("%s names cmd/%s, which does not exist", rel, m[1])
			}
		}
	}
}

// cmdRef is a command of this module as a document runs or installs it:
// "./cmd/kvcfg", "kvcfg/cmd/kvcfg@latest".
var cmdRef = regexp.MustCompile(`(?:\./|kvcfg/)cmd/([A-Za-z0-9][A-Za-z0-9_.-]*?)(?:@|/|\s|$|[^A-Za-z0-9_.-])`)

// The README's fit example prints what the README shows: the ```sh block
// of one `go run ./cmd/kvcfg fit ...` line and the ```text block after it.
func TestReadmeFitExample(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go run ./cmd/kvcfg")
	}
	goCmd := findGo(t)
	root, err := repoRoot(goCmd)
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	args, want, err := fitExample(string(md))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goCmd, append([]string{"run", "./cmd/kvcfg"}, args...)...)
	cmd.Dir = root
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go run ./cmd/kvcfg %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	if got := stdout.String(); got != want {
		t.Errorf("the README's fit example prints\n%s\nthe README shows\n%s", got, want)
	}
}

// fitExample returns the arguments of the README's fit example and the
// output shown after it.
func fitExample(md string) (args []string, output string, err error) {
	fs, err := fences(md)
	if err != nil {
		return nil, "", err
	}
	const prefix = "go run ./cmd/kvcfg "
	for i, f := range fs {
		line := strings.TrimSpace(f.body)
		if f.lang != "sh" || strings.Contains(line, "\n") || !strings.HasPrefix(line, prefix+"fit ") {
			continue
		}
		if i+1 >= len(fs) || fs[i+1].lang != "text" {
			return nil, "", errors.New("readmecheck: the fit example is not followed by a ```text block with its output")
		}
		return strings.Fields(strings.TrimPrefix(line, prefix)), fs[i+1].body, nil
	}
	return nil, "", errors.New("readmecheck: no ```sh block with one `go run ./cmd/kvcfg fit` line")
}

// findGo is the go command: on PATH, else the toolchain's running the test.
func findGo(t *testing.T) string {
	t.Helper()
	if goCmd, err := exec.LookPath("go"); err == nil {
		return goCmd
	}
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goCmd); err != nil {
		t.Skip("no go command")
	}
	return goCmd
}

func TestFitExampleExtraction(t *testing.T) {
	md := "```sh\ngo run ./cmd/kvcfg plan\n```\n```sh\ngo run ./cmd/kvcfg fit -n 4 --gpus H100\n```\n\n```text\nrow\n```\n"
	args, out, err := fitExample(md)
	if err != nil || strings.Join(args, " ") != "fit -n 4 --gpus H100" || out != "row\n" {
		t.Errorf("got %q, %q, %v", args, out, err)
	}
	if _, _, err := fitExample("```sh\ngo run ./cmd/kvcfg fit -n 4\n```\n```sh\n```\n"); err == nil || !strings.Contains(err.Error(), "not followed") {
		t.Errorf("err %v, want one about the missing output", err)
	}
	if _, _, err := fitExample("```sh\ngo run ./cmd/kvcfg plan\n```\n"); err == nil {
		t.Error("no fit example: no error")
	}
}

func TestCmdRef(t *testing.T) {
	text := "go run ./cmd/kvcfg plan; go install github.com/kvcfg/kvcfg/cmd/kvcfg@latest; `go run ./cmd/kvcfg-loadgen`; (./cmd/x) go install ./cmd/...@latest"
	var got []string
	for _, m := range cmdRef.FindAllStringSubmatch(text, -1) {
		got = append(got, m[1])
	}
	if strings.Join(got, ",") != "kvcfg,kvcfg,kvcfg-loadgen,x" {
		t.Errorf("got %q", got)
	}
}
