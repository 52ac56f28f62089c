package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/catalog"
)

// fakeResolver records its calls and answers with a fixed config.
type fakeResolver struct {
	calls []string
	err   error
}

func (f *fakeResolver) Resolve(_ context.Context, id, rev string) (*catalog.Model, error) {
	f.calls = append(f.calls, id+"@"+rev)
	if f.err != nil {
		return nil, f.err
	}
	cfg, _ := catalog.Config("Qwen/Qwen3-8B")
	return catalog.NewHub(id, "c0ffee", cfg, nil, nil)
}

func TestOpenContextOrder(t *testing.T) {
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	dir := t.TempDir()
	cfg, _ := catalog.Config("Qwen/Qwen3-8B")
	os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644)
	r := &fakeResolver{}
	ctx := context.Background()
	for _, tc := range []struct {
		ref, rev, source, call string
	}{
		{dir, "", catalog.SourceDir, ""},
		{"qwen/qwen3-8b", "", catalog.SourceCatalog, ""},
		{"Qwen/Qwen3-8B", "v2", catalog.SourceHub, "Qwen/Qwen3-8B@v2"},
		{"Qwen/Qwen3-8B@v3", "v2", catalog.SourceHub, "Qwen/Qwen3-8B@v3"},
		{"acme/new-model", "", catalog.SourceHub, "acme/new-model@"},
	} {
		r.calls = nil
		m, err := catalog.OpenContext(ctx, tc.ref, catalog.Options{Revision: tc.rev, Resolver: r})
		if err != nil {
			t.Fatalf("%s: %v", tc.ref, err)
		}
		call := strings.Join(r.calls, ",")
		if m.Source != tc.source || call != tc.call {
			t.Errorf("%s@%s: source %s, resolver calls %q; want %s, %q", tc.ref, tc.rev, m.Source, call, tc.source, tc.call)
		}
	}
	// Not an org/name id: the resolver is not asked, the error lists close names.
	r.calls = nil
	_, err := catalog.OpenContext(ctx, "qwen3-9b", catalog.Options{Resolver: r})
	if !errors.Is(err, catalog.ErrUnknownModel) || len(r.calls) != 0 || !strings.Contains(err.Error(), "Qwen/Qwen3-8B") {
		t.Errorf("bare name: %v (calls %v)", err, r.calls)
	}
	// The Hub's "no such repo" gets the close catalog names as a hint.
	r.err = fmt.Errorf("%w \"Qwen/Qwen3-9B\": no such model", catalog.ErrUnknownModel)
	_, err = catalog.OpenContext(ctx, "Qwen/Qwen3-9B", catalog.Options{Resolver: r})
	if !errors.Is(err, catalog.ErrUnknownModel) || !strings.Contains(err.Error(), "close catalog names: Qwen/Qwen3-8B") {
		t.Errorf("hub 404: %v", err)
	}
	// An unreachable Hub keeps the "did you mean" (issue 32): the catalog
	// names plan without it; the Hub's error stays in the chain.
	unreachable := errors.New("hub: cannot reach the Hub https://huggingface.co: connection refused")
	r.err = unreachable
	_, err = catalog.OpenContext(ctx, "meta-llama/Llama-3.1-8B-Instrct", catalog.Options{Resolver: r})
	if !errors.Is(err, unreachable) || !strings.Contains(err.Error(), "did you mean meta-llama/Llama-3.1-8B-Instruct") {
		t.Errorf("unreachable hub: %v", err)
	}
}

func TestWithQuantConfig(t *testing.T) {
	q := []byte(`{"quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}}`)
	m, err := catalog.NewHub("acme/fp8", "c", []byte(`{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
		"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 128, "intermediate_size": 128,
		"max_position_embeddings": 1024, "torch_dtype": "bfloat16"}`), q, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Spec.Quant == nil || m.Spec.Quant.KVCacheQuantAlgo != "FP8" {
		t.Errorf("quant %+v", m.Spec.Quant)
	}
	// A config with its own quantization_config keeps it.
	own := []byte(`{"quantization_config": {"quant_method": "fp8"}}`)
	if got := catalog.WithQuantConfig(own, q); string(got) != string(own) {
		t.Errorf("overwrote quantization_config: %s", got)
	}
}
