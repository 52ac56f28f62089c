package plan_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcfg/kvcfg/plan"
)

func TestCompare(t *testing.T) {
	cmpRes, err := plan.Compare(context.Background(), plan.CompareRequest{
		Request:       plan.Request{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "H100-80GB", ContextLength: 8192},
		KVCacheDTypes: []string{"auto", "fp8_e4m3"},
		TPSizes:       []int{1, 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	type col struct {
		Engine, DType string
		TP            int
		BytesPerToken float64
		Context       int
		Flags         string
	}
	var got []col
	for _, c := range cmpRes.Columns {
		if c.Error != "" || c.Tokens <= 0 || c.MaxConcurrency <= 0 {
			t.Errorf("%s %s tp%d: error %q, tokens %d, concurrency %g", c.Engine, c.KVCacheDType, c.TPSize, c.Error, c.Tokens, c.MaxConcurrency)
		}
		got = append(got, col{c.Engine, c.KVCacheDType, c.TPSize, c.BytesPerToken, c.ContextLength, strings.Join(c.Flags, " ")})
	}
	// 32 layers × 8 KV heads × 128 × 2 (K, V) × element bytes, heads split over TP.
	want := []col{
		{"sglang", "auto", 1, 131072, 8192, "--context-length 8192"},
		{"vllm", "auto", 1, 131072, 8192, "--max-model-len 8192"},
		{"sglang", "fp8_e4m3", 1, 65536, 8192, "--kv-cache-dtype fp8_e4m3 --context-length 8192"},
		{"vllm", "fp8_e4m3", 1, 65536, 8192, "--kv-cache-dtype fp8_e4m3 --max-model-len 8192"},
		{"sglang", "auto", 2, 65536, 8192, "--tp-size 2 --context-length 8192"},
		{"vllm", "auto", 2, 65536, 8192, "--tensor-parallel-size 2 --max-model-len 8192"},
		{"sglang", "fp8_e4m3", 2, 32768, 8192, "--tp-size 2 --kv-cache-dtype fp8_e4m3 --context-length 8192"},
		{"vllm", "fp8_e4m3", 2, 32768, 8192, "--tensor-parallel-size 2 --kv-cache-dtype fp8_e4m3 --max-model-len 8192"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}
	if cmpRes.Model != "meta-llama/Llama-3.1-8B-Instruct" || cmpRes.GPU != "H100-80GB" {
		t.Errorf("model %q gpu %q", cmpRes.Model, cmpRes.GPU)
	}

	// snake_case JSON.
	b, err := json.Marshal(cmpRes)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"columns"`, `"bytes_per_token"`, `"max_concurrency"`, `"kv_cache_dtype"`, `"tp_size"`, `"token_capacity"`, `"flags"`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("JSON lacks %s", k)
		}
	}
}

// A dtype only one engine accepts: the other column records the refusal.
func TestCompareOneEngineRejects(t *testing.T) {
	res, err := plan.Compare(context.Background(), plan.CompareRequest{
		Request:       plan.Request{ContextLength: 8192},
		KVCacheDTypes: []string{"mxfp8"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Columns) != 2 {
		t.Fatalf("%d columns", len(res.Columns))
	}
	sg, vl := res.Columns[0], res.Columns[1]
	if sg.Engine != "sglang" || sg.Error != "" || sg.BytesPerToken <= 0 {
		t.Errorf("sglang column %+v", sg)
	}
	if vl.Engine != "vllm" || !strings.Contains(vl.Error, "not supported by vLLM") || vl.Report != nil {
		t.Errorf("vllm column error %q", vl.Error)
	}
}

func TestCompareInvalid(t *testing.T) {
	tests := []struct {
		name string
		req  plan.CompareRequest
	}{
		{"unknown engine", plan.CompareRequest{Engines: []string{"tgi"}}},
		{"bad tp", plan.CompareRequest{TPSizes: []int{0}}},
		{"too many columns", plan.CompareRequest{TPSizes: []int{1, 2, 4, 8, 16, 32, 64, 128, 256}, KVCacheDTypes: []string{"auto", "fp8_e4m3"}}},
		{"invalid shared request", plan.CompareRequest{Request: plan.Request{GPUMemoryUtilization: 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := plan.Compare(context.Background(), tt.req); !errors.Is(err, plan.ErrInvalid) {
				t.Errorf("err = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestCompareAllRefuse(t *testing.T) {
	_, err := plan.Compare(context.Background(), plan.CompareRequest{Engines: []string{"vllm"}, KVCacheDTypes: []string{"int8_g64"}})
	if !errors.Is(err, plan.ErrInvalid) {
		t.Errorf("err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := plan.Compare(ctx, plan.CompareRequest{}); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: err = %v", err)
	}
}

// The HTTP form: engine and kv_cache_dtype as comma-separated strings.
func TestCompareCommaFields(t *testing.T) {
	var req plan.CompareRequest
	if err := json.Unmarshal([]byte(`{"model":"meta-llama/Llama-3.1-8B-Instruct","engine":"vllm","kv_cache_dtype":"auto, fp8","context_length":4096}`), &req); err != nil {
		t.Fatal(err)
	}
	res, err := plan.Compare(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range res.Columns {
		got = append(got, c.Engine+"/"+c.KVCacheDType+"/"+c.ResolvedKVCacheDType)
	}
	if diff := cmp.Diff([]string{"vllm/auto/bf16", "vllm/fp8/fp8_e4m3"}, got); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}
}

// vLLM's --max-model-len -1 (auto-fit) applies to the vLLM columns; the
// SGLang columns plan the model's own context length.
func TestCompareAutoFitMaxModelLen(t *testing.T) {
	res, err := plan.Compare(context.Background(), plan.CompareRequest{
		Request: plan.Request{Model: "Qwen/Qwen3-8B", GPU: "L40S", MaxModelLen: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Columns) != 2 {
		t.Fatalf("got %d columns, want sglang and vllm", len(res.Columns))
	}
	for _, c := range res.Columns {
		if c.Error != "" {
			t.Errorf("%s: %s", c.Engine, c.Error)
		}
		// Qwen3-8B's config context is 40,960 tokens and fits on an L40S.
		if c.ContextLength != 40960 {
			t.Errorf("%s: context %d, want 40960", c.Engine, c.ContextLength)
		}
	}
}
