package cli

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/format/safetensors"
	"github.com/kvcfg/kvcfg/hub/hubtest"
)

const hubCommit = "89abcdef0123456789abcdef0123456789abcdef"

// fakeHub serves a full-size copy of Qwen3-8B (4 shards, headers only)
// and a gated repo, and points the environment at it with fresh caches.
func fakeHub(t *testing.T) (*hubtest.Server, hubtest.Repo) {
	t.Helper()
	cfg, err := catalog.Config("Qwen/Qwen3-8B")
	if err != nil {
		t.Fatal(err)
	}
	repo, err := hubtest.Checkpoint("acme/Qwen3-8B-copy", hubCommit, cfg, 4)
	if err != nil {
		t.Fatal(err)
	}
	gated, err := hubtest.Checkpoint("acme/gated", hubCommit, cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	gated.Gated, gated.Token = true, "hf_approved"
	return fakeHubOf(t, repo, gated), repo
}

// fakeHubOf serves repos from a fake Hub and points the environment at it,
// with fresh caches and no token.
func fakeHubOf(t *testing.T, repos ...hubtest.Repo) *hubtest.Server {
	t.Helper()
	srv := hubtest.New(t, repos...)
	t.Setenv("HF_ENDPOINT", srv.URL())
	t.Setenv("HF_HOME", t.TempDir())
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HUGGINGFACE_HUB_CACHE", "")
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HUGGING_FACE_HUB_TOKEN", "")
	t.Setenv("HF_TOKEN_PATH", "")
	t.Setenv("HF_HUB_OFFLINE", "0")
	t.Setenv("KVCFG_CACHE_DIR", t.TempDir())
	return srv
}

func TestPlanHubID(t *testing.T) {
	srv, repo := fakeHub(t)
	out, errs, code := run(t, "plan", "--model", "acme/Qwen3-8B-copy", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep["weights_estimated"] != false || int64(rep["weights_bytes"].(float64)) != repo.DataBytes() ||
		rep["weights_source"] != "hub_safetensors:acme/Qwen3-8B-copy@"+hubCommit || rep["model_revision"] != hubCommit ||
		rep["model"] != "acme/Qwen3-8B-copy" {
		t.Errorf("report: weights %v (estimated %v, source %v), revision %v, model %v; the shards hold %d bytes",
			rep["weights_bytes"], rep["weights_estimated"], rep["weights_source"], rep["model_revision"], rep["model"], repo.DataBytes())
	}
	for _, r := range srv.Requests() {
		if r.Server == "cdn" && r.Range == "" {
			t.Errorf("CDN request without a range: %+v", r)
		}
	}
	// The Hub stopped, offline: the same JSON from the caches.
	srv.Close()
	t.Setenv("HF_HUB_OFFLINE", "1")
	out2, errs, code := run(t, "plan", "--model", "acme/Qwen3-8B-copy", "-o", "json")
	if code != 0 || out2 != out {
		t.Errorf("offline: exit %d (%s), same JSON %v", code, errs, out2 == out)
	}
	// Offline and not cached: exit 2, saying what to do.
	_, errs, code = run(t, "plan", "--model", "acme/other", "--revision", "dev")
	if code != 2 || !strings.Contains(errs, "HF_HUB_OFFLINE") {
		t.Errorf("offline, uncached: exit %d: %s", code, errs)
	}
}

func TestHubIDEverywhere(t *testing.T) {
	_, _ = fakeHub(t)
	for _, args := range [][]string{
		{"inspect", "acme/Qwen3-8B-copy", "-o", "json"},
		{"plan", "acme/Qwen3-8B-copy", "--revision", hubCommit, "--engine", "vllm"},
		{"plan", "--model", "acme/Qwen3-8B-copy", "--tp-size", "1,2", "-o", "csv"},
		{"plan", "--model", "acme/Qwen3-8B-copy", "--revision", "main," + hubCommit, "-o", "csv"},
		{"compare", "--model", "acme/Qwen3-8B-copy"},
		{"plan", "--model", "acme/Qwen3-8B-copy", "--engine", "trtllm"},
		{"fit", "--model", "acme/Qwen3-8B-copy", "-n", "4", "--context-length", "8192", "--gpus", "H100"},
	} {
		out, errs, code := run(t, args...)
		named := args[0] == "fit" || strings.Contains(strings.Join(args, " "), "csv") || strings.Contains(out, "acme/Qwen3-8B-copy")
		if code != 0 || !named {
			t.Errorf("%v: exit %d\n%s\n%s", args, code, out, errs)
		}
		if args[0] == "inspect" && (!strings.Contains(out, `"model_revision": "`+hubCommit) || !strings.Contains(out, `"by_dtype"`)) {
			t.Errorf("inspect: %s", out)
		}
	}
}

func TestHubFailures(t *testing.T) {
	_, _ = fakeHub(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "--model", "acme/gated"}, "HF_TOKEN"},
		{[]string{"inspect", "acme/gated"}, "accept the license"},
		{[]string{"plan", "--model", "acme/Qwen3-8B-copy", "--revision", "nope"}, `revision "nope"`},
		{[]string{"plan", "--model", "acme/Qwen3-8b"}, "no such model"},
	} {
		_, errs, code := run(t, tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q (want %q)", tc.args, code, errs, tc.want)
		}
	}
	t.Setenv("HF_TOKEN", "hf_approved")
	if _, errs, code := run(t, "plan", "--model", "acme/gated"); code != 0 {
		t.Errorf("gated with an approved token: exit %d: %s", code, errs)
	}
}

// A ModelOpt checkpoint's hf_quant_config.json decides `auto`: FP8 KV.
func TestHubQuantConfigAutoKV(t *testing.T) {
	cfg, err := catalog.Config("Qwen/Qwen3-8B")
	if err != nil {
		t.Fatal(err)
	}
	repo, err := hubtest.Checkpoint("nvidia/Qwen3-8B-FP8", hubCommit, cfg, 2)
	if err != nil {
		t.Fatal(err)
	}
	repo.Files["hf_quant_config.json"] = []byte(`{"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}}`)
	fakeHubOf(t, repo)
	out, errs, code := run(t, "plan", "--model", "nvidia/Qwen3-8B-FP8", "-o", "json")
	if code != 0 || !strings.Contains(out, `"resolved_kv_cache_dtype": "fp8_e4m3"`) {
		t.Errorf("exit %d: %s\n%s", code, errs, out)
	}
}

// A checkpoint with an MTP layer: speculative EAGLE loads it as the draft,
// so the weights grow by exactly its tensors.
func TestHubMTPDraftWeights(t *testing.T) {
	cfg, err := catalog.Config("Qwen/Qwen3-8B")
	if err != nil {
		t.Fatal(err)
	}
	cfg = []byte(strings.Replace(string(cfg), "{", `{"num_nextn_predict_layers": 1,`, 1))
	repo, err := hubtest.Checkpoint("acme/mtp", hubCommit, cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	mtp := []hubtest.Tensor{
		{Name: "model.layers.36.mlp.down_proj.weight", DType: "BF16", Shape: []int64{4096, 12288}},
		{Name: "model.layers.36.input_layernorm.weight", DType: "BF16", Shape: []int64{4096}},
	}
	base := repo.Shards["model.safetensors"]
	repo.Shards["model.safetensors"] = hubtest.Shard(append(headerTensors(t, base), mtp...), 0)
	fakeHubOf(t, repo)
	weightsOf := func(args ...string) int64 {
		t.Helper()
		out, errs, code := run(t, append([]string{"plan", "--model", "acme/mtp", "-o", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var rep struct {
			W int64 `json:"weights_bytes"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		return rep.W
	}
	plain, draft := weightsOf(), weightsOf("--speculative-algorithm", "EAGLE")
	if want := int64(4096*12288*2 + 4096*2); draft-plain != want {
		t.Errorf("weights %d without the draft, %d with: the MTP layer is %d bytes", plain, draft, want)
	}
}

// headerTensors reads a synthetic shard's tensors back, in offset order.
func headerTensors(t *testing.T, f hubtest.File) []hubtest.Tensor {
	t.Helper()
	h, err := safetensors.ReadHeader(bytes.NewReader(f.Head))
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(h.Tensors, func(i, j int) bool { return h.Tensors[i].Begin < h.Tensors[j].Begin })
	var out []hubtest.Tensor
	for _, ti := range h.Tensors {
		out = append(out, hubtest.Tensor{Name: ti.Name, DType: ti.DType, Shape: ti.Shape})
	}
	return out
}

// An id the caches do not hold, offline, is bad input (exit 2) that names
// the id.
func TestHubUnknownOffline(t *testing.T) {
	_, errOut, code := run(t, "plan", "--model", "no/such-model")
	if code != 2 || !strings.Contains(errOut, "no/such-model") {
		t.Errorf("exit %d %q", code, errOut)
	}
}
