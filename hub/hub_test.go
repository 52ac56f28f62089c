package hub_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/format/safetensors"
	"github.com/kvcfg/kvcfg/hub"
	"github.com/kvcfg/kvcfg/hub/hubtest"
	"github.com/kvcfg/kvcfg/weights"
)

const commit = "0123456789abcdef0123456789abcdef01234567"

func qwenRepo(t *testing.T, id string, shards int) hubtest.Repo {
	t.Helper()
	cfg, err := os.ReadFile("testdata/qwen3-8b.json")
	if err != nil {
		t.Fatal(err)
	}
	r, err := hubtest.Checkpoint(id, commit, cfg, shards)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// sleeper is a fake clock: it records the waits and returns at once.
type sleeper struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleeper) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	return ctx.Err()
}

func client(t *testing.T, endpoint string, mod ...func(*hub.Options)) (*hub.Client, *sleeper, hub.Options) {
	t.Helper()
	sl := &sleeper{}
	o := hub.Options{Endpoint: endpoint, CacheDir: filepath.Join(t.TempDir(), "hf", "hub"),
		HeaderCacheDir: filepath.Join(t.TempDir(), "kvcfg", "hub"), Sleep: sl.sleep}
	for _, m := range mod {
		m(&o)
	}
	return hub.New(o), sl, o
}

func TestResolveReadsOnlyHeaders(t *testing.T) {
	repo := qwenRepo(t, "acme/Qwen3-8B-copy", 4)
	srv := hubtest.New(t, repo)
	c, _, o := client(t, srv.URL(), func(o *hub.Options) { o.Token = "hf_secret" })
	m, err := c.Resolve(context.Background(), "acme/Qwen3-8B-copy", "")
	if err != nil {
		t.Fatal(err)
	}
	if m.Source != catalog.SourceHub || m.Revision != commit || m.Name != "acme/Qwen3-8B-copy" || len(m.Headers) != 4 {
		t.Fatalf("model: source %q revision %q name %q shards %d", m.Source, m.Revision, m.Name, len(m.Headers))
	}
	tot := weights.Sum(m.Headers, m.Spec)
	if tot.Bytes != repo.DataBytes() || tot.ByDType["BF16"] != tot.Bytes {
		t.Errorf("tensor bytes %d (by dtype %v), the shards hold %d", tot.Bytes, tot.ByDType, repo.DataBytes())
	}
	// Qwen3-8B in BF16: the total_size of its published index.
	if got := weights.FromHeaders(m.Headers, m.Spec, weights.Layout{TP: 1}); got != repo.DataBytes() || got != 16_381_470_720 {
		t.Errorf("weights per rank at TP 1 = %d, want %d", got, repo.DataBytes())
	}
	// Two ranges per shard, exactly the 8-byte length and the header.
	for name, f := range repo.Shards {
		got := srv.RangesFor(f.SHA256)
		want := []string{"bytes=0-7", "bytes=8-" + itoa(len(f.Head)-1)}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: CDN ranges %v, want %v", name, got, want)
		}
	}
	resolverHits := 0
	for _, r := range srv.Requests() {
		if r.Server == "hub" && strings.Contains(r.Path, "/resolve/") && strings.HasSuffix(r.Path, ".safetensors") {
			resolverHits++
		}
	}
	if resolverHits != 2*len(repo.Shards) {
		t.Errorf("%d resolver requests for %d shards, want 2 each", resolverHits, len(repo.Shards))
	}
	for _, r := range srv.Requests() {
		if r.Server == "hub" && strings.Contains(r.Path, "/resolve/") && r.Auth != "Bearer hf_secret" {
			t.Errorf("hub request %s without the token", r.Path)
		}
		if r.Server == "hub" && strings.Contains(r.Path, "/resolve/") && strings.Contains(r.Path, ".safetensors") && !strings.Contains(r.Path, "/resolve/"+commit+"/") {
			t.Errorf("shard read at %s, not at the pinned commit", r.Path)
		}
	}
	// The HF cache holds config.json as huggingface_hub lays it out, and no
	// safetensors file at all.
	repoDir := filepath.Join(o.CacheDir, "models--acme--Qwen3-8B-copy")
	if b, err := os.ReadFile(filepath.Join(repoDir, "refs", "main")); err != nil || string(b) != commit {
		t.Errorf("refs/main = %q, %v", b, err)
	}
	snapCfg := filepath.Join(repoDir, "snapshots", commit, "config.json")
	if l, err := os.Readlink(snapCfg); err != nil || !strings.HasPrefix(l, "../../blobs/") {
		t.Errorf("snapshot config.json link %q, %v", l, err)
	}
	if b, err := os.ReadFile(snapCfg); err != nil || string(b) != string(repo.Files["config.json"]) {
		t.Errorf("snapshot config.json differs: %v", err)
	}
	if _, err := os.Stat(filepath.Join(repoDir, ".no_exist", commit, "hf_quant_config.json")); err != nil {
		t.Errorf("no .no_exist marker for hf_quant_config.json: %v", err)
	}
	filepath.Walk(o.CacheDir, func(p string, _ os.FileInfo, _ error) error {
		if strings.HasSuffix(p, ".safetensors") {
			t.Errorf("safetensors file in the HF cache: %s", p)
		}
		return nil
	})
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestOfflineGivesTheSameModel(t *testing.T) {
	repo := qwenRepo(t, "acme/Qwen3-8B-copy", 3)
	srv := hubtest.New(t, repo)
	_, _, o := client(t, srv.URL())
	online, err := hub.New(o).Resolve(context.Background(), "acme/Qwen3-8B-copy", "main")
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	for _, offline := range []bool{true, false} {
		oo := o
		oo.Offline = offline
		m, err := hub.New(oo).Resolve(context.Background(), "acme/Qwen3-8B-copy", "")
		if err != nil {
			t.Fatalf("offline=%v with the Hub stopped: %v", offline, err)
		}
		if m.Source != online.Source || m.Revision != online.Revision || string(m.Config) != string(online.Config) ||
			!reflect.DeepEqual(m.Spec, online.Spec) {
			t.Errorf("offline=%v: model differs from the online one", offline)
		}
		for _, tp := range []int{1, 2, 8} {
			l := weights.Layout{TP: tp, PP: 2}
			if a, b := weights.FromHeaders(m.Headers, m.Spec, l), weights.FromHeaders(online.Headers, online.Spec, l); a != b {
				t.Errorf("offline=%v TP %d: weights %d, online %d", offline, tp, a, b)
			}
		}
	}
	// By commit too, and an unknown branch offline fails (never "the newest
	// snapshot").
	oo := o
	oo.Offline = true
	if _, err := hub.New(oo).Resolve(context.Background(), "acme/Qwen3-8B-copy", commit); err != nil {
		t.Errorf("offline by commit: %v", err)
	}
	_, err = hub.New(oo).Resolve(context.Background(), "acme/Qwen3-8B-copy", "dev")
	if !errors.Is(err, hub.ErrOffline) || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") {
		t.Errorf("offline, unknown branch: %v", err)
	}
}

func TestOfflineConfigOnlySnapshot(t *testing.T) {
	// A snapshot that transformers filled with config.json only plans from
	// the config offline, as without the Hub.
	_, _, o := client(t, "http://127.0.0.1:1")
	cfg, _ := os.ReadFile("testdata/qwen3-8b.json")
	repoDir := filepath.Join(o.CacheDir, "models--acme--only-config")
	os.MkdirAll(filepath.Join(repoDir, "snapshots", commit), 0o755)
	os.MkdirAll(filepath.Join(repoDir, "refs"), 0o755)
	os.WriteFile(filepath.Join(repoDir, "snapshots", commit, "config.json"), cfg, 0o644)
	os.WriteFile(filepath.Join(repoDir, "refs", "main"), []byte(commit+"\n"), 0o644)
	o.Offline = true
	m, err := hub.New(o).Resolve(context.Background(), "acme/only-config", "")
	if err != nil {
		t.Fatal(err)
	}
	if m.Source != catalog.SourceHFCache || m.Headers != nil || m.Dir != "" || m.Revision != commit || m.Name != "acme/only-config" {
		t.Errorf("model %+v", m)
	}
}

func TestGated(t *testing.T) {
	repo := qwenRepo(t, "meta/gated", 1)
	repo.Gated, repo.Token = true, "hf_ok"
	srv := hubtest.New(t, repo)
	for _, tc := range []struct {
		token string
		ok    bool
	}{{"", false}, {"hf_other", false}, {"hf_ok", true}} {
		c, _, _ := client(t, srv.URL(), func(o *hub.Options) { o.Token = tc.token })
		m, err := c.Resolve(context.Background(), "meta/gated", "")
		if tc.ok {
			if err != nil || len(m.Headers) != 1 {
				t.Errorf("token %q: %v", tc.token, err)
			}
			continue
		}
		if !errors.Is(err, hub.ErrGated) || !strings.Contains(err.Error(), "HF_TOKEN") || !strings.Contains(err.Error(), "accept the license") {
			t.Errorf("token %q: %v", tc.token, err)
		}
	}
}

func TestNotFound(t *testing.T) {
	repo := qwenRepo(t, "acme/model", 1)
	repo.Revisions = []string{"refs/pr/1"}
	srv := hubtest.New(t, repo)
	c, _, o := client(t, srv.URL())
	_, err := c.Resolve(context.Background(), "acme/missing", "")
	if !errors.Is(err, catalog.ErrUnknownModel) || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Errorf("missing repo: %v", err)
	}
	_, err = c.Resolve(context.Background(), "acme/model", "nope")
	if !errors.Is(err, hub.ErrNotFound) || !strings.Contains(err.Error(), `revision "nope"`) {
		t.Errorf("missing revision: %v", err)
	}
	// A revision with a slash travels as one escaped segment and lands in
	// refs/refs/pr/1.
	srv.Reset()
	if _, err := c.Resolve(context.Background(), "acme/model", "refs/pr/1"); err != nil {
		t.Fatal(err)
	}
	if p := srv.Requests()[0].Path; p != "/acme/model/resolve/refs%2Fpr%2F1/config.json" {
		t.Errorf("first request %s", p)
	}
	if b, err := os.ReadFile(filepath.Join(o.CacheDir, "models--acme--model", "refs", "refs", "pr", "1")); err != nil || string(b) != commit {
		t.Errorf("refs/refs/pr/1 = %q, %v", b, err)
	}
	// Not a transformers model: no config.json.
	delete(repo.Files, "config.json")
	srv2 := hubtest.New(t, hubtest.Repo{ID: "acme/noconfig", Commit: commit, Files: map[string][]byte{"README.md": []byte("x")}})
	c2, _, _ := client(t, srv2.URL())
	if _, err := c2.Resolve(context.Background(), "acme/noconfig", ""); !errors.Is(err, hub.ErrNotFound) || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("no config: %v", err)
	}
}

func TestBadIDs(t *testing.T) {
	c, _, _ := client(t, "http://127.0.0.1:1")
	for _, id := range []string{"https://huggingface.co/a/b", "../a/b", "a/b/c", "/etc/passwd", "a", "a/b c", "a--b/c", "a/b.git", ""} {
		if _, err := c.Resolve(context.Background(), id, ""); !errors.Is(err, hub.ErrBadID) {
			t.Errorf("%q: %v", id, err)
		}
	}
	for _, rev := range []string{"../main", "/x", "a\\b", "x\n"} {
		if _, err := c.Resolve(context.Background(), "a/b", rev); !errors.Is(err, hub.ErrBadID) {
			t.Errorf("revision %q: %v", rev, err)
		}
	}
}

func TestRetries(t *testing.T) {
	repo := qwenRepo(t, "acme/model", 1)
	for _, tc := range []struct {
		name     string
		fails    int
		status   int
		header   map[string]string
		waits    []time.Duration
		giveUp   bool
		errMatch string
	}{
		{"ratelimit header", 2, 429, map[string]string{"RateLimit": `"resolvers";r=0;t=4`, "RateLimit-Policy": `"fixed window";"resolvers";q=3000;w=300`},
			[]time.Duration{5 * time.Second, 5 * time.Second}, false, ""},
		{"retry-after", 1, 429, map[string]string{"Retry-After": "3"}, []time.Duration{3 * time.Second}, false, ""},
		{"503 twice", 2, 503, nil, []time.Duration{time.Second, 2 * time.Second}, false, ""},
		{"503 six times", 6, 503, map[string]string{"X-Error-Message": "overloaded"},
			[]time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second}, true, "gave up after 5 retries"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := hubtest.New(t, repo)
			n := 0
			var mu sync.Mutex
			srv.Hook = func(w http.ResponseWriter, r *http.Request) bool {
				mu.Lock()
				defer mu.Unlock()
				if !strings.HasSuffix(r.URL.Path, "/config.json") || n >= tc.fails {
					return false
				}
				n++
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
				return true
			}
			c, sl, _ := client(t, srv.URL())
			_, err := c.Resolve(context.Background(), "acme/model", "")
			if tc.giveUp {
				if !errors.Is(err, hub.ErrUpstream) || !strings.Contains(err.Error(), tc.errMatch) || !strings.Contains(err.Error(), "overloaded") {
					t.Errorf("error %v", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(sl.waits, tc.waits) {
				t.Errorf("waits %v, want %v", sl.waits, tc.waits)
			}
		})
	}
}

func TestNoRetryOnClientErrors(t *testing.T) {
	srv := hubtest.New(t, qwenRepo(t, "acme/model", 1))
	srv.Hook = func(w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("X-Error-Message", "Invalid credentials in Authorization header")
		w.WriteHeader(http.StatusUnauthorized)
		return true
	}
	c, sl, _ := client(t, srv.URL(), func(o *hub.Options) { o.Token = "bad" })
	_, err := c.Resolve(context.Background(), "acme/model", "")
	if !errors.Is(err, hub.ErrAuth) || !strings.Contains(err.Error(), "HF_TOKEN") || len(sl.waits) != 0 {
		t.Errorf("bad token: %v (waits %v)", err, sl.waits)
	}
}

func TestUnreachable(t *testing.T) {
	srv := hubtest.New(t)
	url := srv.URL()
	srv.Close()
	c, sl, _ := client(t, url)
	_, err := c.Resolve(context.Background(), "acme/model", "")
	if !errors.Is(err, hub.ErrUnreachable) || !strings.Contains(err.Error(), "HF_HUB_OFFLINE=1") || !strings.Contains(err.Error(), "--model DIR") {
		t.Errorf("error %v", err)
	}
	if len(sl.waits) != 5 {
		t.Errorf("%d retries, want 5", len(sl.waits))
	}
}

func TestTimeout(t *testing.T) {
	srv := hubtest.New(t, qwenRepo(t, "acme/model", 1))
	srv.Hook = func(w http.ResponseWriter, r *http.Request) bool {
		<-r.Context().Done() // never answers
		return true
	}
	c, _, _ := client(t, srv.URL(), func(o *hub.Options) { o.Timeout = 50 * time.Millisecond })
	_, err := c.Resolve(context.Background(), "acme/model", "")
	if !errors.Is(err, hub.ErrTimeout) || !strings.Contains(err.Error(), "--timeout") {
		t.Errorf("error %v", err)
	}
}

func TestShapes(t *testing.T) {
	// One model.safetensors, no index; git files served directly (200);
	// the CDN ignoring Range; a header longer than 256 KiB.
	repo := qwenRepo(t, "acme/single", 1)
	repo.Direct = true
	long := hubtest.Shard([]hubtest.Tensor{{Name: "model.embed_tokens.weight", DType: "BF16", Shape: []int64{151936, 4096}}}, 300<<10)
	repo.Shards["model.safetensors"] = long
	srv := hubtest.New(t, repo)
	srv.IgnoreRange = true
	c, _, _ := client(t, srv.URL())
	m, err := c.Resolve(context.Background(), "acme/single", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Headers) != 1 || m.Headers[0].DataOffset != int64(len(long.Head)) || weights.Sum(m.Headers, m.Spec).Bytes != 151936*4096*2 {
		t.Errorf("headers %+v", len(m.Headers))
	}
	// No safetensors at all: the model plans from its config.
	bare := hubtest.Repo{ID: "acme/bare", Commit: commit, Files: map[string][]byte{"config.json": repo.Files["config.json"]}}
	srv2 := hubtest.New(t, bare)
	c2, _, _ := client(t, srv2.URL())
	if m, err := c2.Resolve(context.Background(), "acme/bare", ""); err != nil || m.Headers != nil || m.Source != catalog.SourceHub {
		t.Errorf("bare: %v", err)
	}
}

func TestQuantConfig(t *testing.T) {
	repo := qwenRepo(t, "nvidia/fp8-model", 1)
	repo.Files["hf_quant_config.json"] = []byte(`{"producer":{"name":"modelopt"},"quantization":{"quant_algo":"FP8","kv_cache_quant_algo":"FP8"}}`)
	srv := hubtest.New(t, repo)
	c, _, _ := client(t, srv.URL())
	m, err := c.Resolve(context.Background(), "nvidia/fp8-model", "")
	if err != nil {
		t.Fatal(err)
	}
	if q := m.Spec.Quant; q == nil || q.KVCacheQuantAlgo != "FP8" {
		t.Errorf("quant %+v", q)
	}
}

func TestMalformed(t *testing.T) {
	ok := `{"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}}`
	for _, tc := range []struct {
		name   string
		file   hubtest.File
		reason string
	}{
		{"too large", func() hubtest.File {
			f := hubtest.Raw([]byte(ok), 4, 0)
			f.Head[0], f.Head[1], f.Head[2], f.Head[3] = 0, 0, 0, 0x10 // 268 MB
			return f
		}(), "exceeds"},
		{"not an object", hubtest.Raw([]byte(`["a"]`), 0, 0), "not a JSON object"},
		{"gap", hubtest.Raw([]byte(`{"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]},"b":{"dtype":"BF16","shape":[2],"data_offsets":[8,12]}}`), 12, 0), "gap"},
		{"overlap", hubtest.Raw([]byte(`{"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]},"b":{"dtype":"BF16","shape":[2],"data_offsets":[2,6]}}`), 6, 0), "overlap"},
		{"size", hubtest.Raw([]byte(ok), 9, 0), "the file has"},
		{"dtype", hubtest.Raw([]byte(`{"a":{"dtype":"Q9","shape":[2],"data_offsets":[0,4]}}`), 4, 0), "unknown dtype"},
		{"shape", hubtest.Raw([]byte(`{"a":{"dtype":"BF16","shape":[3],"data_offsets":[0,4]}}`), 4, 0), "needs"},
		{"metadata", hubtest.Raw([]byte(`{"__metadata__":{"a":1},"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}}`), 4, 0), "__metadata__"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := qwenRepo(t, "acme/bad", 1)
			repo.Shards["model.safetensors"] = tc.file
			srv := hubtest.New(t, repo)
			c, _, o := client(t, srv.URL())
			_, err := c.Resolve(context.Background(), "acme/bad", "")
			if !errors.Is(err, hub.ErrMalformed) || !strings.Contains(err.Error(), tc.reason) || !strings.Contains(err.Error(), "model.safetensors") {
				t.Errorf("error %v", err)
			}
			if _, err := os.Stat(filepath.Join(o.HeaderCacheDir, "models--acme--bad")); err == nil {
				t.Errorf("a malformed checkpoint was cached")
			}
		})
	}
}

func TestIndexMismatch(t *testing.T) {
	repo := qwenRepo(t, "acme/idx", 2)
	repo.Files["model.safetensors.index.json"] = []byte(`{"weight_map":{"model.embed_tokens.weight":"model-00001-of-00002.safetensors","ghost.weight":"model-00002-of-00002.safetensors"}}`)
	srv := hubtest.New(t, repo)
	c, _, _ := client(t, srv.URL())
	if _, err := c.Resolve(context.Background(), "acme/idx", ""); !errors.Is(err, hub.ErrMalformed) || !strings.Contains(err.Error(), "ghost.weight") {
		t.Errorf("error %v", err)
	}
	repo.Files["model.safetensors.index.json"] = []byte(`{"weight_map":{"a":"../../etc/x.safetensors"}}`)
	srv2 := hubtest.New(t, repo)
	c2, _, _ := client(t, srv2.URL())
	if _, err := c2.Resolve(context.Background(), "acme/idx", ""); !errors.Is(err, hub.ErrMalformed) {
		t.Errorf("error %v", err)
	}
}

func TestFromEnv(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HF_HOME", home)
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HUGGINGFACE_HUB_CACHE", "")
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HUGGING_FACE_HUB_TOKEN", "")
	t.Setenv("HF_TOKEN_PATH", "")
	t.Setenv("HF_ENDPOINT", "https://mirror.example/")
	t.Setenv("HF_HUB_OFFLINE", "yes")
	t.Setenv("KVCFG_CACHE_DIR", filepath.Join(home, "kv"))
	os.WriteFile(filepath.Join(home, "token"), []byte("hf_file\n"), 0o600)
	o := hub.FromEnv()
	if o.Endpoint != "https://mirror.example" || o.Token != "hf_file" || o.CacheDir != filepath.Join(home, "hub") || !o.Offline ||
		o.HeaderCacheDir != filepath.Join(home, "kv", "hub") {
		t.Errorf("options %+v", o)
	}
	t.Setenv("HF_TOKEN", " hf_env ")
	t.Setenv("HF_HUB_OFFLINE", "0")
	t.Setenv("HUGGINGFACE_HUB_CACHE", filepath.Join(home, "legacy"))
	o = hub.FromEnv()
	if o.Token != "hf_env" || o.Offline || o.CacheDir != filepath.Join(home, "legacy") {
		t.Errorf("options %+v", o)
	}
}

func TestProgress(t *testing.T) {
	for _, shards := range []int{1, 4} {
		srv := hubtest.New(t, qwenRepo(t, "acme/p", shards))
		var buf strings.Builder
		c, _, _ := client(t, srv.URL(), func(o *hub.Options) { o.Progress = &buf })
		if _, err := c.Resolve(context.Background(), "acme/p", ""); err != nil {
			t.Fatal(err)
		}
		got := buf.String()
		if shards == 1 && got != "" || shards > 1 && !strings.HasSuffix(got, "reading safetensors headers of acme/p: 4/4 shards\n") {
			t.Errorf("%d shards: progress %q", shards, got)
		}
	}
}

func TestOtherShardNames(t *testing.T) {
	// No index, no model.safetensors: the paginated file listing finds
	// consolidated.safetensors (5 entries, pages of 2).
	repo := qwenRepo(t, "acme/mistral-like", 1)
	repo.Shards["consolidated.safetensors"] = repo.Shards["model.safetensors"]
	delete(repo.Shards, "model.safetensors")
	repo.Files["params.json"] = []byte(`{}`)
	repo.Files["README.md"] = []byte(`x`)
	repo.Files["tokenizer.json"] = []byte(`{}`)
	srv := hubtest.New(t, repo)
	c, _, _ := client(t, srv.URL())
	m, err := c.Resolve(context.Background(), "acme/mistral-like", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Headers) != 1 || weights.Sum(m.Headers, m.Spec).Bytes != repo.DataBytes() {
		t.Errorf("headers %d", len(m.Headers))
	}
	pages := 0
	for _, r := range srv.Requests() {
		if strings.HasPrefix(r.Path, "/api/models/acme/mistral-like/tree/"+commit) {
			pages++
		}
	}
	if pages != 3 {
		t.Errorf("%d listing pages read, want 3", pages)
	}
}

func TestFullSnapshotInCache(t *testing.T) {
	// A snapshot transformers downloaded whole: its own .safetensors give
	// the weights, with no request.
	_, _, o := client(t, "http://127.0.0.1:1")
	cfg, _ := os.ReadFile("testdata/qwen3-8b.json")
	snap := filepath.Join(o.CacheDir, "models--acme--full", "snapshots", commit)
	os.MkdirAll(snap, 0o755)
	os.MkdirAll(filepath.Join(o.CacheDir, "models--acme--full", "refs"), 0o755)
	os.WriteFile(filepath.Join(snap, "config.json"), cfg, 0o644)
	os.WriteFile(filepath.Join(o.CacheDir, "models--acme--full", "refs", "main"), []byte(commit), 0o644)
	var b strings.Builder
	safetensors.Write(&b, []safetensors.TensorData{{Name: "model.embed_tokens.weight", DType: "BF16", Shape: []int64{4, 2}, Data: make([]byte, 16)}}, nil)
	os.WriteFile(filepath.Join(snap, "model.safetensors"), []byte(b.String()), 0o644)
	m, err := hub.New(o).Resolve(context.Background(), "acme/full", "")
	if err != nil {
		t.Fatal(err)
	}
	if m.Source != catalog.SourceHFCache || m.Dir != snap || m.Revision != commit || m.Headers != nil || m.Name != "acme/full" {
		t.Errorf("model: source %s dir %s revision %s", m.Source, m.Dir, m.Revision)
	}
}

func TestOneBadShardOfMany(t *testing.T) {
	repo := qwenRepo(t, "acme/many", 8)
	repo.Shards["model-00006-of-00008.safetensors"] = hubtest.Raw([]byte(`["x"]`), 0, 0)
	srv := hubtest.New(t, repo)
	c, _, o := client(t, srv.URL(), func(o *hub.Options) { o.Concurrency = 3 })
	_, err := c.Resolve(context.Background(), "acme/many", "")
	if !errors.Is(err, hub.ErrMalformed) || !strings.Contains(err.Error(), "model-00006-of-00008.safetensors") {
		t.Errorf("error %v", err)
	}
	if _, err := os.Stat(filepath.Join(o.HeaderCacheDir, "models--acme--many")); err == nil {
		t.Errorf("a checkpoint with a bad shard was cached")
	}
}
