package sglang_test

import (
	"errors"
	"testing"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/model"
)

// TestConcurrencyReportRule: the newest SGLang resolves max_running_requests
// as the smallest of its named limits (mem_cache/concurrency_limit.py @
// 038c37b; ties go to the first listed) and logs one line naming the
// binding limit, a WARNING when the user asked for more. The numbers are
// those of SGLang's own unit tests (test_concurrency_limit.py: kv 400,
// mamba 131 / 5 = 26 with target 74 → --max-mamba-cache-size 370; 128
// over 4 DP workers → 32; the heuristic clamps).
func TestConcurrencyReportRule(t *testing.T) {
	tests := []struct {
		name      string
		in        sglang.MaxReqsInput
		n         int
		bound     string
		line      string
		downgrade bool
	}{
		{"mamba binds a request: WARNING with the exact remedy",
			sglang.MaxReqsInput{TokenCapacity: 800, ContextLen: 4096, MaxRunningRequests: 74, AttnDP: 1, Mambaish: true, MaxMambaCacheSize: 131, MambaRatio: 5, Report: true},
			26, sglang.LimitMamba,
			"max_running_requests reduced from the requested 74 to 26 (per dp worker), bound by mamba_state_pool (max_mamba_cache_size=131 per shard / 5 slots per request); other limits: max_running_requests=74, kv_capacity=400. To raise it: try one of: --max-mamba-cache-size 370 (memory permitting), a larger --mamba-full-memory-ratio, or --mamba-ssm-dtype bfloat16.",
			true},
		{"mamba binds the heuristic: no target, no size",
			sglang.MaxReqsInput{TokenCapacity: 1231879, ContextLen: 262144, AttnDP: 1, Mambaish: true, MaxMambaCacheSize: 704, MambaRatio: 3, Report: true},
			234, sglang.LimitMamba,
			"max_running_requests=234 (per dp worker), bound by mamba_state_pool (max_mamba_cache_size=704 per shard / 3 slots per request); other limits: kv_capacity=615939, heuristic_estimate=2406. To raise it: try one of: --max-running-requests to state a target and get an exact size, a larger --mamba-full-memory-ratio, or --mamba-ssm-dtype bfloat16.",
			false},
		{"the user's request honoured: no remedy",
			sglang.MaxReqsInput{TokenCapacity: 800, ContextLen: 4096, MaxRunningRequests: 32, AttnDP: 1, Report: true},
			32, sglang.LimitUser,
			"max_running_requests=32 (per dp worker), bound by max_running_requests (--max-running-requests=32); other limits: kv_capacity=400.",
			false},
		{"a tie goes to the user's request",
			sglang.MaxReqsInput{TokenCapacity: 148, ContextLen: 4096, MaxRunningRequests: 74, AttnDP: 1, Report: true},
			74, sglang.LimitUser,
			"max_running_requests=74 (per dp worker), bound by max_running_requests (--max-running-requests=74); other limits: kv_capacity=74.",
			false},
		{"per DP worker",
			sglang.MaxReqsInput{TokenCapacity: 798208, ContextLen: 4096, MaxRunningRequests: 128, AttnDP: 4, Report: true},
			32, sglang.LimitUser,
			"max_running_requests=32 (per dp worker), bound by max_running_requests (--max-running-requests=128); other limits: kv_capacity=399104.",
			false},
		{"the heuristic's floor",
			sglang.MaxReqsInput{TokenCapacity: 2 << 20, ContextLen: 1 << 20, AttnDP: 1, Report: true},
			2048, sglang.LimitHeuristic,
			"max_running_requests=2048 (per dp worker), bound by heuristic_estimate (token_capacity / context_len * 512, clamped to [2048, 4096]); other limits: kv_capacity=1048576. To raise it: set --max-running-requests explicitly.",
			false},
		{"the KV capacity reduces a request",
			sglang.MaxReqsInput{TokenCapacity: 1000, ContextLen: 4096, MaxRunningRequests: 800, AttnDP: 1, Report: true},
			500, sglang.LimitKVCapacity,
			"max_running_requests reduced from the requested 800 to 500 (per dp worker), bound by kv_capacity (max_total_num_tokens=1000 / 2); other limits: max_running_requests=800. To raise it: raise --mem-fraction-static or lower the context length.",
			true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := sglang.ResolveConcurrency(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if c.MaxRunningRequests != tt.n || c.Bound().Source != tt.bound || c.Downgrade != tt.downgrade {
				t.Errorf("max_running_requests %d bound by %s (downgrade %v), want %d by %s (%v)", c.MaxRunningRequests, c.Bound().Source, c.Downgrade, tt.n, tt.bound, tt.downgrade)
			}
			if c.Line != tt.line {
				t.Errorf("log line\n got %s\nwant %s", c.Line, tt.line)
			}
			// ResolveMaxNumReqs warns with the line exactly when it is a downgrade.
			n, warns, _ := sglang.ResolveMaxNumReqs(tt.in)
			if n != tt.n || (len(warns) == 1) != tt.downgrade || (tt.downgrade && warns[0] != tt.line) {
				t.Errorf("ResolveMaxNumReqs %d %q", n, warns)
			}
			// Older releases keep their value and their own warnings.
			old := tt.in
			old.Report = false
			if c, _ := sglang.ResolveConcurrency(old); c.MaxRunningRequests != tt.n || c.Line != "" {
				t.Errorf("without the report: %d, line %q", c.MaxRunningRequests, c.Line)
			}
		})
	}
	// An empty state pool is still a refusal naming the flag.
	_, err := sglang.ResolveConcurrency(sglang.MaxReqsInput{TokenCapacity: 800, ContextLen: 4096, AttnDP: 1, Mambaish: true, MaxMambaCacheSize: 2, MambaRatio: 3, Report: true})
	if !errors.Is(err, sglang.ErrNoRequests) {
		t.Errorf("empty state pool: %v", err)
	}
}

// TestConcurrencyReportLogged: a plan of the newest profile logs the
// report before the pool's line; 0.5.13 does not.
func TestConcurrencyReportLogged(t *testing.T) {
	for _, tt := range []struct {
		version string
		lines   int
	}{{"latest", 2}, {"0.5.13", 1}} {
		in := sglang.Input{Spec: llamaSpecForReport(t), Version: tt.version, Parallel: sglang.Parallel{TP: 1, PP: 1, DP: 1},
			Args: sglang.ServerArgs{MemFractionStatic: 0.9}, Hardware: sglang.Hardware{MemoryMiB: 81559, SM: 90, Platform: "cuda"}, PostLoadFreeBytes: 60 << 30}
		c, err := sglang.New(in)
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Configure(78 << 30)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Logs) != tt.lines || (tt.lines == 2 && res.Logs[0] != res.Concurrency.Line) {
			t.Errorf("%s: logs %q", tt.version, res.Logs)
		}
		if got := len(res.Concurrency.Limits()); got != 2 {
			t.Errorf("%s: %d limits, want kv_capacity and heuristic_estimate", tt.version, got)
		}
	}
}

func llamaSpecForReport(t *testing.T) *model.Spec {
	t.Helper()
	spec, err := catalog.Load("meta-llama/Llama-3.1-8B-Instruct")
	if err != nil {
		t.Fatal(err)
	}
	return spec
}
