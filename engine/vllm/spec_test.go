package vllm

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcfg/kvcfg/dtype"
)

// max_memory_usage_bytes / page per spec kind, from kv_cache_interface.py.
func TestSpecBlocks(t *testing.T) {
	u := usage{maxModelLen: 10000, batchedTokens: 2048, mambaMode: "none", encoderTokens: 1500}
	tests := []struct {
		name string
		spec LayerSpec
		u    func(usage) usage
		want int64
	}{
		{"full", LayerSpec{Kind: FullAttention, BlockSize: 16, TokenBytes: 1}, nil, 625},
		{"mla", LayerSpec{Kind: MLAAttention, BlockSize: 64, TokenBytes: 1}, nil, 157},
		{"sliding: ceil((W-1+batched)/B)+1", LayerSpec{Kind: SlidingWindow, BlockSize: 16, Window: 4096, TokenBytes: 1}, nil, (4095+2048+15)/16 + 1},
		{"sliding capped at L", LayerSpec{Kind: SlidingWindow, BlockSize: 16, Window: 9000, TokenBytes: 1}, nil, 625 + 1},
		{"chunked: ceil((C+batched)/B)", LayerSpec{Kind: ChunkedLocalAttention, BlockSize: 16, ChunkSize: 8192, TokenBytes: 1}, nil, 625},
		{"chunked small", LayerSpec{Kind: ChunkedLocalAttention, BlockSize: 16, ChunkSize: 1024, TokenBytes: 1}, nil, 192},
		{"mamba none", LayerSpec{Kind: Mamba, StateBytes: 7}, nil, 1},
		{"mamba none with 2 spec tokens", LayerSpec{Kind: Mamba, StateBytes: 7}, func(u usage) usage { u.specBlocks = 2; return u }, 3},
		{"mamba align", LayerSpec{Kind: Mamba, StateBytes: 7}, func(u usage) usage { u.mambaMode = "align"; return u }, 2},
		{"mamba all", LayerSpec{Kind: Mamba, BlockSize: 16, StateBytes: 7}, func(u usage) usage { u.mambaMode = "all"; return u }, 625},
		{"cross attention: encoder tokens", LayerSpec{Kind: CrossAttention, BlockSize: 16, TokenBytes: 1}, nil, 94},
		{"encoder only: nothing", LayerSpec{Kind: EncoderOnlyAttention, BlockSize: 16, TokenBytes: 1}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			uu := u
			if tt.u != nil {
				uu = tt.u(u)
			}
			if got := tt.spec.blocks(uu); got != tt.want {
				t.Errorf("blocks = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestStageSplit(t *testing.T) {
	count := func(st []int, pp int) []int {
		out := make([]int, pp)
		for _, s := range st {
			out[s]++
		}
		return out
	}
	// vLLM's get_pp_indices: the remainder goes to the stages before the last.
	if diff := cmp.Diff([]int{15, 15, 16, 15}, count(stageOf(61, 4), 4)); diff != "" {
		t.Error(diff)
	}
	if diff := cmp.Diff([]int{11, 11, 10}, count(stageOf(32, 3), 3)); diff != "" {
		t.Error(diff)
	}
}

func TestPageBytes(t *testing.T) {
	tests := []struct {
		name string
		spec LayerSpec
		want int64
	}{
		{"llama nvfp4 page at B=16 (PR #37192)", LayerSpec{Kind: FullAttention, BlockSize: 16, TokenBytes: CacheDType{Format: mustFormat("nvfp4")}.tokenBytes(8, 128, 128)}, 18432},
		{"llama bf16 page", LayerSpec{Kind: FullAttention, BlockSize: 16, TokenBytes: CacheDType{Format: mustFormat("bf16")}.tokenBytes(8, 128, 128)}, 65536},
		{"fp8_ds_mla page", LayerSpec{Kind: MLAAttention, BlockSize: 64, TokenBytes: DSMLATokenBytes}, 64 * 656},
		{"padded mamba", LayerSpec{Kind: Mamba, StateBytes: 100, PagePadded: 128}, 128},
	}
	for _, tt := range tests {
		if got := tt.spec.PageBytes(); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}

func mustFormat(name string) dtype.Format {
	f, err := dtype.LookupFormat(name)
	if err != nil {
		panic(err)
	}
	return f
}

func TestGiBFormats(t *testing.T) {
	tests := []struct {
		b          int64
		v011, late string
	}{
		{4 * GiB, "4.00", "4.0"},
		{1478*2<<20 + 1<<20, "2.89", "2.89"},
		{GiB / 10, "0.10", "0.1"},
		{-GiB / 2, "-0.50", "-0.5"},
		{GiB / 8, "0.12", "0.12"}, // 0.125: Python rounds the tie to even
		{GiB * 35 / 8, "4.38", "4.38"},
	}
	for _, tt := range tests {
		if got := gibFor(V011.rules(), tt.b); got != tt.v011 {
			t.Errorf("0.11 %d: %q, want %q", tt.b, got, tt.v011)
		}
		if got := gibFor(Latest.rules(), tt.b); got != tt.late {
			t.Errorf("latest %d: %q, want %q", tt.b, got, tt.late)
		}
	}
}

func TestCommas(t *testing.T) {
	for in, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 78384: "78,384", 1234567: "1,234,567", -1000: "-1,000"} {
		if got := commas(in); got != want {
			t.Errorf("commas(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestMulDiv(t *testing.T) {
	tests := []struct{ a, b, c, want int64 }{
		{9798, 131072, 8713, 9798 * 131072 / 8713},
		{1 << 62, 1 << 20, 1 << 30, 1 << 52},
		{1 << 62, 1 << 62, 3, 1<<63 - 1},
		{5, 0, 3, 0},
	}
	for _, tt := range tests {
		if got := mulDiv(tt.a, tt.b, tt.c); got != tt.want {
			t.Errorf("mulDiv(%d, %d, %d) = %d, want %d", tt.a, tt.b, tt.c, got, tt.want)
		}
	}
}
