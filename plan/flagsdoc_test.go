package plan_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/plan"
)

// flagsDocPath is docs/flags.md, from this package's directory.
var flagsDocPath = filepath.Join("..", "docs", "flags.md")

// flagsDocRegenerate is the command that rewrites docs/flags.md.
const flagsDocRegenerate = "KVCFG_UPDATE_DOCS=1 go test ./plan -run TestFlagsDoc"

// docDefault finds the default a flag's help names: the rest of the
// parenthetical from "default" ("tensor parallel size (default 1)" → "1").
// An option marked "(default)" is the default too ("sglang (default), vllm
// or trtllm" → "sglang").
var (
	docDefault       = regexp.MustCompile(`[(;]\s*default:?\s+([^)]*)\)`)
	docDefaultOption = regexp.MustCompile("([\\w.-]+) \\(default\\)")
)

// flagsDoc renders the flag table (plan.Flags, plan.EngineColumns) as
// docs/flags.md: the engines, then one row per flag with its request key,
// aliases, kind, default, engines and each engine's spelling.
func flagsDoc() string {
	cols := plan.EngineColumns()
	var b strings.Builder
	b.WriteString("# Planning flags\n\n")
	b.WriteString("<!-- Generated from plan/flags.go by TestFlagsDoc; do not edit. Regenerate with:\n")
	b.WriteString("     " + flagsDocRegenerate + " -->\n\n")
	b.WriteString("Every planning input is one row of one table, `plan/flags.go`. `kvcfg plan`, `compare`, `fit`,\n")
	b.WriteString("`explain` and `simulate` take these flags (kvcfg's name or any alias); the HTTP API takes the same\n")
	b.WriteString("inputs as JSON keys (the `key` column) and serves this table as `GET /api/v1/flags`. Every flag\n")
	b.WriteString("also takes a comma list (`--tp-size 1,2,4 --kv-cache-dtype auto,fp8_e4m3`): one plan per\n")
	b.WriteString("combination. A flag the request's engine does not take is bad input (exit 2) whose message names\n")
	b.WriteString("that engine's flag for the same setting; aliases given different values are too, as is 0 for a\n")
	b.WriteString("flag marked \"not 0\". Sizes take `80GiB`, `81559MiB`, decimal `80GB` or bytes. The other flags of\n")
	b.WriteString("each command (output format, workload, fit's search) are in `kvcfg COMMAND --help`.\n\n")
	b.WriteString("This page is generated from the table by `" + flagsDocRegenerate + "`;\n")
	b.WriteString("`go test ./plan` fails when it is stale.\n\n")

	b.WriteString("## Engines\n\n")
	b.WriteString("An engine's spellings are its own launch flags (or, for TensorRT-LLM options without a\n")
	b.WriteString("trtllm-serve flag, the `--extra_llm_api_options` YAML path). Where kvcfg takes them as flags\n")
	b.WriteString("they are aliases of kvcfg's name; `compare` and `fit` print each engine's launch flags in the\n")
	b.WriteString("order below.\n\n")
	b.WriteString("| engine | `--engine` | kvcfg takes its spellings as flags | launch flags, in order |\n|---|---|---|---|\n")
	for _, c := range cols {
		native := "no: kvcfg's names"
		if c.Native {
			native = "yes"
		}
		b.WriteString("| " + c.Label + " | `" + c.Engine + "` | " + native + " | " + keyList(c.Keys) + " |\n")
	}

	b.WriteString("\n## Flags\n\n")
	b.WriteString("In the order the commands register them. The default is the one the help names; \"—\" there means\n")
	b.WriteString("unset, so the engine's own default (or the model's value) applies. \"—\" in an engine's column: the\n")
	b.WriteString("engine does not take the input; \"(kvcfg)\": it takes it, but the input is kvcfg's own (a\n")
	b.WriteString("measurement, the GPU, the model) and has no launch flag.\n\n")
	b.WriteString("| flag | key | aliases | kind | default | not 0 |")
	for _, c := range cols {
		b.WriteString(" " + c.Label + " |")
	}
	b.WriteString(" help |\n|---|---|---|---|---|---|")
	for range cols {
		b.WriteString("---|")
	}
	b.WriteString("---|\n")
	for _, f := range plan.Flags() {
		flagsDocRow(&b, f, cols)
	}
	return b.String()
}

// flagsDocRow writes one flag's row of the table.
func flagsDocRow(b *strings.Builder, f plan.Flag, cols []plan.EngineColumn) {
	var aliases []string
	for _, a := range f.Aliases {
		s := "`" + a.Name + "`"
		if a.Note != "" {
			s += " (" + a.Note + ")"
		}
		aliases = append(aliases, s)
	}
	for _, k := range f.KeyAliases {
		aliases = append(aliases, "key `"+k+"`")
	}
	def := helpDefault(f.Help)
	if def == "" && f.Kind == plan.KindBool {
		def = "false"
	}
	nonZero := ""
	if f.NonZero {
		nonZero = "yes"
	}
	b.WriteString("| `" + f.Name + "` | `" + f.Key + "` | " + orDash(strings.Join(aliases, ", ")) + " | " +
		string(f.Kind) + " | " + cell(orDash(def)) + " | " + nonZero + " |")
	for _, c := range cols {
		switch s := f.Spelling[c.Engine]; {
		case !f.Accepts(c.Engine):
			b.WriteString(" — |")
		case s == "":
			b.WriteString(" (kvcfg) |")
		default:
			b.WriteString(" `" + s + "` |")
		}
	}
	b.WriteString(" " + cell(f.Help) + " |\n")
}

// helpDefault is the default a flag's help text names, "" when none.
func helpDefault(help string) string {
	if m := docDefault.FindStringSubmatch(help); m != nil {
		return strings.TrimSpace(m[1])
	}
	if m := docDefaultOption.FindStringSubmatch(help); m != nil {
		return m[1]
	}
	return ""
}

// keyList formats request keys as code spans.
func keyList(keys []string) string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = "`" + k + "`"
	}
	return strings.Join(out, ", ")
}

// cell escapes text for a markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// orDash is s, or "—" when s is empty.
func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// docs/flags.md is the flag table as flagsDoc renders it; with
// KVCFG_UPDATE_DOCS=1 the test rewrites it instead.
func TestFlagsDoc(t *testing.T) {
	want := flagsDoc()
	if os.Getenv("KVCFG_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(flagsDocPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(flagsDocPath)
	if err != nil {
		t.Fatalf("%v; generate it with: %s", err, flagsDocRegenerate)
	}
	if string(got) != want {
		t.Errorf("docs/flags.md is stale (plan/flags.go changed); regenerate it with:\n\t%s", flagsDocRegenerate)
	}
}

// The generator covers every flag and engine, and reads defaults out of
// the help text.
func TestFlagsDocContent(t *testing.T) {
	doc := flagsDoc()
	for _, f := range plan.Flags() {
		if !strings.Contains(doc, "| `"+f.Name+"` | `"+f.Key+"` |") {
			t.Errorf("no row for %s", f.Name)
		}
	}
	for _, c := range plan.EngineColumns() {
		if !strings.Contains(doc, "| "+c.Label+" | `"+c.Engine+"` |") {
			t.Errorf("no row for engine %s", c.Engine)
		}
	}
	for help, want := range map[string]string{
		"tensor parallel size (default 1)":                    "1",
		"context length (default: the model's)":               "the model's",
		"rules (e.g. 0.4.6, latest; default: the newest one)": "the newest one",
		"vLLM: fraction (default 0.92; 0.9 with --vllm 0.6)":  "0.92; 0.9 with --vllm 0.6",
		"GPU name (kvcfg gpus; default H100-80GB)":            "H100-80GB",
		"inference engine: sglang (default), vllm or trtllm":  "sglang",
		"maximum running requests":                            "",
		"tokens per KV page (default 1, or what the backend)": "1, or what the backend",
	} {
		if got := helpDefault(help); got != want {
			t.Errorf("default of %q = %q, want %q", help, got, want)
		}
	}
}
