package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/internal/inputfile"
)

// ConfigFile is the file name Load looks for in a model directory.
const ConfigFile = "config.json"

// MaxConfigBytes bounds the config.json the loaders read (16 MiB; the
// largest real configs are a few hundred KiB).
const MaxConfigBytes = 16 << 20

// Parse reads one HuggingFace config.json into a Spec following SGLang's
// rules (docs/sglang.md#model-inputs). name becomes Spec.Name and appears in errors. Bare
// Infinity/NaN tokens, which transformers writes, are accepted. Every
// problem found is reported at once (errors.Join of FieldErrors); the
// returned Spec has passed Validate.
func Parse(data []byte, name string) (*Spec, error) {
	top, err := decodeObject(data, name)
	if err != nil {
		return nil, err
	}
	r := &reader{file: name}
	p := &parser{r: r, root: object{r: r, m: top}, s: &Spec{Name: name}}
	p.read()
	if len(r.errs) > 0 {
		return nil, errors.Join(r.errs...)
	}
	if err := p.s.Validate(); err != nil {
		return nil, err
	}
	return p.s, nil
}

// Load reads a config.json file, or the config.json of a model directory.
// A HuggingFace cache snapshot path (".../models--org--name/snapshots/<rev>")
// is named after its HF id; any other source is named after its path.
func Load(p string) (*Spec, error) {
	data, name, _, err := ReadConfig(p)
	if err != nil {
		return nil, err
	}
	return Parse(data, name)
}

// ReadConfig reads the config.json that Load would parse: p itself, or
// p/config.json when p is a directory (isDir). name is what Load calls the
// model.
func ReadConfig(p string) (data []byte, name string, isDir bool, err error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, "", false, fmt.Errorf("model: %w", err)
	}
	if !st.IsDir() && !st.Mode().IsRegular() {
		return nil, "", false, fmt.Errorf("%w: %s is %s: give a config.json file or a model directory", ErrNotFile, p, inputfile.Kind(st.Mode()))
	}
	file := p
	if st.IsDir() {
		file = filepath.Join(p, ConfigFile)
		if _, err := os.Stat(file); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, "", true, fmt.Errorf("%w in directory %s", ErrNoConfig, p)
			}
			return nil, "", true, fmt.Errorf("model: %w", err)
		}
	}
	data, err = readLimited(os.DirFS(filepath.Dir(file)), filepath.Base(file), file)
	if err != nil {
		return nil, "", st.IsDir(), err
	}
	return data, sourceName(filepath.ToSlash(p), st.IsDir()), st.IsDir(), nil
}

// LoadFS is Load on a file system: p is a config.json file or a directory
// holding one (slash-separated, as io/fs wants).
func LoadFS(fsys fs.FS, p string) (*Spec, error) {
	st, err := fs.Stat(fsys, p)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	file := p
	if st.IsDir() {
		file = path.Join(p, ConfigFile)
		if _, err := fs.Stat(fsys, file); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("%w in directory %s", ErrNoConfig, p)
			}
			return nil, fmt.Errorf("model: %w", err)
		}
	}
	data, err := readLimited(fsys, file, file)
	if err != nil {
		return nil, err
	}
	return Parse(data, sourceName(p, st.IsDir()))
}

// readLimited reads the config file name of fsys (called shown in
// errors): a regular file of at most MaxConfigBytes. The type is checked
// before the open, so that a named pipe is never opened (its open would wait
// for a writer) and a device such as /dev/zero never read.
func readLimited(fsys fs.FS, name, shown string) ([]byte, error) {
	st, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", shown, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is %s, not a config.json file", ErrNotFile, shown, inputfile.Kind(st.Mode()))
	}
	if st.Size() > MaxConfigBytes {
		return nil, configTooLarge(shown, fmt.Sprintf("%d bytes", st.Size()))
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", shown, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", shown, err)
	}
	if len(data) > MaxConfigBytes {
		return nil, configTooLarge(shown, "more")
	}
	return data, nil
}

// configTooLarge is the error for a config file over MaxConfigBytes.
func configTooLarge(shown, got string) error {
	return fmt.Errorf("%w: %s holds %s; a config.json is read up to %d MiB", ErrRange, shown, got, MaxConfigBytes>>20)
}

// sourceName names a model loaded from p (slash-separated).
func sourceName(p string, isDir bool) string {
	dir := p
	if !isDir {
		dir = path.Dir(p)
	}
	// HF hub cache: models--org--name/snapshots/<revision>
	parts := strings.Split(path.Clean(dir), "/")
	for i, part := range parts {
		if strings.HasPrefix(part, "models--") && i+2 < len(parts) && parts[i+1] == "snapshots" {
			if id := strings.SplitN(strings.TrimPrefix(part, "models--"), "--", 2); len(id) == 2 {
				return id[0] + "/" + id[1]
			}
		}
	}
	return p
}

// parser holds the state of one Parse.
type parser struct {
	r    *reader
	root object // top-level config
	text object // text config (root unless nested)
	s    *Spec
	fam  family

	topModelType string
	window       int // configured window (tokens), 0 if none
	missing      []string
}

func (p *parser) need(field string) {
	p.missing = append(p.missing, field)
}

func (p *parser) read() {
	s := p.s
	p.text = p.root
	for _, k := range []string{"text_config", "llm_config", "language_config"} {
		if !p.root.has(k) {
			continue
		}
		if t, ok := p.root.obj(k); ok {
			p.text = t
		}
		break
	}
	applyDefaults(p.text.m)
	if p.text.prefix != "" {
		if filled := applyNestedDefaults(p.text.m); len(filled) > 0 {
			p.s.Warnings = append(p.s.Warnings, fmt.Sprintf("%s omits %s: transformers defaults used", strings.TrimSuffix(p.text.prefix, "."), strings.Join(filled, ", ")))
		}
	}
	p.topModelType, _ = p.root.str("model_type")
	s.ModelType = p.topModelType
	if mt, ok := p.text.str("model_type"); ok && p.text.prefix != "" {
		s.ModelType = mt
	}
	if archs, ok := p.root.strs("architectures"); ok && len(archs) > 0 {
		s.Architecture = archs[0]
	}
	if s.Architecture == "" {
		s.Architecture = modelTypeArch[p.topModelType]
		if s.Architecture == "" {
			s.Architecture = modelTypeArch[s.ModelType]
		}
		if s.Architecture == "" {
			s.Warnings = append(s.Warnings, "config has no architectures and its model_type is not known: read with the generic rules")
		}
	}
	fam, known := knownArchs[s.Architecture]
	if !known {
		fam, known = knownArchs[modelTypeArch[s.ModelType]]
		if s.Architecture != "" {
			s.Warnings = append(s.Warnings, fmt.Sprintf("unknown architecture %q: read with the generic rules", s.Architecture))
		}
	}
	p.fam = fam

	p.readShape()
	p.readContext()
	p.readDType()
	p.readLayers()
	p.readQuant()
	p.readMisc()
	if len(p.missing) > 0 {
		for _, f := range p.missing {
			p.r.fail(f, fmt.Errorf("%w: the KV shape of %s cannot be determined without it", ErrMissing, archOrType(s)))
		}
		return
	}
	if len(p.r.errs) == 0 {
		p.estimateParams()
	}
}

// classDefaults are transformers config-class defaults that SGLang sees for
// keys a config.json omits (only the ones that change KV sizing). Keys set
// to null in the config stay null.
var classDefaults = map[string]map[string]any{
	// Gemma3TextConfig: Gemma-3-27B's text_config omits the length, so the
	// linear x8 rope gives 131072*8 = 1,048,576 (docs/sglang.md#model-context-length).
	"gemma3_text": {"max_position_embeddings": json.Number("131072"), "sliding_window": json.Number("4096"), "sliding_window_pattern": json.Number("6"), "head_dim": json.Number("256")},
	"gemma2":      {"max_position_embeddings": json.Number("8192"), "sliding_window": json.Number("4096"), "head_dim": json.Number("256")},
	"llama4_text": {"max_position_embeddings": json.Number("131072"), "attention_chunk_size": json.Number("8192"), "head_dim": json.Number("128")},
}

// nestedDefaults are transformers' LlamaConfig and MistralConfig defaults,
// applied only to a nested text_config (LLaVA-style wrappers write just the
// keys that differ: llava-v1.6-mistral-7b-hf's text_config gives
// intermediate_size, num_key_value_heads and vocab_size, not the width or
// depth).
var nestedDefaults = map[string][]struct {
	key string
	val json.Number
}{
	"llama": {
		{"hidden_size", "4096"}, {"intermediate_size", "11008"}, {"num_hidden_layers", "32"},
		{"num_attention_heads", "32"}, {"max_position_embeddings", "2048"}, {"vocab_size", "32000"},
	},
	"mistral": {
		{"hidden_size", "4096"}, {"intermediate_size", "14336"}, {"num_hidden_layers", "32"},
		{"num_attention_heads", "32"}, {"num_key_value_heads", "8"}, {"max_position_embeddings", "131072"},
		{"vocab_size", "32000"},
	},
}

// applyNestedDefaults fills omitted keys of a nested text config and
// returns the keys it filled.
func applyNestedDefaults(m map[string]any) []string {
	if m == nil {
		return nil
	}
	mt, _ := m["model_type"].(string)
	var filled []string
	for _, d := range nestedDefaults[mt] {
		if _, ok := m[d.key]; !ok {
			m[d.key] = d.val
			filled = append(filled, d.key)
		}
	}
	return filled
}

// applyDefaults fills omitted keys of a text config from its class defaults.
func applyDefaults(m map[string]any) {
	if m == nil {
		return
	}
	mt, _ := m["model_type"].(string)
	for k, v := range classDefaults[mt] {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
}

func archOrType(s *Spec) string {
	switch {
	case s.Architecture != "":
		return s.Architecture
	case s.ModelType != "":
		return "model_type " + s.ModelType
	}
	return "this model"
}

// readShape reads layers, heads and head dims (docs/sglang.md#model-shape, docs/sglang.md#model-dsa).
func (p *parser) readShape() {
	s, t := p.s, p.text
	if n, _, ok := t.firstInt("num_hidden_layers", "n_layer", "n_layers", "num_layers"); ok {
		s.NumLayers = n
	} else if !t.has("num_hidden_layers") && !t.has("n_layer") && !t.has("n_layers") && !t.has("num_layers") {
		p.need(t.field("num_hidden_layers"))
	}
	s.HiddenSize, _, _ = t.firstInt("hidden_size", "d_model", "n_embd", "model_dim")
	s.Attention = MHA
	if p.fam == famMamba2 {
		// Pure state-space model: no attention layers, no KV heads.
		return
	}
	headsOK := p.readHeads()
	p.readHeadDims(headsOK)
	p.readLatent()
	p.readSWAHeads()
}

// readHeads reads the attention and KV head counts and reports whether the
// config gave the attention head count (docs/sglang.md#model-shape).
func (p *parser) readHeads() bool {
	s, t := p.s, p.text
	heads, _, ok := t.firstInt("num_attention_heads", "n_head", "n_heads")
	if ok {
		s.NumAttentionHeads = heads
	} else if !t.has("num_attention_heads") && !t.has("n_head") && !t.has("n_heads") {
		p.need(t.field("num_attention_heads"))
	}

	// KV heads (docs/sglang.md#model-shape).
	newDecoderFalcon := false
	if p.fam == famFalcon || s.ModelType == "falcon" || s.ModelType == "RefinedWeb" || s.ModelType == "RefinedWebModel" {
		newDecoderFalcon, _ = t.bool("new_decoder_architecture")
	}
	mq, _ := t.bool("multi_query")
	switch {
	case mq && !newDecoderFalcon:
		s.NumKVHeads = 1
	default:
		if kv, _, ok := t.firstInt("n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num", "num_attention_groups"); ok {
			s.NumKVHeads = kv
		} else if ac, ok := t.obj("attn_config"); ok && ac.has("kv_n_heads") {
			s.NumKVHeads, _ = ac.int("kv_n_heads")
		} else {
			s.NumKVHeads = s.NumAttentionHeads
		}
	}
	return ok
}

// readHeadDims reads the K and V head dims: an explicit head_dim wins over
// hidden/heads. headsOK says whether the config gave the head count.
func (p *parser) readHeadDims(headsOK bool) {
	s, t := p.s, p.text
	hd, _, hasHD := t.firstInt("head_dim", "attention_head_dim")
	switch {
	case hasHD:
		s.HeadDim = hd
	case s.HiddenSize > 0 && s.NumAttentionHeads > 0:
		s.HeadDim = s.HiddenSize / s.NumAttentionHeads
	case !t.has("head_dim") && !t.has("hidden_size") && headsOK:
		p.need(t.field("head_dim"))
		p.need(t.field("hidden_size"))
	}
	s.VHeadDim = s.HeadDim
	if v, ok := t.int("v_head_dim"); ok {
		s.VHeadDim = v
	}
}

// readLatent reads the MLA latent shape and, on DSA architectures, the
// indexer (docs/sglang.md#model-dsa).
func (p *parser) readLatent() {
	s, t := p.s, p.text
	hasLatent := t.has("kv_lora_rank")
	if hasLatent && (mlaArchs[s.Architecture] || p.fam == famKimiLinear || (p.fam == famGeneric && t.has("qk_rope_head_dim"))) {
		if !mlaArchs[s.Architecture] && p.fam != famKimiLinear {
			s.Warnings = append(s.Warnings, "kv_lora_rank present on an architecture SGLang does not list as MLA: sized as MLA")
		}
		s.Attention = MLA
		s.KVLoraRank, _ = t.int("kv_lora_rank")
		s.QLoraRank, _ = t.int("q_lora_rank")
		if v, ok := t.int("qk_rope_head_dim"); ok {
			s.QKRopeHeadDim = v
		} else if !t.has("qk_rope_head_dim") {
			p.need(t.field("qk_rope_head_dim"))
		}
		s.QKNopeHeadDim, _ = t.int("qk_nope_head_dim")
		if s.QKNopeHeadDim > 0 {
			s.HeadDim = s.QKNopeHeadDim + s.QKRopeHeadDim
		}
		if !t.has("v_head_dim") && s.QKNopeHeadDim > 0 {
			s.VHeadDim = s.QKNopeHeadDim
		}
		if dsaArchs[s.Architecture] && t.has("index_topk") {
			p.readIndexer()
		}
	} else if mlaArchs[s.Architecture] {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%s is an MLA architecture but the config has no kv_lora_rank: sized as MHA", s.Architecture))
	}
}

// readIndexer marks the spec DSA and reads its indexer shape.
func (p *parser) readIndexer() {
	s, t := p.s, p.text
	s.Attention = DSA
	s.IndexTopK, _ = t.int("index_topk")
	s.IndexNHeads, _ = t.int("index_n_heads")
	if v, ok := t.int("index_head_dim"); ok {
		s.IndexHeadDim = v
	} else if !t.has("index_head_dim") {
		p.need(t.field("index_head_dim"))
	}
}

// readSWAHeads reads asymmetric sliding-window heads (MiMo-V2-Flash).
func (p *parser) readSWAHeads() {
	s, t := p.s, p.text
	s.SWANumKVHeads, _ = t.int("swa_num_key_value_heads")
	if v, ok := t.int("swa_head_dim"); ok {
		s.SWAHeadDim = v
		s.SWAVHeadDim = v // docs/sglang.md#model-shape: swa_v_head_dim defaults to swa_head_dim
	}
	if v, ok := t.int("swa_v_head_dim"); ok {
		s.SWAVHeadDim = v
	}
}

// contextKeys are scanned in order; the first present one wins (docs/sglang.md#model-context-length).
var contextKeys = []string{"max_sequence_length", "seq_length", "max_seq_len", "model_max_length", "max_position_embeddings"}

// readContext derives the context length with SGLang's rope-scaling rule
// (docs/sglang.md#model-context-length, docs/sglang.md#model-context-length).
func (p *parser) readContext() {
	t := p.text
	val, found := 2048, false
	for _, k := range contextKeys {
		if !t.has(k) {
			continue
		}
		if v, ok := t.int(k); ok {
			val, found = v, true
		}
		break
	}
	if !found && p.fam == famMamba2 {
		p.s.Warnings = append(p.s.Warnings, "config sets no maximum length: context_length defaults to 2048")
	}
	factor := 1.0
	rs, ok := t.obj("rope_scaling")
	if !ok {
		rs, ok = t.obj("rope_parameters")
	}
	if ok && rs.has("factor") {
		typ, _ := rs.str("rope_type")
		legacy, _ := rs.str("type")
		if f, fok := rs.float("factor"); fok && !rs.has("original_max_position_embeddings") && typ != "llama3" && legacy != "llama3" {
			factor = f
		}
	}
	ctx := factor * float64(val)
	if ctx > maxInt || ctx < -maxInt || math.IsNaN(ctx) {
		p.r.fail(t.field("rope_scaling.factor"), fmt.Errorf("%w: context %g is absurdly large", ErrRange, ctx))
		return
	}
	p.s.ContextLength = int(ctx)
}

// readDType resolves the model dtype of --dtype auto (docs/sglang.md#model-dtype, docs/sglang.md#model-dtype).
func (p *parser) readDType() {
	s := p.s
	field := ""
	for _, o := range []object{p.text, p.root} {
		for _, k := range []string{"dtype", "torch_dtype"} {
			if v, ok := o.str(k); ok {
				s.ConfigDType, field = v, o.field(k)
				break
			}
		}
		if field != "" {
			break
		}
	}
	cfg := dtype.Float32
	if s.ConfigDType == "" && p.quantMethod() == "mxfp4" {
		// MXFP4 checkpoints (gpt-oss) ship without a dtype; the engines run
		// their unquantized parts in bfloat16 (docs/sglang.md#ex4b).
		s.ModelDType = dtype.BFloat16
		return
	}
	if s.ConfigDType != "" {
		d, err := dtype.Parse(s.ConfigDType)
		if err != nil || (d != dtype.Float32 && d != dtype.Float16 && d != dtype.BFloat16) {
			p.r.fail(field, fmt.Errorf("%w: model dtype %q (want float16, bfloat16 or float32)", ErrRange, s.ConfigDType))
			return
		}
		cfg = d
	}
	s.ModelDType = cfg
	if cfg == dtype.Float32 {
		if strings.HasPrefix(p.topModelType, "gemma") || strings.HasPrefix(s.ModelType, "gemma") {
			s.ModelDType = dtype.BFloat16
		} else {
			s.ModelDType = dtype.Float16
		}
	}
}

// quantMethod is quantization_config.quant_method without reporting errors.
func (p *parser) quantMethod() string {
	for _, o := range []object{p.root, p.text} {
		raw, _ := o.get("quantization_config")
		if qc, ok := raw.(map[string]any); ok {
			m, _ := qc["quant_method"].(string)
			return strings.ToLower(m)
		}
	}
	return ""
}

// readMisc reads MTP layers and the multimodal flags.
func (p *parser) readMisc() {
	s, t := p.s, p.text
	if v, ok := t.int("num_nextn_predict_layers"); ok {
		s.NumNextNPredictLayers = v
	} else if use, _ := t.bool("use_mtp"); use {
		s.NumNextNPredictLayers, _ = t.int("num_mtp_modules")
	}
	s.Encoder = p.root.has("vision_config") || p.root.has("audio_config") || p.root.has("vision_tower")
	if raw, ok := p.root.get("vision_config"); ok {
		if vc, ok := raw.(map[string]any); ok {
			s.Vision = &VisionSpec{Layers: looseInt(vc["num_hidden_layers"], 1e6), Hidden: looseInt(vc["hidden_size"], 1e7),
				PatchesPerToken: p.patchesPerToken(vc)}
		}
	}
	wrapped := p.text.prefix != ""
	s.Multimodal = (wrapped || s.Encoder || isMultimodalArch(s.Architecture)) && !languageOnlyByDefault[s.Architecture]
}

// patchesPerToken is how many vision-tower patches make one multimodal
// token of the language model: Gemma 3's pooling ((image_size /
// patch_size)² patches to mm_tokens_per_image tokens), a spatial merge
// (Mistral 3, Qwen-VL: spatial_merge_size²; Kimi-VL: merge_kernel_size),
// Llama 4's pixel shuffle (1 / pixel_shuffle_ratio²); 1 otherwise.
func (p *parser) patchesPerToken(vc map[string]any) int {
	if per := looseInt(rootVal(p.root, "mm_tokens_per_image"), 1e7); per > 0 {
		img, patch := looseInt(vc["image_size"], 1e6), looseInt(vc["patch_size"], 1e6)
		if img > 0 && patch > 0 && (img/patch)*(img/patch) >= per {
			return (img / patch) * (img / patch) / per
		}
	}
	for _, v := range []any{rootVal(p.root, "spatial_merge_size"), vc["spatial_merge_size"]} {
		if m := looseInt(v, 1e3); m > 0 {
			return m * m
		}
	}
	if ks, ok := vc["merge_kernel_size"].([]any); ok && len(ks) == 2 {
		if a, b := looseInt(ks[0], 1e3), looseInt(ks[1], 1e3); a > 0 && b > 0 {
			return a * b
		}
	}
	if n, ok := vc["pixel_shuffle_ratio"].(json.Number); ok {
		if r, err := n.Float64(); err == nil && r > 0 && r < 1 {
			return int(1/(r*r) + 0.5)
		}
	}
	return 1
}

// rootVal is o's value at key, nil when absent.
func rootVal(o object, key string) any {
	v, _ := o.get(key)
	return v
}

// looseInt reads an optional positive number below limit, 0 when absent,
// not a number or out of range (the vision tower's size only scales a
// memory heuristic, so a bad value is ignored rather than refused).
func looseInt(v any, limit float64) int {
	n, ok := v.(json.Number)
	if !ok {
		return 0
	}
	f, err := n.Float64()
	if err != nil || f <= 0 || f >= limit {
		return 0
	}
	return int(f)
}
