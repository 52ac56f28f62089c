package gpu

// Interconnect classifies how a node of g's GPUs is wired, as NCCL and the
// engines' custom all-reduce kernels see it: "nvswitch" (Hopper and
// Blackwell SXM parts: NCCL opens up to 32 channels and its buffers take
// about 2 GiB a rank), "nvlink" (A100: fully NVLink-connected for the
// custom all-reduce, but no public log of its NCCL figure), "xgmi" (AMD)
// or "pcie" (every other card, and a card the catalog does not know).
func (g GPU) Interconnect() string {
	if g.Platform == "hip" {
		return "xgmi"
	}
	switch g.Name {
	case "H100-80GB", "H800", "H200", "H20", "B200", "B300", "GB200":
		return "nvswitch"
	case "A100-40GB", "A100-80GB":
		return "nvlink"
	}
	return "pcie"
}
