package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/kvcfg/kvcfg/server"
)

// An example is a command line shown to users: in a command's help, the
// README or the usage pages.
type example struct {
	where string
	line  string
}

// shellWords splits a command line the way a POSIX shell would for the
// simple lines examples use: words, '…' and "…" quotes, backslash-newline.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	in := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'' || c == '"':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				j = len(s) - i - 1
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			in = true
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// helpExamples collects the `kvcfg …` lines of every command's Long and
// Example text.
func helpExamples(cmd *cobra.Command) []example {
	var out []example
	for _, text := range []string{cmd.Long, cmd.Example} {
		for _, l := range strings.Split(strings.ReplaceAll(text, "\\\n", " "), "\n") {
			l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "$"))
			if strings.HasPrefix(l, "kvcfg ") || strings.HasPrefix(l, "curl ") || strings.Contains(l, "| kvcfg ") {
				out = append(out, example{where: "kvcfg " + cmd.Name() + " --help", line: l})
			}
		}
	}
	for _, c := range cmd.Commands() {
		out = append(out, helpExamples(c)...)
	}
	return out
}

var readmeBlock = regexp.MustCompile("(?s)```(?:sh|bash|console)\n(.*?)```")

// exampleDocs are the documents whose examples run: the README and the
// pages its examples moved to.
var exampleDocs = []string{"README.md", "docs/usage.md", "docs/serve.md"}

// readmeExamples collects the `go run ./cmd/kvcfg …` and `kvcfg …` lines of
// the shell blocks of exampleDocs, backslash continuations joined.
func readmeExamples(t *testing.T) []example {
	var out []example
	for _, doc := range exampleDocs {
		data, err := os.ReadFile(filepath.Join("..", "..", doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range readmeBlock.FindAllStringSubmatch(string(data), -1) {
			block := strings.ReplaceAll(m[1], "\\\n", " ")
			for _, l := range strings.Split(block, "\n") {
				l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "$"))
				if strings.HasPrefix(l, "go run ./cmd/kvcfg ") || strings.HasPrefix(l, "kvcfg ") || strings.HasPrefix(l, "curl ") {
					out = append(out, example{where: doc, line: l})
				}
			}
		}
	}
	return out
}

// Every example a user can copy works: kvcfg command lines exit 0, 1 (the
// engine refuses, as the example shows) or 3 (starts but misses the
// target), never 2 (bad input); curl examples get 200 from the API.
func TestExamplesRun(t *testing.T) {
	examples := append(helpExamples(NewRootCommand(strings.NewReader(""), io.Discard, io.Discard)), readmeExamples(t)...)
	if len(examples) < 10 {
		t.Fatalf("only %d examples found", len(examples))
	}
	srv, err := server.New(server.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h := srv.Handler()
	for _, ex := range examples {
		t.Run(ex.where+": "+ex.line, func(t *testing.T) {
			line := ex.line
			if i := strings.Index(line, " #"); i >= 0 {
				line = line[:i]
			}
			if strings.HasPrefix(line, "curl ") {
				words := shellWords(line)
				var body, path string
				for i, w := range words {
					if w == "-d" && i+1 < len(words) {
						body = words[i+1]
					}
					if j := strings.Index(w, "/api/"); j >= 0 {
						path = w[j:]
					}
				}
				method := "GET"
				if body != "" {
					method = "POST"
				}
				req := httptest.NewRequest(method, path, strings.NewReader(body))
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
				}
				return
			}
			stdin := ""
			if before, after, ok := strings.Cut(line, "|"); ok {
				w := shellWords(before)
				switch {
				case len(w) > 0 && w[0] == "echo":
					stdin = strings.Join(w[1:], " ") + "\n"
				case len(w) == 4 && w[0] == "seq" && w[2] == "1":
					for i := 1; i <= atoi(w[3]); i++ {
						stdin += fmt.Sprint(i, " ")
					}
				default:
					t.Skipf("needs the output of %q", before)
				}
				line = strings.TrimSpace(after)
			}
			line = strings.TrimPrefix(line, "go run ./cmd/kvcfg ")
			line = strings.TrimPrefix(line, "kvcfg ")
			args := shellWords(line)
			if len(args) == 0 || args[0] == "serve" || strings.Contains(line, ">") || strings.Contains(line, "$(") {
				t.Skip("long-running, redirecting or log-reading example")
			}
			for _, a := range args {
				if ext := filepath.Ext(a); ext == ".safetensors" || ext == ".log" {
					if _, err := os.Stat(a); err != nil {
						t.Skipf("reads the user's file %s", a)
					}
				}
			}
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), args, strings.NewReader(stdin), &stdout, &stderr)
			if code != 0 && code != 1 && code != 3 {
				t.Fatalf("exit %d\n%s%s", code, stdout.String(), stderr.String())
			}
		})
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
