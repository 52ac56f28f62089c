package plan_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/plan"
)

// The speculative algorithm names each engine takes: SGLang's argument
// parser offers EAGLE, EAGLE3, NEXTN, STANDALONE, NGRAM (and DFLASH), and
// server_args rewrites NEXTN to EAGLE; MTP is TensorRT-LLM's one-model MTP
// (decoding_type MTP), which the trtllm adapter sizes like NEXTN and EAGLE
// on a checkpoint with next-token layers.
func TestSpeculativeAlgorithmNames(t *testing.T) {
	const dsv3 = "deepseek-ai/DeepSeek-V3" // one MTP layer (num_nextn_predict_layers)
	tests := []struct {
		engine, alg string
		ok          bool
	}{
		{plan.EngineTRTLLM, "MTP", true},
		{plan.EngineTRTLLM, "mtp", true},
		{plan.EngineTRTLLM, "NEXTN", true},
		{plan.EngineTRTLLM, "EAGLE", true},
		{plan.EngineSGLang, "NEXTN", true},
		{plan.EngineSGLang, "nextn", true},
		{plan.EngineSGLang, "MTP", false},
		{plan.EngineVLLM, "MTP", false},
		{plan.EngineTRTLLM, "MEDUSA", false},
	}
	for _, tt := range tests {
		t.Run(tt.engine+" "+tt.alg, func(t *testing.T) {
			req := plan.Request{Engine: tt.engine, Model: dsv3, GPU: "H200", TPSize: 8, SpeculativeAlgorithm: tt.alg}
			err := req.Validate()
			if tt.ok {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var fe *plan.FieldError
			if !errors.As(err, &fe) || fe.Field != "speculative_algorithm" || !errors.Is(err, plan.ErrInvalid) {
				t.Fatalf("err = %v, want a speculative_algorithm FieldError", err)
			}
			if tt.alg == "MTP" && !strings.Contains(err.Error(), "--engine trtllm") {
				t.Errorf("%v: the error should name the engine that takes MTP", err)
			}
		})
	}
}

// MTP, NEXTN and EAGLE are one plan on TensorRT-LLM (one-model MTP over the
// checkpoint's next-token layer), and NEXTN is EAGLE's plan on SGLang and
// vLLM.
func TestSpeculativeAliasesPlanAlike(t *testing.T) {
	type key struct {
		cell   float64
		tokens int64
		mfs    float64
		notes  string
	}
	plans := func(engine string, algs ...string) []key {
		t.Helper()
		var out []key
		for _, alg := range algs {
			req := plan.Request{Engine: engine, Model: "deepseek-ai/DeepSeek-V3", GPU: "H200", TPSize: 8,
				SpeculativeAlgorithm: alg, SpeculativeDraftNumLayers: 1}
			if engine == plan.EngineSGLang {
				req.SpeculativeNumDraftTokens = 4
			}
			r, err := plan.Run(context.Background(), req)
			if err != nil {
				t.Fatalf("%s %s: %v", engine, alg, err)
			}
			for _, w := range r.Warnings {
				if strings.Contains(w, "not modelled") {
					t.Errorf("%s %s: %q", engine, alg, w)
				}
			}
			out = append(out, key{r.CellSizeBytes, r.MaxTotalNumTokens, r.MemFractionStatic, strings.Join(r.Warnings, "\n")})
		}
		return out
	}
	trt := plans(plan.EngineTRTLLM, "MTP", "NEXTN", "EAGLE")
	if trt[0] != trt[1] || trt[0] != trt[2] {
		t.Errorf("trtllm MTP / NEXTN / EAGLE differ:\n%+v", trt)
	}
	none, err := plan.Run(context.Background(), plan.Request{Engine: plan.EngineTRTLLM, Model: "deepseek-ai/DeepSeek-V3", GPU: "H200", TPSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	if trt[0].cell <= none.CellSizeBytes {
		t.Errorf("trtllm MTP cell %v, without speculation %v: the MTP layer's KV is missing", trt[0].cell, none.CellSizeBytes)
	}
	sgl := plans(plan.EngineSGLang, "NEXTN", "EAGLE")
	if sgl[0] != sgl[1] {
		t.Errorf("sglang NEXTN / EAGLE differ:\n%+v", sgl)
	}
	if v := plans(plan.EngineVLLM, "NEXTN", "EAGLE"); v[0] != v[1] {
		t.Errorf("vllm NEXTN / EAGLE differ:\n%+v", v)
	}
}

// A comparison takes MTP when one of its engines does: the TensorRT-LLM
// column plans, the SGLang column says what to use instead.
func TestCompareMTPPerColumn(t *testing.T) {
	res, err := plan.Compare(context.Background(), plan.CompareRequest{
		Request: plan.Request{Model: "deepseek-ai/DeepSeek-V3", GPU: "H200", TPSize: 8, SpeculativeAlgorithm: "MTP"},
		Engines: []string{plan.EngineSGLang, plan.EngineTRTLLM},
	})
	if res == nil {
		t.Fatalf("no comparison: %v", err)
	}
	for _, c := range res.Columns {
		switch c.Engine {
		case plan.EngineTRTLLM:
			if c.Error != "" {
				t.Errorf("trtllm column: %s", c.Error)
			}
		case plan.EngineSGLang:
			if !strings.Contains(c.Error, "use EAGLE") {
				t.Errorf("sglang column error %q, want the EAGLE hint", c.Error)
			}
		}
	}
}
