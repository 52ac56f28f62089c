package pools_test

import (
	"testing"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/engine/sglang"
)

// TestCatalogModelsReadyPools builds pools for real model configs (the
// embedded catalog) at a small budget: dense MHA, MLA (TP8), hybrid SWA,
// asymmetric-head SWA and a Mamba (GDN) hybrid, and checks the KV pools against the
// configured budget within one page per pool and the state pool exactly.
func TestCatalogModelsReadyPools(t *testing.T) {
	if testing.Short() || raceOn {
		t.Skip("allocates a few hundred MiB; no concurrency to check under -race")
	}
	const gib = 1 << 30
	tests := []struct {
		model string
		tp    int
		args  sglang.ServerArgs
		kvMiB int64
	}{
		{"meta-llama/Llama-3.1-8B-Instruct", 1, sglang.ServerArgs{KVCacheDType: "fp8_e4m3"}, 48},
		{"meta-llama/Llama-3.1-8B-Instruct", 1, sglang.ServerArgs{KVCacheDType: "nvfp4", PageSize: 16}, 48},
		{"deepseek-ai/DeepSeek-V3", 8, sglang.ServerArgs{PageSize: 64}, 64},
		{"openai/gpt-oss-120b", 1, sglang.ServerArgs{}, 48},
		{"XiaomiMiMo/MiMo-V2-Flash", 8, sglang.ServerArgs{PageSize: 16}, 64},
		{"Qwen/Qwen3-Next-80B-A3B-Instruct", 4, sglang.ServerArgs{MaxMambaCacheSize: 6, DisableRadixCache: true}, 160},
	}
	for _, tt := range tests {
		t.Run(tt.model+"/"+tt.args.KVCacheDType, func(t *testing.T) {
			spec, err := catalog.Load(tt.model)
			if err != nil {
				t.Fatal(err)
			}
			args := tt.args
			args.MemFractionStatic, args.MaxRunningRequests, args.ContextLength = 0.9, 4, 2048
			in := sglang.Input{Spec: spec, Parallel: sglang.Parallel{TP: tt.tp, PP: 1, DP: 1, DCP: 1}, Args: args,
				Hardware: sglang.Hardware{MemoryMiB: 143771, SM: 90, Platform: "cuda"}, PostLoadFreeBytes: gib + tt.kvMiB<<20}
			c, res, p := readyPools(t, in)
			b := p.Bytes()
			slack := pageSlack(c, p)
			if d := b.KV() - res.KVPoolBytes; d > slack || -d > slack {
				t.Errorf("kv pools %d B vs configured %d B: off by %d > one page per pool (%d)", b.KV(), res.KVPoolBytes, d, slack)
			}
			if b.Conv != res.MambaConvBytes || b.SSM != res.MambaSSMBytes {
				t.Errorf("state conv/ssm %d/%d, configured %d/%d", b.Conv, b.SSM, res.MambaConvBytes, res.MambaSSMBytes)
			}
			if res.KSizeBytes != 0 && b.K+b.KScales != res.KSizeBytes && b.K != res.KSizeBytes {
				t.Errorf("K bytes %d (+scales %d), the engine log's K size %d", b.K, b.KScales, res.KSizeBytes)
			}
			t.Logf("%s: tokens %d (swa %d), kv %d B, state %d B, req table %d B", res.Configurator, p.Allocator.Size(), res.SWAMaxTotalNumTokens, b.KV(), b.State(), b.ReqToToken)
			exercise(t, p)
		})
	}
}
