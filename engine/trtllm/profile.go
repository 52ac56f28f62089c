package trtllm

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kvcfg/kvcfg/engine"
)

// Profile names a generation of TensorRT-LLM whose KV sizing and startup log
// lines this package reproduces.
type Profile string

// The version profiles.
const (
	// Engine is a TensorRT engine build (trtllm-build, the C++ executor; the
	// 0.x default): max_tokens = fraction × free memory after the engine and
	// runtime buffers are loaded ÷ bytes per token, blocks rounded up,
	// 64-token blocks, and the C++ clamp of maxAttentionWindow.
	Engine Profile = "0.x"
	// V10 is the PyTorch backend of 1.0 (KvCacheCreator.estimate_max_tokens):
	// a dry run with the dummy requests, tokens estimated directly ("Estimated
	// max tokens in KV cache"), blocks rounded up.
	V10 Profile = "1.0"
	// V11 is the PyTorch backend of 1.1 (PR #5933,
	// configure_kv_cache_capacity): the estimate in bytes first ("Estimated
	// max memory in KV cache"), then tokens; blocks rounded up; equal memory
	// shares per attention window.
	V11 Profile = "1.1"
	// Latest is the 2026 main branch: blocks rounded down, the estimation dry
	// run sized for CUDA-graph warm-up, "kv size per token is S bytes/token".
	Latest Profile = "latest"
)

// Profiles lists the profiles, oldest first.
func Profiles() []Profile { return []Profile{Engine, V10, V11, Latest} }

// ResolveProfile maps a TensorRT-LLM version to a profile and says why when
// the version was not a profile name: "", "latest", "main" and "nightly" give
// Latest; "0.x" (or any 0.y.z) gives Engine, the engine-build path that was
// the 0.x default; 1.0.z gives 1.0; 1.1.z gives 1.1; 1.2 and newer give
// Latest (the rounding change was read on main, not in a 1.2 tag). A version
// resolved before is not parsed again.
func ResolveProfile(version string) (p Profile, note string, err error) {
	if version == "" {
		return Latest, "", nil
	}
	if r, ok := resolvedVersions.Load(version); ok {
		return r.p, r.note, nil
	}
	p, note, err = resolveProfile(version)
	if err == nil {
		resolvedVersions.Store(version, resolvedVersion{p, note})
	}
	return p, note, err
}

// resolvedVersion is what ResolveProfile gives for one version string.
type resolvedVersion struct {
	p    Profile
	note string
}

// resolvedVersions holds the versions resolved so far by the string as
// given, at most 256 of them.
var resolvedVersions = engine.NewMemo[string, resolvedVersion](256)

// resolveProfile is ResolveProfile without the cache.
func resolveProfile(version string) (p Profile, note string, err error) {
	v := strings.ToLower(strings.TrimSpace(version))
	v = strings.TrimPrefix(v, "v")
	switch v {
	case "", "latest", "main", "nightly":
		return Latest, "", nil
	case string(Engine), "0", "engine":
		return Engine, "", nil
	case string(V10):
		return V10, "", nil
	case string(V11):
		return V11, "", nil
	}
	major, minor, ok := parseVersion(v)
	if !ok {
		return "", "", fmt.Errorf("%w %q (accepted: 0.x, 1.0, 1.1, latest or a version number such as 1.1.0rc3)", ErrUnknownVersion, version)
	}
	switch {
	case major == 0:
		return Engine, fmt.Sprintf("TensorRT-LLM %s is sized as an engine build (the 0.x default path); its early PyTorch backend is not modelled", version), nil
	case major == 1 && minor == 0:
		p = V10
	case major == 1 && minor == 1:
		p = V11
	default:
		return Latest, fmt.Sprintf("TensorRT-LLM %s is sized with the latest profile (floor to blocks and CUDA-graph dry-run blocks, read on 2026 main; the release that introduced them was not pinned down)", version), nil
	}
	return p, fmt.Sprintf("TensorRT-LLM %s is sized with the %s profile", version, p), nil
}

// parseVersion reads the leading "major.minor" of "1.1.0rc3", "0.21.0" or
// "1.2".
func parseVersion(v string) (major, minor int, ok bool) {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err := strconv.Atoi(parts[0])
	if err != nil || major < 0 {
		return 0, 0, false
	}
	digits := parts[1]
	end := 0
	for end < len(digits) && digits[end] >= '0' && digits[end] <= '9' {
		end++
	}
	if end == 0 {
		return 0, 0, false
	}
	minor, err = strconv.Atoi(digits[:end])
	if err != nil {
		return 0, 0, false
	}
	return major, minor, true
}

// rules are the behaviours that differ between profiles.
type rules struct {
	// engine is the TensorRT engine / C++ executor path (no estimation dry
	// run; the budget is the free memory after the engine is loaded).
	engine bool
	// ceilBlocks rounds the token count up to whole blocks (math.ceil /
	// tc::ceilDiv); otherwise int(tokens // tokens_per_block).
	ceilBlocks bool
	// float32Fraction logs the fraction as the C++ float widened to double
	// (0.8999999761581421).
	float32Fraction bool
	// memoryFirst estimates bytes first, then tokens (PR #5933).
	memoryFirst bool
	// cudaGraphDryRun adds the CUDA-graph warm-up blocks to the dry run and
	// caps it by fraction × free memory.
	cudaGraphDryRun bool
	// draftInEstimate adds the one-model draft layers of the last stage to the
	// estimate (2026 main; older estimates counted target layers only).
	draftInEstimate bool
	// nvfp4Estimate counts NVFP4 as 4 bits plus scales in the estimate (1.0
	// counted every non-fp8 cache as 2 bytes).
	nvfp4Estimate bool
	// vswa supports per-window pools sized from max_gpu_total_bytes.
	vswa bool
	// refuseKVOverride refuses an explicit kv_cache_dtype that differs from
	// the checkpoint's kv_cache_quant_algo (later versions warn and override).
	refuseKVOverride bool
	// runtimeLine prints "max_seq_len=…, max_num_requests=…" after the pool.
	runtimeLine bool
	// dtypes are the accepted kv_cache_dtype values.
	dtypes []string
	// defaultTPB is tokens_per_block's default.
	defaultTPB int
	// fusionAllReduce allocates the custom all-reduce fusion workspace
	// outside torch at TP > 1 (AllReduceWorkspaceBytes), of fusionSize
	// bytes (0: the size before PR #9145, FusionWorkspaceSize).
	fusionAllReduce bool
	fusionSize      int64
}

func (p Profile) rules() rules {
	switch p {
	case Engine:
		return rules{engine: true, ceilBlocks: true, float32Fraction: true, dtypes: []string{"auto", "fp8", "int8"}, defaultTPB: 64}
	case V10:
		return rules{ceilBlocks: true, float32Fraction: true, refuseKVOverride: true, dtypes: []string{"auto", "fp8", "nvfp4"}, defaultTPB: 32}
	case V11:
		return rules{ceilBlocks: true, float32Fraction: true, memoryFirst: true, nvfp4Estimate: true, vswa: true, runtimeLine: true,
			dtypes: []string{"auto", "fp8", "nvfp4"}, defaultTPB: 32, fusionAllReduce: true}
	default:
		return rules{memoryFirst: true, cudaGraphDryRun: true, draftInEstimate: true, nvfp4Estimate: true, vswa: true, runtimeLine: true,
			dtypes: []string{"auto", "fp8", "nvfp4"}, defaultTPB: 32, fusionAllReduce: true, fusionSize: FusionWorkspaceEnlarged}
	}
}
