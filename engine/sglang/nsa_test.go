package sglang_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/model"
)

// SGLang's DSA backend defaults (_set_default_nsa_backends; the newest
// arg_groups/dsa_compat.py) by platform, KV dtype and release.
func TestDefaultNSABackends(t *testing.T) {
	for _, tc := range []struct {
		name, version, platform string
		sm                      int
		fp8                     bool
		prefill, decode         string // given
		wantP, wantD            string
	}{
		{"Hopper bf16", "", "cuda", 90, false, "", "", "flashmla_sparse", "fa3"},
		{"Hopper fp8", "", "cuda", 90, true, "", "", "flashmla_auto", "flashmla_kv"},
		{"Blackwell fp8 0.5.6", "0.5.6", "cuda", 100, true, "", "", "flashmla_auto", "flashmla_kv"},
		{"Blackwell fp8 0.5.9", "0.5.9", "cuda", 100, true, "", "", "flashmla_auto", "flashmla_kv"},
		{"Blackwell fp8 0.5.10rc0", "0.5.10rc0", "cuda", 100, true, "", "", "trtllm", "trtllm"},
		{"Blackwell fp8 latest", "", "cuda", 103, true, "", "", "trtllm", "trtllm"},
		{"Blackwell bf16 0.5.6", "0.5.6", "cuda", 100, false, "", "", "flashmla_sparse", "flashmla_sparse"},
		{"Blackwell bf16 latest", "", "cuda", 100, false, "", "", "flashmla_sparse", "trtllm"},
		{"Blackwell fp8 decode given", "", "cuda", 100, true, "", "flashmla_kv", "trtllm", "flashmla_kv"},
		{"ROCm fp8", "", "hip", 95, true, "", "", "tilelang", "tilelang"},
		{"ROCm bf16", "0.5.6", "hip", 95, false, "", "", "tilelang", "tilelang"},
		{"ROCm half-set falls to the Hopper bucket", "", "hip", 95, true, "", "aiter", "flashmla_auto", "aiter"},
		{"both given", "", "cuda", 90, true, "flashmla_sparse_q8", "flashmla_kv", "flashmla_sparse_q8", "flashmla_kv"},
	} {
		prof, _, err := sglang.ResolveProfile(tc.version)
		if err != nil {
			t.Fatal(err)
		}
		p, d := prof.DefaultNSABackends(sglang.NSAInput{Platform: tc.platform, SM: tc.sm, FP8: tc.fp8, Prefill: tc.prefill, Decode: tc.decode})
		if p != tc.wantP || d != tc.wantD {
			t.Errorf("%s: %s / %s, want %s / %s", tc.name, p, d, tc.wantP, tc.wantD)
		}
	}
}

// calculate_mla_kv_cache_dim: trtllm on either side keeps 576; on ROCm
// tilelang or aiter on either side keeps 576; else fp8 is the 656 row.
func TestDSAFP8Row(t *testing.T) {
	fp8, bf16 := dtype.FP8E4M3FN, dtype.BFloat16
	for _, tc := range []struct {
		kv                        dtype.DType
		platform, prefill, decode string
		want                      bool
	}{
		{fp8, "cuda", "flashmla_auto", "flashmla_kv", true},
		{fp8, "cuda", "flashmla_sparse", "fa3", true},
		{fp8, "cuda", "trtllm", "flashmla_kv", false},
		{fp8, "cuda", "flashmla_auto", "trtllm", false},
		{fp8, "cuda", "tilelang", "tilelang", true}, // the raw layout is ROCm's only
		{fp8, "hip", "tilelang", "tilelang", false},
		{fp8, "hip", "flashmla_auto", "aiter", false},
		{fp8, "hip", "flashmla_auto", "flashmla_kv", true},
		{bf16, "cuda", "flashmla_auto", "flashmla_kv", false},
		{fp8, "npu", "flashmla_auto", "flashmla_kv", false},
	} {
		if got := sglang.DSAFP8Row(tc.kv, tc.platform, tc.prefill, tc.decode); got != tc.want {
			t.Errorf("%v %s %s/%s: %v, want %v", tc.kv, tc.platform, tc.prefill, tc.decode, got, tc.want)
		}
	}
}

// DeepSeek-V3.2 (61 layers) cell bytes: (576 + 132) × 61 = 43,188 with
// trtllm or ROCm's tilelang, (656 + 132) × 61 = 48,068 for the fp8 flashmla
// row, (1152 + 132) × 61 = 78,324 for bf16. Releases from 0.5.17 count
// the row they allocate.
func TestDSACellByBackend(t *testing.T) {
	dsa := deepseekV3()
	dsa.Attention, dsa.IndexHeadDim, dsa.IndexTopK = model.DSA, 128, 2048
	h200 := sglang.Hardware{MemoryMiB: 143771, SM: 90, Platform: "cuda"}
	b200 := sglang.Hardware{MemoryMiB: 183359, SM: 100, Platform: "cuda"}
	mi355 := sglang.Hardware{MemoryMiB: 294896, SM: 95, Platform: "hip"}
	// RTX PRO 6000 Blackwell: compute capability 12.0. SGLang's default
	// KV dtype for DSA is fp8_e4m3 from major 10 up, not only on SM 100/103
	// (_set_default_nsa_kv_cache_dtype), and so are the Blackwell backends.
	rtxPro := sglang.Hardware{MemoryMiB: 97887, SM: 120, Platform: "cuda"}
	for _, tc := range []struct {
		name, version, kv, prefill, decode string
		hw                                 sglang.Hardware
		cell                               float64
		wantP, wantD                       string
	}{
		{"H200 bf16", "latest", "", "", "", h200, 78324, "flashmla_sparse", "fa3"},
		{"H200 fp8", "latest", "fp8_e4m3", "", "", h200, 48068, "flashmla_auto", "flashmla_kv"},
		{"H200 fp8 trtllm decode", "latest", "fp8_e4m3", "", "trtllm", h200, 43188, "flashmla_auto", "trtllm"},
		{"B200 default latest", "latest", "", "", "", b200, 43188, "trtllm", "trtllm"},
		{"B200 fp8 flashmla latest", "latest", "", "flashmla_auto", "flashmla_kv", b200, 48068, "flashmla_auto", "flashmla_kv"},
		{"B200 default 0.5.17 flashmla", "0.5.17", "", "flashmla_sparse", "flashmla_kv", b200, 48068, "flashmla_sparse", "flashmla_kv"},
		{"B200 bf16 latest", "latest", "bf16", "", "", b200, 78324, "flashmla_sparse", "trtllm"},
		{"RTX PRO 6000 default latest", "latest", "", "", "", rtxPro, 43188, "trtllm", "trtllm"},
		{"RTX PRO 6000 bf16 latest", "latest", "bfloat16", "", "", rtxPro, 78324, "flashmla_sparse", "trtllm"},
		{"MI355X fp8", "latest", "fp8_e4m3", "", "", mi355, 43188, "tilelang", "tilelang"},
		{"MI355X fp8 aiter decode", "latest", "fp8_e4m3", "", "aiter", mi355, 43188, "flashmla_auto", "aiter"},
		{"MI355X fp8 flashmla", "latest", "fp8_e4m3", "flashmla_auto", "flashmla_kv", mi355, 48068, "flashmla_auto", "flashmla_kv"},
	} {
		c := newC(t, sglang.Input{Spec: dsa, Version: tc.version, Parallel: sglang.Parallel{TP: 8, PP: 1, DP: 1}, Hardware: tc.hw,
			Args:              sglang.ServerArgs{KVCacheDType: tc.kv, NSAPrefillBackend: tc.prefill, NSADecodeBackend: tc.decode},
			PostLoadFreeBytes: gibBytes(60)})
		r, err := c.Configure(gibBytes(130))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := r.CellSize; got != tc.cell || r.Overcommit != nil {
			t.Errorf("%s: cell %v (overcommit %+v), want %v", tc.name, got, r.Overcommit, tc.cell)
		}
		if p, d := c.NSABackends(); p != tc.wantP || d != tc.wantD {
			t.Errorf("%s: backends %s / %s, want %s / %s", tc.name, p, d, tc.wantP, tc.wantD)
		}
	}
}

// A value SGLang's argparse refuses is refused with the accepted list,
// for any model; a model without DSA resolves no backends.
func TestNSABackendValidation(t *testing.T) {
	llama := llama8B()
	h100 := sglang.Hardware{MemoryMiB: 81559, SM: 90, Platform: "cuda"}
	for _, args := range []sglang.ServerArgs{{NSAPrefillBackend: "flashmla"}, {NSADecodeBackend: "trtllm_mla"}} {
		_, err := sglang.New(sglang.Input{Spec: llama, Parallel: sglang.Parallel{TP: 1, PP: 1, DP: 1}, Hardware: h100, Args: args})
		if !errors.Is(err, sglang.ErrInvalid) || !strings.Contains(err.Error(), "accepted: "+strings.Join(sglang.NSABackends(), ", ")) {
			t.Errorf("%+v: %v", args, err)
		}
	}
	c := newC(t, sglang.Input{Spec: llama, Parallel: sglang.Parallel{TP: 1, PP: 1, DP: 1}, Hardware: h100,
		Args: sglang.ServerArgs{NSADecodeBackend: "TRTLLM"}})
	if p, d := c.NSABackends(); p != "" || d != "" {
		t.Errorf("llama: backends %q / %q", p, d)
	}
}
