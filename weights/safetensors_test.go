package weights_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
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
