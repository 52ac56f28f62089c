package weights_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/format/safetensors"
	"github.com/kvcfg/kvcfg/model"
	"github.com/kvcfg/kvcfg/weights"
)

func tensor(name, dt string, elemBytes int, shape ...int64) safetensors.TensorData {
	n := int64(elemBytes)
	for _, d := range shape {
		n *= d
	}
	return safetensors.TensorData{Name: name, DType: dt, Shape: shape, Data: make([]byte, n)}
}

func writeCheckpoint(t *testing.T, dir string, files map[string][]safetensors.TensorData) {
	t.Helper()
	for name, ts := range files {
		var b bytes.Buffer
		if err := safetensors.Write(&b, ts, nil); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFromDir(t *testing.T) {
	dir := t.TempDir()
	// A 2-layer toy model: vocab 64, hidden 16, 4 q heads, 2 KV heads of dim 4,
	// plus one MTP layer (index 2) that the target model does not load.
	var layer []safetensors.TensorData
	for i := range 3 {
		p := fmt.Sprintf("model.layers.%d.", i)
		layer = append(layer,
			tensor(p+"self_attn.q_proj.weight", "BF16", 2, 16, 16),
			tensor(p+"self_attn.k_proj.weight", "BF16", 2, 8, 16),
			tensor(p+"self_attn.v_proj.weight", "BF16", 2, 8, 16),
			tensor(p+"self_attn.o_proj.weight", "BF16", 2, 16, 16),
			tensor(p+"mlp.down_proj.weight", "F8_E4M3", 1, 16, 32),
			tensor(p+"input_layernorm.weight", "BF16", 2, 16),
		)
	}
	writeCheckpoint(t, dir, map[string][]safetensors.TensorData{
		"model-00001-of-00002.safetensors": append([]safetensors.TensorData{tensor("model.embed_tokens.weight", "BF16", 2, 64, 16)}, layer[:6]...),
		"model-00002-of-00002.safetensors": append([]safetensors.TensorData{tensor("lm_head.weight", "BF16", 2, 64, 16), tensor("model.norm.weight", "BF16", 2, 16)}, layer[6:]...),
	})
	s := &model.Spec{Name: "toy", NumLayers: 2, NumKVHeads: 2, ModelDType: dtype.BFloat16}
	const (
		embed   = 64 * 16 * 2
		q, o    = 16 * 16 * 2, 16 * 16 * 2
		kv      = 8 * 16 * 2
		down    = 16 * 32
		norm    = 16 * 2
		perLyr  = q + 2*kv + o + down + norm
		allTP1  = 2*embed + 2*perLyr + norm
		tp2     = (2*embed+2*(q+2*kv+o+down))/2 + 3*norm
		tp4KVs  = (2*embed+2*(q+o+down))/4 + 2*(2*kv)/2 + 3*norm // 2 KV heads over TP 4: one head per rank
		pp2Last = (perLyr + embed + norm)                        // layer 1 + lm_head + final norm
	)
	tests := []struct {
		l    weights.Layout
		want int64
	}{
		{weights.Layout{TP: 1, PP: 1}, allTP1},
		{weights.Layout{TP: 2, PP: 1}, tp2},
		{weights.Layout{TP: 4, PP: 1}, tp4KVs},
		{weights.Layout{TP: 1, PP: 2}, pp2Last},
	}
	for _, tt := range tests {
		got, ok, err := weights.FromDir(dir, s, tt.l)
		if err != nil || !ok || got != tt.want {
			t.Errorf("%+v: %d ok=%v err=%v; want %d", tt.l, got, ok, err, tt.want)
		}
	}
	if _, ok, err := weights.FromDir(t.TempDir(), s, weights.Layout{}); ok || err != nil {
		t.Errorf("empty dir: ok=%v err=%v", ok, err)
	}
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "x.safetensors"), []byte("garbage!"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := weights.FromDir(bad, s, weights.Layout{}); err == nil {
		t.Error("corrupt file accepted")
	}
}

func hdr(ts ...safetensors.TensorInfo) safetensors.Header {
	var off int64
	for i := range ts {
		n := ts[i].End
		ts[i].Begin, ts[i].End = off, off+n
		off += n
	}
	return safetensors.Header{Tensors: ts}
}

func ti(name, dt string, bytes int64, shape ...int64) safetensors.TensorInfo {
	return safetensors.TensorInfo{Name: name, DType: dt, Shape: shape, End: bytes}
}

// A vision tower's blocks are not decoder layers: with 32 vision blocks and
// 2 text layers, every block is counted, on the first stage; the MTP layer
// (index 2) is not.
func TestFromHeadersVisionAndMTP(t *testing.T) {
	s := &model.Spec{Name: "vl", NumLayers: 2, NumKVHeads: 2, ModelDType: dtype.BFloat16}
	var vision []safetensors.TensorInfo
	for i := range 32 {
		vision = append(vision, ti(fmt.Sprintf("visual.blocks.%d.attn.qkv.weight", i), "BF16", 1000, 10, 50))
	}
	h := hdr(append(vision,
		ti("model.embed_tokens.weight", "BF16", 4000, 100, 20),
		ti("model.layers.0.mlp.down_proj.weight", "F8_E4M3", 600, 20, 30),
		ti("model.layers.1.mlp.down_proj.weight", "F8_E4M3", 600, 20, 30),
		ti("model.layers.2.mlp.down_proj.weight", "F8_E4M3", 600, 20, 30),
		ti("model.norm.weight", "BF16", 40, 20),
		ti("lm_head.weight", "BF16", 4000, 100, 20),
	)...)
	// The vocabulary of 100 is padded to 128 rows (5,120 B) in the
	// embedding and the LM head, as VocabParallelEmbedding allocates it.
	if got, want := weights.FromHeaders([]safetensors.Header{h}, s, weights.Layout{TP: 1}), int64(32000+5120+1200+40+5120); got != want {
		t.Errorf("TP 1: %d, want %d", got, want)
	}
	// PP 2: stage 0 holds the vision tower, the embedding and layer 0.
	if got, want := weights.FromHeaders([]safetensors.Header{h}, s, weights.Layout{TP: 1, PP: 2}), int64(32000+5120+600); got != want {
		t.Errorf("PP 2: %d, want %d", got, want)
	}
	// Drafting with the MTP layer (speculative EAGLE/NEXTN) loads it, on
	// the last stage.
	if got, want := weights.FromHeaders([]safetensors.Header{h}, s, weights.Layout{TP: 1, Draft: true}), int64(32000+5120+1800+40+5120); got != want {
		t.Errorf("TP 1 with the draft: %d, want %d", got, want)
	}
	// With PP 2 the draft joins the last stage (5,240 B), and the first
	// (vision, embedding, layer 0) stays the most loaded.
	if got, want := weights.FromHeaders([]safetensors.Header{h}, s, weights.Layout{TP: 1, PP: 2, Draft: true}), int64(32000+5120+600); got != want {
		t.Errorf("PP 2 with the draft: %d, want %d", got, want)
	}
	tot := weights.Sum([]safetensors.Header{h}, s)
	want := map[string]int64{"vision": 32000, "embedding": 4000, "mlp": 1200, "mtp": 600, "norm_bias": 40, "lm_head": 4000}
	if !reflect.DeepEqual(tot.ByKind, want) || tot.ByDType["F8_E4M3"] != 1800 || tot.Bytes != 41840 || tot.Tensors != 38 {
		t.Errorf("sum %+v", tot)
	}
}

// toyHeaders is a two-layer bf16 checkpoint (vocab 128, hidden 16) with an
// MoE router and experts in layer 1; head says whether it ships an LM head
// (false: tied embeddings).
func toyHeaders(dt string, el int64, head bool) []safetensors.Header {
	ts := []safetensors.TensorInfo{ti("model.embed_tokens.weight", dt, 128*16*el, 128, 16)}
	for i := range 2 {
		p := fmt.Sprintf("model.layers.%d.", i)
		ts = append(ts,
			ti(p+"self_attn.qkv_proj.weight", dt, 32*16*el, 32, 16),
			ti(p+"self_attn.o_proj.weight", dt, 16*16*el, 16, 16),
			ti(p+"mlp.gate.weight", dt, 4*16*el, 4, 16),
			ti(p+"mlp.experts.0.down_proj.weight", dt, 16*32*el, 16, 32),
			ti(p+"input_layernorm.weight", dt, 16*el, 16),
		)
	}
	ts = append(ts, ti("model.norm.weight", dt, 16*el, 16))
	if head {
		ts = append(ts, ti("lm_head.weight", dt, 128*16*el, 128, 16))
	}
	return []safetensors.Header{hdr(ts...)}
}

// The load dtype (--dtype, or auto's float16 for a float32 checkpoint)
// converts every floating-point tensor; runtime --quantization fp8 holds
// the linear layers' weights at one byte and leaves the embedding, the LM
// head, the norms and the router at the load dtype.
func TestFromHeadersLoadDType(t *testing.T) {
	s := &model.Spec{Name: "toy", NumLayers: 2, NumKVHeads: 2, ModelDType: dtype.BFloat16}
	const (
		embed  = 128 * 16 // elements
		linear = 2 * (32*16 + 16*16 + 16*32)
		router = 2 * 4 * 16
		norms  = 3 * 16
		all    = 2*embed + linear + router + norms
	)
	bf16, f32 := toyHeaders("BF16", 2, true), toyHeaders("F32", 4, true)
	for _, tt := range []struct {
		name string
		h    []safetensors.Header
		l    weights.Layout
		want int64
	}{
		{"bf16 as stored", bf16, weights.Layout{}, 2 * all},
		{"bf16 --dtype bfloat16", bf16, weights.Layout{DType: dtype.BFloat16}, 2 * all},
		{"bf16 --dtype float32", bf16, weights.Layout{DType: dtype.Float32}, 4 * all},
		{"f32 checkpoint, auto = float16", f32, weights.Layout{DType: dtype.Float16}, 2 * all},
		{"bf16 --quantization fp8", bf16, weights.Layout{RuntimeFP8: true}, 2*(2*embed+router+norms) + linear},
		{"f32 --dtype float32 --quantization fp8", f32, weights.Layout{DType: dtype.Float32, RuntimeFP8: true}, 4*(2*embed+router+norms) + linear},
		{"bf16 fp8 TP 2: the router whole on each rank", bf16, weights.Layout{TP: 2, RuntimeFP8: true}, (2*2*embed+linear)/2 + 2*router + 2*norms},
	} {
		if got := weights.FromHeaders(tt.h, s, tt.l); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
	// An fp8 tensor is held as stored whatever the load dtype.
	h := []safetensors.Header{hdr(ti("model.layers.0.mlp.down_proj.weight", "F8_E4M3", 512, 16, 32))}
	if got := weights.FromHeaders(h, s, weights.Layout{DType: dtype.Float32, RuntimeFP8: true}); got != 512 {
		t.Errorf("fp8 tensor: %d, want 512", got)
	}
}

// Tied embeddings with pipeline parallelism: the last stage builds its LM
// head from a copy of the embedding. An untied checkpoint's last stage
// holds its own LM head.
func TestFromHeadersTiedEmbeddingPP(t *testing.T) {
	s := &model.Spec{Name: "toy", NumLayers: 2, NumKVHeads: 2, ModelDType: dtype.BFloat16}
	const (
		embed = 128 * 16 * 2
		layer = 2 * (32*16 + 16*16 + 4*16 + 16*32 + 16)
		norm  = 16 * 2
	)
	if got, want := weights.FromHeaders(toyHeaders("BF16", 2, false), s, weights.Layout{PP: 2}), int64(layer+norm+embed); got != want {
		t.Errorf("tied, PP 2: %d, want %d (the last stage's copy of the embedding)", got, want)
	}
	if got, want := weights.FromHeaders(toyHeaders("BF16", 2, false), s, weights.Layout{}), int64(embed+2*layer+norm); got != want {
		t.Errorf("tied, PP 1: %d, want %d (one embedding)", got, want)
	}
	if got, want := weights.FromHeaders(toyHeaders("BF16", 2, true), s, weights.Layout{PP: 2}), int64(layer+norm+embed); got != want {
		t.Errorf("untied, PP 2: %d, want %d", got, want)
	}
}

// The vocabulary is padded to a multiple of 64 and split evenly: 32,001
// rows are 32,064, 16,032 a rank at TP 2 (vLLM's pad_vocab_size).
func TestFromHeadersVocabPadding(t *testing.T) {
	s := &model.Spec{Name: "toy", NumLayers: 1, ModelDType: dtype.BFloat16}
	h := []safetensors.Header{hdr(ti("model.embed_tokens.weight", "BF16", 32001*8*2, 32001, 8), ti("lm_head.weight", "BF16", 32001*8*2, 32001, 8))}
	if got, want := weights.FromHeaders(h, s, weights.Layout{TP: 2}), int64(2*16032*8*2); got != want {
		t.Errorf("TP 2: %d, want %d", got, want)
	}
}

// The config estimate follows the load dtype and runtime fp8 too:
// quantizable parameters at one byte, the rest at the dtype.
func TestPerRankLoadDType(t *testing.T) {
	s := &model.Spec{Name: "toy", NumLayers: 2, ModelDType: dtype.BFloat16, Params: model.Params{Total: 1000, Embedding: 200, Quantizable: 700}}
	for _, tt := range []struct {
		l    weights.Layout
		want int64
	}{
		{weights.Layout{}, 2000},
		{weights.Layout{DType: dtype.Float32}, 4000},
		{weights.Layout{RuntimeFP8: true}, 700 + 2*300},
		{weights.Layout{DType: dtype.Float32, RuntimeFP8: true, TP: 2}, (700 + 4*300) / 2},
	} {
		if got, err := weights.PerRank(s, tt.l); err != nil || got != tt.want {
			t.Errorf("%+v: %d, %v; want %d", tt.l, got, err, tt.want)
		}
	}
	// A checkpoint already quantized keeps its own bits.
	q := *s
	q.Quant = &model.QuantSpec{Method: "awq", WeightBits: 4}
	a, _ := weights.PerRank(&q, weights.Layout{})
	b, _ := weights.PerRank(&q, weights.Layout{RuntimeFP8: true})
	if a != b {
		t.Errorf("awq checkpoint: %d with runtime fp8, %d without", b, a)
	}
}
