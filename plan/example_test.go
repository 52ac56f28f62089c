package plan_test

import (
	"context"
	"fmt"

	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/units"
)

// Reproduce a real run: the engine logged 78.50 GiB free before loading
// Llama-3.1-8B-Instruct on an H100 and 63.54 GiB after (spec §c.11 Ex.1).
func ExampleRun() {
	pre, _ := units.ParseSize("78.50GiB")
	post, _ := units.ParseSize("63.54GiB")
	r, err := plan.Run(context.Background(), plan.Request{
		Model:              "meta-llama/Llama-3.1-8B-Instruct",
		GPU:                "H100-80GB",
		PreLoadFreeMemory:  pre,
		PostLoadFreeMemory: post,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.MemFractionStatic, r.MaxTotalNumTokens, r.MaxRunningRequests)
	fmt.Println(r.LogLines[0])
	// Output:
	// 0.835 414412 2048
	// KV Cache is allocated. #tokens: 414412, K size: 25.29 GB, V size: 25.29 GB
}
