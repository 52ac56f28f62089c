package vllm

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvcfg/kvcfg/engine"
)

// hmaConnectors are the KV connectors that subclass SupportsHMA in the
// releases that keep the hybrid KV cache manager on for them (0.22 on,
// vllm PR #41847): NixlConnector (PR #35758), MooncakeConnector,
// SimpleCPUOffloadConnector and LMCache's multi-process connector.
// LMCacheConnectorV1 and OffloadingConnector do not (vLLM 0.22.1 logs
// "connector LMCacheConnectorV1 does not subclass `SupportsHMA`").
var hmaConnectors = []string{"NixlConnector", "MooncakeConnector", "SimpleCPUOffloadConnector", "LMCacheMPConnector"}

// ConnectorSupportsHMA reports whether the connector keeps the hybrid KV
// cache manager on from vLLM 0.22 (KVConnectorFactory.supports_hma_config):
// a connector that subclasses SupportsHMA, or a MultiConnector all of whose
// children do (none is not enough).
func ConnectorSupportsHMA(connector string, children []string) bool {
	if connector == "MultiConnector" {
		if len(children) == 0 {
			return false
		}
		for _, c := range children {
			if !ConnectorSupportsHMA(c, nil) {
				return false
			}
		}
		return true
	}
	return slices.Contains(hmaConnectors, connector)
}

// hybridManagerOff reports whether the launch runs without the hybrid KV
// cache manager, every sliding-window and chunked layer then cached as full
// attention (unify_hybrid_kv_cache_specs), and logs on res the warning
// vLLM logs for a connector (VllmConfig.__post_init__).
func hybridManagerOff(res *Result, r rules, c Input) bool {
	off, warning := connectorRule(r, c)
	if warning != "" {
		res.LogLines = append(res.LogLines, warning)
	}
	return off
}

// connectorRule is hybridManagerOff's decision and warning.
// --disable-hybrid-kv-cache-manager always turns the manager off. A
// connector turns it off in every release with the hybrid manager up to
// 0.21; from 0.22 only a connector that does not support it.
func connectorRule(r rules, c Input) (bool, string) {
	if c.KVConnector == "" || !r.hybridGroups {
		return c.DisableHybridKVCacheManager, ""
	}
	rel := r.rel
	switch {
	case rel.atLeast(0, 22, 0):
		if ConnectorSupportsHMA(c.KVConnector, c.KVConnectorChildren) {
			return c.DisableHybridKVCacheManager, ""
		}
		return true, fmt.Sprintf("Turning off hybrid kv cache manager because connector %s does not subclass `SupportsHMA`. This will reduce performance on models with sliding window or Mamba attention.", c.KVConnector)
	case rel.atLeast(0, 13, 0):
		return true, connectorWarning + " and use --no-disable-hybrid-kv-cache-manager to start vLLM."
	case rel.atLeast(0, 11, 1):
		// vLLM PR #27592 added the warning.
		return true, connectorWarning + "."
	}
	// "Hybrid KV cache manager is not compatible with KV transfer": off
	// without a word.
	return true, ""
}

// connectorWarning is the start of the warning up to 0.21.
const connectorWarning = "Turning off hybrid kv cache manager because `--kv-transfer-config` is set. This will reduce the performance of vLLM on LLMs with sliding window attention or Mamba attention. If you are a developer of kv connector, please consider supporting hybrid kv cache manager for your connector by making sure your connector is a subclass of `SupportsHMA` defined in kv_connector/v1/base.py"

// hmaOffFix names the fix of a hybrid model refused because the hybrid KV
// cache manager is off (unifyFailed): drop --disable-hybrid-kv-cache-manager
// when it was given, else the connector's part: from 0.22 a connector with
// hybrid support, before 0.22 no connector at all.
func hmaOffFix(re *engine.Refusal, r rules, c Input, kinds string) {
	why := "this model's " + kinds + " layers cannot be cached as one type without the hybrid KV cache manager"
	switch {
	case c.DisableHybridKVCacheManager:
		fix(re, "--disable-hybrid-kv-cache-manager", "", "drop --disable-hybrid-kv-cache-manager: "+why)
	case r.rel.atLeast(0, 22, 0):
		fix(re, "--kv-transfer-config", "", fmt.Sprintf("use a KV connector with hybrid support (%s) or drop --kv-transfer-config: %s turns the hybrid KV cache manager off, and %s",
			strings.Join(hmaConnectors, ", "), c.KVConnector, why))
	default:
		fix(re, "--kv-transfer-config", "", fmt.Sprintf("drop --kv-transfer-config, or run vLLM 0.22 or newer with a KV connector with hybrid support (%s): up to 0.21 any connector turns the hybrid KV cache manager off, and %s",
			strings.Join(hmaConnectors, ", "), why))
	}
}
