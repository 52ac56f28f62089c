package simulate

import (
	"context"
	"testing"
)

func TestZZ(t *testing.T) {
	cfg := benchNoRadix
	cfg.Time.ConstantStepS = 0.02
	src, _ := benchWorkload().Source()
	sum, err := Run(context.Background(), cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(sum.Steps, sum.RequestSteps, sum.RequestsCompleted, *sum.Retractions, sum.UnservableRequests, sum.OutputTokens)
}
