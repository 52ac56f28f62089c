package vllm

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/kvcfg/kvcfg/model"
)

// Result is what a vLLM launch would size and log. On a startup refusal
// Plan returns the Result filled up to the refusal together with the error.
type Result struct {
	// Profile is the version profile used; ProfileNote says why when the
	// requested version was not a profile name.
	Profile     Profile `json:"vllm_version"`
	ProfileNote string  `json:"profile_note,omitempty"`
	// KVCacheDType is the resolved cache dtype.
	KVCacheDType CacheDType `json:"kv_cache_dtype"`
	// BlockSize is the attention block size in tokens (after Mamba
	// inflation).
	BlockSize int `json:"block_size"`
	// MaxModelLen is the effective max_model_len (after auto-fit).
	MaxModelLen int `json:"max_model_len"`
	// MaxNumSeqs and MaxNumBatchedTokens are the effective scheduler limits.
	MaxNumSeqs          int `json:"max_num_seqs"`
	MaxNumBatchedTokens int `json:"max_num_batched_tokens"`
	// TensorParallelSize and PipelineParallelSize are the effective sizes.
	TensorParallelSize   int `json:"tensor_parallel_size"`
	PipelineParallelSize int `json:"pipeline_parallel_size"`
	// GPUMemoryUtilization is the effective utilization (0 when a KV budget
	// was given directly).
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization,omitempty"`
	// BytesPerToken is the KV bytes of one token over all layers on one TP
	// rank (every pipeline stage summed), state layers excluded.
	BytesPerToken int64 `json:"bytes_per_token"`
	// Memory is the budget per GPU.
	Memory MemoryReport `json:"memory"`
	// Groups are the KV cache groups (V1 profiles).
	Groups []Group `json:"groups,omitempty"`
	// GroupSize is the number of shared KV tensors (layers per group).
	GroupSize int `json:"group_size,omitempty"`
	// PageBytes is the page of one layer and block (V1), or the V0 cache
	// block of all layers.
	PageBytes int64 `json:"page_bytes"`
	// NumGPUBlocks is "# GPU blocks" / num_gpu_blocks.
	NumGPUBlocks int64 `json:"num_gpu_blocks"`
	// NumCPUBlocks is V0's "# CPU blocks" (swap space).
	NumCPUBlocks int64 `json:"num_cpu_blocks,omitempty"`
	// KVCacheSizeTokens is the number the version logs as "GPU KV cache
	// size" (V0: blocks × block size).
	KVCacheSizeTokens int64 `json:"kv_cache_size_tokens"`
	// MaxConcurrency is the logged "Maximum concurrency" for max_model_len.
	MaxConcurrency float64 `json:"max_concurrency"`
	// BlocksPerRequest is the blocks one request of max_model_len tokens
	// needs across groups.
	BlocksPerRequest int64 `json:"blocks_per_request"`
	// TokenCapacity is kvcfg's group-aware token capacity:
	// num_blocks / blocks_per_request × max_model_len.
	TokenCapacity int64 `json:"token_capacity"`
	// NeededBytes is the KV memory one request of max_model_len needs
	// (the admission check's figure).
	NeededBytes int64 `json:"needed_bytes,omitempty"`
	// EstimatedMaxModelLen is the binary-searched maximum model length of
	// the refusal message (0 when not refused or V0).
	EstimatedMaxModelLen int `json:"estimated_max_model_len,omitempty"`
	// LogLines are the lines vLLM prints, in order, up to a refusal.
	LogLines []string `json:"log_lines"`
	// Notes are kvcfg's remarks (estimates, misleading log figures).
	Notes []string `json:"notes,omitempty"`
	// Error is vLLM's refusal message, if it would refuse to start.
	Error string `json:"error,omitempty"`
}

// MemoryReport is the budget of one GPU.
type MemoryReport struct {
	// TotalBytes is the device's memory.
	TotalBytes int64 `json:"total_bytes,omitempty"`
	// RequestedBytes is total × gpu_memory_utilization (rounded up by the
	// latest profile).
	RequestedBytes int64 `json:"requested_bytes,omitempty"`
	// WeightsBytes, ActivationBytes, NonTorchBytes and CUDAGraphBytes are
	// the non-KV figures subtracted from RequestedBytes.
	WeightsBytes    int64 `json:"weights_bytes,omitempty"`
	ActivationBytes int64 `json:"activation_bytes,omitempty"`
	NonTorchBytes   int64 `json:"non_torch_bytes,omitempty"`
	CUDAGraphBytes  int64 `json:"cudagraph_bytes,omitempty"`
	// AvailableKVBytes is the KV budget ("Available KV cache memory").
	AvailableKVBytes int64 `json:"available_kv_bytes"`
	// Source is "profile" (computed from the figures), "kv_cache_memory_bytes"
	// or "measured".
	Source string `json:"source"`
	// Estimated lists the figures kvcfg estimated.
	Estimated []string `json:"estimated,omitempty"`
}

// conservingMemoryURL ends vLLM's memory messages.
const conservingMemoryURL = "https://docs.vllm.ai/en/latest/configuration/conserving_memory/"

// Plan sizes vLLM's KV cache for model s launched with c.
func Plan(s *model.Spec, c Config) (*Result, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: no model", ErrInvalidConfig)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	prof, note, _ := ResolveProfile(c.Version)
	r := prof.rules()
	res := &Result{Profile: prof, ProfileNote: note}
	if note != "" {
		res.Notes = append(res.Notes, note)
	}

	tp, pp := max(c.TensorParallelSize, 1), max(c.PipelineParallelSize, 1)
	res.TensorParallelSize, res.PipelineParallelSize = tp, pp
	block := c.BlockSize
	if block == 0 {
		block = 16
	}
	bigGPU := c.Memory.TotalBytes >= 70*GiB && !strings.Contains(strings.ToLower(c.GPUName), "a100")
	res.MaxNumSeqs = c.MaxNumSeqs
	if res.MaxNumSeqs == 0 {
		res.MaxNumSeqs = 256
		if bigGPU && !r.v0 {
			res.MaxNumSeqs = 1024
		}
	}

	// max_model_len.
	L := c.MaxModelLen
	autoFit := false
	switch {
	case L == -1:
		if !r.autoFit {
			return nil, fmt.Errorf("%w: max_model_len -1 (auto-fit) is not supported by vLLM %s", ErrInvalidConfig, prof)
		}
		autoFit = true
		L = s.ContextLength
	case L == 0:
		L = s.ContextLength
	}
	if L <= 0 {
		return nil, fmt.Errorf("%w: the model's context length is unknown; set max_model_len", ErrInvalidConfig)
	}
	if s.ContextLength > 0 && L > s.ContextLength {
		res.MaxModelLen = L
		return res, refuse(res, fmt.Sprintf("User-specified max_model_len (%d) is greater than the derived max_model_len (%d). To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1.", L, s.ContextLength))
	}
	res.MaxModelLen = L

	res.MaxNumBatchedTokens = c.MaxNumBatchedTokens
	if res.MaxNumBatchedTokens == 0 {
		switch {
		case r.v0 && L > 32768:
			// V0 turns chunked prefill on for long contexts, with 512-token chunks.
			res.MaxNumBatchedTokens = 512
		case r.v0:
			res.MaxNumBatchedTokens = max(L, 2048)
		case bigGPU:
			res.MaxNumBatchedTokens = 8192
		default:
			res.MaxNumBatchedTokens = 2048
		}
	}

	cache, err := ResolveCacheDType(c.KVCacheDType, s, prof)
	if err != nil {
		return nil, err
	}
	res.KVCacheDType = cache
	if cache.Name == "nvfp4" && c.GPUSM > 0 && c.GPUSM/10 != 10 {
		res.Notes = append(res.Notes, fmt.Sprintf("vLLM's NVFP4 KV cache needs an SM100 backend (FlashInfer / trtllm-gen); SM%d support is still open work (vllm#46963, #49011)", c.GPUSM))
	}

	if !r.v0 && c.BlockSize == 0 && (s.Attention == model.MLA || s.Attention == model.DSA) {
		// MLA backends force their page: FlashMLA (and FlashMLA sparse for
		// DSA) 64 tokens, CUTLASS MLA on SM100 128.
		block = 64
		backend := "FlashMLA"
		if s.Attention == model.MLA && c.GPUSM/10 == 10 {
			block, backend = 128, "CUTLASS MLA"
		}
		res.Notes = append(res.Notes, fmt.Sprintf("the %s attention backend uses %d-token KV blocks", backend, block))
	}

	var notes []string
	layers, err := buildLayers(s, layerInputs{rules: r, cache: cache, blockSize: block, tp: tp, pp: pp, notes: &notes, draftLayers: c.DraftLayers})
	if err != nil {
		return nil, err
	}
	res.Notes = append(res.Notes, notes...)
	for _, l := range layers {
		if l.Kind != Mamba {
			res.BytesPerToken += l.TokenBytes
		}
	}

	// Mamba hybrids: grow the attention block until one attention page holds
	// a Mamba state, then pad the Mamba page to match.
	if !r.v0 {
		block = inflateForMamba(layers, block, s.Attention != model.MHA, &res.LogLines)
	}
	res.BlockSize = block

	// Budget.
	if err := budget(res, s, c, r, tp, pp); err != nil {
		return res, err
	}
	avail := res.Memory.AvailableKVBytes

	if r.v0 {
		return res, planV0(res, layers, c, pp, avail, v0BlocksLabel(c.Version))
	}
	return planV1(res, layers, c, r, pp, avail, autoFit)
}

// refuse records vLLM's refusal message on the result and returns it as an
// error.
func refuse(res *Result, msg string) error {
	res.Error = msg
	return &RefusalError{Message: msg}
}

// inflateForMamba applies vLLM's HybridAttentionMambaModelConfig rule and
// returns the attention block size.
func inflateForMamba(layers []LayerSpec, block int, mla bool, logs *[]string) int {
	mi := slices.IndexFunc(layers, func(l LayerSpec) bool { return l.Kind == Mamba })
	ai := slices.IndexFunc(layers, func(l LayerSpec) bool { return l.Kind != Mamba && l.Variant == "" && l.TokenBytes > 0 })
	if mi < 0 || ai < 0 {
		return block
	}
	mambaPage := layers[mi].StateBytes
	tok := layers[ai].TokenBytes
	align := int64(16)
	if mla {
		align = 64
	}
	attnBlock := int(align * cdiv(mambaPage, align*tok))
	if block < attnBlock {
		block = attnBlock
		*logs = append(*logs, fmt.Sprintf("Setting attention block size to %d tokens to ensure that attention page size is >= mamba page size.", block))
	}
	attnPage := int64(block) * tok
	if attnPage > mambaPage {
		*logs = append(*logs, fmt.Sprintf("Padding mamba page size by %.2f%% to ensure that mamba page size and attention page size are exactly equal.",
			float64(attnPage-mambaPage)/float64(mambaPage)*100))
	}
	for i := range layers {
		layers[i].BlockSize = block
		if layers[i].Kind == Mamba {
			layers[i].PagePadded = attnPage
		}
	}
	return block
}

// budget fills res.Memory with the KV budget per GPU.
func budget(res *Result, s *model.Spec, c Config, r rules, tp, pp int) error {
	m := &res.Memory
	m.TotalBytes = c.Memory.TotalBytes
	switch {
	case c.Memory.AvailableKVBytes > 0:
		m.AvailableKVBytes = c.Memory.AvailableKVBytes
		m.Source = "measured"
	case c.KVCacheMemoryBytes > 0:
		if !r.kvCacheMemoryBytes {
			return fmt.Errorf("%w: kv_cache_memory_bytes is not supported by vLLM %s", ErrInvalidConfig, res.Profile)
		}
		m.AvailableKVBytes = c.KVCacheMemoryBytes
		m.Source = "kv_cache_memory_bytes"
	default:
		m.Source = "profile"
		util := c.GPUMemoryUtilization
		if util == 0 {
			util = r.defaultUtil
		}
		res.GPUMemoryUtilization = util
		est := Estimate(s, tp, pp, res.MaxNumBatchedTokens)
		pick := func(given, estimate int64, name string) int64 {
			if given > 0 {
				return given
			}
			m.Estimated = append(m.Estimated, name)
			return estimate
		}
		m.WeightsBytes = pick(c.Memory.WeightsBytes, est.WeightsBytes, "weights")
		m.ActivationBytes = pick(c.Memory.ActivationBytes, est.ActivationBytes, "activation")
		m.NonTorchBytes = pick(c.Memory.NonTorchBytes, est.NonTorchBytes, "non_torch")
		if r.ceilRequested && !c.EnforceEager {
			m.CUDAGraphBytes = pick(c.Memory.CUDAGraphBytes, est.CUDAGraphBytes, "cudagraph")
		}
		reqF := float64(m.TotalBytes) * util
		if free := c.Memory.FreeBytes; free > 0 && float64(free) < math.Ceil(reqF) {
			return refuse(res, fmt.Sprintf("Free memory on device (%s/%s GiB) on startup is less than desired GPU memory utilization (%s, %s GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
				gibFor(r, free), gibFor(r, m.TotalBytes), strconv.FormatFloat(util, 'f', -1, 64), gibFor(r, int64(math.Ceil(reqF)))))
		}
		nonKV := m.WeightsBytes + m.ActivationBytes + m.NonTorchBytes + m.CUDAGraphBytes
		if r.ceilRequested {
			m.RequestedBytes = int64(math.Ceil(reqF))
			m.AvailableKVBytes = m.RequestedBytes - nonKV
		} else {
			m.RequestedBytes = int64(reqF)
			m.AvailableKVBytes = int64(reqF - float64(nonKV))
		}
		if len(m.Estimated) > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("estimated without a GPU: %s; pass a real run's figures (weights, or its \"Available KV cache memory\" as --kv-cache-memory) to reproduce it exactly",
				strings.Join(m.Estimated, ", ")))
		}
	}
	if !r.v0 {
		res.LogLines = append(res.LogLines, fmt.Sprintf("Available KV cache memory: %s GiB", gibFor(r, m.AvailableKVBytes)))
	}
	return nil
}

// planV0 is the V0 engine: one cache block of all attention layers of a
// stage, the minimum over stages, the max-seq-len check after sizing.
// v0BlocksLabel is the device word of V0's "# GPU blocks" line: "GPU" up
// to 0.6, the platform's dispatch key "CUDA" in 0.7, its device type "cuda"
// from 0.8.
func v0BlocksLabel(version string) string {
	v := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(version)), "v")
	major, minor, ok := parseVersion(v)
	switch {
	case !ok || major != 0 || minor <= 6:
		return "GPU"
	case minor == 7:
		return "CUDA"
	default:
		return "cuda"
	}
}

func planV0(res *Result, layers []LayerSpec, c Config, pp int, avail int64, label string) error {
	B := int64(res.BlockSize)
	var worst int64
	for st := range pp {
		var b int64
		for _, l := range layers {
			if l.Stage == st {
				b += B * l.TokenBytes
			}
		}
		worst = max(worst, b)
	}
	res.PageBytes = worst
	if worst > 0 {
		nb := int64(math.Floor(float64(avail) / float64(worst)))
		res.NumGPUBlocks = max(nb, 0)
		swap := c.SwapSpaceBytes
		if swap == 0 {
			swap = 4 * GiB
		}
		res.NumCPUBlocks = swap / worst
	}
	if c.NumGPUBlocksOverride > 0 {
		res.NumGPUBlocks = c.NumGPUBlocksOverride
	}
	L := int64(res.MaxModelLen)
	res.BlocksPerRequest = cdiv(L, B)
	res.KVCacheSizeTokens = res.NumGPUBlocks * B
	res.TokenCapacity = res.KVCacheSizeTokens
	res.MaxConcurrency = float64(res.NumGPUBlocks*B) / float64(L)
	res.NeededBytes = res.BlocksPerRequest * worst
	res.LogLines = append(res.LogLines,
		fmt.Sprintf("# %s blocks: %d, # CPU blocks: %d", label, res.NumGPUBlocks, res.NumCPUBlocks),
		fmt.Sprintf("Maximum concurrency for %d tokens per request: %.2fx", L, res.MaxConcurrency))
	if res.NumGPUBlocks <= 0 {
		return refuse(res, "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.")
	}
	if res.KVCacheSizeTokens < L {
		return refuse(res, fmt.Sprintf("The model's max seq len (%d) is larger than the maximum number of tokens that can be stored in KV cache (%d). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.", L, res.KVCacheSizeTokens))
	}
	return nil
}

// planV1 is the V1 engine: groups, admission (and auto-fit), num_blocks as
// the minimum over pipeline stages, and the report lines.
func planV1(res *Result, layers []LayerSpec, c Config, r rules, pp int, avail int64, autoFit bool) (*Result, error) {
	mode := c.MambaCacheMode
	if mode == "" {
		mode = r.mambaMode
	}
	if mode == "none" {
		// Without prefix caching a Mamba "block" is the whole sequence.
		for i := range layers {
			if layers[i].Kind == Mamba {
				layers[i].BlockSize = res.MaxModelLen
			}
		}
	}
	groups, _, err := groupLayers(layers, r, c.DisableHybridKVCacheManager, &res.LogLines)
	if err != nil {
		var re *RefusalError
		if asRefusal(err, &re) {
			res.Error = re.Message
		}
		return res, err
	}
	batches := 1
	if r.asyncBatches {
		batches = 2
		if pp > 1 {
			batches = pp
		}
	}
	enc := c.MaxNumEncoderInputTokens
	if enc == 0 {
		enc = res.MaxNumBatchedTokens
	}
	use := func(L int) usage {
		return usage{maxModelLen: L, batchedTokens: res.MaxNumBatchedTokens * batches, mambaMode: mode,
			specBlocks: c.NumSpeculativeTokens, encoderTokens: enc}
	}
	if len(groups) == 0 {
		res.NumGPUBlocks = 1
		res.Notes = append(res.Notes, "attention-free model: no KV cache")
		return res, nil
	}
	res.GroupSize = groupSize(groups)
	res.PageBytes = groups[0].PageBytes

	workers := make([][]Group, pp)
	for st := range pp {
		workers[st] = project(groups, st)
	}
	stageLayers := func(st int) []LayerSpec {
		var out []LayerSpec
		for _, l := range layers {
			if l.Stage == st {
				out = append(out, l)
			}
		}
		return out
	}
	needed := func(st, L int) int64 {
		if r.groupAdmission {
			return groupsNeeded(workers[st], use(L))
		}
		return layersNeeded(stageLayers(st), use(L))
	}
	checkAvail := func(st int) int64 {
		if r.nullBlock {
			return avail - nullBytes(workers[st])
		}
		return avail
	}
	empty := func(st int) bool { return groupSize(workers[st]) == 0 }

	// Auto-fit max_model_len (latest).
	if autoFit {
		orig := res.MaxModelLen
		fit := orig
		for st := range pp {
			if empty(st) {
				continue
			}
			fit = min(fit, searchMaxLen(orig, checkAvail(st), func(L int) int64 { return needed(st, L) }))
		}
		if fit <= 0 {
			return res, refuse(res, "Cannot auto-fit max_model_len: not enough GPU memory available to serve even a single token. Try increasing `gpu_memory_utilization`.")
		}
		if fit >= orig {
			res.LogLines = append(res.LogLines, fmt.Sprintf("Auto-fit max_model_len: full model context length %d fits in available GPU memory", orig))
		} else {
			res.MaxModelLen = fit
			res.LogLines = append(res.LogLines, fmt.Sprintf("Auto-fit max_model_len: reduced from %d to %d to fit in available GPU memory (%s GiB available for KV cache)", orig, fit, gibFor(r, avail)))
		}
	}
	L := res.MaxModelLen
	seeDocs := ""
	if r.ceilRequested {
		seeDocs = " See " + conservingMemoryURL + " for more details."
	}

	// Admission, per worker.
	for st := range pp {
		if empty(st) {
			continue
		}
		need := needed(st, L)
		res.NeededBytes = max(res.NeededBytes, need)
		if avail <= 0 {
			return res, refuse(res, "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."+seeDocs)
		}
		ca := checkAvail(st)
		if need > ca {
			est := searchMaxLen(L, ca, func(L int) int64 { return needed(st, L) })
			res.EstimatedMaxModelLen = est
			estMsg := ""
			if est > 0 {
				estMsg = fmt.Sprintf("Based on the available memory, the estimated maximum model length is %d. ", est)
			}
			// 0.11 prints "models's"; newer versions fixed the typo and
			// added the CPU-backend remark and the docs link.
			model, knob := "models's", "`gpu_memory_utilization`"
			if r.ceilRequested {
				model, knob = "model's", "`gpu_memory_utilization` (which also controls CPU memory on the CPU backend)"
			}
			return res, refuse(res, fmt.Sprintf("To serve at least one request with the %s max seq len (%d), (%s GiB KV cache is needed, which is larger than the available KV cache memory (%s GiB). %sTry increasing %s or decreasing `max_model_len` when initializing the engine.%s",
				model, L, gibFor(r, need), gibFor(r, ca), estMsg, knob, seeDocs))
		}
	}

	// num_blocks: the minimum across workers.
	nb := int64(-1)
	for st := range pp {
		if empty(st) {
			continue
		}
		n := numBlocks(workers[st], avail)
		if nb < 0 || n < nb {
			nb = n
		}
	}
	nb = max(nb, 0)
	if c.NumGPUBlocksOverride > 0 {
		res.LogLines = append(res.LogLines, fmt.Sprintf("Overriding num_gpu_blocks=%d with num_gpu_blocks_override=%d", nb, c.NumGPUBlocksOverride))
		nb = c.NumGPUBlocksOverride
	}
	res.NumGPUBlocks = nb

	// Reports.
	u := use(L)
	minBlock := groups[0].BlockSize
	var perReq, sumMax int64
	for i := range groups {
		g := &groups[i]
		minBlock = min(minBlock, g.BlockSize)
		mm := g.maxMemory(u)
		g.BlocksPerRequest = cdiv(mm, g.PageBytes)
		perReq += g.BlocksPerRequest
		sumMax += mm
	}
	res.Groups = groups
	res.BlocksPerRequest = perReq
	allFull := !slices.ContainsFunc(groups, func(g Group) bool { return !g.Kind.fullType() })
	switch {
	case allFull:
		// Every group holds every token: blocks per group × block size.
		res.TokenCapacity = nb / int64(len(groups)) * int64(minBlock)
	case perReq > 0:
		res.TokenCapacity = mulDiv(nb, int64(L), perReq)
	}
	if r.combinedLine {
		if perReq > 0 {
			res.MaxConcurrency = float64(nb) / float64(perReq)
		}
		res.KVCacheSizeTokens = int64(res.MaxConcurrency * float64(L))
		res.LogLines = append(res.LogLines, fmt.Sprintf("GPU KV cache size: %s tokens, Maximum concurrency for %s tokens per request: %.2fx",
			commas(res.KVCacheSizeTokens), commas(int64(L)), res.MaxConcurrency))
	} else {
		if d := cdiv(sumMax, groups[0].PageBytes); d > 0 {
			res.MaxConcurrency = float64(nb) / float64(d)
		}
		res.KVCacheSizeTokens = nb / int64(len(groups)) * int64(minBlock)
		res.LogLines = append(res.LogLines,
			fmt.Sprintf("GPU KV cache size: %s tokens", commas(res.KVCacheSizeTokens)),
			fmt.Sprintf("Maximum concurrency for %s tokens per request: %.2fx", commas(int64(L)), res.MaxConcurrency))
		if len(groups) > 1 && res.TokenCapacity != res.KVCacheSizeTokens {
			res.Notes = append(res.Notes, fmt.Sprintf("vLLM %s logs \"GPU KV cache size\" as num_blocks // %d groups × %d; a request of %d tokens needs %d blocks across the groups, so the group-aware capacity is %d tokens (vllm#40691)",
				res.Profile, len(groups), minBlock, L, perReq, res.TokenCapacity))
		}
	}
	if block := res.BlockSize; block > 16 && slices.ContainsFunc(groups, func(g Group) bool { return g.Kind == Mamba }) {
		res.Notes = append(res.Notes, fmt.Sprintf("attention blocks are inflated to %d tokens to hold a Mamba state page; prefix caching works in %d-token units (vllm#54458)", block, block))
	}
	var mambaBlocks int64
	for _, g := range groups {
		if g.Kind == Mamba {
			mambaBlocks += g.BlocksPerRequest
		}
	}
	if mambaBlocks > 0 {
		if seqs := nb / mambaBlocks; seqs < int64(res.MaxNumSeqs) {
			res.Notes = append(res.Notes, fmt.Sprintf("only %d requests can hold Mamba state at once; max_num_seqs %d exceeds that (vllm#49064): pass --max-num-seqs %d", seqs, res.MaxNumSeqs, seqs))
		}
	}
	return res, nil
}

// mulDiv is a·b/c without overflow (saturating at MaxInt64), for
// non-negative a, b and positive c.
func mulDiv(a, b, c int64) int64 {
	if a <= 0 || b <= 0 || c <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, uint64(c))
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}

func asRefusal(err error, target **RefusalError) bool {
	re, ok := err.(*RefusalError)
	if ok {
		*target = re
	}
	return ok
}

// gib formats bytes as vLLM 0.11 prints GiB: value / 2^30 with two decimals.
func gib(b int64) string { return strconv.FormatFloat(float64(b)/float64(GiB), 'f', 2, 64) }

// formatGiB is vLLM's newer format_gib: str(round(b / 2^30, 2)), so 4 GiB
// prints as "4.0" and 2.8877 GiB as "2.89".
func formatGiB(b int64) string {
	// Python's round() rounds exact ties to even.
	v := math.RoundToEven(float64(b)/float64(GiB)*100) / 100
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

// gibFor formats bytes the way the profile's messages do.
func gibFor(r rules, b int64) string {
	if r.ceilRequested {
		return formatGiB(b)
	}
	return gib(b)
}

// commas formats n with thousands separators, as Python's f"{n:,}".
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, ch := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
