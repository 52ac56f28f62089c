package gpu_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcfg/kvcfg/gpu"
)

func TestLookup(t *testing.T) {
	tests := []struct {
		in   string
		name string
		mib  int64
	}{
		{"H100-80GB", "H100-80GB", 81559},
		{"h100", "H100-80GB", 81559},
		{"NVIDIA H100 80GB", "H100-80GB", 81559},
		{"H100-PCIe", "H100-PCIe", 81559},
		{"h200", "H200", 143771},
		{"B200", "B200", 183359},
		{"a100-40gb", "A100-40GB", 40960},
		{"A100-80GB", "A100-80GB", 81920},
		{"l40s", "L40S", 46068},
		{"RTX-4090", "RTX-4090", 24564},
		{"rtx_4090", "RTX-4090", 24564},
		{"MI300X", "MI300X", 196288},
		{"MI355X", "MI355X", 294896},
		{"B300", "B300", 275040},
		{"NVIDIA GB200", "GB200", 189471},
		{"H100-NVL", "H100-NVL", 95830},
		{"H20", "H20", 97871},
		{"L4", "L4", 23034},
		{"A10G", "A10", 23028},
		{"RTX-5090", "RTX-5090", 32607},
	}
	for _, tt := range tests {
		g, err := gpu.Lookup(tt.in)
		if err != nil {
			t.Fatalf("Lookup(%q): %v", tt.in, err)
		}
		if diff := cmp.Diff([]any{tt.name, tt.mib}, []any{g.Name, g.MemoryMiB}); diff != "" {
			t.Errorf("Lookup(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestLookupUnknown(t *testing.T) {
	_, err := gpu.Lookup("TPU-v5")
	if !errors.Is(err, gpu.ErrUnknown) {
		t.Fatalf("err = %v, want ErrUnknown", err)
	}
	if !strings.Contains(err.Error(), "H100-80GB") {
		t.Errorf("error does not list names: %v", err)
	}
	if _, err := gpu.Lookup(""); !errors.Is(err, gpu.ErrUnknown) {
		t.Errorf("empty name: err = %v", err)
	}
}

// An unknown GPU name gets "did you mean" with the closest catalog names
// first, as an unknown model does (issue 32).
func TestLookupDidYouMean(t *testing.T) {
	for _, c := range []struct{ in, first string }{
		{"H10", "H100-80GB"},
		{"L40X", "L40"},
		{"B20", "B200"},
		{"A100 80", "A100-80GB"},
		{"MI30X", "MI300X"},
		{"RTX-509", "RTX-5090"},
	} {
		_, err := gpu.Lookup(c.in)
		if !errors.Is(err, gpu.ErrUnknown) || !strings.Contains(err.Error(), "did you mean "+c.first) {
			t.Errorf("Lookup(%q): %v, want did you mean %s", c.in, err, c.first)
		}
	}
	if _, err := gpu.Lookup("TPU-v5"); strings.Contains(err.Error(), "did you mean") {
		t.Errorf("TPU-v5 is close to nothing: %v", err)
	}
	if s := gpu.Suggest("H200", 1); len(s) != 1 || s[0] != "H200" {
		t.Errorf("Suggest(H200) = %v", s)
	}
}

func TestCatalogConsistent(t *testing.T) {
	seen := map[string]string{}
	for _, g := range gpu.All() {
		if g.MemoryMiB <= 0 || g.Description == "" || g.Arch == "" {
			t.Errorf("%s: incomplete entry %+v", g.Name, g)
		}
		switch {
		case g.Vendor == "nvidia" && g.Platform == "cuda" && g.SM > 0 && !g.FNUZ:
		case g.Vendor == "amd" && g.Platform == "hip" && g.SM == 0:
		default:
			t.Errorf("%s: vendor/platform/sm/fnuz inconsistent", g.Name)
		}
		for _, n := range append([]string{g.Name}, g.Aliases...) {
			k := strings.ToLower(n)
			if prev, ok := seen[k]; ok {
				t.Errorf("name %q used by %s and %s", n, prev, g.Name)
			}
			seen[k] = g.Name
		}
	}
}

// Each CUDA GPU's compute capability, as torch.cuda.get_device_capability
// reports it; vLLM's backend selection and kvcfg's NVFP4 rule read it.
func TestComputeCapability(t *testing.T) {
	want := map[string]string{
		"H100-80GB": "9.0", "H100-PCIe": "9.0", "H100-NVL": "9.0", "H800": "9.0", "H200": "9.0", "H200-NVL": "9.0",
		"H20": "9.0", "GH200": "9.0", "B200": "10.0", "GB200": "10.0", "B300": "10.3", "RTX-PRO-6000": "12.0",
		"RTX-5090": "12.0", "RTX-5080": "12.0", "RTX-5060-Ti": "12.0", "GB10": "12.1", "A100-40GB": "8.0", "A100-80GB": "8.0", "A10": "8.6", "A6000": "8.6", "RTX-3090": "8.6",
		"L40S": "8.9", "L40": "8.9", "L4": "8.9", "RTX-6000-Ada": "8.9", "RTX-4090": "8.9", "T4": "7.5",
		"MI300X": "", "MI325X": "", "MI355X": "",
	}
	for _, g := range gpu.All() {
		w, ok := want[g.Name]
		if !ok {
			t.Errorf("%s: no expected compute capability; add it to the table", g.Name)
			continue
		}
		if got := g.ComputeCapabilityString(); got != w {
			t.Errorf("%s: compute capability %q, want %q", g.Name, got, w)
		}
		major, minor := g.ComputeCapability()
		if major*10+minor != g.SM {
			t.Errorf("%s: (%d, %d) does not match SM %d", g.Name, major, minor, g.SM)
		}
	}
}

// Names pasted from nvidia-smi / rocm-smi resolve to the card they name.
func TestLookupSMINames(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"NVIDIA H100 80GB HBM3", "H100-80GB"},
		{"NVIDIA A100-SXM4-40GB", "A100-40GB"},
		{"NVIDIA A100 80GB PCIe", "A100-80GB"},
		{"NVIDIA GeForce RTX 4090", "RTX-4090"},
		{"NVIDIA RTX 6000 Ada Generation", "RTX-6000-Ada"},
		{"Tesla T4", "T4"},
		{"NVIDIA H200", "H200"},
		{"AMD Instinct MI300X", "MI300X"},
		{"  nvidia l40s ", "L40S"},
	} {
		g, err := gpu.Lookup(tt.in)
		if err != nil || g.Name != tt.want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", tt.in, g.Name, err, tt.want)
		}
	}
	for _, g := range gpu.All() {
		for _, n := range g.SMINames {
			if got, err := gpu.Lookup(n); err != nil || got.Name != g.Name {
				t.Errorf("SMI name %q of %s resolves to %q, %v", n, g.Name, got.Name, err)
			}
		}
	}
}

// A short name that could mean cards of different memory says which it took.
func TestNoteAmbiguous(t *testing.T) {
	if n := gpu.Note("A100"); !strings.Contains(n, "A100-80GB") || !strings.Contains(n, "A100-40GB") {
		t.Errorf("Note(A100) = %q, want both A100s named", n)
	}
	for _, name := range []string{"A100-80GB", "H100", "A100-40GB", "", "nope"} {
		if n := gpu.Note(name); n != "" {
			t.Errorf("Note(%q) = %q, want none", name, n)
		}
	}
}

// The total CUDA reports, beside nvidia-smi's: the figures engines' logs
// print (vLLM's "total_memory", torch's device properties), and for every
// GPU a labelled figure no larger than nvidia-smi's.
func TestCUDATotal(t *testing.T) {
	for _, tt := range []struct {
		name    string
		mib     int64
		gib     string // as torch and vLLM print it
		smiMiB  int64
		sources string
	}{
		{"H100-80GB", 81090, "79.19", 81559, "torch"},
		{"H200", 143165, "139.81", 143771, "vLLM logs"},
		{"L40S", 45486, "44.42", 46068, "vLLM logs"},
		{"RTX-3090", 24146, "23.58", 24576, "vLLM logs"},
		{"A100-40GB", 40536, "39.59", 40960, "torch"},
		{"B200", 182631, "178.35", 183359, "torch"},
		{"MI300X", 196288, "191.69", 196288, "ROCm"},
	} {
		g, err := gpu.Lookup(tt.name)
		if err != nil {
			t.Fatal(err)
		}
		if g.CUDATotalMiB != tt.mib || g.MemoryMiB != tt.smiMiB || g.CUDATotalBytes() != tt.mib<<20 {
			t.Errorf("%s: CUDA total %d MiB (nvidia-smi %d), want %d (%d)", tt.name, g.CUDATotalMiB, g.MemoryMiB, tt.mib, tt.smiMiB)
		}
		if got := fmt.Sprintf("%.2f", float64(g.CUDATotalMiB)/1024); got != tt.gib {
			t.Errorf("%s: %s GiB, want %s", tt.name, got, tt.gib)
		}
		if !strings.HasPrefix(g.CUDATotalSource, tt.sources) {
			t.Errorf("%s: source %q, want it to start %q", tt.name, g.CUDATotalSource, tt.sources)
		}
	}
	for _, g := range gpu.All() {
		if g.CUDATotalMiB <= 0 || g.CUDATotalMiB > g.MemoryMiB || g.CUDATotalSource == "" {
			t.Errorf("%s: CUDA total %d MiB (%q) against nvidia-smi %d MiB", g.Name, g.CUDATotalMiB, g.CUDATotalSource, g.MemoryMiB)
		}
		if g.Vendor == "nvidia" && !g.Unified && g.CUDATotalMiB == g.MemoryMiB {
			t.Errorf("%s: the CUDA total equals nvidia-smi's: the driver's reserve is missing", g.Name)
		}
	}
	if got := (gpu.GPU{MemoryMiB: 1000}).CUDATotalBytes(); got != 1000<<20 {
		t.Errorf("custom GPU: %d, want its memory", got)
	}
}

// The GPUs operators plan on (issue 29) are all in the catalog.
func TestCatalogCoversPlannedGPUs(t *testing.T) {
	for _, name := range []string{"RTX 3090", "RTX 4090", "RTX 5080", "RTX 5090", "RTX PRO 6000 Blackwell", "L4", "L40S", "A10",
		"A100-40GB", "A100-80GB", "H100 PCIe", "H100 SXM", "H100 NVL", "H200", "H20", "B200", "B300", "GB200",
		"MI300X", "MI325X", "MI355X", "NVIDIA GeForce RTX 5080", "GB10", "DGX Spark", "RTX 5060 Ti", "NVIDIA GeForce RTX 5060 Ti"} {
		if _, err := gpu.Lookup(name); err != nil {
			t.Errorf("Lookup(%q): %v", name, err)
		}
	}
}

// A unified-memory device is refused with what to pass instead; a
// discrete one is not.
func TestCheckDiscrete(t *testing.T) {
	g, err := gpu.Lookup("GB10")
	if err != nil {
		t.Fatal(err)
	}
	err = g.CheckDiscrete()
	if !errors.Is(err, gpu.ErrUnified) || !strings.Contains(err.Error(), "--gpu-memory") || !strings.HasPrefix(err.Error(), "gpu: ") {
		t.Errorf("GB10: %v", err)
	}
	for _, g := range gpu.All() {
		if err := g.CheckDiscrete(); (err != nil) != g.Unified {
			t.Errorf("%s: CheckDiscrete = %v, unified %v", g.Name, err, g.Unified)
		}
	}
}

// A client's megabyte-long GPU name gets no suggestion, and costs nothing:
// the distance is bounded (edit.Within) and over-long names are skipped.
func TestSuggestLongName(t *testing.T) {
	if got := gpu.Suggest(strings.Repeat("x", 1<<20), 3); len(got) != 0 {
		t.Errorf("Suggest(1 MiB) = %q, want none", got)
	}
	if got := gpu.Suggest("H10", 3); len(got) == 0 || got[0] != "H100-80GB" {
		t.Errorf("Suggest(H10) = %q, want H100-80GB first", got)
	}
}

// Every NVIDIA GPU has its SM count, so the CUDA runtime's local-memory
// reservation (SMs × resident threads per SM × the 1 KiB default stack) is
// known; AMD and a GPU given by its memory have none.
func TestLocalMemory(t *testing.T) {
	for _, tt := range []struct {
		name    string
		sms     int
		threads int
		mib     int64
	}{
		{"H100", 132, 2048, 264},
		{"H200", 132, 2048, 264},
		{"L4", 58, 1536, 87},
		{"RTX-4090", 128, 1536, 192},
		{"RTX-PRO-6000", 188, 1536, 282},
		{"RTX-5060-Ti", 36, 1536, 54},
		{"A100-80GB", 108, 2048, 216},
		{"T4", 40, 1024, 40},
		{"B200", 148, 2048, 296},
		{"MI300X", 0, 0, 0},
	} {
		g, err := gpu.Lookup(tt.name)
		if err != nil {
			t.Fatal(err)
		}
		if g.SMCount != tt.sms || g.MaxThreadsPerSM() != tt.threads || g.LocalMemoryBytes() != tt.mib<<20 {
			t.Errorf("%s: %d SMs × %d threads = %d B, want %d × %d = %d MiB", tt.name, g.SMCount, g.MaxThreadsPerSM(), g.LocalMemoryBytes(), tt.sms, tt.threads, tt.mib)
		}
	}
	for _, g := range gpu.All() {
		if (g.Vendor == "nvidia") != (g.SMCount > 0) {
			t.Errorf("%s (%s): SM count %d", g.Name, g.Vendor, g.SMCount)
		}
	}
	if got := (gpu.GPU{MemoryMiB: 1000}).LocalMemoryBytes(); got != 0 {
		t.Errorf("custom GPU: %d", got)
	}
}
