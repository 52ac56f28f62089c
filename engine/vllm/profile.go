package vllm

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kvcfg/kvcfg/engine"
)

// Profile names a range of vLLM releases whose KV sizing and startup log
// lines this package reproduces. Within a profile a few rules still depend
// on the exact release (see docs/vllm-rules.md); a version number given to
// ResolveProfile selects them.
type Profile string

// The version profiles, oldest first.
const (
	// V06 is vLLM 0.6.x, the V0 engine: one cache block for all layers,
	// "# GPU blocks: N, # CPU blocks: M", the max-seq-len check after
	// sizing, sliding-window layers sized as full attention, no Mamba and no
	// MLA (DeepSeek-V2/V3 cache full per-head K and V, head size padded to
	// 256; DeepseekV3ForCausalLM is registered from 0.6.6).
	V06 Profile = "0.6"
	// V07 is vLLM 0.7.x, still the V0 engine by default ("# CUDA blocks"):
	// MLA caches from 0.7.1 (two kv_lora_rank rows in 0.7.1, one
	// 256-byte-aligned latent row from 0.7.2).
	V07 Profile = "0.7"
	// V08 is vLLM 0.8.0 to 0.10.x: V1 became the default engine in 0.8.0,
	// falling back to V0 for what V1 did not support yet (compute
	// capability below 8.0, most --kv-cache-dtype values, Mamba models,
	// VLLM_USE_V1=0). Reporting on two lines, admission on the per-layer
	// sum, gpu_memory_utilization 0.9.
	V08 Profile = "0.8"
	// V011 is the V1 engine with 0.11.x and 0.12.x reporting: KV cache
	// groups, "GPU KV cache size" = num_blocks // groups × block_size,
	// admission before serving, gpu_memory_utilization default 0.9.
	V011 Profile = "0.11"
	// V013 is vLLM 0.13 to 0.17: one null block reserved before admission,
	// util default 0.92 with requested = ceil(total × util), Mamba "align"
	// cache mode, MLA block sizes forced by the platform (FlashMLA 64,
	// CUTLASS MLA 128 on Blackwell). "GPU KV cache size" is still
	// num_blocks // groups × block size on its own line, and sliding
	// windows pay for max_num_batched_tokens.
	V013 Profile = "0.13"
	// V018 is vLLM 0.18 to 0.27: the KV block size comes from the attention
	// backend's preferred kernel block (Platform.update_block_size_for_backend)
	// and hybrid Mamba models align on max(kernel block, --block-size). From
	// 0.21 "GPU KV cache size" is int(concurrency × max_model_len), from
	// 0.22 KV connectors with hybrid support keep the hybrid manager; from 0.26
	// sliding windows pay for max_in_flight_tokens (two batches with async
	// scheduling).
	V018 Profile = "0.18"
	// Latest is vLLM 0.28 and the newest main: 16384 batched tokens by
	// default on GPUs of 160 GiB or more, MLA hybrids align their attention
	// block on at least 128 tokens, and tokens and concurrency share one
	// log line.
	Latest Profile = "latest"
)

// Profiles lists the profiles, oldest first.
func Profiles() []Profile { return []Profile{V06, V07, V08, V011, V013, V018, Latest} }

// release is a vLLM version number; patch 99 stands for "the newest patch
// of that minor release" when the version named only major.minor.
type release struct {
	major, minor, patch int
}

// newest is the release the latest profile stands for when no number is
// given (the newest main).
var newest = release{0, 999, 0}

// atLeast reports whether r is at or after major.minor.patch.
func (r release) atLeast(major, minor, patch int) bool {
	if r.major != major {
		return r.major > major
	}
	if r.minor != minor {
		return r.minor > minor
	}
	return r.patch >= patch
}

func (r release) String() string {
	switch {
	case r == newest:
		return "main"
	case r.patch == 99:
		return fmt.Sprintf("%d.%d", r.major, r.minor)
	}
	return fmt.Sprintf("%d.%d.%d", r.major, r.minor, r.patch)
}

// profileOf maps a release to its profile.
func profileOf(r release) Profile {
	switch {
	case r.major >= 1 || r.atLeast(0, 28, 0):
		return Latest
	case r.atLeast(0, 18, 0):
		return V018
	case r.atLeast(0, 13, 0):
		return V013
	case r.atLeast(0, 11, 0):
		return V011
	case r.atLeast(0, 8, 0):
		return V08
	case r.atLeast(0, 7, 0):
		return V07
	default:
		return V06
	}
}

// ResolveProfile maps a vLLM version string to its profile. The empty
// string, "latest", "main" and "nightly" give Latest; a profile name or any
// version number maps by number: up to 0.6.x → 0.6, 0.7.x → 0.7, 0.8.0 to
// 0.10.x → 0.8 (V1 by default), 0.11.x and 0.12.x → 0.11, 0.13 to 0.17 →
// 0.13, 0.18 to 0.27 → 0.18, 0.28 and newer → latest. A version without a
// patch number ("0.9", or a profile name such as "0.8") stands for the
// newest patch of that minor release. The note says which profile was used
// and why when the version was not a profile name itself.
func ResolveProfile(version string) (p Profile, note string, err error) {
	p, _, note, err = resolve(version)
	return p, note, err
}

// resolve is ResolveProfile with the release the version names. A version
// resolved before is not parsed again: validation and planning each
// resolve it, and a server plans the same few pinned releases again and
// again.
func resolve(version string) (Profile, release, string, error) {
	if version == "" {
		return Latest, newest, "", nil
	}
	if r, ok := resolvedVersions.Load(version); ok {
		return r.p, r.rel, r.note, nil
	}
	p, rel, note, err := resolveNew(version)
	if err == nil {
		resolvedVersions.Store(version, resolvedVersion{p, rel, note})
	}
	return p, rel, note, err
}

// resolvedVersion is what resolve gives for one version string.
type resolvedVersion struct {
	p    Profile
	rel  release
	note string
}

// resolvedVersions holds the versions resolved so far by the string as
// given, at most 256 of them.
var resolvedVersions = engine.NewMemo[string, resolvedVersion](256)

// resolveNew is resolve without the cache.
func resolveNew(version string) (Profile, release, string, error) {
	v := strings.ToLower(strings.TrimSpace(version))
	v = strings.TrimPrefix(v, "v")
	switch v {
	case "", "latest", "main", "nightly":
		return Latest, newest, "", nil
	}
	rel, ok := parseRelease(v)
	if !ok {
		return "", release{}, "", fmt.Errorf("%w %q (accepted: latest, a profile name such as 0.11, or a version number such as 0.10.2)", ErrUnknownVersion, version)
	}
	p := profileOf(rel)
	if v == string(p) {
		return p, rel, "", nil
	}
	return p, rel, fmt.Sprintf("vLLM %s is sized with the %s profile (%s)", version, p, profileRange(p)), nil
}

// profileRange says which releases a profile covers and what sets it apart.
func profileRange(p Profile) string {
	switch p {
	case V06:
		return "0.6.x: the V0 engine, no MLA"
	case V07:
		return "0.7.x: the V0 engine, MLA from 0.7.1"
	case V08:
		return "0.8.0 to 0.10.x: the V1 engine is the default from 0.8.0"
	case V011:
		return "0.11.x and 0.12.x: V1 with per-group reporting"
	case V013:
		return "0.13 to 0.17: null block, platform-forced MLA block sizes"
	case V018:
		return "0.18 to 0.27: block size from the attention backend; group-aware \"GPU KV cache size\" from 0.21, connectors with hybrid support from 0.22, in-flight tokens from 0.26"
	default:
		return "0.28 and newer: 16384 batched tokens on GPUs of 160 GiB or more, MLA hybrids aligned on 128 tokens, one combined KV log line"
	}
}

// parseRelease reads "major.minor[.patch]" with any suffix ("0.10.1.post1",
// "0.11.0rc2"); a missing patch reads as 99.
func parseRelease(v string) (release, bool) {
	parts := strings.SplitN(v, ".", 4)
	if len(parts) < 2 {
		return release{}, false
	}
	num := func(s string) (int, bool) {
		end := 0
		for end < len(s) && s[end] >= '0' && s[end] <= '9' {
			end++
		}
		if end == 0 || end > 6 {
			return 0, false
		}
		n, err := strconv.Atoi(s[:end])
		return n, err == nil
	}
	major, ok := num(parts[0])
	if !ok || len(parts[0]) != len(strconv.Itoa(major)) {
		return release{}, false
	}
	minor, ok := num(parts[1])
	if !ok {
		return release{}, false
	}
	r := release{major, minor, 99}
	if len(parts) >= 3 && len(strconv.Itoa(minor)) == len(parts[1]) {
		if patch, ok := num(parts[2]); ok {
			r.patch = patch
		}
	}
	return r, true
}

// rules are the behaviours that differ between releases.
type rules struct {
	rel release
	v0  bool // V0 engine: one cache block for all layers
	// v0Label is the device word of V0's "# GPU blocks" line.
	v0Label string
	// defaultUtil is gpu_memory_utilization's default.
	defaultUtil float64
	// ceilRequested rounds total × util up to whole bytes.
	ceilRequested bool
	// graphsSubtracted subtracts the CUDA-graph estimate from the KV
	// budget: from 0.20 (0.19.0 logs that profiling them is opt-in,
	// VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1, and does not subtract).
	graphsSubtracted bool
	// nullBlock reserves one block per tensor before admission and auto-fit.
	nullBlock bool
	// report selects the "GPU KV cache size" rule of the hybrid-allocator
	// releases: "floor" (0.9.2 to 0.20: num_blocks // groups × the
	// smallest block, two lines), "concurrency" (0.21 to 0.27:
	// int(concurrency × max_model_len), two lines), "combined" (0.28 on:
	// the same tokens and the concurrency on one line).
	report string
	// groupAdmission checks admission on the groups (with padding) rather
	// than on the per-layer sum.
	groupAdmission bool
	// autoFit allows max_model_len = -1.
	autoFit bool
	// inFlight makes sliding-window and chunked layers pay for
	// max_in_flight_tokens = max_concurrent_batches × max_num_batched_tokens
	// (0.26 on: two batches with async scheduling at PP = 1, PP batches
	// otherwise); before, they pay for max_num_batched_tokens.
	inFlight bool
	// mambaMode is the default mamba_cache_mode.
	mambaMode string
	// hybridWithChunked keeps the hybrid manager on with chunked local
	// attention (0.11 turns it off).
	hybridWithChunked bool
	// padPages pads pages that do not divide the largest page instead of
	// refusing to start.
	padPages bool
	// swaHeadSizeV gives sliding-window specs their own V head size (0.11
	// sizes V like K).
	swaHeadSizeV bool
	// nemotronSSMFP32 keeps NemotronH's SSM state in fp32 (fp16 in 0.11).
	nemotronSSMFP32 bool
	// kvCacheMemoryBytes accepts the kv_cache_memory_bytes override.
	kvCacheMemoryBytes bool
	// dtypes are the accepted --kv-cache-dtype values.
	dtypes []string

	// v1Oracle lets the V1 engine fall back to V0 (0.8.0 to 0.10.x).
	v1Oracle bool
	// swaSpec sizes sliding-window layers with SlidingWindowSpec (V1 from
	// 0.8.5; 0.8.0 to 0.8.4 sized them as full attention).
	swaSpec bool
	// hybridGroups allows several KV cache groups (the hybrid allocator,
	// 0.9.2); before it mixed full and sliding layers all became full
	// attention and other mixes were not supported.
	hybridGroups bool
	// tokenConcurrency prints concurrency as num_blocks × block / L
	// (0.8.0 to 0.9.1) instead of num_blocks / blocks per request.
	tokenConcurrency bool
	// availLine prints "Available KV cache memory" (V1 from 0.9.1).
	availLine bool
	// msg selects the admission refusal's wording: "gb" (0.8.0 to 0.8.4),
	// "half" (0.8.5 to 0.9.1, whose estimate is cut off), "v011" (0.9.2 to
	// 0.12), "new" (0.13 on).
	msg string
	// batchDefaults selects the scheduler defaults: "name" (0.8.0 to 0.8.4:
	// 8192 batched tokens on H100/H200 by name, 1024 sequences),
	// "mem70" (0.8.5: ≥ 70 GiB), "mem70-a100" (0.9 on: A100s excepted),
	// "mem160" (0.28 on: 16384 batched tokens on ≥ 160 GiB).
	batchDefaults string
	// backendBlocks takes the block size from the attention backend's
	// preferred kernel block (0.18 on) instead of the platform's forced
	// MLA sizes.
	backendBlocks bool
	// backendCheck validates the KV dtype against the attention backends
	// (0.13 on: "No valid attention backend found").
	backendCheck bool
	// hybridAlign is the Mamba alignment rule: "16" (0.11.0), "fixed"
	// (0.11.1 to 0.17: 16, 32 for head size 256 on SM 10.x, 64 for MLA or
	// 128 with CUTLASS MLA), "backend" (0.18 on: max(kernel block,
	// --block-size)), "backend-mla128" (latest: at least 128 for MLA).
	hybridAlign string
}

// rulesFor returns the rules of release rel in profile p.
func rulesFor(p Profile, rel release) rules {
	switch p {
	case V06, V07:
		return v0Rules(p, rel)
	case V08:
		return v08Rules(rel)
	case V011:
		return v011Rules(rel)
	default:
		return v013Rules(p, rel)
	}
}

// v0CacheDTypes are the --kv-cache-dtype values of the 0.6 to 0.10 releases.
func v0CacheDTypes() []string { return []string{"auto", "fp8", "fp8_e4m3", "fp8_e5m2"} }

// v0Rules are the rules of the V0-only releases (0.6 and 0.7).
func v0Rules(p Profile, rel release) rules {
	r := rules{v0: true, defaultUtil: 0.9, dtypes: v0CacheDTypes(), v0Label: "GPU"}
	if p == V07 {
		r.v0Label = "CUDA"
	}
	r.rel = rel
	return r
}

// v08Rules are the rules of 0.8.0 to 0.10.x: V1 by default with the oracle's
// fallback to V0, and the refusal wording and batch defaults of each step.
func v08Rules(rel release) rules {
	r := rules{
		rel:                rel,
		v0Label:            "cuda",
		defaultUtil:        0.9,
		mambaMode:          "none",
		kvCacheMemoryBytes: rel.atLeast(0, 10, 2),
		dtypes:             v0CacheDTypes(),
		v1Oracle:           true,
		swaSpec:            rel.atLeast(0, 8, 5),
		hybridGroups:       rel.atLeast(0, 9, 2),
		tokenConcurrency:   !rel.atLeast(0, 9, 2),
		availLine:          rel.atLeast(0, 9, 1),
		hybridAlign:        "16",
		report:             "floor",
	}
	switch {
	case !rel.atLeast(0, 8, 5):
		r.msg, r.batchDefaults = "gb", "name"
	case !rel.atLeast(0, 9, 0):
		r.msg, r.batchDefaults = "half", "mem70"
	case !rel.atLeast(0, 9, 2):
		r.msg, r.batchDefaults = "half", "mem70-a100"
	default:
		r.msg, r.batchDefaults = "v011", "mem70-a100"
	}
	return r
}

// v011Rules are the rules of 0.11.x.
func v011Rules(rel release) rules {
	r := rules{
		rel:                rel,
		defaultUtil:        0.9,
		mambaMode:          "none",
		kvCacheMemoryBytes: true,
		dtypes:             []string{"auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_ds_mla"},
		swaSpec:            true,
		hybridGroups:       true,
		availLine:          true,
		msg:                "v011",
		batchDefaults:      "mem70-a100",
		hybridAlign:        "fixed",
		report:             "floor",
	}
	if !rel.atLeast(0, 11, 1) {
		r.hybridAlign = "16"
	}
	return r
}

// v013Rules are the rules of 0.13 and later (profiles 0.13, 0.18 and
// latest): the requested memory rounded up, the null block, group
// admission, auto-fit and Mamba align mode.
func v013Rules(p Profile, rel release) rules {
	r := rules{
		rel:                rel,
		defaultUtil:        0.92,
		ceilRequested:      true,
		graphsSubtracted:   p == Latest || rel.atLeast(0, 20, 0),
		nullBlock:          true,
		groupAdmission:     true,
		autoFit:            true,
		mambaMode:          "align",
		hybridWithChunked:  true,
		padPages:           true,
		nemotronSSMFP32:    true,
		swaHeadSizeV:       true,
		kvCacheMemoryBytes: true,
		swaSpec:            true,
		hybridGroups:       true,
		availLine:          true,
		msg:                "new",
		batchDefaults:      "mem70-a100",
		backendCheck:       true,
		hybridAlign:        "fixed",
		report:             "floor",
		dtypes:             []string{"auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_ds_mla"},
	}
	if rel.atLeast(0, 21, 0) {
		r.report = "concurrency"
	}
	r.inFlight = rel.atLeast(0, 26, 0)
	switch p {
	case V018:
		r.backendBlocks, r.hybridAlign = true, "backend"
		r.dtypes = []string{"auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_ds_mla"}
	case Latest:
		r.backendBlocks, r.hybridAlign, r.batchDefaults, r.report = true, "backend-mla128", "mem160", "combined"
		r.dtypes = []string{"auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_ds_mla", "nvfp4",
			"int8_per_token_head", "fp8_per_token_head"}
	}
	return r
}

// rules returns the rules of the profile's newest release.
func (p Profile) rules() rules {
	_, rel, _, err := resolve(string(p))
	if err != nil {
		rel = newest
	}
	return rulesFor(p, rel)
}

// v0Fallback returns the V0 engine's rules for a V1-default release that
// falls back to V0.
func (r rules) v0Fallback() rules {
	return rules{rel: r.rel, v0: true, defaultUtil: 0.9, dtypes: r.dtypes, v0Label: r.v0Label}
}

// DefaultGPUMemoryUtilization is the --gpu-memory-utilization a plan under
// profile p uses when none is given: 0.9 through the 0.11 profile, 0.92
// from 0.13 (CacheConfig.gpu_memory_utilization).
func DefaultGPUMemoryUtilization(p Profile) float64 { return p.rules().defaultUtil }
