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
	if got, want := weights.FromHeaders([]safetensors.Header{h}, s, weights.Layout{TP: 1}), int64(32000+4000+1200+40+4000); got != want {
		t.Errorf("TP 1: %d, want %d", got, want)
	}
	// PP 2: stage 0 holds the vision tower, the embedding and layer 0.
	if got, want := weights.FromHeaders([]safetensors.Header{h}, s, weights.Layout{TP: 1, PP: 2}), int64(32000+4000+600); got != want {
		t.Errorf("PP 2: %d, want %d", got, want)
	}
	// Drafting with the MTP layer (speculative EAGLE/NEXTN) loads it, on
	// the last stage.
	if got, want := weights.FromHeaders([]safetensors.Header{h}, s, weights.Layout{TP: 1, Draft: true}), int64(32000+4000+1800+40+4000); got != want {
		t.Errorf("TP 1 with the draft: %d, want %d", got, want)
	}
	// With PP 2 the draft joins the last stage (5,240 B), and the first
	// (vision, embedding, layer 0) stays the most loaded.
	if got, want := weights.FromHeaders([]safetensors.Header{h}, s, weights.Layout{TP: 1, PP: 2, Draft: true}), int64(32000+4000+600); got != want {
		t.Errorf("PP 2 with the draft: %d, want %d", got, want)
	}
	tot := weights.Sum([]safetensors.Header{h}, s)
	want := map[string]int64{"vision": 32000, "embedding": 4000, "mlp": 1200, "mtp": 600, "norm_bias": 40, "lm_head": 4000}
	if !reflect.DeepEqual(tot.ByKind, want) || tot.ByDType["F8_E4M3"] != 1800 || tot.Bytes != 41840 || tot.Tensors != 38 {
		t.Errorf("sum %+v", tot)
	}
}
