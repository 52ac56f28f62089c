package plan_test

import (
	"testing"

	"github.com/kvcfg/kvcfg/plan"
)

func TestFormatFloat(t *testing.T) {
	for _, tt := range []struct {
		v    float64
		want string
	}{
		{0.7343999999999999, "0.7344"}, {0.918 * 0.8, "0.7344"}, {0.1 + 0.2, "0.3"}, {0.835, "0.835"}, {0.88, "0.88"},
		{1, "1"}, {2.5, "2.5"}, {1e-7, "0.0000001"}, {123456789.125, "123456789.125"},
	} {
		if got := plan.FormatFloat(tt.v); got != tt.want {
			t.Errorf("FormatFloat(%v) = %q, want %q", tt.v, got, tt.want)
		}
	}
	// Request fields print through it.
	r := plan.Request{MemFractionStatic: 0.7343999999999999}
	if v, _ := r.FieldString("mem_fraction_static"); v != "0.7344" {
		t.Errorf("FieldString = %q, want 0.7344", v)
	}
}

func TestKnobsOf(t *testing.T) {
	for _, tt := range []struct {
		rep  plan.Report
		want plan.Knobs
	}{
		{plan.Report{Inputs: plan.Inputs{Engine: plan.EngineSGLang}, KVSettings: plan.KVSettings{MemFractionStatic: 0.835}},
			plan.Knobs{Share: "mem_fraction_static", Current: 0.835, SafeMax: 0.93, RequestCap: "max_running_requests", FP8: "fp8_e4m3"}},
	} {
		if got := plan.KnobsOf(&tt.rep); got != tt.want {
			t.Errorf("KnobsOf = %+v, want %+v", got, tt.want)
		}
	}
	if got := plan.KnobsOf(nil); got != (plan.Knobs{}) {
		t.Errorf("KnobsOf(nil) = %+v", got)
	}
}
