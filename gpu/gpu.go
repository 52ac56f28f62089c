// Package gpu is the catalog of accelerators kvcfg plans for: total memory
// as the driver reports it, vendor, platform and architecture, plus the
// runtime overhead model that turns total memory into the free memory an
// inference engine sees before it loads weights.
package gpu

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kvcfg/kvcfg/internal/edit"
)

// ErrUnknown reports a GPU name that is not in the catalog.
var ErrUnknown = errors.New("gpu: unknown GPU")

// GPU is one accelerator model.
type GPU struct {
	// Name is the short, canonical name ("H100-80GB").
	Name string `json:"name"`
	// Aliases are other accepted spellings (matched case-insensitively).
	Aliases []string `json:"aliases,omitempty"`
	// Vendor is "nvidia" or "amd".
	Vendor string `json:"vendor"`
	// Platform is the software stack: "cuda" or "hip".
	Platform string `json:"platform"`
	// Arch is the architecture family ("hopper", "blackwell", "ampere",
	// "ada", "cdna3", ...).
	Arch string `json:"arch"`
	// SM is the CUDA compute capability times ten (90 for Hopper, 100 for
	// B200/GB200, 103 for B300, 120 for RTX Blackwell); 0 for AMD. See
	// ComputeCapability.
	SM int `json:"sm"`
	// SMCount is the number of streaming multiprocessors
	// (cudaDevAttrMultiProcessorCount: 132 on an H100 SXM5, 58 on an L4);
	// 0 for AMD and for a GPU given only by its memory. It sizes the CUDA
	// runtime's local-memory reservation (LocalMemoryBytes).
	SMCount int `json:"sm_count,omitempty"`
	// MemoryMiB is the total memory in MiB as nvidia-smi
	// (memory.total) or torch (total_memory // 2^20) reports it. This is
	// what SGLang's server-args heuristics read.
	MemoryMiB int64 `json:"memory_mib"`
	// CUDATotalMiB is the total memory CUDA (HIP on AMD) gives a process,
	// in MiB: torch.cuda.get_device_properties().total_memory // 2^20, the
	// second value of torch.cuda.mem_get_info. It is smaller than
	// nvidia-smi's MemoryMiB by the driver's reserve (H100 80GB HBM3: 81090
	// against 81559), and it is what the engines' budgets start from:
	// vLLM's requested memory is gpu_memory_utilization × this total, and
	// SGLang's free memory before weights is this total less the CUDA
	// context. CUDATotalBytes falls back to MemoryMiB where it is 0.
	CUDATotalMiB int64 `json:"cuda_total_mib"`
	// CUDATotalSource says how CUDATotalMiB was derived: a torch log or
	// device-properties print ("torch ..."), an engine's log ("vLLM logs
	// ..."), ROCm (equal to the VRAM total), or "estimate: ...".
	CUDATotalSource string `json:"cuda_total_source"`
	// NVLinks is the number of NVLink links per GPU to the node's NVSwitch
	// (18 on H100, H200 and H20 SXM and on B200 and B300, 8 on H800); 0
	// where none is recorded, GB200 included, whose links reach the rack's
	// NVLink switch trays (a multi-node NVLink domain). It decides NCCL's
	// channel search (trtllm.NCCLEagerBytes).
	NVLinks int `json:"nvlinks,omitempty"`
	// Unified marks a device that shares its memory with the CPU (GB10):
	// what an engine may take depends on the host, so a plan refuses it
	// unless the memory is given (ErrUnified).
	Unified bool `json:"unified,omitempty"`
	// FNUZ marks AMD hardware whose fp8 type is float8_e4m3fnuz.
	FNUZ bool `json:"fnuz,omitempty"`
	// Description is a one-line human description.
	Description string `json:"description"`
	// SMINames are the names the driver prints for the card
	// (`nvidia-smi --query-gpu=name`, rocm-smi's product name), accepted
	// by Lookup as they are pasted.
	SMINames []string `json:"smi_names,omitempty"`
}

// MemoryBytes returns the total memory in bytes as nvidia-smi reports it.
func (g GPU) MemoryBytes() int64 { return g.MemoryMiB << 20 }

// CUDATotalBytes returns the total memory CUDA reports (CUDATotalMiB) in
// bytes; MemoryBytes where the catalog has no CUDA figure (a custom GPU
// given by its memory).
func (g GPU) CUDATotalBytes() int64 {
	if g.CUDATotalMiB > 0 {
		return g.CUDATotalMiB << 20
	}
	return g.MemoryBytes()
}

// ErrUnified reports a unified-memory device planned without a memory
// figure: its memory is the host's, so no catalog total applies.
var ErrUnified = errors.New("gpu: unified-memory device")

// CheckDiscrete returns nil for a discrete GPU and an error wrapping
// ErrUnified, saying what to pass instead, for a unified-memory one.
func (g GPU) CheckDiscrete() error {
	if !g.Unified {
		return nil
	}
	return fmt.Errorf("%w: the %s (%s) shares its memory with the CPU, so the memory an engine can take depends on what the host uses and kvcfg does not plan it as a discrete card; pass --gpu-memory with the memory the engine may use (and --pre-load-free-memory from the engine's log for exact numbers)", ErrUnified, g.Name, g.Description)
}

// ComputeCapability returns the CUDA compute capability as
// torch.cuda.get_device_capability reports it (9, 0 for Hopper; 10, 3 for
// B300); 0, 0 for AMD. Engines pick attention backends by it: vLLM's
// FlashAttention MLA needs 9.x, FlashInfer's NVFP4 KV pages 10.x.
func (g GPU) ComputeCapability() (major, minor int) { return g.SM / 10, g.SM % 10 }

// ComputeCapabilityString is the capability as "9.0", "" for AMD.
func (g GPU) ComputeCapabilityString() string {
	if g.SM <= 0 {
		return ""
	}
	major, minor := g.ComputeCapability()
	return fmt.Sprintf("%d.%d", major, minor)
}

// MaxThreadsPerSM returns the most threads an SM keeps resident
// (cudaDevAttrMaxThreadsPerMultiProcessor) for the compute capability:
// 2048 on 8.0, 8.7, 9.x and 10.x, 1536 on 8.6, 8.9 and 12.x, 1024 on 7.5;
// 0 for AMD.
func (g GPU) MaxThreadsPerSM() int {
	switch g.SM {
	case 0:
		return 0
	case 75:
		return 1024
	case 86, 89, 120, 121:
		return 1536
	}
	return 2048
}

// DefaultStackBytes is the CUDA runtime's default per-thread stack
// (cudaLimitStackSize), 1 KiB.
const DefaultStackBytes = 1024

// LocalMemoryBytes returns the local memory the CUDA runtime reserves when
// it creates a context: the default per-thread stack for every thread the
// device can keep resident, SMCount × MaxThreadsPerSM × 1 KiB (264 MiB on
// an H100 SXM5, 87 MiB on an L4). 0 where the SM count is unknown (AMD, a
// GPU given by its memory).
func (g GPU) LocalMemoryBytes() int64 {
	return int64(g.SMCount) * int64(g.MaxThreadsPerSM()) * DefaultStackBytes
}

// Sources of the memory figures. Unless noted, a figure is memory.total of
// `nvidia-smi --query-gpu=memory.total --format=csv` as printed on that card
// (driver 550+; ECC on where the card supports it). The two figures the
// SGLang KV spec fixes (H100 SXM 81559, H200 143771) are taken from it. AMD
// figures are torch.cuda.get_device_properties().total_memory // 2^20 as
// reported by ROCm; where only the marketing capacity is known the figure is
// capacity in MiB minus the driver-reserved part and says "nominal".
//
// CUDATotalMiB, beside it, is the total CUDA reports to a process, with
// its source in CUDATotalSource: a torch device-properties print or OOM
// message ("total capacity of X GiB"), an engine's log (vLLM prints it),
// ROCm's total (equal to the VRAM total), or, where no public log names
// the card, an estimate: nvidia-smi's figure less the driver reserve of the
// closest measured card (H100: 469 MiB, B200: 728, L40S: 582, RTX 5090:
// 495). A unified-memory device (GB10) is Unified: its memory is the host's.
// GH200 is its 96 GB of HBM only; the Grace CPU's LPDDR5X, which CUDA can
// also reach, is never counted as GPU memory.
var catalog = []GPU{
	// Hopper.
	{Name: "H100-80GB", Aliases: []string{"H100", "H100-SXM", "H100-SXM5", "H100-80G", "H100-SXM-80GB"}, Vendor: "nvidia", Platform: "cuda", Arch: "hopper", SM: 90, SMCount: 132,
		NVLinks: 18, MemoryMiB: 81559, CUDATotalMiB: 81090, CUDATotalSource: "torch get_device_properties: total_memory=81090MB (79.19 GiB in vLLM 0.19 logs)", Description: "NVIDIA H100 SXM5 80GB HBM3", SMINames: []string{"NVIDIA H100 80GB HBM3"}}, // nvidia-smi 81559MiB (docs/sglang.md#worked-examples)
	{Name: "H100-PCIe", Aliases: []string{"H100-PCIE-80GB", "H100PCIe"}, Vendor: "nvidia", Platform: "cuda", Arch: "hopper", SM: 90, SMCount: 114,
		MemoryMiB: 81559, CUDATotalMiB: 81090, CUDATotalSource: "estimate: the SXM5 part's 81090 MiB (same 80GB and nvidia-smi figure)", Description: "NVIDIA H100 PCIe 80GB HBM2e", SMINames: []string{"NVIDIA H100 PCIe"}}, // nvidia-smi 81559MiB
	{Name: "H100-NVL", Aliases: []string{"H100-94GB", "H100NVL"}, Vendor: "nvidia", Platform: "cuda", Arch: "hopper", SM: 90, SMCount: 132,
		MemoryMiB: 95830, CUDATotalMiB: 95334, CUDATotalSource: "torch OOM message: total capacity of 93.10 GiB", Description: "NVIDIA H100 NVL 94GB HBM3", SMINames: []string{"NVIDIA H100 NVL"}}, // nvidia-smi 95830MiB
	{Name: "H800", Aliases: []string{"H800-80GB"}, Vendor: "nvidia", Platform: "cuda", Arch: "hopper", SM: 90, SMCount: 132,
		NVLinks: 8, MemoryMiB: 81559, CUDATotalMiB: 81090, CUDATotalSource: "estimate: H100 SXM5's 81090 MiB (same board memory)", Description: "NVIDIA H800 SXM5 80GB HBM3", SMINames: []string{"NVIDIA H800"}}, // same board memory as H100 SXM: 81559MiB
	{Name: "H200", Aliases: []string{"H200-141GB", "H200-SXM"}, Vendor: "nvidia", Platform: "cuda", Arch: "hopper", SM: 90, SMCount: 132,
		NVLinks: 18, MemoryMiB: 143771, CUDATotalMiB: 143165, CUDATotalSource: "vLLM logs: 139.81 GiB", Description: "NVIDIA H200 SXM 141GB HBM3e", SMINames: []string{"NVIDIA H200"}}, // nvidia-smi 143771MiB (docs/sglang.md#worked-examples)
	{Name: "H200-NVL", Aliases: []string{"H200NVL"}, Vendor: "nvidia", Platform: "cuda", Arch: "hopper", SM: 90, SMCount: 132,
		MemoryMiB: 143771, CUDATotalMiB: 143165, CUDATotalSource: "estimate: H200 SXM's 139.81 GiB (same HBM stack)", Description: "NVIDIA H200 NVL 141GB HBM3e", SMINames: []string{"NVIDIA H200 NVL"}}, // same HBM stack as H200 SXM: 143771MiB
	{Name: "H20", Aliases: []string{"H20-96GB"}, Vendor: "nvidia", Platform: "cuda", Arch: "hopper", SM: 90, SMCount: 78,
		NVLinks: 18, MemoryMiB: 97871, CUDATotalMiB: 97359, CUDATotalSource: "estimate: nvidia-smi minus 512 MiB of driver reserve", Description: "NVIDIA H20 96GB HBM3", SMINames: []string{"NVIDIA H20"}}, // nvidia-smi 97871MiB
	{Name: "GH200", Aliases: []string{"GH200-96GB"}, Vendor: "nvidia", Platform: "cuda", Arch: "hopper", SM: 90, SMCount: 132,
		MemoryMiB: 97871, CUDATotalMiB: 97359, CUDATotalSource: "estimate: nvidia-smi minus 512 MiB of driver reserve (the HBM only)", Description: "NVIDIA GH200 Grace Hopper 96GB HBM3 (GPU memory only)", SMINames: []string{"NVIDIA GH200 480GB"}}, // nvidia-smi 97871MiB on the 96GB part
	// Blackwell.
	{Name: "B200", Aliases: []string{"B200-180GB", "B200-SXM"}, Vendor: "nvidia", Platform: "cuda", Arch: "blackwell", SM: 100, SMCount: 148,
		NVLinks: 18, MemoryMiB: 183359, CUDATotalMiB: 182631, CUDATotalSource: "torch get_device_properties: total_memory=182631MB", Description: "NVIDIA B200 180GB HBM3e", SMINames: []string{"NVIDIA B200"}}, // nvidia-smi 183359MiB
	{Name: "GB200", Aliases: []string{"GB200-186GB"}, Vendor: "nvidia", Platform: "cuda", Arch: "blackwell", SM: 100, SMCount: 148,
		MemoryMiB: 189471, CUDATotalMiB: 188743, CUDATotalSource: "estimate: nvidia-smi minus B200's 728 MiB driver reserve", Description: "NVIDIA GB200 Grace Blackwell 186GB HBM3e (per GPU)", SMINames: []string{"NVIDIA GB200"}}, // nvidia-smi 189471MiB
	{Name: "B300", Aliases: []string{"B300-288GB", "B300-SXM"}, Vendor: "nvidia", Platform: "cuda", Arch: "blackwell", SM: 103, SMCount: 160,
		NVLinks: 18, MemoryMiB: 275040, CUDATotalMiB: 274106, CUDATotalSource: "TensorRT-LLM 1.3.0rc10 log on an NVIDIA B300 SXM6 AC: total memory 267.68170166015625GiB (torch.cuda.mem_get_info; 274,106 MiB, 934 MiB below nvidia-smi)", Description: "NVIDIA B300 SXM6 288GB HBM3e", SMINames: []string{"NVIDIA B300 SXM6 AC"}}, // nvidia-smi 275040MiB
	{Name: "RTX-PRO-6000", Aliases: []string{"RTX-PRO-6000-Blackwell", "RTXPRO6000"}, Vendor: "nvidia", Platform: "cuda", Arch: "blackwell", SM: 120, SMCount: 188,
		MemoryMiB: 97887, CUDATotalMiB: 97250, CUDATotalSource: "torch get_device_properties: total_memory=97250MB (Server Edition); OOM messages 94.97 GiB", Description: "NVIDIA RTX PRO 6000 Blackwell 96GB GDDR7", SMINames: []string{"NVIDIA RTX PRO 6000 Blackwell Server Edition", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"}}, // nvidia-smi 97887MiB
	{Name: "RTX-5080", Aliases: []string{"5080", "RTX5080", "GeForce-RTX-5080"}, Vendor: "nvidia", Platform: "cuda", Arch: "blackwell", SM: 120, SMCount: 84,
		MemoryMiB: 16303, CUDATotalMiB: 15808, CUDATotalSource: "estimate: nvidia-smi minus RTX 5090's 495 MiB driver reserve", Description: "NVIDIA GeForce RTX 5080 16GB GDDR7", SMINames: []string{"NVIDIA GeForce RTX 5080"}}, // nvidia-smi 16303MiB
	{Name: "RTX-5060-Ti", Aliases: []string{"5060Ti", "5060-Ti", "RTX5060Ti", "RTX-5060Ti", "GeForce-RTX-5060-Ti", "RTX-5060-Ti-16GB"}, Vendor: "nvidia", Platform: "cuda", Arch: "blackwell", SM: 120, SMCount: 36,
		MemoryMiB: 16311, CUDATotalMiB: 15885, CUDATotalSource: "llama.cpp's device line (cudaMemGetInfo total) in a public run log: NVIDIA GeForce RTX 5060 Ti (15885 MiB); torch OOM messages on 16 GB sm_120 cards: total capacity of 15.51 GiB", Description: "NVIDIA GeForce RTX 5060 Ti 16GB GDDR7", SMINames: []string{"NVIDIA GeForce RTX 5060 Ti"}}, // nvidia-smi 16311MiB (a public host profile: 16,311 MiB)
	{Name: "GB10", Aliases: []string{"DGX-Spark", "GB10-128GB"}, Vendor: "nvidia", Platform: "cuda", Arch: "blackwell", SM: 121, SMCount: 48,
		MemoryMiB: 122572, CUDATotalMiB: 122572, CUDATotalSource: "estimate: 119.7 GiB of the 128 GB LPDDR5x that CUDA reports, shared with the CPU", Unified: true,
		Description: "NVIDIA GB10 Grace Blackwell (DGX Spark) 128GB unified LPDDR5x", SMINames: []string{"NVIDIA GB10"}}, // nvidia-smi prints no memory.total: the memory is the host's
	{Name: "RTX-5090", Aliases: []string{"5090", "RTX5090", "GeForce-RTX-5090"}, Vendor: "nvidia", Platform: "cuda", Arch: "blackwell", SM: 120, SMCount: 170,
		MemoryMiB: 32607, CUDATotalMiB: 32112, CUDATotalSource: "torch OOM messages: total capacity of 31.36 GiB", Description: "NVIDIA GeForce RTX 5090 32GB GDDR7", SMINames: []string{"NVIDIA GeForce RTX 5090"}}, // nvidia-smi 32607MiB
	// Ampere.
	{Name: "A100-40GB", Aliases: []string{"A100-40G", "A100-SXM4-40GB", "A100-PCIE-40GB"}, Vendor: "nvidia", Platform: "cuda", Arch: "ampere", SM: 80, SMCount: 108,
		MemoryMiB: 40960, CUDATotalMiB: 40536, CUDATotalSource: "torch get_device_properties: total_memory=40536MB", Description: "NVIDIA A100 40GB HBM2", SMINames: []string{"NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB"}}, // nvidia-smi 40960MiB
	{Name: "A100-80GB", Aliases: []string{"A100", "A100-80G", "A100-SXM4-80GB", "A100-PCIE-80GB"}, Vendor: "nvidia", Platform: "cuda", Arch: "ampere", SM: 80, SMCount: 108,
		MemoryMiB: 81920, CUDATotalMiB: 81050, CUDATotalSource: "torch OOM messages: total capacity of 79.15 GiB", Description: "NVIDIA A100 80GB HBM2e", SMINames: []string{"NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe"}}, // nvidia-smi 81920MiB
	{Name: "A10", Aliases: []string{"A10G", "A10-24GB"}, Vendor: "nvidia", Platform: "cuda", Arch: "ampere", SM: 86, SMCount: 72,
		MemoryMiB: 23028, CUDATotalMiB: 22589, CUDATotalSource: "torch OOM message on an A10G: total capacity of 22.06 GiB", Description: "NVIDIA A10 / A10G 24GB GDDR6", SMINames: []string{"NVIDIA A10", "NVIDIA A10G"}}, // nvidia-smi 23028MiB (A10G on AWS g5)
	{Name: "A6000", Aliases: []string{"RTX-A6000", "RTXA6000"}, Vendor: "nvidia", Platform: "cuda", Arch: "ampere", SM: 86, SMCount: 84,
		MemoryMiB: 49140, CUDATotalMiB: 48556, CUDATotalSource: "estimate: nvidia-smi minus L40S's 584 MiB driver reserve (48GB GDDR6)", Description: "NVIDIA RTX A6000 48GB GDDR6", SMINames: []string{"NVIDIA RTX A6000"}}, // nvidia-smi 49140MiB
	{Name: "RTX-3090", Aliases: []string{"3090", "RTX3090", "GeForce-RTX-3090"}, Vendor: "nvidia", Platform: "cuda", Arch: "ampere", SM: 86, SMCount: 82,
		MemoryMiB: 24576, CUDATotalMiB: 24146, CUDATotalSource: "vLLM logs: 23.58 GiB", Description: "NVIDIA GeForce RTX 3090 24GB GDDR6X", SMINames: []string{"NVIDIA GeForce RTX 3090"}}, // nvidia-smi 24576MiB
	// Ada Lovelace.
	{Name: "L40S", Aliases: []string{"L40S-48GB"}, Vendor: "nvidia", Platform: "cuda", Arch: "ada", SM: 89, SMCount: 142,
		MemoryMiB: 46068, CUDATotalMiB: 45486, CUDATotalSource: "vLLM logs: 44.42 GiB", Description: "NVIDIA L40S 48GB GDDR6", SMINames: []string{"NVIDIA L40S"}}, // nvidia-smi 46068MiB
	{Name: "L40", Aliases: []string{"L40-48GB"}, Vendor: "nvidia", Platform: "cuda", Arch: "ada", SM: 89, SMCount: 142,
		MemoryMiB: 46068, CUDATotalMiB: 45486, CUDATotalSource: "estimate: L40S's 44.42 GiB (same board memory)", Description: "NVIDIA L40 48GB GDDR6", SMINames: []string{"NVIDIA L40"}}, // nvidia-smi 46068MiB
	{Name: "L4", Aliases: []string{"L4-24GB"}, Vendor: "nvidia", Platform: "cuda", Arch: "ada", SM: 89, SMCount: 58,
		MemoryMiB: 23034, CUDATotalMiB: 22559, CUDATotalSource: "estimate: torch OOM messages of 22.03 GiB on 24GB cards, nvidia-smi minus 475 MiB", Description: "NVIDIA L4 24GB GDDR6", SMINames: []string{"NVIDIA L4"}}, // nvidia-smi 23034MiB
	{Name: "RTX-6000-Ada", Aliases: []string{"RTX6000Ada", "RTX-6000"}, Vendor: "nvidia", Platform: "cuda", Arch: "ada", SM: 89, SMCount: 142,
		MemoryMiB: 49140, CUDATotalMiB: 48556, CUDATotalSource: "estimate: nvidia-smi minus L40S's 584 MiB driver reserve (48GB GDDR6)", Description: "NVIDIA RTX 6000 Ada 48GB GDDR6", SMINames: []string{"NVIDIA RTX 6000 Ada Generation"}}, // nvidia-smi 49140MiB
	{Name: "RTX-4090", Aliases: []string{"4090", "RTX4090", "GeForce-RTX-4090"}, Vendor: "nvidia", Platform: "cuda", Arch: "ada", SM: 89, SMCount: 128,
		MemoryMiB: 24564, CUDATotalMiB: 24207, CUDATotalSource: "torch OOM messages on RTX 4090: total capacity of 23.64 GiB", Description: "NVIDIA GeForce RTX 4090 24GB GDDR6X", SMINames: []string{"NVIDIA GeForce RTX 4090"}}, // nvidia-smi 24564MiB (docs/sglang.md#defaults-tier-table)
	// Turing.
	{Name: "T4", Aliases: []string{"T4-16GB", "Tesla-T4"}, Vendor: "nvidia", Platform: "cuda", Arch: "turing", SM: 75, SMCount: 40,
		MemoryMiB: 15360, CUDATotalMiB: 15104, CUDATotalSource: "torch OOM messages: total capacity of 14.75 GiB", Description: "NVIDIA T4 16GB GDDR6", SMINames: []string{"Tesla T4"}}, // nvidia-smi 15360MiB
	// AMD Instinct (ROCm).
	{Name: "MI300X", Aliases: []string{"MI300", "MI300X-192GB"}, Vendor: "amd", Platform: "hip", Arch: "cdna3", SM: 0,
		MemoryMiB: 196288, CUDATotalMiB: 196288, CUDATotalSource: "ROCm: torch total_memory equals the VRAM total", FNUZ: true, Description: "AMD Instinct MI300X 192GB HBM3", SMINames: []string{"AMD Instinct MI300X"}}, // torch total_memory / rocm-smi VRAM Total 205822885888 B = 196288MiB
	{Name: "MI325X", Aliases: []string{"MI325", "MI325X-256GB"}, Vendor: "amd", Platform: "hip", Arch: "cdna3", SM: 0,
		MemoryMiB: 261824, CUDATotalMiB: 261824, CUDATotalSource: "ROCm: torch total_memory equals the VRAM total (nominal)", FNUZ: true, Description: "AMD Instinct MI325X 256GB HBM3e (nominal)", SMINames: []string{"AMD Instinct MI325X"}}, // nominal: 256GiB minus the 320MiB the MI300X (same gfx942) reserves
	{Name: "MI355X", Aliases: []string{"MI355", "MI355X-288GB", "MI350X"}, Vendor: "amd", Platform: "hip", Arch: "cdna4", SM: 0,
		MemoryMiB: 294896, CUDATotalMiB: 294896, CUDATotalSource: "ROCm: torch total_memory equals the VRAM total", Description: "AMD Instinct MI355X 288GB HBM3e (OCP fp8)", SMINames: []string{"AMD Instinct MI355X"}}, // torch total_memory / rocm-smi VRAM Total 309220868096 B = 294896MiB
}

// Lookup returns the GPU named name (case-insensitive; aliases and
// spaces/underscores for dashes accepted).
func Lookup(name string) (GPU, error) {
	var buf [64]byte
	key := appendNormalized(buf[:0], name)
	if len(key) == 0 {
		return GPU{}, fmt.Errorf("%w: empty name (known: %s)", ErrUnknown, strings.Join(Names(), ", "))
	}
	for {
		if i := index(key); i >= 0 {
			return clone(catalog[i]), nil
		}
		// Accept an "NVIDIA " or "AMD " prefix as nvidia-smi and rocm-smi print it.
		k, ok := bytes.CutPrefix(key, []byte("nvidia-"))
		if !ok {
			k, ok = bytes.CutPrefix(key, []byte("amd-"))
		}
		if !ok {
			if close := Suggest(name, 3); len(close) > 0 {
				return GPU{}, fmt.Errorf("%w %q: did you mean %s? (known: %s)", ErrUnknown, name, strings.Join(close, ", "), strings.Join(Names(), ", "))
			}
			return GPU{}, fmt.Errorf("%w %q (known: %s)", ErrUnknown, name, strings.Join(Names(), ", "))
		}
		key = k
	}
}

// index returns the first catalog entry one of whose names, aliases or
// nvidia-smi names normalizes to key, -1 for none. A scan, not a map: a
// process looks up a GPU or two, and building an index cost more at
// start-up than a few dozen entries cost to scan (catalog names are
// ASCII with no surrounding space: TestCatalogNamesASCII).
func index(key []byte) int {
	is := func(n string) bool { return normalizesTo(n, key) }
	for i, g := range catalog {
		if is(g.Name) || slices.ContainsFunc(g.Aliases, is) || slices.ContainsFunc(g.SMINames, is) {
			return i
		}
	}
	return -1
}

// normalizesTo reports whether the ASCII catalog name n normalizes to key.
func normalizesTo(n string, key []byte) bool {
	if len(n) != len(key) {
		return false
	}
	for i := 0; i < len(n); i++ {
		if normByte(n[i]) != key[i] {
			return false
		}
	}
	return true
}

// appendNormalized appends normalize(s) to dst, without allocating when s
// is ASCII and fits dst.
func appendNormalized(dst []byte, s string) []byte {
	s = strings.TrimSpace(s)
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return append(dst[:0], normalize(s)...)
		}
	}
	for i := 0; i < len(s); i++ {
		dst = append(dst, normByte(s[i]))
	}
	return dst
}

// normByte is what normalize makes of an ASCII byte.
func normByte(c byte) byte {
	switch {
	case 'A' <= c && c <= 'Z':
		return c + 'a' - 'A'
	case c == ' ' || c == '_':
		return '-'
	}
	return c
}

// ambiguous are the short names that stand for one of several cards with
// different memory: Lookup takes the first, Note says so.
var ambiguous = map[string]string{
	"a100":     "A100-40GB",
	"rtx-6000": "Quadro RTX 6000 (24 GB, not in the catalog)",
}

// Note returns, for a name that could mean several cards (--gpu A100), a
// sentence naming the card Lookup took and how to ask for the other; ""
// otherwise.
func Note(name string) string {
	other, ok := ambiguous[normalize(name)]
	if !ok {
		return ""
	}
	g, err := Lookup(name)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("GPU %q taken as %s (%s, %d MiB); for the %s pass its full name", name, g.Name, g.Description, g.MemoryMiB, other)
}

// All returns the catalog in display order.
func All() []GPU {
	out := make([]GPU, len(catalog))
	for i, g := range catalog {
		out[i] = clone(g)
	}
	return out
}

// Names returns the canonical names in display order.
func Names() []string {
	out := make([]string, len(catalog))
	for i, g := range catalog {
		out[i] = g.Name
	}
	return out
}

func clone(g GPU) GPU {
	g.Aliases = slices.Clone(g.Aliases)
	g.SMINames = slices.Clone(g.SMINames)
	return g
}

// dashes turns the separators normalize accepts into dashes.
var dashes = strings.NewReplacer(" ", "-", "_", "-")

func normalize(s string) string {
	return dashes.Replace(strings.ToLower(strings.TrimSpace(s)))
}

// maxSuggestLen bounds the names Suggest compares: a client's name longer
// than any GPU's spelling gets no suggestion instead of a costly distance.
const maxSuggestLen = 128

// Suggest returns up to n catalog GPU names close to name, for "did you
// mean": names one of whose spellings (name or alias) contains it or is
// contained in it first, then the nearest by edit distance.
func Suggest(name string, n int) []string {
	if len(name) > maxSuggestLen {
		return nil // no GPU name is that long: nothing is close, and the distance would cost
	}
	k := string(appendNormalized(nil, name))
	if k == "" || n <= 0 {
		return nil
	}
	limit := max(2, len(k)/3)
	type cand struct {
		name string
		d    int
	}
	var cands []cand
	for _, g := range catalog {
		best := -2
		for _, a := range append([]string{g.Name}, g.Aliases...) {
			an := string(appendNormalized(nil, a))
			d, ok := edit.Within(k, an, limit)
			if !ok {
				d = limit + 1
			}
			if (len(k) >= 2 && strings.Contains(an, k)) || (len(an) >= 3 && strings.Contains(k, an)) {
				d = -1
			}
			if best == -2 || d < best {
				best = d
			}
		}
		if best <= limit {
			cands = append(cands, cand{g.Name, best})
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Compare(a.d, b.d) })
	out := make([]string, 0, n)
	for i := 0; i < len(cands) && i < n; i++ {
		out = append(out, cands[i].name)
	}
	return out
}
