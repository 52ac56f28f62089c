package plan_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/plan"
)

// Every settable Request field is one row of the table (or a key alias of
// one), and no name is used twice.
func TestFlagTableCoversRequest(t *testing.T) {
	keys := map[string]bool{}
	names := map[string]string{}
	for _, f := range plan.Flags() {
		for _, k := range append([]string{f.Key}, f.KeyAliases...) {
			if keys[k] {
				t.Errorf("key %s twice", k)
			}
			keys[k] = true
		}
		all := []string{f.Name}
		for _, a := range f.Aliases {
			all = append(all, a.Name)
		}
		for _, n := range all {
			if prev, ok := names[n]; ok {
				t.Errorf("flag %s names %s and %s", n, prev, f.Key)
			}
			names[n] = f.Key
		}
		if f.Name != "--"+strings.ReplaceAll(f.Key, "_", "-") {
			t.Errorf("%s: flag %s is not the key in kebab-case", f.Key, f.Name)
		}
		if len(f.Engines) == 0 || f.Help == "" || f.Kind == "" {
			t.Errorf("%s: engines %v, help %q, kind %q", f.Key, f.Engines, f.Help, f.Kind)
		}
		for e, sp := range f.Spelling {
			if !f.Accepts(e) {
				t.Errorf("%s: spelled for %s, which does not take it", f.Key, e)
			}
			// kvcfg takes SGLang's and vLLM's spellings as its own flags.
			if native := e != "trtllm"; native && sp != f.Name && !slices.ContainsFunc(f.Aliases, func(a plan.Alias) bool { return a.Name == sp }) {
				t.Errorf("%s: %s's %s is no kvcfg flag", f.Key, e, sp)
			}
		}
	}
	for _, k := range plan.SweepFields() {
		if !keys[k] {
			t.Errorf("request key %s has no row in plan/flags.go", k)
		}
	}
	tags := map[string]bool{}
	rt := reflect.TypeFor[plan.Request]()
	for i := range rt.NumField() {
		k, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		tags[k] = true
	}
	for k := range keys {
		if !tags[k] {
			t.Errorf("table key %s is no Request field", k)
		}
	}
	for _, c := range plan.EngineColumns() {
		if !slices.Contains(plan.Engines(), c.Engine) {
			t.Errorf("column of unknown engine %s", c.Engine)
		}
		for _, k := range c.Keys {
			f, ok := plan.LookupFlag(k)
			if !ok || f.Spelling[c.Engine] == "" {
				t.Errorf("%s prints %s without a spelling", c.Engine, k)
			}
		}
	}
}

func TestLookupFlag(t *testing.T) {
	for in, want := range map[string]string{
		"--tp": "tp_size", "--tensor-parallel-size": "tp_size", "tensor_parallel_size": "tp_size", "--tp_size": "tp_size",
		"kv_cache_config.dtype": "kv_cache_dtype", "--kv_cache_free_gpu_memory_fraction": "free_gpu_memory_fraction",
		"--model-path": "model", "--no-enable-prefix-caching": "disable_radix_cache", "--sglang-version": "sglang_version",
		"--dsa-decode-backend": "nsa_decode_backend", "dsa_prefill_backend": "nsa_prefill_backend",
		"--nope": "",
	} {
		if got := plan.KeyOfFlag(in); got != want {
			t.Errorf("KeyOfFlag(%q) = %q, want %q", in, got, want)
		}
	}
	for _, c := range []struct{ engine, key, want string }{
		{"vllm", "tp_size", "--tensor-parallel-size"}, {"sglang", "tp_size", "--tp-size"},
		{"trtllm", "tp_size", "--tp-size"}, {"trtllm", "free_gpu_memory_fraction", "--free-gpu-memory-fraction"},
		{"vllm", "context_length", "--context-length"}, {"sglang", "no_such_key", "--no-such-key"},
	} {
		if got := plan.FlagFor(c.engine, c.key); got != c.want {
			t.Errorf("FlagFor(%s, %s) = %q, want %q", c.engine, c.key, got, c.want)
		}
	}
}

// Another engine's flag is refused, naming this engine's flag for the same
// setting; every problem comes at once.
func TestValidateOtherEnginesFlags(t *testing.T) {
	tests := []struct {
		name string
		req  plan.Request
		want []string
	}{
		{"vllm share on sglang", plan.Request{GPUMemoryUtilization: 0.8}, []string{"gpu_memory_utilization", "use --mem-fraction-static", "--engine vllm"}},
		{"sglang share on vllm", plan.Request{Engine: "vllm", MemFractionStatic: 0.8}, []string{"mem_fraction_static", "use --gpu-memory-utilization"}},
		{"trtllm share on sglang", plan.Request{FreeGPUMemoryFraction: 0.8}, []string{"use --mem-fraction-static", "--engine trtllm"}},
		{"sglang share on trtllm", plan.Request{Engine: "trtllm", MemFractionStatic: 0.8}, []string{"use --free-gpu-memory-fraction"}},
		{"max-model-len on sglang", plan.Request{MaxModelLen: 8192}, []string{"max_model_len", "use --context-length"}},
		{"block-size on sglang", plan.Request{BlockSize: 32}, []string{"block_size", "use --page-size"}},
		{"block-size on trtllm", plan.Request{Engine: "trtllm", BlockSize: 32}, []string{"use --tokens-per-block"}},
		{"vllm-version on sglang", plan.Request{VLLMVersion: "0.11"}, []string{"vllm_version", "use --sglang-version"}},
		{"auto-fit on sglang", plan.Request{MaxModelLen: -1}, []string{"max_model_len", "--engine vllm"}},
		{"all at once", plan.Request{GPUMemoryUtilization: 0.8, BlockSize: 32, MaxNumSeqs: 4}, []string{"gpu_memory_utilization", "block_size", "max_num_seqs"}},
		{"context conflict", plan.Request{Engine: "vllm", ContextLength: 8192, MaxModelLen: 4096}, []string{"max_model_len: 4096 conflicts with context_length 8192"}},
		{"tp conflict", plan.Request{TPSize: 2, TensorParallelSize: 4}, []string{"tensor_parallel_size: 4 conflicts with tp_size 2"}},
		{"dsa conflict", plan.Request{NSADecodeBackend: "trtllm", DSADecodeBackend: "flashmla_kv"}, []string{`dsa_decode_backend: "flashmla_kv" conflicts with nsa_decode_backend "trtllm"`}},
		{"bad sglang version", plan.Request{SGLangVersion: "zero"}, []string{"sglang_version", "unknown SGLang version"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.req.Validate()
			if !errors.Is(err, plan.ErrInvalid) {
				t.Fatalf("err %v, want ErrInvalid", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v lacks %q", err, w)
				}
			}
		})
	}
	for _, ok := range []plan.Request{
		{Engine: "vllm", ContextLength: 8192, MaxModelLen: 8192},
		{Engine: "vllm", GPUMemoryUtilization: 0.8, KVCacheMemory: 1 << 30, DisableRadixCache: true},
		{Engine: "trtllm", ContextLength: 8192, EnableDPAttention: true, KVCacheMemory: 1 << 30},
		{SGLangVersion: "0.4.6", DisableRadixCache: true},
	} {
		if err := ok.Validate(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
}

func TestZeroErrors(t *testing.T) {
	err := plan.ZeroErrors([]string{"tp_size", "gpu_memory", "mem_fraction_static", "tp_size", "kv_cache_dtype"})
	if !errors.Is(err, plan.ErrInvalid) {
		t.Fatalf("err %v", err)
	}
	for _, w := range []string{"tp_size: 0 is not a valid --tp-size", "gpu_memory", "mem_fraction_static"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%v lacks %q", err, w)
		}
	}
	if strings.Count(err.Error(), "tp_size") != 1 || strings.Contains(err.Error(), "kv_cache_dtype") {
		t.Errorf("%v", err)
	}
	if plan.ZeroErrors([]string{"chunked_prefill_size"}) != nil {
		t.Error("chunked_prefill_size 0 refused")
	}
}

func TestPlatformAgainstGPU(t *testing.T) {
	_, err := plan.Run(context.Background(), plan.Request{GPU: "H100", Platform: "hip"})
	if !errors.Is(err, plan.ErrInvalid) || !strings.Contains(err.Error(), "platform: hip does not run on the NVIDIA H100-80GB") {
		t.Errorf("err %v", err)
	}
	if _, err := plan.Run(context.Background(), plan.Request{GPUMemory: 80 << 30, Platform: "hip"}); err != nil {
		t.Errorf("custom GPU on hip: %v", err)
	}
}

// The flags compare prints for each column, passed back to plan with the
// same model and GPU, give that column's numbers: for every engine, with
// DP attention and a context length.
func TestCompareFlagsReproduce(t *testing.T) {
	base := plan.Request{Model: "meta-llama/Llama-3.1-70B-Instruct", GPU: "H100", DPSize: 2, EnableDPAttention: true, ContextLength: 16384,
		GPUMemoryUtilization: 0.85, MemFractionStatic: 0.82, FreeGPUMemoryFraction: 0.8}
	cmp, err := plan.Compare(context.Background(), plan.CompareRequest{Request: base,
		Engines: []string{"sglang", "vllm", "trtllm"}, KVCacheDTypes: []string{"auto", "fp8_e4m3"}, TPSizes: []int{2, 4}})
	if err != nil {
		t.Fatal(err)
	}
	if len(cmp.Columns) != 12 {
		t.Fatalf("%d columns", len(cmp.Columns))
	}
	planned := 0
	for _, c := range cmp.Columns {
		name := c.Engine + "/" + c.KVCacheDType + "/tp" + string(rune('0'+c.TPSize))
		if c.Error != "" {
			continue
		}
		planned++
		if c.Engine == "sglang" && !slices.Contains(c.Flags, "--enable-dp-attention") {
			t.Errorf("%s: flags %v lack --enable-dp-attention", name, c.Flags)
		}
		if c.Engine == "sglang" && !strings.Contains(strings.Join(c.Flags, " "), "--dp-size 2") {
			t.Errorf("%s: flags %v lack --dp-size 2", name, c.Flags)
		}
		r, err := plan.ParseEngineArgs(plan.Request{Model: base.Model, GPU: base.GPU, Engine: c.Engine}, c.Flags)
		if err != nil {
			t.Fatalf("%s: %v: %v", name, c.Flags, err)
		}
		if c.Engine == "trtllm" {
			r.DPSize = base.DPSize // kvcfg's replica count, not a trtllm-serve flag
		}
		rep, err := plan.Run(context.Background(), r)
		if err != nil {
			t.Fatalf("%s: plan %v: %v", name, c.Flags, err)
		}
		if rep.MaxTotalNumTokens != c.TokenCapacity || rep.CellSizeBytes != c.BytesPerToken || rep.AvailableKVBytes != c.AvailableKVBytes ||
			rep.MaxConcurrencyAtContextLength != c.Report.MaxConcurrencyAtContextLength || rep.ContextLength != c.Report.ContextLength {
			t.Errorf("%s: plan with %v: %d tokens, %v B/token, %d requests of %d; column %d, %v, %d of %d", name, c.Flags,
				rep.MaxTotalNumTokens, rep.CellSizeBytes, rep.MaxConcurrencyAtContextLength, rep.ContextLength,
				c.TokenCapacity, c.BytesPerToken, c.Report.MaxConcurrencyAtContextLength, c.Report.ContextLength)
		}
	}
	if planned < 6 {
		t.Errorf("only %d columns planned", planned)
	}
}

// An input no compared engine takes is refused.
func TestCompareRefusesOrphanInput(t *testing.T) {
	_, err := plan.Compare(context.Background(), plan.CompareRequest{Request: plan.Request{FreeGPUMemoryFraction: 0.8}})
	if !errors.Is(err, plan.ErrInvalid) || !strings.Contains(err.Error(), "free_gpu_memory_fraction") {
		t.Errorf("err %v", err)
	}
}

// ParseEngineArgs never panics, and what it parses prints back as flags
// that parse to the same flags again (EngineArgs ∘ ParseEngineArgs is
// stable).
func FuzzParseEngineArgs(f *testing.F) {
	f.Add("trtllm", "--tp_size 2 enable_attention_dp=true kv_cache_config.dtype=fp8 --max_seq_len 32768 kv_cache_config.max_attention_window=[128,131072]")
	f.Add("vllm", "--tensor-parallel-size 2 --data-parallel-size 2 --max-model-len 32768 --gpu-memory-utilization 0.88 --enforce-eager")
	f.Add("sglang", "--tp-size 2 --dp-size 2 --enable-dp-attention --context-length 32768 --mem-fraction-static 0.82")
	f.Add("sglang", "--tp --model-path x -- =")
	f.Fuzz(func(t *testing.T, engine, line string) {
		r, err := plan.ParseEngineArgs(plan.Request{Engine: engine}, strings.Fields(line))
		if err != nil {
			return
		}
		r.Engine = strings.ToLower(strings.TrimSpace(r.Engine))
		if !slices.Contains(plan.Engines(), r.Engine) {
			return
		}
		args := plan.EngineArgs(r, true)
		r2, err := plan.ParseEngineArgs(plan.Request{Engine: r.Engine}, args)
		if err != nil {
			t.Fatalf("%q printed from %q does not parse: %v", args, line, err)
		}
		if again := plan.EngineArgs(r2, true); !slices.Equal(again, args) {
			t.Fatalf("%q → %q → %q", line, args, again)
		}
	})
}

// CommandLineFlags is Flags without the engines and their spellings, and
// its copies are the caller's: changing them leaves the table as it was.
func TestCommandLineFlags(t *testing.T) {
	full, cl := plan.Flags(), plan.CommandLineFlags()
	if len(full) != len(cl) {
		t.Fatalf("%d rows, Flags has %d", len(cl), len(full))
	}
	for i := range full {
		want := full[i]
		want.Engines, want.Spelling = nil, nil
		if !reflect.DeepEqual(cl[i], want) {
			t.Errorf("row %d: %+v, want %+v", i, cl[i], want)
		}
	}
	for i := range cl {
		for j := range cl[i].Aliases {
			cl[i].Aliases[j].Name = "--changed"
		}
		for j := range cl[i].KeyAliases {
			cl[i].KeyAliases[j] = "changed"
		}
		cl[i].Aliases = append(cl[i].Aliases, plan.Alias{Name: "--appended"})
	}
	if again := plan.Flags(); !reflect.DeepEqual(again, full) {
		t.Error("changing CommandLineFlags' rows changed the table")
	}
	if again := plan.CommandLineFlags(); len(again[0].Aliases) != len(full[0].Aliases) {
		t.Error("an append to one row's aliases reached the table")
	}
}
