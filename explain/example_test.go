package explain_test

import (
	"fmt"

	"github.com/kvcfg/kvcfg/explain"
)

// Explain recognises an engine's message and names the knob to turn.
func ExampleExplain() {
	e, err := explain.Explain("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.")
	if err != nil {
		panic(err)
	}
	fmt.Println(e.Engine, e.Kind)
	fmt.Println("knob:", e.Knob)
	// Output:
	// vllm no_cache_blocks
	// knob: --gpu-memory-utilization
}
