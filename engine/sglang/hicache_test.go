package sglang_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/sglang"
)

// Llama-3.1-8B, bf16: size_per_token = 128 (head_dim) × 8 (heads) × 32
// (layers) × 2 B × 2 = 131,072 B, as pool_host/mha.py computes it.
const llama = "meta-llama/Llama-3.1-8B-Instruct"

func TestHiCacheRatio(t *testing.T) {
	args := sglang.ServerArgs{EnableHierarchicalCache: true, HostMemoryBytes: 400 * giB}
	_, off, err := configureCatalog(t, llama, 1, sglang.ServerArgs{}, "", 100*giB, 80*giB)
	if err != nil {
		t.Fatal(err)
	}
	_, res, err := configureCatalog(t, llama, 1, args, "", 100*giB, 80*giB)
	if err != nil {
		t.Fatal(err)
	}
	if res.MaxTotalNumTokens != off.MaxTotalNumTokens || res.KSizeBytes != off.KSizeBytes {
		t.Fatalf("HiCache changed the GPU pool: %d vs %d tokens", res.MaxTotalNumTokens, off.MaxTotalNumTokens)
	}
	h := res.HostPool
	if h == nil {
		t.Fatal("no host pool")
	}
	// Default ratio 2.0: int(T × 2.0) = 2T, page 1 → 2T//1 + 1 = 2T + 1 pages.
	n := res.MaxTotalNumTokens
	if h.BytesPerToken != 131_072 || h.Ratio != 2 || h.Pages != 2*n+1 || h.Tokens != 2*n+1 || h.Bytes != (2*n+1)*131_072 {
		t.Fatalf("host pool %+v for %d device tokens", h, n)
	}
	// (400 GiB − 10 GiB) // 1 rank.
	if h.BudgetBytes != 390*giB || h.RanksPerHost != 1 {
		t.Errorf("budget %d over %d ranks", h.BudgetBytes, h.RanksPerHost)
	}
	if last := res.Logs[len(res.Logs)-1]; !strings.HasPrefix(last, "Allocating kv hierarchical KV host pool: ") || !strings.HasSuffix(last, " GB host memory.") {
		t.Errorf("last log %q", last)
	}
}

func TestHiCacheSizeGB(t *testing.T) {
	// --hicache-size 100 (decimal GB), page 64: int(100e9 // 131,072) =
	// 762,939; 762,939 // 64 + 1 = 11,921 pages = 762,944 tokens;
	// 762,944 × 131,072 = 100,000,595,968 B (762,944 × 2^17). A Qwen3-32B fp8 log (131,072
	// B/token too) prints the same line.
	args := sglang.ServerArgs{EnableHierarchicalCache: true, HiCacheSize: 100, PageSize: 64, HiCacheMemLayout: "page_first"}
	_, res, err := configureCatalog(t, llama, 1, args, "", 100*giB, 80*giB)
	if err != nil {
		t.Fatal(err)
	}
	h := res.HostPool
	if h.Pages != 11_921 || h.Tokens != 762_944 || h.Bytes != 100_000_595_968 || h.Layout != "page_first" || h.BudgetBytes != 0 {
		t.Fatalf("host pool %+v", h)
	}
	if got := res.Logs[len(res.Logs)-1]; got != "Allocating kv hierarchical KV host pool: 762944 tokens, 100.00 GB host memory." {
		t.Errorf("log %q", got)
	}
}

func TestHiCacheHostMemoryRefusal(t *testing.T) {
	// 100 GiB free − 10 GiB reserve = 96,636,764,160 B per rank; with two
	// TP ranks on one host each may claim 48,318,382,080 B.
	for _, tc := range []struct {
		name string
		tp   int
		args sglang.ServerArgs
		flag string
	}{
		{"ratio", 1, sglang.ServerArgs{HiCacheRatio: 2}, "--hicache-ratio"},
		{"size", 1, sglang.ServerArgs{HiCacheSize: 120}, "--hicache-size"},
		{"split over ranks", 2, sglang.ServerArgs{HiCacheRatio: 2}, "--hicache-ratio"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.args.EnableHierarchicalCache, tc.args.HostMemoryBytes = true, 100*giB
			_, res, err := configureCatalog(t, llama, tc.tp, tc.args, "", 100*giB, 80*giB)
			var r *engine.Refusal
			if !errors.As(err, &r) || !errors.Is(err, sglang.ErrHostMemory) {
				t.Fatalf("err = %v", err)
			}
			budget := 96_636_764_160 / int64(tc.tp)
			if res.HostPool.BudgetBytes != budget {
				t.Errorf("budget %d, want %d", res.HostPool.BudgetBytes, budget)
			}
			want := "Not enough host memory available. Requesting "
			if !strings.HasPrefix(r.Message, "ValueError: "+want) || !strings.HasSuffix(r.Message, " GB free. Please reduce the size of the hierarchical cache.") || r.Flag != tc.flag || r.Value == "" {
				t.Fatalf("refusal %+v", r)
			}
			// The suggested value fits: re-plan with it.
			if tc.flag == "--hicache-ratio" {
				tc.args.HiCacheRatio = mustFloat(t, r.Value)
			} else {
				tc.args.HiCacheSize = mustFloat(t, r.Value)
			}
			if _, res2, err := configureCatalog(t, llama, tc.tp, tc.args, "", 100*giB, 80*giB); err != nil || res2.HostPool.Bytes > budget {
				t.Errorf("fix %s %s: %v", r.Flag, r.Value, err)
			}
		})
	}
	// The message's numbers, by hand: ratio 2 on T device tokens asks
	// (2T + 1) × 131,072 B against 96.64 GB.
	_, res, err := configureCatalog(t, llama, 1, sglang.ServerArgs{EnableHierarchicalCache: true, HostMemoryBytes: 100 * giB}, "", 100*giB, 80*giB)
	if err == nil {
		t.Fatal("no refusal")
	}
	req := float64((2*res.MaxTotalNumTokens+1)*131_072) / 1e9
	if !strings.Contains(err.Error(), "Requesting "+strconvF(req)+" GB but only have 96.64 GB free.") {
		t.Errorf("err %v; want %.2f GB requested", err, req)
	}
}

func strconvF(x float64) string { return fmt.Sprintf("%.2f", x) }

func TestHiCacheInvalid(t *testing.T) {
	for _, args := range []sglang.ServerArgs{
		{EnableHierarchicalCache: true, HiCacheMemLayout: "page_last"},
		{EnableHierarchicalCache: true, HiCacheRatio: -1},
		{DisaggregationMode: "both"},
	} {
		if _, _, err := configureCatalog(t, llama, 1, args, "", 100*giB, 80*giB); !errors.Is(err, sglang.ErrInvalid) {
			t.Errorf("%+v: err = %v, want ErrInvalid", args, err)
		}
	}
}

func TestHiCacheNeedsRadixCache(t *testing.T) {
	_, _, err := configureCatalog(t, llama, 1, sglang.ServerArgs{EnableHierarchicalCache: true, DisableRadixCache: true}, "", 100*giB, 80*giB)
	var r *engine.Refusal
	if !errors.As(err, &r) || r.Message != "ValueError: The arguments enable-hierarchical-cache and disable-radix-cache are mutually exclusive and cannot be used at the same time. Please use only one of them." || r.Flag != "--disable-radix-cache" {
		t.Fatalf("err %v", err)
	}
}

func TestHiCacheSizePPMin(t *testing.T) {
	// PP 3 splits Llama's 32 layers 10/11/11 (extra layers to the last
	// stages): 40,960 and 45,056 B per token. --hicache-size 10: stage 0
	// would take int(10e9 // 40,960) = 244,140 tokens, the others
	// int(10e9 // 45,056) = 221,946; the MIN, 221,946, + one page (page 1)
	// = 221,947 tokens on every stage. The node pins 221,947 × (40,960 +
	// 2 × 45,056) = 221,947 × 2^17 = 29,091,037,184 B.
	spec := mustSpec(t, llama)
	in := sglang.Input{Spec: spec, Parallel: sglang.Parallel{TP: 1, PP: 3, DP: 1, DCP: 1},
		Args:     sglang.ServerArgs{MemFractionStatic: 0.9, EnableHierarchicalCache: true, HiCacheSize: 10},
		Hardware: sglang.Hardware{MemoryMiB: 143771, SM: 90, Platform: "cuda"}, PostLoadFreeBytes: 120 * giB}
	c, err := sglang.New(in)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Configure(130 * giB)
	if err != nil {
		t.Fatal(err)
	}
	h := res.HostPool
	if h.Tokens != 221_947 || h.BytesPerToken != 45_056 || h.NodeBytes != 29_091_037_184 {
		t.Fatalf("host pool %+v", h)
	}
}
