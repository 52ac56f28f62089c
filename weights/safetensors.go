package weights

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/kvcfg/kvcfg/format/safetensors"
	"github.com/kvcfg/kvcfg/internal/inputfile"
	"github.com/kvcfg/kvcfg/model"
)

// layerRe finds a tensor's decoder layer; compiled on first use, not at
// the start of every kvcfg process.
var layerRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|\.)(?:layers|h|blocks|block)\.(\d+)\.`)
})

// FromDir sums the weight bytes of the most loaded rank from the
// *.safetensors headers in dir (only headers are read). ok is false when
// dir holds no safetensors file.
//
// Sharding follows the engine: matrices are split over TP; 1-D tensors
// (norms, biases) are replicated; K/V projections are replicated when there
// are fewer KV heads than TP ranks (each rank keeps one head). Tensors of
// layers at or above Spec.NumLayers (MTP/NextN draft layers) are not part of
// the target model: they count, on the last stage, only with l.Draft.
// Vision-tower and projector tensors are counted, on the first stage. With PP, layer tensors go to their
// stage (remainder on the last stages), embeddings to the first stage and
// the LM head and final norm to the last.
//
// A directory whose model.safetensors.index.json lists shards it does not
// hold (a partial download) is refused with a *PartialError: its headers
// would undercount the weights.
func FromDir(dir string, s *model.Spec, l Layout) (int64, bool, error) {
	hdrs, ok, err := ReadDir(dir)
	if err != nil || !ok {
		return 0, ok, err
	}
	return FromHeaders(hdrs, s, l), true, nil
}

// ReadDir reads the headers of every *.safetensors file in dir, sorted by
// file name (only headers are read); ok is false when there is none. A
// partial download is a *PartialError, as for FromDir.
func ReadDir(dir string) (hdrs []safetensors.Header, ok bool, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	if err != nil {
		return nil, false, fmt.Errorf("weights: %w", err)
	}
	if perr := checkIndex(dir, files); perr != nil {
		return nil, true, perr
	}
	if len(files) == 0 {
		return nil, false, nil
	}
	sort.Strings(files)
	hdrs = make([]safetensors.Header, 0, len(files))
	for _, f := range files {
		hdr, err := readHeader(f)
		if err != nil {
			return nil, true, err
		}
		hdrs = append(hdrs, *hdr)
	}
	return hdrs, true, nil
}

// FromHeaders sums the weight bytes of the most loaded rank from the
// headers of a checkpoint's shards, sharded as FromDir describes (a Hub
// checkpoint's headers read with range requests give the same figure as
// its files on disk).
func FromHeaders(hdrs []safetensors.Header, s *model.Spec, l Layout) int64 {
	tp, pp := max(l.TP, 1), max(l.PP, 1)
	stageOf := stageMap(s, pp)
	stages := make([]float64, pp)
	var embed float64
	head := false
	for _, hdr := range hdrs {
		for _, t := range hdr.Tensors {
			st, skip := tensorStage(t.Name, s, stageOf, pp, l.Draft)
			if skip {
				continue
			}
			b := perRankBytes(t, s, tp, l)
			stages[st] += b
			switch lower := strings.ToLower(t.Name); {
			case strings.Contains(lower, "lm_head"):
				head = true
			case st == 0 && len(t.Shape) == 2 && isInputEmbedding(lower):
				embed += b
			}
		}
	}
	if pp > 1 && !head {
		// Tied embeddings: the last stage builds its own LM head from
		// the embedding (vLLM and SGLang create embed_tokens on the
		// last rank too when tie_word_embeddings is set).
		stages[pp-1] += embed
	}
	var m float64
	for _, b := range stages {
		m = max(m, b)
	}
	return int64(m)
}

// Totals are a checkpoint's tensor bytes summed whole, by dtype and by
// the kind of tensor (how an engine shards it).
type Totals struct {
	// Bytes is the sum of every tensor's bytes (headers excluded).
	Bytes int64 `json:"bytes"`
	// Tensors counts the tensors.
	Tensors int `json:"tensors"`
	// ByDType maps a safetensors dtype ("BF16", "F8_E4M3", ...) to bytes.
	ByDType map[string]int64 `json:"by_dtype"`
	// ByKind maps a tensor kind to bytes: "embedding", "lm_head",
	// "attention", "mlp", "experts", "norm_bias" (1-D, replicated),
	// "vision", "mtp" (draft layers at or past the model's layer count,
	// which the target model does not load) and "other".
	ByKind map[string]int64 `json:"by_kind"`
}

// Sum totals the tensors of hdrs.
func Sum(hdrs []safetensors.Header, s *model.Spec) Totals {
	t := Totals{ByDType: map[string]int64{}, ByKind: map[string]int64{}}
	n := 0
	if s != nil {
		n = s.NumLayers
	}
	for _, h := range hdrs {
		for _, ti := range h.Tensors {
			b := ti.Bytes()
			t.Bytes += b
			t.Tensors++
			t.ByDType[ti.DType] += b
			t.ByKind[kindOf(ti, n)] += b
		}
	}
	return t
}

func kindOf(t safetensors.TensorInfo, numLayers int) string {
	lower := strings.ToLower(t.Name)
	switch {
	case isVision(lower):
		return "vision"
	case layerIndex(lower) >= numLayers && numLayers > 0:
		return "mtp"
	case len(t.Shape) < 2:
		return "norm_bias"
	case strings.Contains(lower, "lm_head"):
		return "lm_head"
	case strings.Contains(lower, "embed"), strings.HasSuffix(lower, "wte.weight"):
		return "embedding"
	case strings.Contains(lower, "experts"):
		return "experts"
	case strings.Contains(lower, "attn"), strings.Contains(lower, "attention"), strings.Contains(lower, "qkv"),
		strings.Contains(lower, "q_proj"), strings.Contains(lower, "k_proj"), strings.Contains(lower, "v_proj"), strings.Contains(lower, "o_proj"):
		return "attention"
	case strings.Contains(lower, "mlp"), strings.Contains(lower, "ffn"), strings.Contains(lower, "feed_forward"), strings.Contains(lower, "mixer"):
		return "mlp"
	}
	return "other"
}

// visionPrefixes mark the tensors of a vision tower or its projector: the
// engines load them with the model, on the first pipeline stage.
var visionPrefixes = []string{"visual.", "vision_tower", "vision_model", "vision_encoder", "image_encoder",
	"mm_projector", "multi_modal_projector", "vision_embed", "vit.", "siglip", "patch_embed", "merger."}

func isVision(lower string) bool {
	for _, p := range visionPrefixes {
		if strings.HasPrefix(lower, p) || strings.Contains(lower, "."+p) {
			return true
		}
	}
	return false
}

// layerIndex returns the decoder layer a tensor belongs to, -1 for none.
func layerIndex(lower string) int {
	m := layerRe().FindStringSubmatch(lower)
	if m == nil {
		return -1
	}
	idx, err := strconv.Atoi(m[1])
	if err != nil {
		return -1
	}
	return idx
}

// readHeader reads the header of the safetensors file path, a regular file
// (a named pipe or device of that name is refused, never read).
func readHeader(path string) (*safetensors.Header, error) {
	f, _, err := inputfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("weights: %w", err)
	}
	defer f.Close()
	h, err := safetensors.ReadHeader(f)
	if err != nil {
		return nil, fmt.Errorf("weights: %s: %w", filepath.Base(path), err)
	}
	return h, nil
}

func stageMap(s *model.Spec, pp int) []int {
	n := max(s.NumLayers, 0)
	out := make([]int, n)
	per, rem := n/pp, n%pp
	i := 0
	for st := range pp {
		c := per
		if st >= pp-rem {
			c++
		}
		for range c {
			if i < n {
				out[i] = st
				i++
			}
		}
	}
	return out
}

func tensorStage(name string, s *model.Spec, stageOf []int, pp int, draft bool) (int, bool) {
	if isVision(strings.ToLower(name)) {
		return 0, false // a vision tower loads on the first stage, whole
	}
	if m := layerRe().FindStringSubmatch(name); m != nil {
		idx, err := strconv.Atoi(m[1])
		if err != nil {
			return 0, true
		}
		if idx >= len(stageOf) {
			return pp - 1, !draft // an MTP layer: loaded only as the draft
		}
		return stageOf[idx], false
	}
	lower := strings.ToLower(name)
	if strings.Contains(lower, "lm_head") || strings.HasSuffix(lower, "model.norm.weight") || strings.HasSuffix(lower, "final_layernorm.weight") {
		return pp - 1, false
	}
	return 0, false
}

func perRankBytes(t safetensors.TensorInfo, s *model.Spec, tp int, l Layout) float64 {
	b := loadedBytes(t, l)
	if len(t.Shape) < 2 {
		return b
	}
	lower := strings.ToLower(t.Name)
	if isRouter(lower) {
		return b // a MoE router (ReplicatedLinear) is whole on every rank
	}
	if (strings.Contains(lower, "k_proj") || strings.Contains(lower, "v_proj")) && s.NumKVHeads > 0 && s.NumKVHeads < tp {
		return b / float64(s.NumKVHeads)
	}
	if rows := t.Shape[0]; len(t.Shape) == 2 && rows > 0 && !isVision(lower) && (strings.Contains(lower, "lm_head") || isInputEmbedding(lower)) {
		// VocabParallelEmbedding and ParallelLMHead pad the vocabulary to
		// a multiple of 64 and give each rank an equal share of it.
		padded := (rows + vocabPadding - 1) / vocabPadding * vocabPadding
		share := (padded + int64(tp) - 1) / int64(tp)
		return b / float64(rows) * float64(share)
	}
	return b / float64(tp)
}

// isRouter reports whether a (lower-case) tensor name is a MoE router's
// or a shared-expert gate's weight ("mlp.gate.weight", "router.weight").
func isRouter(lower string) bool {
	return strings.HasSuffix(lower, ".gate.weight") || strings.HasSuffix(lower, "expert_gate.weight") || strings.Contains(lower, "router")
}

// vocabPadding is vLLM's and SGLang's DEFAULT_VOCAB_PADDING_SIZE.
const vocabPadding = 64

// isInputEmbedding reports whether a (lower-case) tensor name is the token
// embedding of the language model.
func isInputEmbedding(lower string) bool {
	return strings.Contains(lower, "embed_tokens") || strings.HasSuffix(lower, "wte.weight") || strings.HasSuffix(lower, "word_embeddings.weight")
}

// floatBytes are the element sizes of the floating-point dtypes an engine
// converts to its load dtype.
var floatBytes = map[string]float64{"F16": 2, "BF16": 2, "F32": 4}

// loadedBytes is the bytes the engine holds for t: a floating-point tensor
// at l.DType (one byte an element for a linear layer's weight under
// l.RuntimeFP8), anything else (fp8, packed integers, scales) as stored.
func loadedBytes(t safetensors.TensorInfo, l Layout) float64 {
	b := float64(t.Bytes())
	el, ok := floatBytes[strings.ToUpper(t.DType)]
	if !ok || strings.Contains(strings.ToLower(t.Name), "scale") {
		return b // quantization scales keep their dtype (fp8 block scales stay float32)
	}
	n := b / el
	if l.RuntimeFP8 && runtimeQuantized(t) {
		return n
	}
	if d := l.DType.Size(); d > 0 {
		return n * float64(d)
	}
	return b
}

// runtimeQuantized reports whether runtime --quantization fp8 quantizes t:
// the 2-D weight of a linear layer (attention, MLP, experts, Mamba
// projections), not an embedding, the LM head, a norm, a MoE router or a
// vision tower.
func runtimeQuantized(t safetensors.TensorInfo) bool {
	lower := strings.ToLower(t.Name)
	if len(t.Shape) != 2 && !(len(t.Shape) == 3 && strings.Contains(lower, "experts")) {
		return false
	}
	if !strings.HasSuffix(lower, ".weight") && !strings.Contains(lower, "experts") {
		return false
	}
	if isRouter(lower) {
		return false // MoE routers stay unquantized
	}
	switch kindOf(t, 0) { // MTP layers' linears are quantized as the rest
	case "attention", "mlp", "experts":
		return true
	}
	return false
}

// ErrPartial is wrapped by a *PartialError.
var ErrPartial = errors.New("weights: partial checkpoint")

// PartialError reports a model directory whose safetensors index lists
// shards that are not in it.
type PartialError struct {
	Dir string
	// Missing are the shard files the index lists and the directory lacks,
	// sorted; Listed is how many shards the index lists.
	Missing []string
	Listed  int
	// TotalSize is the index's metadata.total_size (all weights, every
	// rank), 0 when the index gives none.
	TotalSize int64
}

func (e *PartialError) Error() string {
	shown := e.Missing
	more := ""
	if len(shown) > 3 {
		shown, more = shown[:3], fmt.Sprintf(" and %d more", len(e.Missing)-3)
	}
	return fmt.Sprintf("weights: %s is a partial download: %d of the %d shards model.safetensors.index.json lists are missing (%s%s)",
		e.Dir, len(e.Missing), e.Listed, strings.Join(shown, ", "), more)
}

// Unwrap returns ErrPartial.
func (e *PartialError) Unwrap() error { return ErrPartial }

// maxIndexBytes bounds the model.safetensors.index.json read (the largest
// real indexes, of 100k-tensor checkpoints, are a few MiB).
const maxIndexBytes = 64 << 20

// checkIndex compares the shards model.safetensors.index.json lists with
// the files present; nil when there is no index or nothing is missing.
func checkIndex(dir string, files []string) *PartialError {
	data, err := inputfile.ReadFile(filepath.Join(dir, "model.safetensors.index.json"), maxIndexBytes, "an index")
	if err != nil {
		return nil
	}
	var idx struct {
		Metadata struct {
			TotalSize json.Number `json:"total_size"`
		} `json:"metadata"`
		WeightMap map[string]string `json:"weight_map"`
	}
	if json.Unmarshal(data, &idx) != nil || len(idx.WeightMap) == 0 {
		return nil
	}
	have := make(map[string]bool, len(files))
	for _, f := range files {
		have[filepath.Base(f)] = true
	}
	listed := map[string]bool{}
	for _, shard := range idx.WeightMap {
		listed[filepath.Base(shard)] = true
	}
	var missing []string
	for shard := range listed {
		if !have[shard] {
			missing = append(missing, shard)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	sort.Strings(missing)
	total, _ := strconv.ParseFloat(string(idx.Metadata.TotalSize), 64)
	return &PartialError{Dir: dir, Missing: missing, Listed: len(listed), TotalSize: int64(total)}
}
