package explain_test

import (
	"os"
	"path/filepath"
	"regexp/syntax"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/engine/trtllm"
	"github.com/kvcfg/kvcfg/engine/vllm"
	"github.com/kvcfg/kvcfg/explain"
)

// The engines' messages live in the engines: no literal run of any
// pattern (12 characters or more) appears in explain's own code, and every
// pattern is one explain knows.
func TestNoEngineMessagesInExplain(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var src strings.Builder
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(b)
	}
	known := map[string]bool{}
	for _, k := range explain.Known() {
		known[k] = true
	}
	var all []engine.Pattern
	for _, ps := range [][]engine.Pattern{sglang.Patterns(), vllm.Patterns(), trtllm.Patterns(), engine.Patterns()} {
		all = append(all, ps...)
	}
	for _, p := range all {
		if !known[p.Engine+"/"+p.Name] {
			t.Errorf("explain does not know %s/%s", p.Engine, p.Name)
		}
		re, err := syntax.Parse(p.Expr, syntax.Perl)
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		for _, lit := range literals(re) {
			if len(lit) >= 12 && strings.Contains(src.String(), lit) {
				t.Errorf("%s/%s: explain's code holds the engine's text %q", p.Engine, p.Name, lit)
			}
		}
	}
	if len(all) != len(explain.Known()) {
		t.Errorf("%d patterns, explain knows %d", len(all), len(explain.Known()))
	}
}

// literals are the literal runs of a parsed regular expression.
func literals(re *syntax.Regexp) []string {
	if re.Op == syntax.OpLiteral {
		return []string{string(re.Rune)}
	}
	var out []string
	for _, s := range re.Sub {
		out = append(out, literals(s)...)
	}
	return out
}
