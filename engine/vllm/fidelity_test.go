package vllm_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/vllm"
)

// gptOSS20BAtTP2 is the KV budget of a gpt-oss-20b run at TP 2 that logged
// 323,972 blocks: 24 layers in 2 groups of 12, pages of 16 tokens × 4 KV
// heads × (64 + 64) × 2 B = 16,384 B, so 12 tensors take 196,608 B a block.
const gptOSS20BAtTP2 = 323_972*12*16_384 + 100_000

// "GPU KV cache size" of a hybrid model is num_blocks // groups × the
// smallest block size from the hybrid allocator (0.9.2) to 0.20
// (kv_cache_utils.py _report_kv_cache_config, vllm#40691 on 0.19.0): real
// 0.13 and 0.19 runs of gpt-oss-20b at TP 2 with 323,972 blocks in 2 groups
// print 2,591,776. From 0.21 it is int(concurrency × max_model_len) on its
// own line (a 0.22.0 run logs 622,408 tokens and 2.37x at 262,144), from
// 0.28 on one line with the concurrency.
func TestGPUKVCacheSizeIsBlocksPerGroupTimesBlockSize(t *testing.T) {
	base := vllm.Input{TensorParallelSize: 2, MaxModelLen: 131072, MaxNumBatchedTokens: 8192,
		Memory: vllm.Memory{AvailableKVBytes: gptOSS20BAtTP2}}
	// Per request: full 131072/16 = 8192 blocks; SWA ceil((127+T)/16)+1.
	swa8192, swa16384 := int64(521), int64(1033)
	tests := []struct {
		version string
		tokens  int64
		lines   []string
	}{
		// Concurrency up to 0.20: cdiv(12·Σ maxmem, 12·page) = 8192 + 521.
		{"0.10.2", 2_591_776, []string{"GPU KV cache size: 2,591,776 tokens", "Maximum concurrency for 131,072 tokens per request: 37.18x"}},
		{"0.11.0", 2_591_776, []string{"GPU KV cache size: 2,591,776 tokens", "Maximum concurrency for 131,072 tokens per request: 37.18x"}},
		{"0.13.0", 2_591_776, []string{"GPU KV cache size: 2,591,776 tokens", "Maximum concurrency for 131,072 tokens per request: 37.18x"}},
		{"0.19.0", 2_591_776, []string{"GPU KV cache size: 2,591,776 tokens", "Maximum concurrency for 131,072 tokens per request: 37.18x"}},
		{"0.20.2", 2_591_776, []string{"GPU KV cache size: 2,591,776 tokens", "Maximum concurrency for 131,072 tokens per request: 37.18x"}},
		{"0.21.0", int64(323972.0 / float64(8192+swa8192) * 131072), []string{"GPU KV cache size: 4,873,597 tokens", "Maximum concurrency for 131,072 tokens per request: 37.18x"}},
		// 0.26 on: two batches in flight (async scheduling).
		{"0.26.0", int64(323972.0 / float64(8192+swa16384) * 131072), []string{"GPU KV cache size: 4,603,106 tokens", "Maximum concurrency for 131,072 tokens per request: 35.12x"}},
		{"latest", int64(323972.0 / float64(8192+swa16384) * 131072), []string{"GPU KV cache size: 4,603,106 tokens, Maximum concurrency for 131,072 tokens per request: 35.12x"}},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			c := base
			c.Version = tt.version
			res, err := vllm.Plan(gptOSS(24), c)
			if err != nil {
				t.Fatal(err)
			}
			if res.NumGPUBlocks != 323_972 || len(res.Groups) != 2 {
				t.Fatalf("%d blocks in %d groups, want 323,972 in 2", res.NumGPUBlocks, len(res.Groups))
			}
			if res.KVCacheSizeTokens != tt.tokens {
				t.Errorf("GPU KV cache size %d, want %d", res.KVCacheSizeTokens, tt.tokens)
			}
			if got := res.LogLines[len(res.LogLines)-len(tt.lines):]; !slices.Equal(got, tt.lines) {
				t.Errorf("lines %q, want %q", got, tt.lines)
			}
		})
	}
}

// A KV connector (--kv-transfer-config) turns the hybrid KV cache manager
// off up to 0.21 (config/vllm.py: "Turning off hybrid kv cache manager
// because `--kv-transfer-config` is set"), so every layer is cached as full
// attention: a gpt-oss-20b run on 4x L40S with NixlConnector holds all 24
// layers per token. From 0.22 (vllm PR #41847, after PR #30166 made the
// hybrid allocator work with connectors) it stays on for a connector that
// subclasses SupportsHMA, and a MultiConnector whose children all do.
func TestKVConnectorTurnsHybridManagerOff(t *testing.T) {
	// TP 4: 2 KV heads, 8,192 B a layer and block.
	const avail = 40_000 * 24 * 8192
	tests := []struct {
		name      string
		version   string
		connector string
		children  []string
		disable   bool
		full      bool   // one group of 24 full-attention layers
		warning   string // the start of the warning, "" for none
	}{
		{"no connector 0.13", "0.13", "", nil, false, false, ""},
		{"nixl 0.10", "0.10.2", "NixlConnector", nil, false, true, ""},
		{"nixl 0.11", "0.11", "NixlConnector", nil, false, true, "Turning off hybrid kv cache manager because `--kv-transfer-config` is set."},
		{"nixl 0.13", "0.13.0", "NixlConnector", nil, false, true, "Turning off hybrid kv cache manager because `--kv-transfer-config` is set."},
		{"lmcache 0.21", "0.21.0", "LMCacheConnectorV1", nil, false, true, "Turning off hybrid kv cache manager because `--kv-transfer-config` is set."},
		{"nixl 0.22", "0.22.0", "NixlConnector", nil, false, false, ""},
		{"nixl latest", "latest", "NixlConnector", nil, false, false, ""},
		{"lmcache 0.22", "0.22.1", "LMCacheConnectorV1", nil, false, true, "Turning off hybrid kv cache manager because connector LMCacheConnectorV1 does not subclass `SupportsHMA`."},
		{"multi all hma", "latest", "MultiConnector", []string{"NixlConnector", "SimpleCPUOffloadConnector"}, false, false, ""},
		{"multi mixed", "latest", "MultiConnector", []string{"NixlConnector", "OffloadingConnector"}, false, true, "Turning off hybrid kv cache manager because connector MultiConnector"},
		{"multi empty", "latest", "MultiConnector", nil, false, true, "Turning off hybrid kv cache manager because connector MultiConnector"},
		{"flag latest", "latest", "", nil, true, true, ""},
		{"flag with nixl latest", "latest", "NixlConnector", nil, true, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := vllm.Input{Version: tt.version, TensorParallelSize: 4, MaxModelLen: 32768, KVConnector: tt.connector,
				KVConnectorChildren: tt.children, DisableHybridKVCacheManager: tt.disable,
				Memory: vllm.Memory{AvailableKVBytes: avail}}
			res, err := vllm.Plan(gptOSS(24), c)
			if err != nil {
				t.Fatal(err)
			}
			full := len(res.Groups) == 1 && len(res.Groups[0].Layers) == 24 && res.Groups[0].Kind == vllm.FullAttention
			if full != tt.full {
				t.Fatalf("all 24 layers as full attention: %v, want %v (%d groups)", full, tt.full, len(res.Groups))
			}
			if full && (res.NumGPUBlocks != 40_000 || res.KVCacheSizeTokens != 640_000) {
				t.Errorf("%d blocks, %d tokens; want 40,000 blocks of 16 tokens for all 24 layers", res.NumGPUBlocks, res.KVCacheSizeTokens)
			}
			if !full && (len(res.Groups) != 2 || res.NumGPUBlocks != 80_000) {
				t.Errorf("%d groups, %d blocks; want 2 groups of 12 sharing 80,000 blocks", len(res.Groups), res.NumGPUBlocks)
			}
			warned := ""
			for _, l := range res.LogLines {
				if strings.HasPrefix(l, "Turning off hybrid kv cache manager") {
					warned = l
				}
			}
			if tt.warning == "" && warned != "" || !strings.HasPrefix(warned, tt.warning) {
				t.Errorf("warning %q, want one starting %q", warned, tt.warning)
			}
			if full != slices.ContainsFunc(res.LogLines, func(l string) bool { return strings.HasPrefix(l, "Hybrid KV cache manager is disabled") }) {
				t.Errorf("the unify warning does not match the groups: %q", res.LogLines)
			}
		})
	}
}

// From 0.26 sliding-window and chunked-local layers pay for
// max_in_flight_tokens = max_concurrent_batches × max_num_batched_tokens
// (config/vllm.py: 2 with async scheduling at PP = 1, else PP) in
// SlidingWindowSpec.max_admission_blocks_per_request, hence in admission
// and in "Maximum concurrency"; up to 0.25 they pay for
// max_num_batched_tokens (kv_cache_interface.py SlidingWindowSpec).
func TestMaxInFlightTokensInSlidingWindowCharge(t *testing.T) {
	tests := []struct {
		version string
		pp      int
		noAsync bool
		swa     int64 // blocks a request needs in each sliding-window group
	}{
		{"0.13.0", 1, false, 137}, // ceil((127 + 2048)/16) + 1
		{"0.25.1", 1, false, 137},
		{"0.25.1", 2, false, 137},
		{"0.26.0", 1, false, 265}, // ceil((127 + 2·2048)/16) + 1
		{"latest", 1, false, 265},
		{"latest", 1, true, 137},
		{"latest", 2, false, 265}, // PP batches
		{"latest", 3, true, 393},  // ceil((127 + 3·2048)/16) + 1
	}
	for _, tt := range tests {
		c := vllm.Input{Version: tt.version, PipelineParallelSize: tt.pp, NoAsyncScheduling: tt.noAsync, MaxModelLen: 8192,
			MaxNumBatchedTokens: 2048, Memory: vllm.Memory{AvailableKVBytes: 10_000 * 12 * 32768}}
		res, err := vllm.Plan(gptOSS(24), c)
		if err != nil {
			t.Fatalf("%s PP %d: %v", tt.version, tt.pp, err)
		}
		for _, g := range res.Groups {
			want := int64(512)
			if g.Kind == vllm.SlidingWindow {
				want = tt.swa
			}
			if g.BlocksPerRequest != want {
				t.Errorf("%s PP %d async off %v: %s group needs %d blocks, want %d", tt.version, tt.pp, tt.noAsync, g.Kind, g.BlocksPerRequest, want)
			}
		}
		if tt.pp == 1 && res.BlocksPerRequest != 512+tt.swa {
			t.Errorf("%s: %d blocks per request, want %d", tt.version, res.BlocksPerRequest, 512+tt.swa)
		}
	}
}

// When page unification gives the KV cache groups different block sizes
// (full layers with half the sliding layers' KV bytes get 32-token blocks
// next to 16), vLLM's cache_config.block_size becomes the smallest group's
// after initialisation (v1/engine/core.py _initialize_kv_caches, 0.28.0
// and main), the scheduler and prefix-cache hits align on the LCM of the
// block sizes and block hashes are computed on their GCD
// (kv_cache_utils.py resolve_kv_cache_block_sizes). Earlier profiles keep
// the fields unset (not read in their source).
func TestBlockSizeIsSmallestGroupBlock(t *testing.T) {
	s := gemma3_27B()
	s.SWANumKVHeads, s.SWAHeadDim = 16, 128
	s.NumKVHeads = 8 // full layers: half the sliding layers' page
	tests := []struct {
		version         string
		scheduler, hash int
	}{
		{"latest", 32, 16},
		{"0.28.0", 32, 16},
		{"0.27.0", 0, 0},
		{"0.13", 0, 0},
	}
	for _, tt := range tests {
		res, err := vllm.Plan(s, vllm.Input{Version: tt.version, MaxModelLen: 32768, Memory: vllm.Memory{AvailableKVBytes: 40 << 30}})
		if err != nil {
			t.Fatalf("%s: %v", tt.version, err)
		}
		var sizes []int
		for _, g := range res.Groups {
			sizes = append(sizes, g.BlockSize)
		}
		if slices.Min(sizes) != 16 || slices.Max(sizes) != 32 || res.BlockSize != slices.Min(sizes) {
			t.Errorf("%s: group block sizes %v, block_size %d; want 16 and 32, block_size the smallest", tt.version, sizes, res.BlockSize)
		}
		if res.SchedulerBlockSize != tt.scheduler || res.HashBlockSize != tt.hash {
			t.Errorf("%s: scheduler block %d, hash block %d; want %d and %d", tt.version, res.SchedulerBlockSize, res.HashBlockSize, tt.scheduler, tt.hash)
		}
	}
	// One block size: nothing to align.
	res, err := vllm.Plan(gptOSS(24), vllm.Input{MaxModelLen: 32768, Memory: vllm.Memory{AvailableKVBytes: 40 << 30}})
	if err != nil || res.SchedulerBlockSize != 0 || res.HashBlockSize != 0 {
		t.Errorf("gpt-oss: scheduler block %d, hash block %d, %v; want none", res.SchedulerBlockSize, res.HashBlockSize, err)
	}
}

// A Mamba hybrid cannot be cached as one type, so with the hybrid KV cache
// manager off vLLM refuses to start (as 0.19.1 and 0.21.0 do with LMCache
// and Qwen3.5/3.6); the refusal names the switch or the connector that
// turned the manager off, not a vLLM version.
func TestKVConnectorRefusalNamesTheConnector(t *testing.T) {
	tests := []struct {
		name      string
		version   string
		connector string
		disable   bool
		flag      string
		hint      string
	}{
		{"flag", "latest", "", true, "--disable-hybrid-kv-cache-manager", "drop --disable-hybrid-kv-cache-manager: this model's mamba + full_attention layers cannot be cached as one type"},
		{"lmcache 0.21", "0.21.0", "LMCacheConnectorV1", false, "--kv-transfer-config", "drop --kv-transfer-config, or run vLLM 0.22 or newer with a KV connector with hybrid support (NixlConnector"},
		{"lmcache 0.22", "0.22.1", "LMCacheConnectorV1", false, "--kv-transfer-config", "use a KV connector with hybrid support (NixlConnector, MooncakeConnector, SimpleCPUOffloadConnector, LMCacheMPConnector) or drop --kv-transfer-config: LMCacheConnectorV1 turns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := vllm.Plan(qwen3Next(), vllm.Input{Version: tt.version, KVConnector: tt.connector, DisableHybridKVCacheManager: tt.disable,
				TensorParallelSize: 4, MaxModelLen: 32768, Memory: vllm.Memory{AvailableKVBytes: 40 << 30}})
			var re *engine.Refusal
			if !errors.As(err, &re) || re.Message != "Hybrid KV cache manager is disabled but failed to convert the KV cache specs to one unified type." {
				t.Fatalf("error %v, want the unify refusal", err)
			}
			if re.Flag != tt.flag || !strings.HasPrefix(re.Hint, tt.hint) {
				t.Errorf("fix %s %q, want %s %q…", re.Flag, re.Hint, tt.flag, tt.hint)
			}
		})
	}
	// With NixlConnector from 0.22 the manager stays on and it starts.
	if _, err := vllm.Plan(qwen3Next(), vllm.Input{Version: "0.22.1", KVConnector: "NixlConnector", TensorParallelSize: 4, MaxModelLen: 32768,
		Memory: vllm.Memory{AvailableKVBytes: 40 << 30}}); err != nil {
		t.Errorf("NixlConnector on 0.22.1: %v", err)
	}
}
