package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

func runCompareCLI(args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

func TestCompareJSON(t *testing.T) {
	out, errOut, code := runCompareCLI("compare", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "H100-80GB",
		"--kv-cache-dtype", "auto,fp8_e4m3", "--context-length", "8192", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		Columns []struct {
			Engine        string  `json:"engine"`
			KVCacheDType  string  `json:"kv_cache_dtype"`
			BytesPerToken float64 `json:"bytes_per_token"`
			Tokens        int64   `json:"tokens"`
		} `json:"columns"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	var summary []string
	for _, c := range got.Columns {
		summary = append(summary, c.Engine+"/"+c.KVCacheDType+"/"+strconv.FormatFloat(c.BytesPerToken, 'f', -1, 64))
		if c.Tokens <= 0 {
			t.Errorf("%s %s: no tokens", c.Engine, c.KVCacheDType)
		}
	}
	want := "sglang/auto/131072 vllm/auto/131072 sglang/fp8_e4m3/65536 vllm/fp8_e4m3/65536"
	if s := strings.Join(summary, " "); s != want {
		t.Errorf("columns %s, want %s", s, want)
	}
}

func TestCompareTable(t *testing.T) {
	out, errOut, code := runCompareCLI("compare", "meta-llama/Llama-3.1-8B-Instruct", "--tp", "1,2", "--context-length", "8192")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"sglang", "vllm", "bytes/token per GPU", "max concurrency", "--tensor-parallel-size 2", "--tp-size 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestCompareBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"compare", "--engine", "tgi"},
		{"compare", "--tp", "two"},
		{"compare", "-o", "xml"},
	} {
		if _, _, code := runCompareCLI(args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

// vLLM's refusal: non-zero exit with vLLM's message, and the JSON with an
// error key and the numbers computed before the refusal.
func TestPlanVLLMRefusalJSON(t *testing.T) {
	out, errOut, code := runCompareCLI("plan", "--engine", "vllm", "--vllm-version", "0.11", "--max-model-len", "29000",
		"--kv-cache-memory-bytes", strconv.FormatInt(1478*2<<20+1<<20, 10), "-o", "json")
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	var rep struct {
		Error          string  `json:"error"`
		VLLMVersion    string  `json:"vllm_version"`
		AvailableKV    int64   `json:"available_kv_bytes"`
		CellSize       float64 `json:"cell_size_bytes"`
		MaxModelLen    int     `json:"max_model_len"`
		LogLines       []string
		FixValue       string `json:"fix_value"`
		BlockSize      int    `json:"block_size"`
		MaxConcurrency float64
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.HasPrefix(rep.Error, "To serve at least one request with the models's max seq len (29000), (3.54 GiB KV cache is needed") ||
		rep.VLLMVersion != "0.11" || rep.AvailableKV != 1478*2<<20+1<<20 || rep.CellSize != 131072 || rep.MaxModelLen != 29000 ||
		rep.FixValue != "fp8" || rep.BlockSize != 16 { // verified: fp8 KV holds one 29k request
		t.Errorf("report %+v", rep)
	}
	if !strings.Contains(errOut, "estimated maximum model length is 23648") {
		t.Errorf("stderr %q lacks vLLM's message", errOut)
	}
}

// A refused column's engine words go below the table as a numbered note
// with the verified fix, so the table stays readable, and the exit status
// is 1; every engine's concurrency reads "N (R.RRx) at L".
func TestCompareTableRefusalNotes(t *testing.T) {
	out, _, code := runCompareCLI("compare", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "H100", "--tp-size", "2", "--engine", "sglang,vllm,trtllm")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (two columns refused):\n%s", code, out)
	}
	table, notes, ok := strings.Cut(out, "\n[1] ")
	if !ok {
		t.Fatalf("no notes below the table:\n%s", out)
	}
	for _, l := range strings.Split(table, "\n") {
		if len(l) > 120 {
			t.Errorf("table line of %d characters: %q", len(l), l)
		}
	}
	for _, want := range []string{"refused [1]", "refused [2]"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	if !strings.Contains(notes, "Loaded weights leave no GPU memory") || !strings.Contains(notes, "[2] vllm") || !strings.Contains(notes, "fix: set --tensor-parallel-size 4") {
		t.Errorf("notes lack the engines' words or the fix:\n%s", notes)
	}
	if strings.Contains(notes, "weights (65.71 GiB per GPU) do not fit") {
		t.Errorf("the vLLM note blames the weights, which fit:\n%s", notes)
	}
	out, _, _ = runCompareCLI("compare", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "H100", "--engine", "sglang,vllm,trtllm")
	if n := strings.Count(out, "x) at 131,072"); n != 3 {
		t.Errorf("%d of 3 columns print concurrency as N (R.RRx) at L:\n%s", n, out)
	}
}

// The host KV tier row appears only when a column has one, and each engine
// prints its own flag for it.
func TestCompareHostTierRow(t *testing.T) {
	out, errOut, code := runCompareCLI("compare", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "H100", "--enable-hierarchical-cache", "--kv-offloading-size", "64")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// vLLM: 64 GiB // 2,097,152 B per 16-token block = 32,768 blocks.
	for _, want := range []string{"host KV tier", "524,288 tokens (64.00 GiB per rank)", "--enable-hierarchical-cache", "--kv-offloading-size 64"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	out, _, _ = runCompareCLI("compare", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "H100")
	if strings.Contains(out, "host KV tier") {
		t.Errorf("host tier row without a tier:\n%s", out)
	}
}
