package hubtest

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Checkpoint builds the repo of a dense decoder-only model from its
// config.json: BF16 tensors with the config's shapes (embedding, per layer
// q/k/v/o projections, q/k norms, gate/up/down, two layer norms; final
// norm and, unless tied, the LM head), spread over shards files named as
// transformers names them, with model.safetensors.index.json when there is
// more than one. The data regions are never materialised, so a full-size
// 8B model costs only its headers.
func Checkpoint(id, commit string, config []byte, shards int) (Repo, error) {
	var c struct {
		Hidden       int64 `json:"hidden_size"`
		Intermediate int64 `json:"intermediate_size"`
		Layers       int64 `json:"num_hidden_layers"`
		Heads        int64 `json:"num_attention_heads"`
		KVHeads      int64 `json:"num_key_value_heads"`
		HeadDim      int64 `json:"head_dim"`
		Vocab        int64 `json:"vocab_size"`
		Tied         bool  `json:"tie_word_embeddings"`
	}
	if err := json.Unmarshal(config, &c); err != nil {
		return Repo{}, fmt.Errorf("hubtest: %w", err)
	}
	if c.HeadDim == 0 && c.Heads > 0 {
		c.HeadDim = c.Hidden / c.Heads
	}
	if c.KVHeads == 0 {
		c.KVHeads = c.Heads
	}
	shards = max(shards, 1)
	bf := func(name string, shape ...int64) Tensor { return Tensor{Name: name, DType: "BF16", Shape: shape} }
	groups := make([][]Tensor, shards)
	groups[0] = append(groups[0], bf("model.embed_tokens.weight", c.Vocab, c.Hidden))
	for l := range c.Layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		g := int(l * int64(shards) / max(c.Layers, 1))
		groups[g] = append(groups[g],
			bf(p+"self_attn.q_proj.weight", c.Heads*c.HeadDim, c.Hidden),
			bf(p+"self_attn.k_proj.weight", c.KVHeads*c.HeadDim, c.Hidden),
			bf(p+"self_attn.v_proj.weight", c.KVHeads*c.HeadDim, c.Hidden),
			bf(p+"self_attn.o_proj.weight", c.Hidden, c.Heads*c.HeadDim),
			bf(p+"self_attn.q_norm.weight", c.HeadDim),
			bf(p+"self_attn.k_norm.weight", c.HeadDim),
			bf(p+"mlp.gate_proj.weight", c.Intermediate, c.Hidden),
			bf(p+"mlp.up_proj.weight", c.Intermediate, c.Hidden),
			bf(p+"mlp.down_proj.weight", c.Hidden, c.Intermediate),
			bf(p+"input_layernorm.weight", c.Hidden),
			bf(p+"post_attention_layernorm.weight", c.Hidden),
		)
	}
	last := shards - 1
	groups[last] = append(groups[last], bf("model.norm.weight", c.Hidden))
	if !c.Tied {
		groups[last] = append(groups[last], bf("lm_head.weight", c.Vocab, c.Hidden))
	}
	r := Repo{ID: id, Commit: commit, Files: map[string][]byte{"config.json": config}, Shards: map[string]File{}}
	if shards == 1 {
		r.Shards["model.safetensors"] = Shard(groups[0], 0)
		return r, nil
	}
	weightMap := map[string]string{}
	var total int64
	for i, ts := range groups {
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, shards)
		f := Shard(ts, 0)
		r.Shards[name] = f
		total += f.Size - int64(len(f.Head))
		for _, t := range ts {
			weightMap[t.Name] = name
		}
	}
	idx, err := json.MarshalIndent(map[string]any{"metadata": map[string]int64{"total_size": total}, "weight_map": weightMap}, "", "  ")
	if err != nil {
		return Repo{}, fmt.Errorf("hubtest: %w", err)
	}
	r.Files["model.safetensors.index.json"] = idx
	return r, nil
}

// DataBytes is the sum of the tensor bytes of a repo's shards: what a
// header-only read must report as the checkpoint's weights.
func (r Repo) DataBytes() int64 {
	var n int64
	names := make([]string, 0, len(r.Shards))
	for k := range r.Shards {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		f := r.Shards[k]
		n += f.Size - int64(len(f.Head))
	}
	return n
}

// ManyTensors builds the repo of a checkpoint whose headers list tensors
// one-element F16 tensors ("t.N.weight") over shards files with an index,
// written directly (no map, no encoding/json) so that a million tensors
// cost about 100 MB and a second: the fake repository a client's limits
// on header size and tensor count are tested with.
func ManyTensors(id, commit string, config []byte, tensors, shards int) Repo {
	shards = max(shards, 1)
	r := Repo{ID: id, Commit: commit, Files: map[string][]byte{"config.json": config}, Shards: map[string]File{}}
	idx := []byte(`{"weight_map":{`)
	for s := range shards {
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", s+1, shards)
		lo, hi := s*tensors/shards, (s+1)*tensors/shards
		hdr := []byte(`{"__metadata__":{"format":"pt"}`)
		for i := lo; i < hi; i++ {
			off := int64(i-lo) * 2
			hdr = fmt.Appendf(hdr, `,"t.%d.weight":{"dtype":"F16","shape":[1],"data_offsets":[%d,%d]}`, i, off, off+2)
			if i == lo {
				if s > 0 {
					idx = append(idx, ',')
				}
				idx = fmt.Appendf(idx, `"t.%d.weight":%q`, i, name)
			}
		}
		hdr = append(hdr, '}')
		r.Shards[name] = Raw(hdr, int64(hi-lo)*2, 0)
	}
	r.Files["model.safetensors.index.json"] = append(idx, "}}"...)
	return r
}
