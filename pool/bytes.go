package pool

// Bytes is the host memory of pools, broken down by purpose. MLA pools
// count their single latent buffer in K (V stays 0), as the engine's
// allocation log and the configurator do.
type Bytes struct {
	// K and V are the key and value payload buffers.
	K int64 `json:"k"`
	V int64 `json:"v"`
	// KScales and VScales are the block-scale buffers of quantized formats
	// (FP4, MXFP8, grouped int).
	KScales int64 `json:"k_scales,omitempty"`
	VScales int64 `json:"v_scales,omitempty"`
	// Workspace is the FP4 pools' shared FP8 dequant workspace.
	Workspace int64 `json:"workspace,omitempty"`
	// Conv, SSM and SpecState are the Mamba state tensors (SpecState: the
	// speculative intermediate conv and SSM buffers).
	Conv      int64 `json:"conv,omitempty"`
	SSM       int64 `json:"ssm,omitempty"`
	SpecState int64 `json:"spec_state,omitempty"`
	// ReqToToken is the request-to-token table.
	ReqToToken int64 `json:"req_to_token,omitempty"`
}

// KV is the KV cache part: payload, scales and workspace.
func (b Bytes) KV() int64 { return b.K + b.V + b.KScales + b.VScales + b.Workspace }

// Scales is KScales + VScales.
func (b Bytes) Scales() int64 { return b.KScales + b.VScales }

// State is the Mamba state part.
func (b Bytes) State() int64 { return b.Conv + b.SSM + b.SpecState }

// Total is everything.
func (b Bytes) Total() int64 { return b.KV() + b.State() + b.ReqToToken }

// Add returns the field-wise sum.
func (b Bytes) Add(o Bytes) Bytes {
	return Bytes{
		K: b.K + o.K, V: b.V + o.V, KScales: b.KScales + o.KScales, VScales: b.VScales + o.VScales,
		Workspace: b.Workspace + o.Workspace, Conv: b.Conv + o.Conv, SSM: b.SSM + o.SSM,
		SpecState: b.SpecState + o.SpecState, ReqToToken: b.ReqToToken + o.ReqToToken,
	}
}
