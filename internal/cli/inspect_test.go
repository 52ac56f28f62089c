package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/catalog"
)

func run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

func TestInspectJSON(t *testing.T) {
	out, errs, code := run(t, "inspect", "--model", "DEEPSEEK-AI/deepseek-v3.2", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	want := map[string]any{"name": "deepseek-ai/DeepSeek-V3.2", "attention_kind": "dsa", "num_layers": 61.0, "kv_lora_rank": 512.0,
		"qk_rope_head_dim": 64.0, "index_head_dim": 128.0, "sliding_window": nil, "context_length": 163840.0, "model_dtype": "bfloat16"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}

func TestInspectDefaultTable(t *testing.T) {
	out, errs, code := run(t, "inspect")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{catalog.Default, "32 (32 full)", "kv heads", "131,072", "bfloat16"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestInspectYAMLAndPath(t *testing.T) {
	data, err := catalog.Config("openai/gpt-oss-120b")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := run(t, "inspect", dir, "-o", "yaml")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"hybrid_swa_pool: true", "sliding_window: 128", "engine_sliding_window: 127", "num_swa_layers: 18"} {
		if !strings.Contains(out, want) {
			t.Errorf("yaml lacks %q:\n%s", want, out)
		}
	}
}

func TestInspectErrors(t *testing.T) {
	_, errs, code := run(t, "inspect", "--model", "llama-3.1-8b")
	if code == 0 || !strings.Contains(errs, "meta-llama/Llama-3.1-8B-Instruct") || !strings.Contains(errs, "kvcfg models") {
		t.Errorf("unknown model: exit %d, stderr %q", code, errs)
	}
	_, errs, code = run(t, "inspect", "-o", "xml")
	if code != 2 || !strings.Contains(errs, "xml") {
		t.Errorf("bad format: exit %d, stderr %q", code, errs)
	}
	bad := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(bad, []byte(`{"num_hidden_layers": 0}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errs, code = run(t, "inspect", "--model", bad)
	if code == 0 || !strings.Contains(errs, "num_attention_heads") {
		t.Errorf("bad config: exit %d, stderr %q", code, errs)
	}
}

func TestModels(t *testing.T) {
	out, errs, code := run(t, "models")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(catalog.Names())+1 {
		t.Errorf("%d lines, want header + %d models", len(lines), len(catalog.Names()))
	}
	for _, want := range []string{"NAME", "ARCHITECTURE", "ATTENTION", "CONTEXT", "Qwen/Qwen3-Next-80B-A3B-Instruct", "12 full, 36 linear"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	out, errs, code = run(t, "models", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(catalog.Names()) {
		t.Fatalf("%d rows, want %d", len(rows), len(catalog.Names()))
	}
	for _, r := range rows {
		if r["name"] == "moonshotai/Kimi-K2-Instruct" && (r["attention_kind"] != "mla" || r["num_layers"] != 61.0) {
			t.Errorf("Kimi-K2 row %v", r)
		}
	}
}
