package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/plan"
)

// Flags of another engine, aliases that disagree, a platform the GPU does
// not run and zeros where 0 means nothing are bad input (exit 2), and the
// message names the flag to use; several problems are reported at once.
func TestPlanRefusesOtherEnginesFlags(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--gpu-memory-utilization", "0.8"}, []string{"--gpu-memory-utilization is a vLLM flag", "use --mem-fraction-static"}},
		{[]string{"--max-model-len", "8192"}, []string{"use --context-length"}},
		{[]string{"--block-size", "32"}, []string{"use --page-size"}},
		{[]string{"--vllm-version", "0.11"}, []string{"use --sglang-version", "--engine vllm"}},
		{[]string{"--engine", "vllm", "--mem-fraction-static", "0.8"}, []string{"use --gpu-memory-utilization"}},
		{[]string{"--engine", "vllm", "--sglang-version", "0.4.9"}, []string{"use --vllm-version"}},
		{[]string{"--free-gpu-memory-fraction", "0.8"}, []string{"use --mem-fraction-static", "--engine trtllm"}},
		{[]string{"--engine", "trtllm", "--max-num-seqs", "8"}, []string{"use --max-batch-size"}},
		{[]string{"--tp", "2", "--tp-size", "4"}, []string{"--tp-size 4 conflicts with --tp 2"}},
		{[]string{"--engine", "vllm", "--context-length", "8192", "--max-model-len", "4096"}, []string{"max_model_len: 4096 conflicts with context_length 8192"}},
		{[]string{"--platform", "hip"}, []string{"hip does not run on the NVIDIA H100-80GB"}},
		{[]string{"--tp-size", "0"}, []string{"0 is not a valid --tp-size"}},
		{[]string{"--gpu-memory", "0"}, []string{"0 is not a valid --gpu-memory"}},
		{[]string{"--mem-fraction-static", "0"}, []string{"0 is not a valid --mem-fraction-static"}},
		{[]string{"--tp-size", "0", "--gpu-memory-utilization", "0.8", "--block-size", "16"}, []string{"--tp-size", "use --mem-fraction-static", "use --page-size"}},
	}
	for _, tt := range tests {
		_, errOut, code := run(t, append([]string{"plan"}, tt.args...)...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", tt.args, code, errOut)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr %q lacks %q", tt.args, errOut, w)
			}
		}
	}
	for _, ok := range [][]string{
		{"--tp", "2", "--tp-size", "2"},
		{"--engine", "vllm", "--context-length", "8192", "--max-model-len", "8192"},
		{"--engine", "vllm", "--gpu-memory-utilization", "0.8"},
		{"--chunked-prefill-size", "-1"},
	} {
		if _, errOut, code := run(t, append([]string{"plan"}, ok...)...); code != 0 {
			t.Errorf("%v: exit %d %s", ok, code, errOut)
		}
	}
	for _, cmd := range [][]string{
		{"compare", "--mem-fraction-static", "0"},
		{"fit", "-n", "1", "--context-length", "8192", "--gpus", "H100", "--gpu-memory-utilization", "0.8"},
		{"explain", "--tp", "2", "--tp-size", "4", "No available memory for the cache blocks"},
	} {
		if _, errOut, code := run(t, cmd...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", cmd, code, errOut)
		}
	}
}

// --sglang-version reproduces the July 2025 run of issue 18: SGLang 0.4.9
// on an RTX 4090 held 38,141 tokens at its default fraction 0.879; the
// report names the profile. Without the flag the newest profile sizes the
// plan and the report says so: on the 24 GB card its <35 GiB rung (chunk
// 4096, CUDA-graph batch 48, 50 prefill graphs) reserves 512 + 6144 + 128
// + 96 + 400 = 7,280 MiB, so 0.704 and 6,458 tokens; 0.5.3 reserves
// 3,760 MiB (0.847, 32,347 tokens).
func TestPlanSGLangVersion(t *testing.T) {
	args := []string{"--gpu", "RTX-4090", "--context-length", "8192", "--pre-load-free-memory", "22.10GiB", "--post-load-free-memory", "7.33GiB"}
	r, errOut, code := planJSON(t, append(args, "--sglang-version", "0.4.9")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if r.MemFractionStatic != 0.879 || r.MaxTotalNumTokens != 38141 || !strings.Contains(r.SGLangProfile, "0.4.8 profile") {
		t.Errorf("fraction %v tokens %d profile %q", r.MemFractionStatic, r.MaxTotalNumTokens, r.SGLangProfile)
	}
	def, _, _ := planJSON(t, args...)
	if def.MemFractionStatic != 0.704 || def.MaxTotalNumTokens != 6458 || !strings.HasPrefix(def.SGLangProfile, "no --sglang-version: sized with the newest profile, latest") {
		t.Errorf("default: fraction %v tokens %d profile %q", def.MemFractionStatic, def.MaxTotalNumTokens, def.SGLangProfile)
	}
	old, _, _ := planJSON(t, append(args, "--sglang-version", "0.5.3")...)
	if old.MemFractionStatic != 0.847 || old.MaxTotalNumTokens != 32347 || !strings.Contains(old.SGLangProfile, "0.5.3 profile") {
		t.Errorf("0.5.3: fraction %v tokens %d profile %q", old.MemFractionStatic, old.MaxTotalNumTokens, old.SGLangProfile)
	}
	// Exit 3: 6,458 tokens hold no request of 8,192.
	if out, _, code := run(t, append([]string{"plan"}, args...)...); code != 3 || !strings.Contains(out, "sglang_profile                     no --sglang-version: sized with the newest profile") {
		t.Errorf("default table exit %d:\n%s", code, out)
	}
	out, _, code := run(t, append([]string{"plan", "--sglang-version", "0.4.9"}, args...)...)
	if code != 0 || !strings.Contains(out, "sglang_profile") || !strings.Contains(out, "SGLang 0.4.9 is sized with the 0.4.8 profile") {
		t.Errorf("table exit %d:\n%s", code, out)
	}
	if _, errOut, code := run(t, "plan", "--sglang-version", "zero"); code != 2 || !strings.Contains(errOut, "sglang_version") {
		t.Errorf("bad version: exit %d %q", code, errOut)
	}
	// compare and fit take it too.
	out, errOut, code = run(t, append([]string{"compare", "--sglang-version", "0.4.9", "-o", "json"}, args...)...)
	if code != 0 || !strings.Contains(out, `"sglang_profile": "SGLang 0.4.9`) {
		t.Errorf("compare exit %d %s", code, errOut)
	}
}

// compare takes every plan flag, DP attention included, and the flags it
// prints for each column plan to that column's numbers.
func TestCompareDPAttentionFlagsReproduce(t *testing.T) {
	out, errOut, code := run(t, "compare", "--tp-size", "2", "--dp-size", "2", "--enable-dp-attention", "--context-length", "32768",
		"--gpu-memory-utilization", "0.88", "--engine", "sglang,vllm,trtllm", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var cmp plan.Comparison
	if err := json.Unmarshal([]byte(out), &cmp); err != nil {
		t.Fatal(err)
	}
	if len(cmp.Columns) != 3 {
		t.Fatalf("%d columns", len(cmp.Columns))
	}
	for _, c := range cmp.Columns {
		if c.Error != "" {
			t.Errorf("%s: %s", c.Engine, c.Error)
			continue
		}
		switch c.Engine {
		case "sglang":
			if s := strings.Join(c.Flags, " "); s != "--tp-size 2 --dp-size 2 --enable-dp-attention --context-length 32768" {
				t.Errorf("sglang flags %q", s)
			}
		case "vllm":
			if !slices.Contains(c.Flags, "--gpu-memory-utilization") || slices.Contains(c.Flags, "--enable-dp-attention") {
				t.Errorf("vllm flags %q", c.Flags)
			}
		case "trtllm":
			if !slices.Contains(c.Flags, "enable_attention_dp=true") || !slices.Contains(c.Flags, "--max_seq_len") {
				t.Errorf("trtllm flags %q", c.Flags)
			}
			continue // its spellings are trtllm-serve's, not kvcfg flags (plan's test parses them)
		}
		r, errOut, code := planJSON(t, append([]string{"--engine", c.Engine}, c.Flags...)...)
		if code != 0 || r.MaxTotalNumTokens != c.TokenCapacity || r.CellSizeBytes != c.BytesPerToken ||
			r.MaxConcurrencyAtContextLength != c.Report.MaxConcurrencyAtContextLength {
			t.Errorf("kvcfg plan --engine %s %v: exit %d (%s), %d tokens, %d requests; column %d, %d", c.Engine, c.Flags, code, errOut,
				r.MaxTotalNumTokens, r.MaxConcurrencyAtContextLength, c.TokenCapacity, c.Report.MaxConcurrencyAtContextLength)
		}
	}
}

// fit checks every --kv-cache-dtypes value first (exit 2 with the names
// the engine takes when it has none for that storage; another engine's
// spelling plans under the engine's own) and searches TensorRT-LLM with
// --engines.
func TestFitDTypesAndEngines(t *testing.T) {
	out, errOut, code := run(t, "fit", "--kv-cache-dtypes", "fp8", "-n", "1", "--context-length", "8192", "--gpus", "H100")
	if code != 0 || !strings.Contains(out, "--kv-cache-dtype fp8_e4m3 ") {
		t.Errorf("fp8 (vLLM's name for SGLang's fp8_e4m3): exit %d %q\n%s", code, errOut, out)
	}
	_, errOut, code = run(t, "fit", "--engine", "trtllm", "--kv-cache-dtypes", "fp8_e5m2", "-n", "1", "--context-length", "8192", "--gpus", "H100")
	if code != 2 || !strings.Contains(errOut, "accepted: auto, fp8, nvfp4") {
		t.Errorf("fp8_e5m2 on TensorRT-LLM: exit %d %q", code, errOut)
	}
	if _, errOut, code := run(t, "fit", "--kv-cache-dtypes", "fp3", "-n", "1", "--context-length", "8192", "--gpus", "H100"); code != 2 {
		t.Errorf("fp3: exit %d %q", code, errOut)
	}
	out, errOut, code = run(t, "fit", "--engines", "sglang,vllm,trtllm", "-n", "16", "--context-length", "32768", "--gpus", "H100")
	if code != 0 || !strings.Contains(out, "ENGINE") || !strings.Contains(out, "trtllm  H100-80GB") || !strings.Contains(out, "--max_batch_size 16") {
		t.Errorf("engines: exit %d %s\n%s", code, errOut, out)
	}
	if _, _, code := run(t, "fit", "--engine", "vllm", "--engines", "sglang", "-n", "1", "--context-length", "8192"); code != 2 {
		t.Errorf("--engine with --engines: exit %d", code)
	}
}

// A sweep over engines plans each row with the inputs its engine takes;
// when every row is bad input the exit status is 2.
func TestSweepEngineAxis(t *testing.T) {
	out, errOut, code := run(t, "plan", "--engine", "sglang,vllm,trtllm", "--gpu-memory-utilization", "0.85", "--mem-fraction-static", "0.8", "-o", "csv")
	if code != 0 || strings.Count(out, "\n") != 4 || strings.Contains(out, "flag, not") {
		t.Errorf("exit %d %s\n%s", code, errOut, out)
	}
	if _, errOut, code := run(t, "plan", "--engine", "sglang,vllm", "--max-batch-size", "4"); code != 2 {
		t.Errorf("max-batch-size on sglang,vllm: exit %d %s", code, errOut)
	}
}

// SGLang renamed --nsa-*-backend to --dsa-*-backend (PR #30514) and keeps
// the old names: kvcfg takes both, for the same setting.
func TestDSABackendFlagAliases(t *testing.T) {
	for _, flag := range []string{"--nsa-decode-backend", "--dsa-decode-backend"} {
		out, errs, code := runKV(t, "", "plan", "--model", "deepseek-ai/DeepSeek-V3.2", "--gpu", "B200", "--tp-size", "8",
			"--kv-cache-dtype", "fp8_e4m3", "--nsa-prefill-backend", "flashmla_auto", flag, "flashmla_kv")
		if code != 0 || !strings.Contains(out, "prefill flashmla_auto, decode flashmla_kv") || !strings.Contains(out, "48,068 bytes per token") {
			t.Errorf("%s: exit %d %s\n%s", flag, code, errs, out)
		}
	}
}
