package simulate_test

import (
	"context"
	"fmt"

	"github.com/kvcfg/kvcfg/simulate"
)

// A 100-token SGLang pool and three requests (docs/simulate.md#worked-traces,
// S1): B does not fit next to A's reservation and waits until A finishes.
func ExampleRun() {
	cfg := simulate.Config{Engine: simulate.EngineSGLang, MaxTotalNumTokens: 100, Time: simulate.TimeModel{ConstantStepS: 0.01}}
	trace := &simulate.SliceSource{Reqs: []simulate.Request{
		{PromptTokens: 40, OutputTokens: 10},
		{PromptTokens: 40, OutputTokens: 10},
		{PromptTokens: 10, OutputTokens: 10},
	}}
	sum, err := simulate.Run(context.Background(), cfg, trace)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("completed", sum.RequestsCompleted, "peak running", sum.PeakRunning, "retractions", *sum.Retractions)
	fmt.Println("binding limit", sum.BindingLimit, "steps", sum.Steps)
	// Output:
	// completed 3 peak running 2 retractions 0
	// binding limit kv_pool steps 20
}
