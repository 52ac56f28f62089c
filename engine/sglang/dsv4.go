package sglang

import (
	"fmt"
	"strings"

	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/sglang/sizing"
)

// DeepSeek-V4 defaults SGLang's server args apply (docs/sglang.md#dsv4).
const (
	dsv4PageSize = 256
	dsv4SWARatio = 0.1
	// dsv4FloorPages is the SWA admission floor of the version SGLang's unit
	// test pins (the test, not the stored pool_configurator.py, carries it).
	dsv4FloorPages = 3
)

// DSV4Pools is what DeepSeek-V4's configurator decided: the sub-pool
// sizes, their bytes and the terms of the budget. Nil for other models.
type DSV4Pools struct {
	// Tokens are the sub-pool sizes (c128_state finalized for
	// max_running_requests).
	Tokens sizing.DSV4Sizes `json:"tokens"`
	// Bytes are the sub-pools' bytes on one rank.
	Bytes sizing.DSV4Bytes `json:"bytes"`
	// BytesPerFullToken is the cell (bytes_per_full_token, draft-scaled).
	BytesPerFullToken float64 `json:"bytes_per_full_token"`
	// C128StateFixedBytes is the fixed term subtracted before dividing.
	C128StateFixedBytes int64 `json:"c128_state_fixed_bytes"`
	// C4Ring and C128Ring are the compress-state ring sizes.
	C4Ring   int `json:"c4_ring"`
	C128Ring int `json:"c128_ring"`
	// CompressStateDType is SGLANG_DSV4_COMPRESS_STATE_DTYPE as resolved.
	CompressStateDType string `json:"compress_state_dtype"`
}

// isDSV4 reports a DeepSeek-V4 model, which SGLang's factory sends to
// DSV4PoolConfigurator.
func (c *Configurator) isDSV4() bool { return c.in.Spec.Compressed != nil }

// deriveDSV4Args applies apply_deepseek_v4_defaults (SGLang's
// deepseek_v4_hook.py) to the server args before the KV dtype and page are
// derived: attention backend dsv4, page 256, KV dtype auto → fp8_e4m3 (fp8_e4m3
// or bfloat16 only), max_running_requests 256 when not given, SWA ratio 0.1
// when not given, EAGLE (top-k 1) as the only speculative algorithm.
func (c *Configurator) deriveDSV4Args() error {
	if !c.isDSV4() {
		return nil
	}
	a, arch := &c.in.Args, c.in.Spec.Architecture
	if a.PageSize != 0 && a.PageSize != dsv4PageSize {
		c.notes = append(c.notes, fmt.Sprintf("Use dsv4 attention backend for %s, setting page_size to %d (requested %d).", arch, dsv4PageSize, a.PageSize))
	}
	a.PageSize = dsv4PageSize
	if kv := strings.ToLower(strings.TrimSpace(a.KVCacheDType)); kv == "" || kv == "auto" {
		a.KVCacheDType = "fp8_e4m3"
		c.notes = append(c.notes, fmt.Sprintf("Setting KV cache dtype to fp8_e4m3 for %s.", arch))
	} else if kv != "fp8_e4m3" && kv != "bfloat16" {
		return refusal(engine.Refusal{Err: fmt.Errorf("%w: AssertionError: %s is not supported for %s", ErrInvalid, a.KVCacheDType, arch),
			Flag: "--kv-cache-dtype", Value: "fp8_e4m3", Hint: "DeepSeek-V4 takes --kv-cache-dtype fp8_e4m3 (default) or bfloat16"})
	}
	if a.MaxRunningRequests == 0 {
		a.MaxRunningRequests = 256
		c.notes = append(c.notes, fmt.Sprintf("Setting max_running_requests to 256 for %s.", arch))
	}
	if algo := c.d.SpeculativeAlgo; algo != "" && algo != "EAGLE" {
		return refusal(engine.Refusal{Err: fmt.Errorf("%w: AssertionError: Only EAGLE speculative algorithm is supported for %s", ErrInvalid, arch),
			Flag: "--speculative-algorithm", Value: "EAGLE", Hint: "use EAGLE (MTP, top-k 1) with DeepSeek-V4"})
	}
	return nil
}

// deriveDSV4 sets the derived pool settings of DeepSeek-V4: hybrid SWA
// with the 128-token window, SWA ratio 0.1 unless given, page 256.
func (c *Configurator) deriveDSV4() {
	if !c.isDSV4() {
		return
	}
	d, a := &c.d, &c.in.Args
	d.HybridSWA = !a.DisableHybridSWAMemory
	d.SWAWindow = c.in.Spec.Compressed.Window
	if a.SWAFullTokensRatio == 0 {
		d.SWAFullTokensRatio = dsv4SWARatio
	}
	d.PageSize = dsv4PageSize
}

// dsv4StateElem resolves SGLANG_DSV4_COMPRESS_STATE_DTYPE with SGLang's
// ValueError for anything else.
func dsv4StateElem(v string) (int, string, error) {
	switch name := strings.ToLower(strings.TrimSpace(v)); name {
	case "", "float32", "fp32":
		return 4, "float32", nil
	case "bfloat16", "bf16":
		return 2, "bfloat16", nil
	default:
		return 0, "", refusal(engine.Refusal{
			Err:  fmt.Errorf("%w: Unsupported SGLANG_DSV4_COMPRESS_STATE_DTYPE='%s'. Expected one of: float32, fp32, bfloat16, bf16.", ErrInvalid, name),
			Flag: "SGLANG_DSV4_COMPRESS_STATE_DTYPE", Value: "float32", Hint: "unset it (float32) or set bf16 to halve the compress state",
		})
	}
}

// dsv4 builds the DSV4PoolConfigurator of PP stage r.
func (c *Configurator) dsv4(r [2]int) (sizing.DSV4, error) {
	s, a := c.in.Spec, &c.in.Args
	if a.DisableHybridSWAMemory {
		return sizing.DSV4{}, refusal(engine.Refusal{
			Err:  fmt.Errorf("%w: --disable-hybrid-swa-memory sends DeepSeek-V4 to the default configurator, which kvcfg does not model for compressed attention", ErrInvalid),
			Flag: "--disable-hybrid-swa-memory", Hint: "leave --disable-hybrid-swa-memory out for DeepSeek-V4",
		})
	}
	elem, _, err := dsv4StateElem(a.DSV4CompressStateDType)
	if err != nil {
		return sizing.DSV4{}, err
	}
	ratios := s.Compressed.Ratios[r[0]:min(r[1], len(s.Compressed.Ratios))]
	d := sizing.DSV4{
		Layers: len(ratios), QKNope: s.QKNopeHeadDim, QKRope: s.QKRopeHeadDim, IndexHeadDim: s.IndexHeadDim,
		Window: s.Compressed.Window, SWARatio: c.d.SWAFullTokensRatio, StateElem: elem,
		Shrink: max(a.HiSparseHostToDeviceRatio, 1), Speculative: c.d.SpeculativeAlgo != "",
		RequestedPerWorker: -1, ContextLen: c.d.ContextLength, FloorPages: dsv4FloorPages,
	}
	for _, v := range ratios {
		switch v {
		case 4:
			d.C4Layers++
		case 128:
			d.C128Layers++
		}
	}
	if a.MaxRunningRequests > 0 {
		d.RequestedPerWorker = a.MaxRunningRequests / c.in.Parallel.AttnDP()
	}
	return d, nil
}

// dsv4Finish finalizes the c128-state pool for the resolved
// max_running_requests, fills res.DSV4 and the pool charge, and logs the
// pool line.
func (c *Configurator) dsv4Finish(res *Result, p stagePlan, cfg sizing.PoolConfig) {
	if p.dsv4 == nil || cfg.DSV4 == nil {
		return
	}
	d := *p.dsv4
	sz := d.Finalize(*cfg.DSV4, res.MaxRunningRequests)
	_, name, _ := dsv4StateElem(c.in.Args.DSV4CompressStateDType)
	out := &DSV4Pools{Tokens: sz, Bytes: d.Bytes(sz, res.MaxRunningRequests), BytesPerFullToken: d.CellSize(),
		C128StateFixedBytes: d.FixedBytes(res.AvailableBytes), C4Ring: d.C4Ring(), C128Ring: d.C128Ring(), CompressStateDType: name}
	res.DSV4 = out
	res.KSizeBytes, res.VSizeBytes = out.Bytes.Total(), 0
	res.IndexerBytes = out.Bytes.Indexer
	res.KVPoolBytes = int64(float64(sz.Full)*d.CellSize()) + out.C128StateFixedBytes
}

// dsv4Stage makes sp stage r's DSV4PoolConfigurator.
func (c *Configurator) dsv4Stage(sp *stagePlan, r [2]int) error {
	d, err := c.dsv4(r)
	if err != nil {
		return err
	}
	sp.dsv4, sp.cfgr, sp.layers = &d, d, d.Layers
	return nil
}

// adviseDSV4SWAFloor reads the DeepSeek-V4 SWA admission floor
// (docs/sglang.md#dsv4).
func adviseDSV4SWAFloor(n map[string]float64, _ []string) engine.Advice {
	var a engine.Advice
	a.Meaning = fmt.Sprintf("DeepSeek-V4's sliding-window pool is swa_full_tokens_ratio × the full pool; it got %.0f tokens, below the %.0f tokens (three pages) a prefill needs to be admitted.", n["swa_tokens"], n["minimum"])
	a.Knob = "swa_full_tokens_ratio"
	if r := n["min_ratio"]; r > 0 && r <= 1 {
		a.Value = fmt.Sprintf("%.4g", r)
		a.Text = fmt.Sprintf("Raise --swa-full-tokens-ratio to %s or more (DeepSeek-V4's default is 0.1), or give the KV cache more memory.", a.Value)
	} else {
		a.Text = "Raise --swa-full-tokens-ratio (DeepSeek-V4's default is 0.1) or give the KV cache more memory (--mem-fraction-static, more GPUs)."
	}
	a.Alternatives = []string{"--mem-fraction-static", "--max-total-tokens"}
	return a
}

// adviseDSV4StateDType reads SGLang's ValueError for the compress-state dtype.
func adviseDSV4StateDType(map[string]float64, []string) engine.Advice {
	return engine.Advice{
		Meaning: "SGLANG_DSV4_COMPRESS_STATE_DTYPE sets DeepSeek-V4's compress-state dtype and takes only float32/fp32 or bfloat16/bf16.",
		Knob:    "dsv4_compress_state_dtype", Value: "float32",
		Text: "Unset SGLANG_DSV4_COMPRESS_STATE_DTYPE (float32) or set it to bf16, which halves the compress state.",
	}
}

// adviseMiniMaxModelDType reads the AttributeError of SGLang 0.5.10–0.5.18
// on MiniMax sparse models (docs/sglang.md#minimax-sparse).
func adviseMiniMaxModelDType(map[string]float64, []string) engine.Advice {
	return engine.Advice{
		Meaning: "This SGLang's KV cache configurator sizes MiniMax sparse attention's indexer pool in kvc.model_dtype, a field its KVCacheConfigurator lacks: the release cannot serve MiniMax-M3.",
		Knob:    "sglang_version", Value: "latest",
		Text: "Upgrade SGLang (0.5.19 or main) to serve MiniMax sparse-attention models.",
	}
}
