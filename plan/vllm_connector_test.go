package plan_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/units"
)

// --kv-transfer-config and --disable-hybrid-kv-cache-manager reach vLLM's
// hybrid KV cache manager: gpt-oss-120b's 18 sliding + 18 full layers
// share 9,798 blocks in two groups of 18 with the manager on, and 4,899
// blocks of all 36 layers as full attention with it off (a connector up to
// 0.21, one without hybrid support from 0.22, or the flag).
func TestKVTransferConfigTurnsHybridManagerOff(t *testing.T) {
	avail := units.Size(9798 * 18 * 32768)
	nixl := `{"kv_connector":"NixlConnector","kv_role":"kv_both"}`
	tests := []struct {
		name    string
		version string
		config  string
		disable bool
		blocks  int64
	}{
		{"no connector", "0.13", "", false, 9798},
		{"nixl 0.13", "0.13", nixl, false, 4899},
		{"nixl 0.22", "0.22", nixl, false, 9798},
		{"bare name 0.22", "0.22", "LMCacheConnectorV1", false, 4899},
		{"multi all hma latest", "latest", `{"kv_connector":"MultiConnector","kv_role":"kv_both","kv_connector_extra_config":{"connectors":[{"kv_connector":"NixlConnector","kv_role":"kv_both"},{"kv_connector":"SimpleCPUOffloadConnector","kv_role":"kv_both"}]}}`, false, 9798},
		{"multi mixed latest", "latest", `{"kv_connector":"MultiConnector","kv_connector_extra_config":{"connectors":[{"kv_connector":"NixlConnector"},{"kv_connector":"OffloadingConnector"}]}}`, false, 4899},
		{"flag latest", "latest", "", true, 4899},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := plan.Run(context.Background(), plan.Request{Engine: "vllm", Model: "openai/gpt-oss-120b", VLLMVersion: tt.version,
				MaxModelLen: 32768, KVCacheMemory: avail, KVTransferConfig: tt.config, DisableHybridKVCacheManager: tt.disable})
			if err != nil {
				t.Fatal(err)
			}
			if rep.NumGPUBlocks != tt.blocks {
				t.Errorf("%d blocks, want %d", rep.NumGPUBlocks, tt.blocks)
			}
			off := slices.ContainsFunc(rep.LogLines, func(l string) bool { return strings.HasPrefix(l, "Hybrid KV cache manager is disabled") })
			if off != (tt.blocks == 4899) {
				t.Errorf("log lines %q", rep.LogLines)
			}
		})
	}
}

func TestParseKVTransferConfig(t *testing.T) {
	tests := []struct {
		in        string
		connector string
		children  []string
		err       string
	}{
		{"", "", nil, ""},
		{"NixlConnector", "NixlConnector", nil, ""},
		{` {"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"} `, "LMCacheConnectorV1", nil, ""},
		{`{"kv_connector":"MultiConnector","kv_connector_extra_config":{"connectors":[{"kv_connector":"NixlConnector"},{"kv_connector":"OffloadingConnector"}]}}`,
			"MultiConnector", []string{"NixlConnector", "OffloadingConnector"}, ""},
		{`{"kv_connector":"NixlConnector"`, "", nil, "is not JSON"},
		{`{"kv_role":"kv_both"}`, "", nil, "names no kv_connector"},
		{`kv_role: kv_both`, "", nil, "neither --kv-transfer-config's JSON nor a connector name"},
	}
	for _, tt := range tests {
		c, ch, err := plan.ParseKVTransferConfig(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want one saying %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || c != tt.connector || !slices.Equal(ch, tt.children) {
			t.Errorf("%q: %q %q %v, want %q %q", tt.in, c, ch, err, tt.connector, tt.children)
		}
	}
	// A request with a bad value is refused before planning, naming the flag.
	_, err := plan.Run(context.Background(), plan.Request{Engine: "vllm", KVTransferConfig: `{"kv_connector":`})
	if !errors.Is(err, plan.ErrInvalid) || !strings.Contains(err.Error(), "kv_transfer_config") {
		t.Errorf("bad --kv-transfer-config: %v", err)
	}
}

// --kv-transfer-config prints single-quoted in a launch line and reads
// back to the same request.
func TestKVTransferConfigEngineArgsRoundTrip(t *testing.T) {
	cfg := `{"kv_connector":"NixlConnector","kv_role":"kv_both"}`
	r := plan.Request{Engine: "vllm", KVTransferConfig: cfg, DisableHybridKVCacheManager: true, NoAsyncScheduling: true}
	args := plan.EngineArgs(r, false)
	want := []string{"--kv-transfer-config", "'" + cfg + "'", "--disable-hybrid-kv-cache-manager", "--no-async-scheduling"}
	if !slices.Equal(args, want) {
		t.Fatalf("args %q, want %q", args, want)
	}
	back, err := plan.ParseEngineArgs(plan.Request{Engine: "vllm"}, args)
	if err != nil || back.KVTransferConfig != cfg || !back.DisableHybridKVCacheManager || !back.NoAsyncScheduling {
		t.Errorf("read back %+v, %v", back, err)
	}
}

// When the hybrid manager is off and a Mamba hybrid cannot start, the fix
// is to drop the switch or the connector: kvcfg re-plans without it and
// says so, with no flags to add.
func TestDropFixReplansWithoutTheFlag(t *testing.T) {
	tests := []struct {
		name string
		req  plan.Request
		flag string
	}{
		{"disable flag", plan.Request{DisableHybridKVCacheManager: true}, "--disable-hybrid-kv-cache-manager"},
		{"connector 0.21", plan.Request{VLLMVersion: "0.21", KVTransferConfig: "LMCacheConnectorV1"}, "--kv-transfer-config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			req.Engine, req.Model, req.GPU, req.TPSize, req.MaxModelLen = "vllm", "Qwen/Qwen3-Next-80B-A3B-Instruct", "H200", 4, 32768
			rep, err := plan.Run(context.Background(), req)
			if !errors.Is(err, plan.ErrInfeasible) || rep == nil {
				t.Fatalf("err %v, want a refusal", err)
			}
			if rep.FixFlag != tt.flag || !strings.HasPrefix(rep.FixHint, "drop "+tt.flag+": re-planned, ") || rep.FixArgs != nil {
				t.Errorf("fix %s %q %q, want %s dropped and re-planned", rep.FixFlag, rep.FixHint, rep.FixArgs, tt.flag)
			}
		})
	}
}
