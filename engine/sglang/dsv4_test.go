package sglang_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/engine/sglang/pools"
	"github.com/kvcfg/kvcfg/engine/sglang/sizing"
	"github.com/kvcfg/kvcfg/model"
)

const giB = int64(1) << 30

// configureCatalog plans a catalog model on H200s with the given free
// memory before and after weight load.
func configureCatalog(t *testing.T, model string, tp int, args sglang.ServerArgs, version string, pre, post int64) (*sglang.Configurator, *sglang.Result, error) {
	t.Helper()
	spec, err := catalog.Load(model)
	if err != nil {
		t.Fatal(err)
	}
	if args.MemFractionStatic == 0 {
		args.MemFractionStatic = 0.9
	}
	in := sglang.Input{Spec: spec, Parallel: sglang.Parallel{TP: tp, PP: 1, DP: 1, DCP: 1}, Args: args, Version: version,
		Hardware: sglang.Hardware{MemoryMiB: 143771, SM: 90, Platform: "cuda"}, PostLoadFreeBytes: post}
	c, err := sglang.New(in)
	if err != nil {
		return nil, nil, err
	}
	res, err := c.Configure(pre)
	return c, res, err
}

func TestDSV4Plan(t *testing.T) {
	// 100 GiB free before load, 60 GiB after, fraction 0.9: rest =
	// 60 − 100·0.1 = 50 GiB = 53,687,091,200 B.
	c, res, err := configureCatalog(t, "deepseek-ai/DeepSeek-V4-Pro", 8, sglang.ServerArgs{MaxRunningRequests: 256}, "", 100*giB, 60*giB)
	if err != nil {
		t.Fatal(err)
	}
	if res.Configurator != sizing.KindDSV4 || c.Derived().PageSize != 256 || c.Derived().SWAFullTokensRatio != 0.1 {
		t.Fatalf("configurator %s, page %d, ratio %v; want DSV4, 256, 0.1", res.Configurator, c.Derived().PageSize, c.Derived().SWAFullTokensRatio)
	}
	d := res.DSV4
	if d == nil {
		t.Fatal("no dsv4 pools")
	}
	// Fixed term for the requested 256: 4,209,508,352 B (sizing's test);
	// (53,687,091,200 − 4,209,508,352) / 10,993.8375 = 4,500,527.9 → 4,500,480.
	if d.C128StateFixedBytes != 4_209_508_352 || res.MaxTotalNumTokens != 4_500_480 {
		t.Errorf("fixed %d, tokens %d; want 4,209,508,352 and 4,500,480", d.C128StateFixedBytes, res.MaxTotalNumTokens)
	}
	// swa = floor_page(int(450,048.0)) = 450,048 (1,758 pages); c128_state = (256+1)·128.
	if d.Tokens.SWA != 450_048 || res.SWAMaxTotalNumTokens != 450_048 || d.Tokens.C128State != 257*128 || res.MaxRunningRequests != 256 {
		t.Errorf("swa %d, c128_state %d, requests %d", d.Tokens.SWA, d.Tokens.C128State, res.MaxRunningRequests)
	}
	if !strings.HasPrefix(res.Logs[0], "DSV4 memory calculation: bytes_per_full_token=10993.84, available_bytes=50.00 GB, c128_state_fixed=3.92 GB, full_token=4500480") ||
		res.Logs[1] != "DSV4 pool sizes: full=4500480, swa=450048, c4=1125120, c128=35160, c4_state=28128, c128_state=0" {
		t.Errorf("logs %q", res.Logs)
	}
	if res.KVPoolBytes > res.AvailableBytes || res.KSizeBytes != d.Bytes.Total() || res.IndexerBytes != d.Bytes.Indexer {
		t.Errorf("pool %d B of %d available, K %d vs %d", res.KVPoolBytes, res.AvailableBytes, res.KSizeBytes, d.Bytes.Total())
	}
	if _, err := pools.Config(sglang.Input{Spec: mustSpec(t, "deepseek-ai/DeepSeek-V4-Pro"), Parallel: sglang.Parallel{TP: 8, PP: 1}}, c, res); err == nil {
		t.Error("pools.Config builds DeepSeek-V4 pools it does not model")
	}
}

func mustSpec(t *testing.T, name string) *model.Spec {
	t.Helper()
	s, err := catalog.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDSV4Refusals(t *testing.T) {
	tests := []struct {
		name string
		args sglang.ServerArgs
		post int64
		want string
		flag string
		val  string
	}{
		{"kv dtype", sglang.ServerArgs{KVCacheDType: "fp8_e5m2"}, 60 * giB, "AssertionError: fp8_e5m2 is not supported for DeepseekV4ForCausalLM", "--kv-cache-dtype", "fp8_e4m3"},
		{"speculative", sglang.ServerArgs{SpeculativeAlgorithm: "NGRAM"}, 60 * giB, "AssertionError: Only EAGLE speculative algorithm is supported for DeepseekV4ForCausalLM", "--speculative-algorithm", "EAGLE"},
		{"state dtype", sglang.ServerArgs{DSV4CompressStateDType: "fp16"}, 60 * giB,
			"Unsupported SGLANG_DSV4_COMPRESS_STATE_DTYPE='fp16'. Expected one of: float32, fp32, bfloat16, bf16.", "SGLANG_DSV4_COMPRESS_STATE_DTYPE", "float32"},
		// Capped at 4096 tokens the ratio-0.1 SWA pool is 256 tokens < 768.
		{"swa floor", sglang.ServerArgs{MaxTotalTokens: 4096}, 60 * giB, "DSV4 SWA pool (256 tokens) is below the admission floor: minimum=768", "--swa-full-tokens-ratio", "0.1875"},
		// 10.5 GiB after load leaves 0.5 GiB: below the 3.92 GiB fixed term
		// of the default 256 requests.
		{"fixed term eats the budget", sglang.ServerArgs{}, 10*giB + giB/2, "Not enough memory", "--mem-fraction-static", ""},
		// Weights leave nothing: minimum viable fraction.
		{"no room", sglang.ServerArgs{}, 5 * giB, "Loaded weights leave no GPU memory for the KV cache", "--mem-fraction-static", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := configureCatalog(t, "deepseek-ai/DeepSeek-V4-Pro", 8, tt.args, "", 100*giB, tt.post)
			var re *engine.Refusal
			if !errors.As(err, &re) {
				t.Fatalf("err %v, want a refusal", err)
			}
			if !strings.Contains(re.Message, tt.want) || re.Flag != tt.flag || (tt.val != "" && re.Value != tt.val) {
				t.Errorf("refusal %q flag %s=%s, want %q %s=%s", re.Message, re.Flag, re.Value, tt.want, tt.flag, tt.val)
			}
		})
	}
}

// TestDSV4MinFractionCountsFixedTerm: the fraction kvcfg proposes when the
// budget cannot hold one page must leave room for the c128-state term too.
func TestDSV4MinFractionCountsFixedTerm(t *testing.T) {
	_, _, err := configureCatalog(t, "deepseek-ai/DeepSeek-V4-Pro", 8, sglang.ServerArgs{MaxRunningRequests: 256}, "", 100*giB, 10*giB+giB/2)
	var re *engine.Refusal
	if !errors.As(err, &re) || re.Value == "" {
		t.Fatalf("err %v", err)
	}
	// want = 1 − (10.5 − need)/100 with need ≥ 3.92 GiB fixed + one page:
	// at least 0.934.
	if re.Value < "0.934" {
		t.Errorf("proposed fraction %s ignores the 3.92 GiB fixed term", re.Value)
	}
	args := sglang.ServerArgs{MaxRunningRequests: 256}
	args.MemFractionStatic = mustFloat(t, re.Value)
	if _, _, err := configureCatalog(t, "deepseek-ai/DeepSeek-V4-Pro", 8, args, "", 100*giB, 10*giB+giB/2); err != nil {
		t.Errorf("the proposed fraction %s still fails: %v", re.Value, err)
	}
}

func TestMiniMaxM3Cell(t *testing.T) {
	tests := []struct {
		tp   int
		cell float64
	}{
		// TP8: 4 KV heads → 1 per rank. Main pool (3 dense + 57 sparse)·2·1·128·2
		// = 30,720; indexer 57 K-only layers · 128 · 2 (bf16) = 14,592.
		{8, 30720 + 14592},
		// TP1: 60·2·4·128·2 = 122,880 + 14,592.
		{1, 122880 + 14592},
	}
	for _, tt := range tests {
		_, res, err := configureCatalog(t, "MiniMaxAI/MiniMax-M3", tt.tp, sglang.ServerArgs{}, "", 100*giB, 60*giB)
		if err != nil {
			t.Fatal(err)
		}
		if res.CellSize != tt.cell || res.Configurator != sizing.KindDefault {
			t.Errorf("tp %d: %s cell %v, want %v", tt.tp, res.Configurator, res.CellSize, tt.cell)
		}
		rows := res.MaxTotalNumTokens + 1
		// The concurrency report, the main pool's line, the indexer's.
		if res.IndexerBytes != rows*57*128*2 || len(res.Logs) != 3 || !strings.HasPrefix(res.Logs[0], "max_running_requests=") ||
			!strings.HasSuffix(res.Logs[2], "V size: 0.00 GB") {
			t.Errorf("tp %d: indexer %d B, logs %q", tt.tp, res.IndexerBytes, res.Logs)
		}
	}
	// The configurator of 0.5.10–0.5.18 reads kvc.model_dtype, which it lacks.
	_, _, err := configureCatalog(t, "MiniMaxAI/MiniMax-M3", 8, sglang.ServerArgs{}, "0.5.12", 100*giB, 60*giB)
	var re *engine.Refusal
	if !errors.As(err, &re) || re.Message != "AttributeError: 'KVCacheConfigurator' object has no attribute 'model_dtype'" || re.Flag != "--sglang-version" {
		t.Errorf("0.5.12: %v", err)
	}
}

func mustFloat(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// SGLang's apply_deepseek_v4_defaults: page 256 whatever was asked, KV
// dtype fp8_e4m3 for auto, 256 running requests when not given.
func TestDSV4Defaults(t *testing.T) {
	c, res, err := configureCatalog(t, "deepseek-ai/DeepSeek-V4-Flash", 8, sglang.ServerArgs{PageSize: 512}, "", 100*giB, 60*giB)
	if err != nil {
		t.Fatal(err)
	}
	if c.Derived().PageSize != 256 || c.KV().Format.Name != "fp8_e4m3" || res.MaxRunningRequests != 256 || res.DSV4.C128StateFixedBytes != (257*128+128+1+127)/128*128*4096*20 {
		t.Errorf("page %d, kv %s, requests %d, fixed %d", c.Derived().PageSize, c.KV().Format.Name, res.MaxRunningRequests, res.DSV4.C128StateFixedBytes)
	}
	notes := strings.Join(res.Warnings, "\n")
	for _, w := range []string{"setting page_size to 256 (requested 512)", "Setting KV cache dtype to fp8_e4m3 for DeepseekV4ForCausalLM.", "Setting max_running_requests to 256 for DeepseekV4ForCausalLM."} {
		if !strings.Contains(notes, w) {
			t.Errorf("no %q in %q", w, notes)
		}
	}
	// MTP (EAGLE): rings 16 / 256, cell × 44/43.
	_, res, err = configureCatalog(t, "deepseek-ai/DeepSeek-V4-Flash", 8, sglang.ServerArgs{SpeculativeAlgorithm: "EAGLE"}, "", 100*giB, 60*giB)
	if err != nil {
		t.Fatal(err)
	}
	if res.DSV4.C4Ring != 16 || res.DSV4.C128Ring != 256 || res.DSV4.Bytes.Draft <= 0 {
		t.Errorf("MTP rings %d/%d, draft %d", res.DSV4.C4Ring, res.DSV4.C128Ring, res.DSV4.Bytes.Draft)
	}
}

// explain reads kvcfg's DSV4 floor refusal (and the words of SGLang's unit
// test) and names the ratio that passes.
func TestDSV4FloorPattern(t *testing.T) {
	_, _, err := configureCatalog(t, "deepseek-ai/DeepSeek-V4-Pro", 8, sglang.ServerArgs{MaxTotalTokens: 4096}, "", 100*giB, 60*giB)
	var re *engine.Refusal
	if !errors.As(err, &re) {
		t.Fatal(err)
	}
	for _, p := range sglang.Patterns() {
		if p.Name != "dsv4_swa_floor" {
			continue
		}
		m := p.Regexp.FindStringSubmatch(re.Message)
		if m == nil {
			t.Fatalf("pattern does not match %q", re.Message)
		}
		n := map[string]float64{}
		for i, g := range p.Groups {
			n[g] = mustFloat(t, m[i+1])
		}
		if a := p.Advise(n, nil); a.Knob != "swa_full_tokens_ratio" || a.Value != "0.1875" {
			t.Errorf("advice %+v", a)
		}
		return
	}
	t.Fatal("no dsv4_swa_floor pattern")
}
