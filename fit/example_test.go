package fit_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/kvcfg/kvcfg/fit"
	"github.com/kvcfg/kvcfg/plan"
)

// Run finds the cheapest setups that hold the target (8 requests of 32k
// tokens of Llama 3.1 8B on an H100) and the flags that launch them.
func ExampleRun() {
	res, err := fit.Run(context.Background(), fit.Options{
		Base:        plan.Request{Model: "meta-llama/Llama-3.1-8B-Instruct"},
		Concurrency: 8, ContextLength: 32768, GPUs: []string{"H100"},
	})
	if err != nil {
		panic(err)
	}
	c := res.Configurations[0]
	fmt.Println(c.GPU, c.GPUCount, "GPU, capacity", c.CapacityAtContextLength)
	fmt.Println(strings.Join(c.Flags, " "))
	// Output:
	// H100-80GB 1 GPU, capacity 12
	// --tp-size 1 --kv-cache-dtype auto --context-length 32768 --mem-fraction-static 0.83 --max-running-requests 8
}
