package gpu

// Perf is a GPU's datasheet throughput, for time estimates (kvcfg
// simulate's roofline): memory bandwidth and dense (no 2:4 sparsity)
// tensor-core peaks. Figures are the vendor's datasheet numbers, not
// measurements; reached fractions (MBU, MFU) are the caller's parameters.
type Perf struct {
	// HBMBytesPerS is the memory bandwidth in bytes per second.
	HBMBytesPerS float64 `json:"hbm_bytes_per_s"`
	// BF16FLOPS and FP8FLOPS are dense tensor peaks in FLOP/s; FP8FLOPS
	// is 0 where the GPU has no FP8 tensor cores.
	BF16FLOPS float64 `json:"bf16_flops"`
	FP8FLOPS  float64 `json:"fp8_flops,omitempty"`
	// Source is where the figures come from.
	Source string `json:"source"`
}

// perf is keyed by catalog name. Datasheets list sparse peaks for most
// parts; dense is half of those.
var perf = map[string]Perf{
	"H100-80GB": {3.35e12, 989e12, 1979e12, "NVIDIA H100 Tensor Core GPU datasheet, SXM5: 3.35 TB/s, BF16 1,979 / FP8 3,958 TFLOPS with sparsity (nvidia.com/en-us/data-center/h100)"},
	"H800":      {3.35e12, 989e12, 1979e12, "as H100 SXM5 (same GH100 SXM5 board, NVLink reduced)"},
	"H100-PCIe": {2.0e12, 756e12, 1513e12, "NVIDIA H100 datasheet, PCIe: 2 TB/s, BF16 1,513 / FP8 3,026 TFLOPS with sparsity"},
	"H200":      {4.8e12, 989e12, 1979e12, "NVIDIA H200 Tensor Core GPU datasheet, SXM: 4.8 TB/s, BF16 1,979 / FP8 3,958 TFLOPS with sparsity (nvidia.com/en-us/data-center/h200)"},
	"B200":      {8e12, 2250e12, 4500e12, "NVIDIA DGX B200 datasheet: 64 TB/s HBM3e and 72 PFLOPS FP8 training over 8 GPUs, i.e. 8 TB/s and 4.5 PFLOPS dense FP8 per GPU (nvidia.com/en-us/data-center/dgx-b200)"},
	"A100-80GB": {2.039e12, 312e12, 0, "NVIDIA A100 Tensor Core GPU datasheet, SXM 80GB: 2,039 GB/s, BF16 312 TFLOPS dense; no FP8 (nvidia.com/en-us/data-center/a100)"},
	"A100-40GB": {1.555e12, 312e12, 0, "NVIDIA A100 Tensor Core GPU datasheet, 40GB: 1,555 GB/s, BF16 312 TFLOPS dense; no FP8"},
	"L40S":      {0.864e12, 362e12, 733e12, "NVIDIA L40S datasheet: 864 GB/s, BF16 733 / FP8 1,466 TFLOPS with sparsity (nvidia.com/en-us/data-center/l40s)"},
	"RTX-4090":  {1.008e12, 165e12, 330e12, "NVIDIA Ada Lovelace architecture whitepaper, appendix: 1,008 GB/s, BF16 165.2 (FP32 accumulate) / FP8 330.3 TFLOPS dense"},
	"MI300X":    {5.3e12, 1307e12, 2615e12, "AMD Instinct MI300X datasheet: 5.3 TB/s, BF16 1,307.4 / FP8 2,614.9 TFLOPS dense (amd.com/en/products/accelerators/instinct/mi300/mi300x)"},
}

// PerfOf returns the datasheet figures of the GPU named name (as Lookup
// accepts it); false when kvcfg has none for it.
func PerfOf(name string) (Perf, bool) {
	g, err := Lookup(name)
	if err != nil {
		return Perf{}, false
	}
	p, ok := perf[g.Name]
	return p, ok
}
