package plan_test

import (
	"context"
	"testing"

	"github.com/kvcfg/kvcfg/plan"
)

func BenchmarkRunDefault(b *testing.B) {
	for b.Loop() {
		if _, err := plan.Run(context.Background(), plan.Request{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRunInfeasible(b *testing.B) {
	for b.Loop() {
		_, _ = plan.Run(context.Background(), plan.Request{Model: "moonshotai/Kimi-K2-Instruct"})
	}
}
