package trtllm_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/kvcfg/kvcfg/engine/trtllm"
)

func TestResolveProfile(t *testing.T) {
	tests := []struct {
		version string
		want    trtllm.Profile
		noted   bool
	}{
		{"", trtllm.Latest, false},
		{"latest", trtllm.Latest, false},
		{"main", trtllm.Latest, false},
		{"0.x", trtllm.Engine, false},
		{"1.0", trtllm.V10, false},
		{"1.1", trtllm.V11, false},
		{"0.21.0", trtllm.Engine, true},
		{"v0.9.0", trtllm.Engine, true},
		{"1.0.0", trtllm.V10, true},
		{"1.1.0rc3", trtllm.V11, true},
		{"1.2.0", trtllm.Latest, true},
		{"2.0", trtllm.Latest, true},
	}
	for _, tt := range tests {
		for range 2 { // the second answer comes from the cache
			p, note, err := trtllm.ResolveProfile(tt.version)
			if err != nil || p != tt.want || (note != "") != tt.noted {
				t.Errorf("ResolveProfile(%q) = %q, %q, %v; want %q (note %v)", tt.version, p, note, err, tt.want, tt.noted)
			}
		}
	}
	for _, bad := range []string{"banana", "1", "1.x", "-1.0", "banana"} {
		if _, _, err := trtllm.ResolveProfile(bad); !errors.Is(err, trtllm.ErrUnknownVersion) {
			t.Errorf("ResolveProfile(%q) err = %v", bad, err)
		}
	}
	if got := trtllm.Profiles(); !slices.Equal(got, []trtllm.Profile{trtllm.Engine, trtllm.V10, trtllm.V11, trtllm.Latest}) {
		t.Errorf("Profiles() = %v", got)
	}
}

func TestAcceptedKVDTypes(t *testing.T) {
	if got := trtllm.KVCacheDTypes(); !slices.Equal(got, []string{"auto", "fp8", "nvfp4"}) {
		t.Errorf("KVCacheDTypes() = %v", got)
	}
	if got := trtllm.AcceptedKVDTypes(trtllm.Engine); !slices.Equal(got, []string{"auto", "fp8", "int8"}) {
		t.Errorf("AcceptedKVDTypes(engine) = %v", got)
	}
	a := trtllm.AcceptedKVDTypes(trtllm.Latest)
	a[0] = "changed"
	if trtllm.AcceptedKVDTypes(trtllm.Latest)[0] != "auto" {
		t.Error("AcceptedKVDTypes returns shared storage")
	}
}

// The fraction is logged as the C++ float widened to double up to 1.1, as
// the Python float on main.
func TestFractionInLogs(t *testing.T) {
	s := load(t, "meta-llama__Llama-3.1-8B-Instruct")
	for _, tt := range []struct {
		version, want string
	}{
		{"1.1", "Both free_gpu_memory_fraction and max_tokens are set (to 0.8500000238418579 and 163840, respectively). The smaller value will be used."},
		{"latest", "Both free_gpu_memory_fraction and max_tokens are set (to 0.85 and 163840 with free memory 23.529411764705884GiB of total memory 80.0GiB, respectively). The smaller value will be used."},
	} {
		res, err := trtllm.Plan(s, trtllm.Input{Version: tt.version, FreeGPUMemoryFraction: 0.85, KVCacheMemory: 20 * gib, GPUMemoryBytes: 80 * gib})
		if err != nil {
			t.Fatal(err)
		}
		if !contains(res.Warnings, tt.want) {
			t.Errorf("%s: warnings %q", tt.version, res.Warnings)
		}
	}
}
