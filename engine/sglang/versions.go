package sglang

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/kvcfg/kvcfg/engine"
)

// ErrUnknownVersion reports an SGLang version string that names no release.
var ErrUnknownVersion = errors.New("sglang: unknown SGLang version")

// Era names a generation of SGLang whose memory defaults differ from the
// next one's. Each era is one rule set (eraRules); a few single changes
// inside an era are gated by version (versionGates).
type Era string

// The eras, oldest first. The comment of each says which releases it
// covers and where the rule comes from.
const (
	// Era04 is 0.4.0 up to 0.4.7: mem_fraction_static by tensor-parallel
	// size alone (0.79/0.81/0.85/0.87/0.88 for TP ≥ 16/8/4/2/1),
	// chunked_prefill_size 2048 below 25,000 MiB else 8192,
	// cuda_graph_max_bs 8|80 below 25,000 MiB else 160; the request pool
	// has one row more than max_num_reqs; the KV log line has no #tokens.
	Era04 Era = "0.4"
	// Era048 is 0.4.7.post1 up to 0.5.2 (PR #7054, 2025-06-10): a reserve in
	// GiB by GPU-memory tier, (2.8 + tp·pp/10) below 35 GiB, (9.5 +
	// tp·pp/2) below 90 GiB, (12 + tp·pp/2) below 160 GiB, 32 above, plus
	// 2 GiB (6 for STANDALONE, none for NGRAM) with speculative decoding
	// and 4 GiB with DP attention, rounded to 3 decimals.
	Era048 Era = "0.4.8"
	// Era053 is 0.5.3 up to 0.5.9 (PR #10975, 2025-09-29): the reserve in
	// MiB from the chunked prefill size and CUDA-graph batch size
	// (ReservedMiB), piecewise CUDA graphs opt-in.
	Era053 Era = "0.5.3"
	// Era0510 is 0.5.10 up to 0.5.18: piecewise (prefill) CUDA graphs on
	// by default, so their reserve is part of every default fraction.
	Era0510 Era = "0.5.10"
	// EraLatest is 0.5.19 and the newest main: the restructured
	// activation/graph reserve (handle_gpu_memory_settings), the <35 GiB
	// tier at chunk 4096 and batch 48|160 (PR #37898, 2026-09-04), 0.95 for
	// an unknown GPU, no speculative term, trtllm_mha on Blackwell.
	EraLatest Era = "latest"
)

// Eras lists the eras, oldest first.
func Eras() []Era { return []Era{Era04, Era048, Era053, Era0510, EraLatest} }

// DefaultEra is the era a plan without a version uses: the newest profile,
// so a default plan matches the SGLang people install today. Pin an older
// release with Input.Version (--sglang-version 0.5.3).
const DefaultEra = EraLatest

// Profile is the SGLang release a plan is sized for: the era's rules plus
// the single changes that landed inside the era.
type Profile struct {
	// Era is the rule set.
	Era Era `json:"era"`
	// Version is the version asked for ("" for the default).
	Version string `json:"version,omitempty"`
	// Reason says which profile was used and why, for the report.
	Reason string `json:"reason"`

	rules
}

// rules are the behaviours that differ between releases. Each field is
// one rule; eraRules and versionGates fill them.
type rules struct {
	// fraction is the default mem_fraction_static heuristic.
	fraction func(MemFractionInput) float64
	// tier gives the chunked prefill size and CUDA-graph batch size.
	tier func(gpuMiB int64, tp int) Tier
	// reqPoolPlusOne: the request pool has max_num_reqs+1 rows and
	// max_running_requests = min(tokens/2 or the user's value, rows).
	reqPoolPlusOne bool
	// kvLineTokens: "KV Cache is allocated" names #tokens.
	kvLineTokens bool
	// aiterScale: aiter with a context above 8192 scales the fraction by
	// 0.85 (PR #6564, first released in 0.4.7).
	aiterScale bool
	// aiterDefault: aiter is the HIP default attention backend (else triton).
	aiterDefault bool
	// hipMLAAiterNoSpec: on HIP an MLA model gets aiter only without
	// speculative decoding (ModelRunner's selection, before 0.5.3).
	hipMLAAiterNoSpec bool
	// vlmAdjust: multimodal models scale a default fraction by the vision
	// tower (adjust_mem_fraction_for_vlm, 0.4.9); before, every fraction is
	// scaled by 0.90.
	vlmAdjust bool
	// hybridSWA: the hybrid sliding-window pool exists (0.4.9).
	hybridSWA bool
	// blackwellTRTLLM: DeepSeek-style MLA and GPT-OSS pick trtllm_mla /
	// trtllm_mha on Blackwell (page 64).
	blackwellTRTLLM bool
	// blackwellMHATRTLLM: every MHA model picks trtllm_mha on Blackwell.
	blackwellMHATRTLLM bool
	// prefillGraphCompat: the prefill CUDA graph is switched off for the
	// launches it does not support before the memory defaults run
	// (cuda_graph_hook.py), so those reserve nothing for it; its capture
	// sizes stop at --max-total-tokens (memory_hook.py).
	prefillGraphCompat bool
	// concurrencyReport: max_running_requests is the smallest of a list of
	// named limits and the log says which one bound it
	// (mem_cache/concurrency_limit.py).
	concurrencyReport bool
	// mambaSlotOpts: the lazy extra buffer (one ping-pong slot with the
	// overlap scheduler) and SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK (one slot
	// less) count in the Mamba slot ratio (kv_cache_configurator.py).
	mambaSlotOpts bool
	// decodeReservation: allocation_sizing.py's decode reservation and
	// request-to-token headroom with speculation and pages.
	decodeReservation bool
	// mmReserve: a multimodal model reserves SGLANG_VLM_CACHE_SIZE_MB
	// (100) of the KV budget for the embedding cache allocated after the
	// pool (kv_cache_configurator.py mm_runtime_reservation_gb, PR #34141,
	// opened 2026-08-09 and merged 2026-08-12..16, after 0.5.17 of early
	// August and before 0.5.18, which carries PRs of 2026-08-19); before,
	// the cache took its memory from the runtime slack and the pool was
	// sized without it.
	mmReserve bool
	// dsaFP8Counted: the budget counts an fp8 DeepSeek sparse-attention
	// token at the 656-byte row the pool allocates (pool_configurator.py
	// _compute_cell_size calls calculate_mla_kv_cache_dim, PR #31992,
	// merged 2026-07-27 as 2abb1d2c37, after 0.5.16 of 2026-07-26, first
	// released in 0.5.17); before, it counted kv_lora_rank + qk_rope_head_dim
	// elements of the KV dtype (576 bytes) while NSATokenToKVPool allocated
	// 656, so the pool overran the budget by 11 %.
	dsaFP8Counted bool
	// nsaFP8TRTLLM: on Blackwell an fp8 DSA pool defaults to the trtllm
	// prefill and decode backends (576-byte row) and a bf16 one to
	// flashmla_sparse / trtllm (nsaFP8TRTLLMFrom); before, fp8 took
	// flashmla_auto / flashmla_kv (656-byte row) and bf16 flashmla_sparse
	// for both.
	nsaFP8TRTLLM bool
	// groupDeviceTensor: every GroupCoordinator allocates its active_ranks
	// mask on the device (distributed/parallel_state.py, PR #11657, merged
	// 2026-01-20, first released in 0.5.8), so at TP × PP = 1 the worker's
	// first CUDA kernel runs inside init_torch_distributed and its memory
	// is read before weights (TP1FirstKernelMiB); before, it fell inside
	// load_model.
	groupDeviceTensor bool
}

// Version is a parsed SGLang version: major.minor.patch, an rc number (a
// pre-release sorts before its release) and a post number.
type Version struct {
	Major, Minor, Patch int
	// RC is the release-candidate number, -1 for a release.
	RC int
	// Post is the post-release number, 0 for none.
	Post int
}

// v is a release version.
func v(major, minor, patch int) Version { return Version{major, minor, patch, -1, 0} }

// Less orders versions: 0.5.3rc0 < 0.5.3 < 0.5.3.post1 < 0.5.4.
func (a Version) Less(b Version) bool {
	ka := [5]int{a.Major, a.Minor, a.Patch, stage(a), a.Post}
	kb := [5]int{b.Major, b.Minor, b.Patch, stage(b), b.Post}
	for i := range ka {
		if ka[i] != kb[i] {
			return ka[i] < kb[i]
		}
	}
	if a.RC >= 0 && b.RC >= 0 {
		return a.RC < b.RC
	}
	return false
}

func stage(x Version) int {
	switch {
	case x.RC >= 0:
		return 0
	case x.Post > 0:
		return 2
	}
	return 1
}

// String formats the version as SGLang tags it.
func (a Version) String() string {
	s := fmt.Sprintf("%d.%d.%d", a.Major, a.Minor, a.Patch)
	if a.RC >= 0 {
		s += "rc" + strconv.Itoa(a.RC)
	}
	if a.Post > 0 {
		s += ".post" + strconv.Itoa(a.Post)
	}
	return s
}

// ParseVersion reads "0.4.7", "v0.5.3rc0", "0.4.6.post5", "0.5" (= 0.5.0).
func ParseVersion(s string) (Version, error) {
	t := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "v")
	out := Version{RC: -1}
	bad := fmt.Errorf("%w %q (accepted: a release such as 0.4.7, 0.5.3rc0, 0.4.6.post5, or latest/main)", ErrUnknownVersion, s)
	if i := strings.Index(t, "+"); i >= 0 { // local build tag
		t = t[:i]
	}
	if i := strings.Index(t, ".post"); i >= 0 {
		n, err := strconv.Atoi(t[i+5:])
		if err != nil || n < 0 {
			return out, bad
		}
		out.Post, t = n, t[:i]
	}
	if i := strings.Index(t, ".dev"); i >= 0 {
		t = t[:i]
	}
	if i := strings.Index(t, "rc"); i >= 0 {
		n, err := strconv.Atoi(t[i+2:])
		if err != nil || n < 0 {
			return out, bad
		}
		out.RC, t = n, t[:i]
	}
	parts := strings.Split(t, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return out, bad
	}
	nums := [3]int{}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 1<<20 {
			return out, bad
		}
		nums[i] = n
	}
	out.Major, out.Minor, out.Patch = nums[0], nums[1], nums[2]
	return out, nil
}

// eraStarts are the first release of each era after Era04.
var eraStarts = []struct {
	era   Era
	first Version
}{
	{Era048, Version{0, 4, 7, -1, 1}}, // PR #7054 landed after the v0.4.7 bump
	{Era053, v(0, 5, 3)},              // PR #10975 (2025-09-29), after 0.5.3rc0
	{Era0510, Version{0, 5, 10, 0, 0}},
	{EraLatest, v(0, 5, 19)},
}

// dsaFP8CountedFrom is the first release whose budget counts an fp8
// DeepSeek sparse-attention token at the bytes its pool allocates (PR #31992).
var dsaFP8CountedFrom = v(0, 5, 17)

// groupDeviceTensorFrom is the first release whose GroupCoordinator
// allocates a device tensor (PR #11657, 2026-01-20; the ROCm images moved
// from v0.5.6.post2 to v0.5.8 on 2026-01-26, docker/rocm.Dockerfile).
var groupDeviceTensorFrom = v(0, 5, 8)

// versionGates are single changes inside an era: rule on from first.
var versionGates = []struct {
	first Version
	apply func(*rules)
}{
	{v(0, 4, 7), func(r *rules) { r.aiterScale, r.aiterDefault = true, true }}, // PR #6564
	{v(0, 4, 9), func(r *rules) { r.vlmAdjust, r.hybridSWA, r.kvLineTokens = true, true, true }},
	{nsaFP8TRTLLMFrom, func(r *rules) { r.nsaFP8TRTLLM = true }},   // trtllm DSA default on Blackwell
	{dsaFP8CountedFrom, func(r *rules) { r.dsaFP8Counted = true }}, // PR #31992
	{v(0, 5, 18), func(r *rules) { r.mmReserve = true }},           // PR #34141
	{groupDeviceTensorFrom, func(r *rules) { r.groupDeviceTensor = true }},
}

// defaultProfile is ResolveProfile(""), built once.
var defaultProfile = Profile{Era: DefaultEra, rules: eraRules(DefaultEra, nil),
	Reason: fmt.Sprintf("no --sglang-version: sized with the newest profile, %s (%s)", DefaultEra, eraSpan(DefaultEra))}

// cachedProfile maps a version string to a profile (ResolveProfile). "" gives DefaultEra;
// "latest", "main" and "nightly" give EraLatest; an era's own name gives
// that era; any other version maps to the era whose releases include it.
// Versions before 0.4.0 use Era04, the oldest profile, and say so. A
// version resolved before is not parsed again (a server plans the same few
// pinned releases again and again).
func cachedProfile(version string) (Profile, error) {
	if version == "" {
		return defaultProfile, nil
	}
	if p, ok := profiles.Load(version); ok {
		return p, nil
	}
	p, err := resolveProfile(version)
	if err == nil {
		profiles.Store(version, p)
	}
	return p, err
}

// profiles holds the profiles resolved so far by version string as given,
// at most 256 of them.
var profiles = engine.NewMemo[string, Profile](256)

// resolveProfile is cachedProfile without the cache.
func resolveProfile(version string) (Profile, error) {
	s := strings.ToLower(strings.TrimSpace(version))
	switch s {
	case "":
		return defaultProfile, nil
	case "latest", "main", "nightly":
		return Profile{Era: EraLatest, Version: version, rules: eraRules(EraLatest, nil),
			Reason: fmt.Sprintf("SGLang %s is sized with the %s profile", s, EraLatest)}, nil
	}
	ver, err := ParseVersion(s)
	if err != nil {
		return Profile{}, err
	}
	era := Era04
	for _, e := range eraStarts {
		if !ver.Less(e.first) {
			era = e.era
		}
	}
	p := Profile{Era: era, Version: version, rules: eraRules(era, &ver)}
	switch {
	case ver.Less(v(0, 4, 0)):
		p.Reason = fmt.Sprintf("SGLang %s predates the oldest profile; sized with the %s profile (0.4.0–0.4.7)", ver, era)
	default:
		p.Reason = fmt.Sprintf("SGLang %s is sized with the %s profile (%s)", ver, era, eraSpan(era))
	}
	return p, nil
}

func eraSpan(e Era) string {
	switch e {
	case Era04:
		return "0.4.0–0.4.7: mem_fraction_static by TP size"
	case Era048:
		return "0.4.7.post1–0.5.2: GiB reserve by GPU-memory tier"
	case Era053:
		return "0.5.3–0.5.9: MiB reserve from chunked prefill and CUDA-graph size"
	case Era0510:
		return "0.5.10–0.5.18: MiB reserve with default prefill CUDA graphs"
	}
	return "0.5.19 and main: restructured activation/graph reserve"
}

// eraRules builds the rules of era for ver (nil: the era's newest release).
func eraRules(era Era, ver *Version) rules {
	var r rules
	switch era {
	case Era04:
		r = rules{fraction: fractionByTP, tier: tier04, reqPoolPlusOne: true, hipMLAAiterNoSpec: true}
	case Era048:
		r = rules{fraction: fractionGiBTiers, tier: tier048, reqPoolPlusOne: true, hipMLAAiterNoSpec: true}
	case Era053:
		r = rules{fraction: DefaultMemFraction, tier: DefaultTier, blackwellTRTLLM: true}
	case Era0510:
		r = rules{fraction: fraction0510, tier: DefaultTier, blackwellTRTLLM: true}
	default:
		r = rules{fraction: fractionLatest, tier: tierLatest, blackwellTRTLLM: true, blackwellMHATRTLLM: true,
			prefillGraphCompat: true, concurrencyReport: true, mambaSlotOpts: true, decodeReservation: true}
	}
	for _, g := range versionGates {
		if ver == nil || !ver.Less(g.first) {
			g.apply(&r)
		}
	}
	return r
}

// MemFraction is the profile's default mem_fraction_static.
func (p Profile) MemFraction(in MemFractionInput) float64 { return p.fraction(in) }

// Tier is the profile's chunked prefill size and CUDA-graph batch size.
func (p Profile) Tier(gpuMiB int64, tp int) Tier { return p.tier(gpuMiB, tp) }
