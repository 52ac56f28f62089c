package fit_test

import (
	"context"
	"slices"
	"testing"

	"github.com/kvcfg/kvcfg/fit"
	"github.com/kvcfg/kvcfg/plan"
)

// vLLM's --kv-transfer-config is a JSON value: fit prints it single-quoted
// in both the engine flags and the kvcfg plan arguments, and both read
// back to the listed plan.
func TestFitKVTransferConfigFlags(t *testing.T) {
	cfg := `{"kv_connector":"NixlConnector","kv_role":"kv_both"}`
	o := fit.Options{Base: plan.Request{Model: "openai/gpt-oss-120b", Engine: "vllm", VLLMVersion: "0.21", KVTransferConfig: cfg},
		Concurrency: 8, ContextLength: 32768, GPUs: []string{"H100"}}
	res, err := fit.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Configurations) == 0 {
		t.Fatal("no configuration")
	}
	c := res.Configurations[0]
	quoted := "'" + cfg + "'"
	if !slices.Contains(c.Flags, quoted) || !slices.Contains(c.PlanArgs, quoted) {
		t.Errorf("flags %q and plan args %q do not carry %s", c.Flags, c.PlanArgs, quoted)
	}
	// The engine flags carry no version (vLLM has no flag for it): read
	// them back onto the version planned.
	base := plan.Request{Model: o.Base.Model, GPU: c.GPU, Engine: c.Engine, VLLMVersion: o.Base.VLLMVersion}
	for _, args := range []struct {
		base plan.Request
		args []string
	}{{base, c.Flags}, {plan.Request{}, c.PlanArgs}} {
		req, err := fit.ParseFlags(args.base, args.args)
		if err != nil {
			t.Fatalf("%q: %v", args.args, err)
		}
		if req.KVTransferConfig != cfg {
			t.Errorf("%q read back kv_transfer_config %q", args.args, req.KVTransferConfig)
		}
		rep, err := plan.Run(context.Background(), req)
		if err != nil {
			t.Fatalf("%q: %v", args.args, err)
		}
		if rep.MaxTotalNumTokens != c.MaxTotalNumTokens {
			t.Errorf("%q: %d tokens planned, %d listed", args.args, rep.MaxTotalNumTokens, c.MaxTotalNumTokens)
		}
	}
}
