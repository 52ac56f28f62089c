package vllm

import (
	"fmt"
	"strconv"
	"strings"
)

// Profile names a generation of vLLM whose KV sizing and startup log lines
// this package reproduces.
type Profile string

// The version profiles.
const (
	// V06 is the V0 engine (vLLM 0.6 up to 0.10): one cache-block size for all
	// layers, "# GPU blocks: N, # CPU blocks: M" ("# CUDA blocks" in 0.7,
	// "# cuda blocks" from 0.8, following the version given), the
	// max-seq-len check after sizing, sliding-window layers sized as full
	// attention, no Mamba.
	V06 Profile = "0.6"
	// V011 is the V1 engine with 0.11.x reporting: KV cache groups,
	// "GPU KV cache size" = num_blocks // groups × block_size, admission
	// before serving, gpu_memory_utilization default 0.9.
	V011 Profile = "0.11"
	// Latest is the newest vLLM main: group-aware token capacity on one
	// combined log line, one null block reserved before admission, util
	// default 0.92 with requested = ceil(total × util), async scheduling
	// (two batches in flight) for sliding windows, Mamba "align" cache mode.
	Latest Profile = "latest"
)

// Profiles lists the profiles, oldest first.
func Profiles() []Profile { return []Profile{V06, V011, Latest} }

// ResolveProfile maps a vLLM version string to the nearest profile. The empty
// string, "latest", "main" and "nightly" give Latest; "0.6" / "0.11" name their
// profile; other versions map by number: up to 0.10.x → 0.6 (the V0 engine),
// 0.11.x and 0.12.x → 0.11, 0.13 and newer → latest. The note says which
// profile was used when the version was not a profile name itself.
func ResolveProfile(version string) (p Profile, note string, err error) {
	v := strings.ToLower(strings.TrimSpace(version))
	v = strings.TrimPrefix(v, "v")
	switch v {
	case "", "latest", "main", "nightly":
		return Latest, "", nil
	case string(V06):
		return V06, "", nil
	case string(V011):
		return V011, "", nil
	}
	major, minor, ok := parseVersion(v)
	if !ok {
		return "", "", fmt.Errorf("%w %q (accepted: 0.6, 0.11, latest or a version number such as 0.10.2)", ErrUnknownVersion, version)
	}
	switch {
	case major == 0 && minor <= 10:
		p = V06
	case major == 0 && minor <= 12:
		p = V011
	default:
		p = Latest
	}
	return p, fmt.Sprintf("vLLM %s is sized with the %s profile", version, p), nil
}

// parseVersion reads the leading "major.minor" of a version such as
// "0.10.1.post1" or "0.11.0rc2".
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
	v0 bool // V0 engine: one cache block for all layers
	// defaultUtil is gpu_memory_utilization's default.
	defaultUtil float64
	// ceilRequested rounds total × util up to whole bytes.
	ceilRequested bool
	// nullBlock reserves one block per tensor before admission and auto-fit.
	nullBlock bool
	// combinedLine prints tokens and concurrency on one line, tokens being
	// int(concurrency × max_model_len).
	combinedLine bool
	// groupAdmission checks admission on the groups (with padding) rather
	// than on the per-layer sum.
	groupAdmission bool
	// autoFit allows max_model_len = -1.
	autoFit bool
	// asyncBatches makes sliding-window and chunked layers pay for two
	// scheduled batches at PP = 1 (PP batches otherwise).
	asyncBatches bool
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
}

func (p Profile) rules() rules {
	switch p {
	case V06:
		return rules{
			v0:          true,
			defaultUtil: 0.9,
			dtypes:      []string{"auto", "fp8", "fp8_e4m3", "fp8_e5m2"},
		}
	case V011:
		return rules{
			defaultUtil:        0.9,
			mambaMode:          "none",
			kvCacheMemoryBytes: true,
			dtypes:             []string{"auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_ds_mla"},
		}
	default:
		return rules{
			defaultUtil:        0.92,
			ceilRequested:      true,
			nullBlock:          true,
			combinedLine:       true,
			groupAdmission:     true,
			autoFit:            true,
			asyncBatches:       true,
			mambaMode:          "align",
			hybridWithChunked:  true,
			padPages:           true,
			nemotronSSMFP32:    true,
			swaHeadSizeV:       true,
			kvCacheMemoryBytes: true,
			dtypes: []string{"auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_ds_mla", "nvfp4",
				"int8_per_token_head", "fp8_per_token_head"},
		}
	}
}
