package sglang

import (
	"fmt"
	"strconv"

	"github.com/kvcfg/kvcfg/engine/sglang/sizing"
)

// gb formats bytes as SGLang's logs do: bytes / 2^30 with two decimals.
func gb(n int64) string { return string(appendGB(nil, n)) }

// appendGB appends gb(n) to b (strconv's 'f' formatting is fmt's %.2f).
func appendGB(b []byte, n int64) []byte { return strconv.AppendFloat(b, float64(n)/gib, 'f', 2, 64) }

// swaSizes returns the K and V bytes of one of SWAKVPool's sub-pools of
// size tokens (plus a page of padding rows), which use the plain MHA class
// even for FP4 (one uint8 per element, docs/sglang.md#kv-dtype-element-sizes).
func (c *Configurator) swaSizes(size int64, layers, heads, dk, dv int) (k, v int64) {
	rows := size + int64(c.d.PageSize)
	if f := c.kv.Format; sizing.RealLayout(f) {
		return rows * f.Bytes(int64(heads*dk)) * int64(layers), rows * f.Bytes(int64(heads*dv)) * int64(layers)
	}
	el := int64(c.kv.Store.Size())
	return rows * int64(heads) * int64(dk) * el * int64(layers), rows * int64(heads) * int64(dv) * el * int64(layers)
}

// kvLine is SGLang's MHA pool line "KV Cache is allocated. #tokens: %d,
// K size: %.2f GB, V size: %.2f GB", built without fmt (it is on every plan).
func kvLine(size, k, v int64) string { return string(appendKVLine(make([]byte, 0, 96), size, k, v)) }

// appendKVLine appends kvLine to b.
func appendKVLine(b []byte, size, k, v int64) []byte {
	b = append(b, "KV Cache is allocated. #tokens: "...)
	b = strconv.AppendInt(b, size, 10)
	b = append(b, ", K size: "...)
	b = appendGB(b, k)
	b = append(b, " GB, V size: "...)
	b = appendGB(b, v)
	return append(b, " GB"...)
}

// kvLine is the profile's MHA pool line: before 0.4.9 SGLang printed no
// #tokens ("KV Cache is allocated. K size: %.2f GB, V size: %.2f GB.").
func (c *Configurator) kvLine(size, k, v int64) string {
	if c.prof.kvLineTokens {
		return kvLine(size, k, v)
	}
	b := make([]byte, 0, 80)
	b = append(b, "KV Cache is allocated. K size: "...)
	b = appendGB(b, k)
	b = append(b, " GB, V size: "...)
	b = appendGB(b, v)
	return string(append(b, " GB."...))
}

// poolLogs fills the K/V sizes of res and appends the pool allocation log
// lines to res.Logs in SGLang's order (mamba, SWA sub-pool, full pool, SWA
// wrapper), after pre, the concurrency report when there is one (which it
// also sets as res.Concurrency.Line).
func (c *Configurator) poolLogs(res *Result, p stagePlan, pre []byte) {
	a := p.attn
	if len(pre) > 0 && (c.state != nil || p.hybrid != nil || a.MLA) {
		res.Concurrency.Line = string(pre)
		res.Logs = append(res.Logs, res.Concurrency.Line)
	}
	if c.state != nil {
		line := fmt.Sprintf("Mamba Cache is allocated. max_mamba_cache_size: %d, conv_state size: %sGB, ssm_state size: %sGB ",
			res.MaxMambaCacheSize, gb(res.MambaConvBytes), gb(res.MambaSSMBytes))
		if c.d.DraftTokens > 0 {
			layers := int64(c.state.Layers)
			rows := int64(res.MaxRunningRequests+1) * int64(c.d.DraftTokens)
			ssm := layers * rows * c.state.SSMBytesPerLayer()
			conv := layers * rows * c.state.ConvBytesPerLayer()
			line += fmt.Sprintf("intermediate_ssm_state_cache size: %sGB intermediate_conv_window_cache size: %sGB ", gb(ssm), gb(conv))
		}
		res.Logs = append(res.Logs, line)
	}
	switch {
	case p.dsv4 != nil:
		// DeepSeekV4TokenToKVPool: the configurator's two lines carry the sizes.
	case p.hybrid != nil:
		c.hybridPoolLogs(res, p.hybrid, a)
	case a.MLA:
		c.mlaPoolLog(res, a)
	default:
		c.densePoolLogs(res, a, pre)
	}
}

// hybridPoolLogs is poolLogs for SWAKVPool: the SWA sub-pool's line, the
// full pool's line and the wrapper's mem usage line.
func (c *Configurator) hybridPoolLogs(res *Result, h *sizing.HybridSWA, a sizing.Attention) {
	s := c.in.Spec
	tp := c.in.Parallel.AttnTP()
	hs := a.KVHeads
	if s.SWANumKVHeads > 0 {
		hs = max(1, s.SWANumKVHeads/tp)
	}
	sdk, sdv := s.SWAHeadDim, s.SWAVHeadDim
	if sdk == 0 {
		sdk = a.HeadDim
	}
	if sdv == 0 {
		sdv = sdk // swa_v_head_dim defaults to swa_head_dim (k.1)
	}
	sk, sv := c.swaSizes(res.SWAMaxTotalNumTokens, h.SWALayers, hs, sdk, sdv)
	fk, fv := c.swaSizes(res.FullMaxTotalNumTokens, h.FullLayers, a.KVHeads, a.HeadDim, a.VHeadDim)
	res.Logs = append(res.Logs, c.kvLine(res.SWAMaxTotalNumTokens, sk, sv), c.kvLine(res.FullMaxTotalNumTokens, fk, fv),
		fmt.Sprintf("SWAKVPool mem usage: %s GB, swa size: %d, full size: %d", gb(sk+sv+fk+fv), res.SWAMaxTotalNumTokens, res.FullMaxTotalNumTokens))
	res.KSizeBytes, res.VSizeBytes = sk+fk, sv+fv
}

// mlaPoolLog is poolLogs for the MLA pool: one KV row per token (plus the
// DSA indexer's bytes) and the profile's "KV size" line.
func (c *Configurator) mlaPoolLog(res *Result, a sizing.Attention) {
	rows := res.MaxTotalNumTokens + int64(c.d.PageSize)
	pt, _ := a.PerToken() // a was validated when the cell was computed
	kv := rows * pt.KRow()
	if a.DSA {
		res.IndexerBytes = rows * pt.Indexer / int64(max(a.IndexerRatio, 1)*max(a.DCP, 1))
	}
	res.KSizeBytes = kv
	b := make([]byte, 0, 80)
	if c.prof.kvLineTokens {
		b = append(b, "KV Cache is allocated. #tokens: "...)
		b = strconv.AppendInt(b, res.MaxTotalNumTokens, 10)
		b = append(b, ", KV size: "...)
		b = appendGB(b, kv)
		b = append(b, " GB"...)
	} else {
		b = append(b, "KV Cache is allocated. KV size: "...)
		b = appendGB(b, kv)
		b = append(b, " GB."...)
	}
	res.Logs = append(res.Logs, string(b))
}

// densePoolLogs is poolLogs for the MHA pool (and MiniMax's extra lines).
// With a concurrency report pre, it builds both lines in one allocation:
// this is every dense plan, and TestDefaultPlanAllocs counts on it.
func (c *Configurator) densePoolLogs(res *Result, a sizing.Attention, pre []byte) {
	rows := res.MaxTotalNumTokens + int64(c.d.PageSize)
	pt, _ := a.PerToken() // a was validated when the cell was computed
	k, v := rows*pt.KRow(), rows*pt.VRow()
	res.KSizeBytes, res.VSizeBytes = k, v
	if len(pre) == 0 {
		res.Logs = append(res.Logs, c.kvLine(res.MaxTotalNumTokens, k, v))
	} else {
		// Both lines in one allocation: this is every dense plan.
		both := string(appendKVLine(pre, res.MaxTotalNumTokens, k, v))
		res.Concurrency.Line = both[:len(pre)]
		if cap(res.Logs) < 2 {
			res.Logs = make([]string, 0, 2)
		}
		res.Logs = append(res.Logs, res.Concurrency.Line, both[len(pre):])
	}
	if a.MiniMax != nil {
		c.miniMaxLogs(res, a.MiniMax)
	}
}

// PostCaptureResize is the post-CUDA-graph-capture KV resize (docs/sglang.md#post-capture-resize) as a
// pure function: with freeBytes measured after capture and backedBytes of
// pool memory already backed, it recomputes the budget and returns a result
// that can only shrink (the current token count caps it).
func (c *Configurator) PostCaptureResize(cur *Result, freeBytes, backedBytes int64) (*Result, error) {
	if cur == nil {
		return nil, fmt.Errorf("%w: no current result", ErrInvalid)
	}
	out := *cur
	out.Logs = nil
	out.Warnings = nil
	free := float64(freeBytes) / gib
	headroom := float64(cur.PreLoadGiB * float64(1-c.d.MemFractionStatic))
	budget := int64(float64(max(0, free-headroom)*gib)) + backedBytes
	plans, err := c.plans(nil, c.in.Args.MaxTotalTokens)
	if err != nil {
		return &out, err
	}
	cfg, idx, err := c.configFromBudget(plans, budget, cur.MaxTotalNumTokens, &out)
	if err != nil {
		return &out, err
	}
	c.fill(&out, plans[idx], idx, cfg)
	out.AvailableBytes = budget
	if cfg.MaxTotalNumTokens <= 0 {
		return &out, c.notEnoughMemoryError(plans[idx], cur.PreLoadGiB, free, &out)
	}
	n, warns, err := ResolveMaxNumReqs(c.maxReqsInput(cfg.MaxTotalNumTokens, cur.MaxMambaCacheSize))
	out.Warnings = append(out.Warnings, warns...)
	if err != nil {
		return &out, err
	}
	if n < cur.MaxRunningRequests {
		out.Warnings = append(out.Warnings, fmt.Sprintf("Post-capture KV sizing reduced max_running_requests from %d to %d.", cur.MaxRunningRequests, n))
		out.MaxRunningRequests = n
	}
	c.poolLogs(&out, plans[idx], nil)
	out.Logs = append(out.Logs, fmt.Sprintf("Post-capture KV sizing: max_total_num_tokens=%d, free memory=%.2f GB", out.MaxTotalNumTokens, free))
	return &out, nil
}
