package plan_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/format/safetensors"
	"github.com/kvcfg/kvcfg/plan"
)

// A model directory with safetensors: weights come from the headers, not
// the estimate.
func TestModelDirectoryWeights(t *testing.T) {
	dir := t.TempDir()
	cfg, err := catalog.Config(catalog.Default)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	ts := []safetensors.TensorData{{Name: "model.embed_tokens.weight", DType: "BF16", Shape: []int64{1024, 512}, Data: make([]byte, 1024*512*2)}}
	if err := safetensors.Write(&b, ts, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := plan.Run(context.Background(), plan.Request{Model: dir, TPSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r.WeightsSource != "safetensors" || r.WeightsEstimated || r.WeightsBytes != 1024*512*2/2 {
		t.Errorf("weights %d from %s (estimated %v)", r.WeightsBytes, r.WeightsSource, r.WeightsEstimated)
	}
	// Without safetensors the estimate is used and flagged.
	if err := os.Remove(filepath.Join(dir, "model.safetensors")); err != nil {
		t.Fatal(err)
	}
	r, err = plan.Run(context.Background(), plan.Request{Model: dir})
	if err != nil || !r.WeightsEstimated {
		t.Errorf("estimate: %v %+v", err, r)
	}
}
