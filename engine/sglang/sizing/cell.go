package sizing

import (
	"fmt"
	"math"
	"strings"

	"github.com/kvcfg/kvcfg/dtype"
)

// Attention describes the per-rank KV geometry of one PP stage's
// full-attention layers, already sharded (KVHeads is per rank).
type Attention struct {
	// MLA selects the latent (single-row, never TP-sharded) layout.
	MLA bool
	// DSA adds the lightning indexer cache (DeepSeek-V3.2); implies MLA.
	DSA bool
	// Layers is L: full-attention KV layers on this stage.
	Layers int
	// KVHeads is H = get_num_kv_heads(attn_tp[, dcp]) (see KVHeadsPerRank).
	KVHeads int
	// HeadDim and VHeadDim are D_k and D_v.
	HeadDim, VHeadDim int
	// KVLoraRank and QKRopeHeadDim are the MLA latent dims.
	KVLoraRank, QKRopeHeadDim int
	// IndexHeadDim is the DSA indexer head dim (128 for DeepSeek-V3.2).
	IndexHeadDim int
	// DSAFP8Row selects the 656-byte fp8 DSA row (fp8 nope + fp32 block
	// scales + bf16 rope): float8_e4m3fn on the DSA backends other than
	// trtllm (and, on ROCm, tilelang and aiter), sglang.DSAFP8Row.
	DSAFP8Row bool
	// ElementSize is SGLang's kv_size (fp4 pairs count 1).
	ElementSize int
	// Format is the pool's storage format (dtype.Resolution.Format). Its
	// element width, block size and scale bytes give the scale terms: FP4
	// pools (nvfp4, fp4_mx_block16) and MXFP8 are budgeted with SGLang's
	// own formulas, the grouped-int pools (int8_g64, int4_g32,
	// int8ring_int4) at their real layout, data plus scales. The zero
	// Format, like any format without block scales, is ElementSize bytes
	// per element.
	Format dtype.Format
	// DCP is the decode-context-parallel size (1 when off); the DSA indexer
	// is replicated across DCP ranks.
	DCP int
	// IndexerRatio is the HiSparse host_to_device_ratio (1 when off).
	IndexerRatio int
	// MiniMax is MiniMax-M3's lightning indexer (docs/sglang.md#minimax-sparse);
	// nil for other models. Layers then counts the dense and sparse layers
	// of the main pool.
	MiniMax *MiniMaxIndexer
}

// MiniMaxIndexer is the indexer pool of SGLang's MiniMaxSparseKVPool on one
// PP stage: one head of Dim elements of ElementSize bytes (the model dtype,
// whatever the KV cache dtype), K and V on KVLayers, K only on KOnlyLayers.
type MiniMaxIndexer struct {
	KVLayers, KOnlyLayers int
	Dim, ElementSize      int
}

// Bytes is the indexer's bytes per token: (2·kv + k_only)·dim·elem.
func (m *MiniMaxIndexer) Bytes() int64 {
	return int64(2*m.KVLayers+m.KOnlyLayers) * int64(m.Dim) * int64(m.ElementSize)
}

// KVHeadsPerRank is get_num_kv_heads(tp, dcp) = max(1, kv // max(1, tp//dcp)):
// a KV head is replicated, not split, when there are fewer heads than
// attention TP ranks.
func KVHeadsPerRank(totalKVHeads, attnTP, dcp int) int {
	if dcp < 1 {
		dcp = 1
	}
	div := attnTP / dcp
	if div < 1 {
		div = 1
	}
	h := totalKVHeads / div
	if h < 1 {
		return 1
	}
	return h
}

// MLAKVCacheDim is calculate_mla_kv_cache_dim: the latent row width in
// elements, or in bytes for the fp8 DSA row (656 for DeepSeek).
func (a Attention) MLAKVCacheDim() int {
	if a.DSA && a.DSAFP8Row && a.KVLoraRank%128 == 0 {
		return a.KVLoraRank + a.KVLoraRank/128*4 + a.QKRopeHeadDim*2
	}
	return a.KVLoraRank + a.QKRopeHeadDim
}

func (a Attention) validate() error {
	var bad []string
	if a.Layers < 0 {
		bad = append(bad, fmt.Sprintf("layers %d", a.Layers))
	}
	if a.ElementSize <= 0 {
		bad = append(bad, fmt.Sprintf("element size %d", a.ElementSize))
	}
	if a.MLA || a.DSA {
		if a.KVLoraRank <= 0 || a.QKRopeHeadDim < 0 {
			bad = append(bad, fmt.Sprintf("MLA dims %d+%d", a.KVLoraRank, a.QKRopeHeadDim))
		}
	} else if a.Layers > 0 && (a.KVHeads <= 0 || a.HeadDim <= 0 || a.VHeadDim <= 0) {
		bad = append(bad, fmt.Sprintf("MHA heads %d dims %d/%d", a.KVHeads, a.HeadDim, a.VHeadDim))
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(bad, ", "))
	}
	return nil
}

// Cell returns the DefaultPoolConfigurator cell (bytes per token) before
// speculative scaling: MHA (docs/sglang.md#cell-size-mha) with the scale terms of a.Format, or
// MLA/DSA (docs/sglang.md#cell-size-mla).
func (a Attention) Cell() (int64, error) {
	p, err := a.PerToken()
	return p.Total(), err
}

// Storage layouts of a KV format, as the cell budgets them.
type layout int

const (
	plainLayout    layout = iota // ElementSize bytes per element, no scales
	fp4Layout                    // SGLang's float4_e2m1fn_x2 formula
	blockFP8Layout               // SGLang's MXFP8 formula: + scales per block
	groupedLayout                // the format's data + scale bytes
)

// layoutOf classifies a storage format by its geometry.
func layoutOf(f dtype.Format) layout {
	switch {
	case f.Element == dtype.FP4E2M1x2:
		return fp4Layout
	case f.BlockSize <= 0 && (f.ElementBits == 0 || f.ElementBits >= 8):
		return plainLayout
	case f.Element.IsFP8() && f.ElementBits == 8:
		return blockFP8Layout
	default:
		return groupedLayout
	}
}

// blockScales is the scale bytes SGLang budgets for n elements of a block
// format: n·scale_bytes // block_size (its formulas floor the whole term).
func blockScales(f dtype.Format, n int64) int64 {
	if f.BlockSize <= 0 {
		return 0
	}
	return n * int64(f.ScaleBytes) / int64(f.BlockSize)
}

// PerToken is what one token costs on one rank of one PP stage, all the
// stage's full-attention layers together, split by what the bytes hold.
// It is the one formula per layer kind: the budget (Cell is Total), the
// allocation log lines (K and V sizes are rows × KRow and VRow) and the
// pool tests all read it.
type PerToken struct {
	// K and V are the data bytes of the K and V rows (MLA: the latent row in
	// K, V zero; fp4: packed nibbles).
	K int64 `json:"k"`
	V int64 `json:"v"`
	// KScales and VScales are the block or group scales of K and V. For
	// the FP4 formats SGLang budgets one combined term, held in KScales.
	KScales int64 `json:"k_scales"`
	VScales int64 `json:"v_scales"`
	// ScalesInRow is true when the scales live inside the K and V buffers
	// (the grouped-int layouts), so the allocation log counts them; FP4 and
	// MXFP8 keep them in buffers of their own.
	ScalesInRow bool `json:"scales_in_row,omitempty"`
	// Indexer is the DSA lightning-indexer cache.
	Indexer int64 `json:"indexer"`
	// Workspace is the FP4 dequant workspace of one layer, budgeted per
	// token.
	Workspace int64 `json:"workspace"`
}

// Total is the budgeted bytes per token: every part.
func (p PerToken) Total() int64 {
	return p.K + p.V + p.KScales + p.VScales + p.Indexer + p.Workspace
}

// KRow and VRow are the bytes per token the allocation log counts in the
// K and V buffers.
func (p PerToken) KRow() int64 {
	if p.ScalesInRow {
		return p.K + p.KScales
	}
	return p.K
}

// VRow is KRow for V.
func (p PerToken) VRow() int64 {
	if p.ScalesInRow {
		return p.V + p.VScales
	}
	return p.V
}

// PerToken returns the stage's per-token breakdown before speculative
// scaling: MHA with the scale terms of a.Format, or MLA/DSA.
func (a Attention) PerToken() (PerToken, error) {
	if err := a.validate(); err != nil {
		return PerToken{}, err
	}
	if a.MLA || a.DSA {
		return a.mlaPerToken(), nil
	}
	if a.MiniMax != nil {
		// SGLang sums the main and indexer pools and applies no FP4 or
		// MXFP8 scale term to MiniMax sparse models.
		h, d, l, s := int64(a.KVHeads), int64(a.HeadDim), int64(a.Layers), int64(a.ElementSize)
		return PerToken{K: l * h * d * s, V: l * h * d * s, Indexer: a.MiniMax.Bytes()}, nil
	}
	return a.mhaPerToken(), nil
}

func (a Attention) mhaPerToken() PerToken {
	h, dk, dv, l, s := int64(a.KVHeads), int64(a.HeadDim), int64(a.VHeadDim), int64(a.Layers), int64(a.ElementSize)
	f := a.Format
	p := PerToken{K: h * dk * l * s, V: h * dv * l * s}
	switch layoutOf(f) {
	case fp4Layout:
		// Packed nibbles ((K+V)//2 in one floor), the scales of K and of V
		// (SGLang: (H·D_k·L·2·s)//16, one uint8 per 16 elements), plus the
		// shared FP8 dequant workspace of one layer ([V3]).
		data := (p.K + p.V) * int64(f.ElementBits) / 8
		p.K = p.K * int64(f.ElementBits) / 8
		p.V = data - p.K
		p.KScales = blockScales(f, h*dk*l*2*s)
		p.Workspace = h * dk * 2 * s
	case blockFP8Layout:
		p.KScales = blockScales(f, h*(dk+dv)*l) // SGLang: (H·(D_k+D_v)·L)//32
	case groupedLayout:
		// Each K and V row (H·D elements) with its group scales.
		p.K, p.V = l*f.DataBytes(h*dk), l*f.DataBytes(h*dv)
		p.KScales, p.VScales = l*f.ScaleBytesFor(h*dk), l*f.ScaleBytesFor(h*dv)
		p.ScalesInRow = true
	}
	return p
}

func (a Attention) mlaPerToken() PerToken {
	l, s := int64(a.Layers), int64(a.ElementSize)
	if l < 0 {
		l = 0
	}
	f := a.Format
	dim := int64(a.MLAKVCacheDim())
	p := PerToken{K: dim * l * s}
	switch layoutOf(f) {
	case fp4Layout:
		p.K = p.K * int64(f.ElementBits) / 8
		p.KScales = blockScales(f, int64(a.KVLoraRank+a.QKRopeHeadDim)) * l * s
	case groupedLayout:
		p.K, p.KScales, p.ScalesInRow = l*f.DataBytes(dim), l*f.ScaleBytesFor(dim), true
	}
	if a.DSA {
		ratio := int64(a.IndexerRatio)
		if ratio < 1 {
			ratio = 1
		}
		dcp := int64(a.DCP)
		if dcp < 1 {
			dcp = 1
		}
		idx := int64(a.IndexHeadDim)
		p.Indexer = (idx + idx/128*4) * l * ratio * dcp
	}
	return p
}

// ScaleEAGLE applies the EAGLE/STANDALONE draft budget (docs/sglang.md#cell-size-speculative-decoding):
// int(cell*(1+draft_layers*dcp/L)); unchanged when draftLayers ≤ 0 or L ≤ 0.
func ScaleEAGLE(cell int64, layers, draftLayers, dcp int) int64 {
	if dcp < 1 {
		dcp = 1
	}
	if draftLayers <= 0 || layers <= 0 {
		return cell
	}
	d := draftLayers * dcp
	return int64(float64(cell) * (1 + float64(d)/float64(layers)))
}

// ScaleDFlash applies the DFLASH draft budget (docs/sglang.md#cell-size-speculative-decoding):
// ceil(cell*(L+draft)/L), or cell + draftCell*dcp with an explicit draft cell.
func ScaleDFlash(cell int64, layers, draftLayers int, draftCell int64, dcp int) (int64, error) {
	if dcp < 1 {
		dcp = 1
	}
	if cell <= 0 {
		return 0, fmt.Errorf("%w: DFLASH target cell size %d must be positive", ErrInvalid, cell)
	}
	if draftCell != 0 {
		if draftCell < 0 {
			return 0, fmt.Errorf("%w: DFLASH draft cell size %d must be positive", ErrInvalid, draftCell)
		}
		return cell + draftCell*int64(dcp), nil
	}
	if layers <= 0 || draftLayers <= 0 {
		return cell, nil
	}
	d := int64(draftLayers * dcp)
	l := int64(layers)
	return (cell*(l+d) + l - 1) / l, nil
}

// ZeroKVTokens is the zero-KV stage guard (docs/sglang.md#cell-size-zero-kv-stage): INT64_MAX when another
// PP stage has full-attention layers (the PP minimum picks the real value),
// else max_total_tokens or the context length.
func ZeroKVTokens(otherStagesHaveKV bool, maxTotalTokens int64, contextLen int) int64 {
	if otherStagesHaveKV {
		return math.MaxInt64
	}
	if maxTotalTokens > 0 {
		return maxTotalTokens
	}
	return int64(contextLen)
}

// TokenBytes returns the bytes one token of one layer takes in the plain
// MHA pool class that SGLang's SWAKVPool builds its sub-pools from:
// heads·(dk+dv) elements of elementSize bytes (FP4 too: one uint8 per
// element, docs/sglang.md#kv-dtype-element-sizes), plus SGLang's MXFP8 block scales; a grouped-int format
// (int8_g64, int4_g32) takes its real layout, data plus group scales.
func TokenBytes(f dtype.Format, elementSize, heads, dk, dv int) int64 {
	h, s := int64(heads), int64(elementSize)
	switch layoutOf(f) {
	case blockFP8Layout:
		return h*int64(dk+dv)*s + blockScales(f, h*int64(dk+dv))
	case groupedLayout:
		return f.Bytes(h*int64(dk)) + f.Bytes(h*int64(dv))
	}
	return h * int64(dk+dv) * s
}

// RealLayout reports whether sizing budgets format f at its real storage
// layout, data plus group scales (the grouped-int formats int8_g64,
// int4_g32 and int8ring_int4), rather than with SGLang's kv_size formulas.
func RealLayout(f dtype.Format) bool { return layoutOf(f) == groupedLayout }
