package sglang_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/sglang"
)

func TestResolveProfileEras(t *testing.T) {
	tests := []struct {
		version string
		era     sglang.Era
		reason  string
	}{
		{"", sglang.EraLatest, "no --sglang-version: sized with the newest profile, latest"}, // issue 18: the default is the newest
		{"latest", sglang.EraLatest, "latest"},
		{"main", sglang.EraLatest, "main"},
		{"0.3.6", sglang.Era04, "predates the oldest profile"},
		{"0.4.1", sglang.Era04, "0.4.1 is sized with the 0.4 profile"},
		{"v0.4.4.post1", sglang.Era04, "0.4.4.post1"},
		{"0.4.7", sglang.Era04, "0.4.7 is sized"},              // PR #7054 landed after the v0.4.7 bump
		{"0.4.7.post1", sglang.Era048, "0.4.7.post1 is sized"}, // first release with the GiB tiers
		{"0.4.10", sglang.Era048, "GiB reserve"},
		{"0.5.2", sglang.Era048, ""},
		{"0.5.3rc0", sglang.Era048, "0.5.3rc0"}, // cut before PR #10975
		{"0.5.3", sglang.Era053, "MiB reserve"},
		{"0.5.9", sglang.Era053, ""},
		{"0.5.10rc0", sglang.Era0510, ""},
		{"0.5.18.post2", sglang.Era0510, ""},
		{"0.5.19", sglang.EraLatest, ""},
		{"0.6.0", sglang.EraLatest, ""},
		{"0.4", sglang.Era04, ""},
	}
	for _, tt := range tests {
		p, _, err := sglang.ResolveProfile(tt.version)
		if err != nil {
			t.Errorf("%q: %v", tt.version, err)
			continue
		}
		if p.Era != tt.era || !strings.Contains(p.Reason, tt.reason) {
			t.Errorf("%q: era %s (%s), want %s containing %q", tt.version, p.Era, p.Reason, tt.era, tt.reason)
		}
	}
	for _, bad := range []string{"x", "1", "0.a.1", "0.5.3rcx", "0.5.3.postx", "-1.2", "0.4.1.2.3"} {
		if _, _, err := sglang.ResolveProfile(bad); !errors.Is(err, sglang.ErrUnknownVersion) {
			t.Errorf("%q: err %v, want ErrUnknownVersion", bad, err)
		}
	}
}

// A version resolved again gives the same profile (from the cache), and an
// unknown one its error each time.
func TestResolveProfileAgain(t *testing.T) {
	for _, v := range []string{"0.5.3", " 0.5.3", "latest", "0.3.6"} {
		a, _, errA := sglang.ResolveProfile(v)
		b, _, errB := sglang.ResolveProfile(v)
		if errA != nil || errB != nil || a.Era != b.Era || a.Version != b.Version || a.Reason != b.Reason || a.Version != v {
			t.Errorf("%q: %+v (%v), then %+v (%v)", v, a, errA, b, errB)
		}
	}
	for range 2 {
		if _, _, err := sglang.ResolveProfile("0.x"); !errors.Is(err, sglang.ErrUnknownVersion) {
			t.Errorf("0.x: err %v, want ErrUnknownVersion", err)
		}
	}
}

func TestVersionOrder(t *testing.T) {
	order := []string{"0.4.6.post5", "0.4.7", "0.4.7.post1", "0.4.10", "0.5.3rc0", "0.5.3rc1", "0.5.3", "0.5.3.post1", "0.5.10"}
	for i := 1; i < len(order); i++ {
		a, _ := sglang.ParseVersion(order[i-1])
		b, _ := sglang.ParseVersion(order[i])
		if !a.Less(b) || b.Less(a) {
			t.Errorf("%s < %s: got %v, reverse %v", a, b, a.Less(b), b.Less(a))
		}
	}
}

func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"0.4.7", "v0.5.3rc0", "0.4.6.post5", "0.5", "main", "0.5.3+cu129", "0.5.3.dev1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := sglang.ParseVersion(s)
		if err != nil {
			return
		}
		w, err := sglang.ParseVersion(v.String())
		if err != nil || w != v {
			t.Fatalf("%q → %v → %q → %v (%v)", s, v, v.String(), w, err)
		}
		if _, _, err := sglang.ResolveProfile(s); err != nil {
			t.Fatalf("%q parses but does not resolve: %v", s, err)
		}
	})
}

// The default mem_fraction_static of each era, from each era's source
// (server_args.py) and the real runs issue 18 quotes.
func TestMemFractionByEra(t *testing.T) {
	const (
		rtx4090 = 24564
		h100MiB = 81559
		h200MiB = 143771
		b200MiB = 183359
	)
	tests := []struct {
		name    string
		version string
		gpuMiB  int64
		tp, dp  int
		dpAttn  bool
		spec    string
		mla     bool
		want    float64
	}{
		// 0.4.0–0.4.7: by TP size; real 0.4.1–0.4.4 runs: TP1 0.88, TP4 0.85.
		{"0.4 TP1", "0.4.3", h100MiB, 1, 1, false, "", false, 0.88},
		{"0.4 TP4", "0.4.3", h100MiB, 4, 1, false, "", false, 0.85},
		{"0.4 TP2", "0.4.3", h100MiB, 2, 1, false, "", false, 0.87},
		{"0.4 TP8", "0.4.3", h200MiB, 8, 1, false, "", false, 0.81},
		{"0.4 TP16", "0.4.3", h200MiB, 16, 1, false, "", false, 0.79},
		// 0.4.7.post1–0.5.2: (2.8+0.1) GiB on a 24 GB card → 0.879 (the July
		// 2025 run); a 16 GB card of 16,272–16,361 MiB → 0.818 (the 0.4.10
		// run); (9.5+0.5) GiB on H100; (12+4) GiB on H200 TP8; 32 GiB on B200.
		{"0.4.8 RTX 4090", "0.4.9", rtx4090, 1, 1, false, "", false, 0.879},
		{"0.4.8 16 GB low", "0.4.10", 16272, 1, 1, false, "", false, 0.818},
		{"0.4.8 16 GB high", "0.4.10", 16361, 1, 1, false, "", false, 0.818},
		{"0.4.8 T4", "0.4.10", 15360, 1, 1, false, "", false, 0.807},
		{"0.4.8 H100", "0.5.0", h100MiB, 1, 1, false, "", false, 0.874},
		{"0.4.8 H100 EAGLE +2 GiB", "0.5.0", h100MiB, 1, 1, false, "EAGLE", false, 0.849},
		{"0.4.8 H100 NGRAM +0", "0.5.0", h100MiB, 1, 1, false, "NGRAM", false, 0.874},
		{"0.4.8 H200 TP8", "0.5.2", h200MiB, 8, 1, false, "", false, 0.886},
		{"0.4.8 H200 TP8 DP attention +4 GiB", "0.5.2", h200MiB, 8, 8, true, "", false, 0.858},
		{"0.4.8 B200", "0.5.2", b200MiB, 8, 1, false, "", false, 0.821},
		// 0.5.3–0.5.9: the MiB reserve (spec G13).
		{"0.5.3 H100 TP1", "0.5.5", h100MiB, 1, 1, false, "", false, 0.835},
		{"0.5.3 RTX 4090", "0.5.5", rtx4090, 1, 1, false, "", false, 0.847},
		{"0.5.3 H200 TP8", "0.5.5", h200MiB, 8, 1, false, "", false, 0.897},
		// 0.5.10: 58 default prefill graphs × 8 MiB; Qwen3-32B at TP2 on H100
		// logged 0.828 (sgl-project/sglang#29092, June 2026).
		{"0.5.10 H100 TP2", "0.5.13", h100MiB, 2, 1, false, "", false, 0.828},
		{"0.5.10 H100 TP1", "0.5.13", h100MiB, 1, 1, false, "", false, 0.830},
		// newest: the <35 GiB rung at chunk 4096 and batch 48 with 50 prefill
		// graphs: 512+6144+128+96+400 MiB; MLA's prefill graphs cost 1.5 GiB.
		{"latest RTX 4090", "latest", rtx4090, 1, 1, false, "", false, 0.704},
		{"latest H100 TP2", "main", h100MiB, 2, 1, false, "", false, 0.828},
		{"latest H200 TP8 MLA", "0.5.19", h200MiB, 8, 1, false, "", true, 0.886},
		{"latest H100 EAGLE (no spec term)", "main", h100MiB, 2, 1, false, "EAGLE", false, 0.828},
		{"latest unknown GPU", "main", 0, 1, 1, false, "", false, 0.95},
		{"0.5.3 unknown GPU", "0.5.3", 0, 1, 1, false, "", false, 0.88},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _, err := sglang.ResolveProfile(tt.version)
			if err != nil {
				t.Fatal(err)
			}
			tier := p.Tier(tt.gpuMiB, tt.tp)
			got := p.MemFraction(sglang.MemFractionInput{GPUMemoryMiB: tt.gpuMiB, TPSize: tt.tp, PPSize: 1, DPSize: tt.dp,
				EnableDPAttention: tt.dpAttn, ChunkedPrefillSize: tier.ChunkedPrefillSize, MaxPrefillTokens: 16384,
				CudaGraphMaxBS: tier.CudaGraphMaxBS, SpeculativeAlgorithm: tt.spec, MLA: tt.mla})
			if got != tt.want {
				t.Errorf("%s (%s): mem_fraction_static %v, want %v", tt.version, p.Era, got, tt.want)
			}
		})
	}
}

func TestTierByEra(t *testing.T) {
	tests := []struct {
		version string
		gpuMiB  int64
		tp      int
		want    sglang.Tier
	}{
		{"0.4.3", 24564, 1, sglang.Tier{ChunkedPrefillSize: 2048, CudaGraphMaxBS: 8}},
		{"0.4.3", 24564, 4, sglang.Tier{ChunkedPrefillSize: 2048, CudaGraphMaxBS: 80}},
		{"0.4.3", 32607, 1, sglang.Tier{ChunkedPrefillSize: 8192, CudaGraphMaxBS: 160}}, // 25,000 MiB cut
		{"0.4.3", 0, 1, sglang.Tier{ChunkedPrefillSize: 8192, CudaGraphMaxBS: 160}},
		{"0.4.9", 32607, 1, sglang.Tier{ChunkedPrefillSize: 2048, CudaGraphMaxBS: 8}}, // 35 GiB cut
		{"0.4.9", 46068, 1, sglang.Tier{ChunkedPrefillSize: 8192, CudaGraphMaxBS: 160}},
		{"0.4.9", 143771, 8, sglang.Tier{ChunkedPrefillSize: 8192, CudaGraphMaxBS: 256}},
		{"0.4.9", 183359, 8, sglang.Tier{ChunkedPrefillSize: 16384, CudaGraphMaxBS: 512}},
		{"0.4.9", 0, 1, sglang.Tier{ChunkedPrefillSize: 4096, CudaGraphMaxBS: 160}},
		{"0.5.5", 24564, 1, sglang.Tier{ChunkedPrefillSize: 2048, CudaGraphMaxBS: 24}},
		{"0.5.5", 46068, 4, sglang.Tier{ChunkedPrefillSize: 4096, CudaGraphMaxBS: 160}},
		{"0.5.13", 24564, 1, sglang.Tier{ChunkedPrefillSize: 2048, CudaGraphMaxBS: 24}},
		{"main", 24564, 1, sglang.Tier{ChunkedPrefillSize: 4096, CudaGraphMaxBS: 48}},
		{"main", 24564, 4, sglang.Tier{ChunkedPrefillSize: 4096, CudaGraphMaxBS: 160}},
		{"main", 15360, 1, sglang.Tier{ChunkedPrefillSize: 2048, CudaGraphMaxBS: 8}},
	}
	for _, tt := range tests {
		p, _, _ := sglang.ResolveProfile(tt.version)
		if got := p.Tier(tt.gpuMiB, tt.tp); got != tt.want {
			t.Errorf("%s %d MiB TP%d: %+v, want %+v", tt.version, tt.gpuMiB, tt.tp, got, tt.want)
		}
	}
}

func TestPrefillGraphSizes(t *testing.T) {
	for _, tt := range []struct{ max, want int }{{0, 0}, {-1, 0}, {4, 1}, {2048, 42}, {4096, 50}, {8192, 58}, {16384, 74}} {
		if got := sglang.PrefillGraphSizes(tt.max); got != tt.want {
			t.Errorf("PrefillGraphSizes(%d) = %d, want %d", tt.max, got, tt.want)
		}
	}
	// Every capture size counted one by one, as SGLang lists them.
	for max := -1; max <= 20000; max++ {
		want := 0
		for x := 4; x <= max; {
			want++
			switch {
			case x < 32:
				x += 4
			case x < 48:
				x = 48
			case x < 256:
				x += 16
			case x < 288:
				x = 288
			case x < 512:
				x += 32
			case x < 576:
				x = 576
			case x < 1024:
				x += 64
			case x < 1280:
				x = 1280
			case x < 4096:
				x += 256
			case x < 4608:
				x = 4608
			default:
				x += 512
			}
		}
		if got := sglang.PrefillGraphSizes(max); got != want {
			t.Fatalf("PrefillGraphSizes(%d) = %d, counted %d", max, got, want)
		}
	}
}

// A run reproduces its token count with its release's profile: the worked
// example of each era on Llama-3.1-8B (128 KiB a token), default fraction.
func TestTokensByEra(t *testing.T) {
	tests := []struct {
		name      string
		version   string
		mib       int64
		pre, post float64
		mfs       float64
		tokens    int64
		running   int
		log       string
	}{
		// 0.4.x: 0.88 at TP1; the request pool has max_num_reqs+1 rows, so
		// max_running_requests is the clamped estimate 2048 plus one; the KV
		// line has no #tokens.
		{"0.4 H100", "0.4.3", 81559, 78.50, 63.54, 0.88, 443351, 2049,
			"KV Cache is allocated. K size: 27.06 GB, V size: 27.06 GB."},
		// July 2025 (0.4.9), RTX 4090: 0.879 and 38,141 tokens. The run's own
		// readings are not in the repo; 22.10/7.33 GiB are readings that
		// reproduce its count, and give 15 % fewer tokens (32,347) at the
		// 0.5.3 profile's 0.847.
		{"0.4.8 RTX 4090 July 2025", "0.4.9", 24564, 22.10, 7.33, 0.879, 38141, 2049,
			"KV Cache is allocated. #tokens: 38141, K size: 2.33 GB, V size: 2.33 GB"},
		{"0.5.3 RTX 4090 same readings", "0.5.5", 24564, 22.10, 7.33, 0.847, 32347, 2048, ""},
		// 0.5.3: spec Ex.1.
		{"0.5.3 H100 Ex.1", "0.5.5", 81559, 78.50, 63.54, 0.835, 414412, 2048,
			"KV Cache is allocated. #tokens: 414412, K size: 25.29 GB, V size: 25.29 GB"},
		// 0.5.10–0.5.18 and the newest main on Ex.1's readings: both
		// default to 0.830 on an H100 at TP1 (58 and 50 prefill graphs,
		// TestMemFractionByEra). SGLang's rest memory is post − pre ×
		// (1 − fraction), so 0.005 less is 78.50 GiB × 0.005 ÷ 131,072 B =
		// 3,215.3 tokens fewer than Ex.1's 414,412: 411,197.
		{"0.5.10 H100 Ex.1 readings", "0.5.13", 81559, 78.50, 63.54, 0.830, 411197, 2048,
			"KV Cache is allocated. #tokens: 411197, K size: 25.10 GB, V size: 25.10 GB"},
		{"latest H100 Ex.1 readings", "latest", 81559, 78.50, 63.54, 0.830, 411197, 2048,
			"KV Cache is allocated. #tokens: 411197, K size: 25.10 GB, V size: 25.10 GB"},
		// No version: the newest profile, so the same as "latest".
		{"default H100 Ex.1 readings", "", 81559, 78.50, 63.54, 0.830, 411197, 2048,
			"KV Cache is allocated. #tokens: 411197, K size: 25.10 GB, V size: 25.10 GB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hw := sglang.Hardware{MemoryMiB: tt.mib, SM: 89, Platform: "cuda"}
			if tt.mib == 81559 {
				hw.SM = 90
			}
			c, err := sglang.New(sglang.Input{Spec: llama8B(), Parallel: sglang.Parallel{TP: 1, PP: 1, DP: 1}, Hardware: hw,
				PostLoadFreeBytes: gibBytes(tt.post), Version: tt.version})
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Derived().MemFractionStatic; got != tt.mfs {
				t.Errorf("mem_fraction_static %v, want %v", got, tt.mfs)
			}
			res, err := c.Configure(gibBytes(tt.pre))
			if err != nil {
				t.Fatal(err)
			}
			if res.MaxTotalNumTokens != tt.tokens || res.MaxRunningRequests != tt.running {
				t.Errorf("tokens %d running %d, want %d and %d", res.MaxTotalNumTokens, res.MaxRunningRequests, tt.tokens, tt.running)
			}
			if tt.log != "" && (len(res.Logs) == 0 || res.Logs[len(res.Logs)-1] != tt.log) {
				t.Errorf("log %q, want %q", res.Logs, tt.log)
			}
		})
	}
}

// Before 0.5.3 an explicit --max-running-requests is not capped at half the
// tokens (the request pool is max_num_reqs+1 rows).
func TestMaxRunningRequestsPoolRule(t *testing.T) {
	in := sglang.MaxReqsInput{TokenCapacity: 1000, ContextLen: 4096, MaxRunningRequests: 800, AttnDP: 1, ReqPoolPlusOne: true}
	if n, _, err := sglang.ResolveMaxNumReqs(in); err != nil || n != 800 {
		t.Errorf("old rule, explicit 800 with 1000 tokens: %d %v, want 800", n, err)
	}
	in.ReqPoolPlusOne = false
	if n, _, _ := sglang.ResolveMaxNumReqs(in); n != 500 {
		t.Errorf("new rule: %d, want 500", n)
	}
	in = sglang.MaxReqsInput{TokenCapacity: 1000, ContextLen: 4096, AttnDP: 1, ReqPoolPlusOne: true}
	if n, _, _ := sglang.ResolveMaxNumReqs(in); n != 500 {
		t.Errorf("old rule default with 1000 tokens: %d, want min(500, 2049) = 500", n)
	}
}

// Gates inside an era: the hybrid SWA pool arrived in 0.4.9 and multimodal
// models were scaled by 0.90 before.
func TestVersionGates(t *testing.T) {
	for _, tt := range []struct {
		version string
		hybrid  bool
	}{{"0.4.8", false}, {"0.4.9", true}, {"0.5.5", true}} {
		c, err := sglang.New(sglang.Input{Spec: gptOSS(), Parallel: sglang.Parallel{TP: 1, PP: 1, DP: 1}, Hardware: h100,
			PostLoadFreeBytes: gibBytes(20), Version: tt.version})
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Derived().HybridSWA; got != tt.hybrid {
			t.Errorf("%s: hybrid SWA %v, want %v", tt.version, got, tt.hybrid)
		}
	}
	vlm := llama8B()
	vlm.Multimodal = true
	for _, tt := range []struct {
		version string
		mfs     float64
		want    float64
	}{{"0.4.3", 0.8, 0.8 * 0.90}, {"0.4.3", 0, 0.88 * 0.90}, {"0.5.5", 0.8, 0.8}} {
		c, err := sglang.New(sglang.Input{Spec: vlm, Parallel: sglang.Parallel{TP: 1, PP: 1, DP: 1}, Hardware: h100,
			Args: sglang.ServerArgs{MemFractionStatic: tt.mfs}, PostLoadFreeBytes: gibBytes(20), Version: tt.version})
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Derived().MemFractionStatic; math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("%s multimodal mfs %v: %v, want %v", tt.version, tt.mfs, got, tt.want)
		}
	}
}

// A multimodal model reserves SGLANG_VLM_CACHE_SIZE_MB (100) of the KV
// budget from 0.5.18 (PR #34141, merged after 0.5.17); before, the pool was
// sized without it (the RTX 5060 Ti runs of 2026-06 main: the printed pool is
// post − pre·(1 − mfs) to the rounding, no reservation line).
func TestMultimodalReserveGate(t *testing.T) {
	vlm := llama8B()
	vlm.Multimodal = true
	for _, tt := range []struct {
		version string
		wantMB  int
	}{{"0.4.3", 0}, {"0.5.13", 0}, {"0.5.17", 0}, {"0.5.18", 100}, {"latest", 100}, {"", 100}} {
		c, err := sglang.New(sglang.Input{Spec: vlm, Parallel: sglang.Parallel{TP: 1, PP: 1, DP: 1}, Hardware: h100,
			Args: sglang.ServerArgs{MemFractionStatic: 0.8}, PostLoadFreeBytes: gibBytes(40), Version: tt.version})
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Configure(gibBytes(78))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Derived().MultimodalReserveMB; got != tt.wantMB || res.MultimodalGiB != float64(tt.wantMB)/1024 {
			t.Errorf("%q: reserve %d MB (%.4f GiB), want %d", tt.version, got, res.MultimodalGiB, tt.wantMB)
		}
	}
}

func TestBadVersionIsARefusal(t *testing.T) {
	_, err := sglang.New(sglang.Input{Spec: llama8B(), Parallel: sglang.Parallel{TP: 1, PP: 1, DP: 1}, Hardware: h100,
		PostLoadFreeBytes: gibBytes(20), Version: "zero"})
	var fe *engine.Refusal
	if !errors.As(err, &fe) || fe.Flag != "--sglang-version" || !errors.Is(err, sglang.ErrUnknownVersion) {
		t.Fatalf("err %v, want a --sglang-version engine.Refusal wrapping ErrUnknownVersion", err)
	}
}

// Reset resolves the version of each input, reusing the last profile only
// for the same version.
func TestResetFollowsVersion(t *testing.T) {
	var c sglang.Configurator
	for _, ver := range []string{"", "0.4.3", "0.4.3", "latest", "0.4.9", ""} {
		in := sglang.Input{Spec: llama8B(), Parallel: sglang.Parallel{TP: 1, PP: 1, DP: 1}, Hardware: h100, PostLoadFreeBytes: gibBytes(60), Version: ver}
		fresh, err := sglang.New(in)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Reset(in); err != nil {
			t.Fatal(err)
		}
		if c.Profile().Era != fresh.Profile().Era || c.Profile().Reason != fresh.Profile().Reason || c.Derived() != fresh.Derived() {
			t.Errorf("%q: reused %s %+v, fresh %s %+v", ver, c.Profile().Era, c.Derived(), fresh.Profile().Era, fresh.Derived())
		}
	}
}
