package plan_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/kvcfg/kvcfg/plan"
)

func TestWithFix(t *testing.T) {
	infeasible := fmt.Errorf("%w: Not enough memory", plan.ErrInfeasible)
	tests := []struct {
		name string
		err  error
		rep  *plan.Report
		want string
	}{
		{"hint appended", infeasible, &plan.Report{Fix: plan.Fix{FixFlag: "--tp-size", FixHint: "use --tp-size 2"}}, infeasible.Error() + "\nfix: use --tp-size 2"},
		{"flag only", infeasible, &plan.Report{Fix: plan.Fix{FixFlag: "--mem-fraction-static"}}, infeasible.Error() + "\nfix: change --mem-fraction-static"},
		{"hint already said", fmt.Errorf("%w: raise it; use --tp-size 2", plan.ErrInfeasible), &plan.Report{Fix: plan.Fix{FixFlag: "--tp-size", FixHint: "use --tp-size 2"}}, "plan: infeasible: raise it; use --tp-size 2"},
		{"no fix", infeasible, &plan.Report{}, infeasible.Error()},
		{"not infeasible", errors.New("boom"), &plan.Report{Fix: plan.Fix{FixFlag: "--tp-size"}}, "boom"},
	}
	for _, tt := range tests {
		got := plan.WithFix(tt.err, tt.rep)
		if got.Error() != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
		if !errors.Is(got, tt.err) {
			t.Errorf("%s: result does not wrap the error", tt.name)
		}
	}
}
