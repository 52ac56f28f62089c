package engine

// Term is one named part of a predicted memory figure and the engine
// source that allocates it (the profile run's sampler logits, a fused-MoE
// workspace, the dry run's hidden states, ...).
type Term struct {
	// Name is the part ("sampler_logits", "moe_workspace", ...).
	Name string `json:"name"`
	// Bytes is its size on one rank.
	Bytes int64 `json:"bytes"`
	// Source is the engine source that allocates it.
	Source string `json:"source"`
}
