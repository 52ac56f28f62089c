package hub_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/kvcfg/kvcfg/format/safetensors"
	"github.com/kvcfg/kvcfg/hub"
	"github.com/kvcfg/kvcfg/hub/hubtest"
)

// moeRepo is a DeepSeek-V3-sized checkpoint layout: 61 layers of 256
// experts (gate, up, down with FP8 weights and F32 block scales) over 163
// shards, about 94,000 tensors, headers only.
func moeRepo(b *testing.B) hubtest.Repo {
	cfg := []byte(`{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 7168, "num_hidden_layers": 61,
		"num_attention_heads": 128, "num_key_value_heads": 128, "vocab_size": 129280, "intermediate_size": 18432,
		"max_position_embeddings": 163840, "torch_dtype": "bfloat16"}`)
	r := hubtest.Repo{ID: "acme/moe", Commit: commit, Files: map[string][]byte{"config.json": cfg}, Shards: map[string]hubtest.File{}}
	const shards = 163
	groups := make([][]hubtest.Tensor, shards)
	wm := map[string]string{}
	i := 0
	for l := range 61 {
		for e := range 256 {
			for _, p := range []string{"gate_proj", "up_proj", "down_proj"} {
				n := fmt.Sprintf("model.layers.%d.mlp.experts.%d.%s.", l, e, p)
				g := i * shards / (61 * 256 * 3)
				groups[g] = append(groups[g],
					hubtest.Tensor{Name: n + "weight", DType: "F8_E4M3", Shape: []int64{2048, 7168}},
					hubtest.Tensor{Name: n + "weight_scale_inv", DType: "F32", Shape: []int64{16, 56}})
				i++
			}
		}
	}
	idx := bytes.NewBufferString(`{"weight_map": {`)
	first := true
	for g, ts := range groups {
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", g+1, shards)
		r.Shards[name] = hubtest.Shard(ts, 0)
		for _, t := range ts {
			wm[t.Name] = name
			if !first {
				idx.WriteString(",")
			}
			first = false
			fmt.Fprintf(idx, "%q: %q", t.Name, name)
		}
	}
	idx.WriteString("}}")
	r.Files["model.safetensors.index.json"] = idx.Bytes()
	return r
}

// BenchmarkCachedMoE is a cached Hub model opened again (what every later
// `kvcfg plan` of it costs): kvcfg's header summary read and decoded.
// BenchmarkParseMoEHeaders is the baseline: parsing the same raw headers
// with format/safetensors. Report the first as a ratio to the second.
func BenchmarkCachedMoE(b *testing.B) {
	repo := moeRepo(b)
	srv := hubtest.New(b, repo)
	o := hub.Options{Endpoint: srv.URL(), CacheDir: b.TempDir(), HeaderCacheDir: b.TempDir()}
	if _, err := hub.New(o).Resolve(context.Background(), "acme/moe", ""); err != nil {
		b.Fatal(err)
	}
	srv.Close()
	o.Offline = true
	c := hub.New(o)
	b.ResetTimer()
	for b.Loop() {
		m, err := c.Resolve(context.Background(), "acme/moe", "")
		if err != nil || len(m.Headers) != 163 {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseMoEHeaders(b *testing.B) {
	repo := moeRepo(b)
	var heads [][]byte
	for _, f := range repo.Shards {
		heads = append(heads, f.Head)
	}
	b.ResetTimer()
	for b.Loop() {
		for _, h := range heads {
			if _, err := safetensors.ReadHeader(bytes.NewReader(h)); err != nil {
				b.Fatal(err)
			}
		}
	}
}
