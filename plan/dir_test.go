package plan_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/format/safetensors"
	"github.com/kvcfg/kvcfg/plan"
)

// A model directory with safetensors: weights come from the headers, not
// the estimate.
func TestModelDirectoryWeights(t *testing.T) {
	dir := modelDir(t, "model.safetensors", 512)
	r, err := plan.Run(context.Background(), plan.Request{Model: dir, TPSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r.WeightsSource != "safetensors" || r.WeightsEstimated || r.WeightsBytes != 1024*512*2/2 {
		t.Errorf("weights %d from %s (estimated %v)", r.WeightsBytes, r.WeightsSource, r.WeightsEstimated)
	}
	// Read once per process: the removed file is not noticed until the
	// reference is forgotten; then the estimate is used and flagged.
	if err := os.Remove(filepath.Join(dir, "model.safetensors")); err != nil {
		t.Fatal(err)
	}
	if r, err = plan.Run(context.Background(), plan.Request{Model: dir, TPSize: 2}); err != nil || r.WeightsSource != "safetensors" {
		t.Errorf("second plan of the same directory re-read it: %v %s", err, r.WeightsSource)
	}
	catalog.Forget(dir)
	r, err = plan.Run(context.Background(), plan.Request{Model: dir})
	if err != nil || !r.WeightsEstimated {
		t.Errorf("estimate: %v %+v", err, r)
	}
}

// A partial download (the index lists four shards, one is there) is never
// sized from the shard it has: every engine estimates from the config and
// says which shards are missing.
func TestPartialCheckpoint(t *testing.T) {
	dir := modelDir(t, "model-00001-of-00004.safetensors", 1024)
	index := `{"metadata": {"total_size": 16060522496}, "weight_map": {
	  "model.embed_tokens.weight": "model-00001-of-00004.safetensors",
	  "model.layers.0.mlp.down_proj.weight": "model-00002-of-00004.safetensors",
	  "model.layers.20.mlp.down_proj.weight": "model-00003-of-00004.safetensors",
	  "lm_head.weight": "model-00004-of-00004.safetensors"}}`
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), []byte(index), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, eng := range plan.Engines() {
		r, err := plan.Run(context.Background(), plan.Request{Model: dir, Engine: eng})
		if err != nil {
			t.Fatalf("%s: %v", eng, err)
		}
		if !r.WeightsEstimated || r.WeightsBytes < 10<<30 {
			t.Errorf("%s: weights %d from %s (estimated %v), want the config estimate", eng, r.WeightsBytes, r.WeightsSource, r.WeightsEstimated)
		}
		found := false
		for _, w := range r.Warnings {
			if strings.Contains(w, "partial download: 3 of the 4 shards") && strings.Contains(w, "model-00002-of-00004.safetensors") {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no partial-download warning in %q", eng, r.Warnings)
		}
	}
}

// modelDir writes a model directory: the catalog default's config.json and
// one safetensors shard named shard holding a bf16 1024×cols embedding.
func modelDir(t *testing.T, shard string, cols int64) string {
	t.Helper()
	dir := t.TempDir()
	cfg, err := catalog.Config(catalog.Default)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	ts := []safetensors.TensorData{{Name: "model.embed_tokens.weight", DType: "BF16", Shape: []int64{1024, cols}, Data: make([]byte, 1024*cols*2)}}
	if err := safetensors.Write(&b, ts, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, shard), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
