package simulate

import (
	"context"
	"errors"
	"testing"
)

// SGLang's request limits, from its source (docs/simulate.md#request-limits):
// tp_worker.py max_req_len = min(context_len - 1, max_total_num_tokens - 1),
// max_req_input_len = max_req_len - 5; managers/utils.py
// validate_input_length refuses len(input_ids) >= max_req_input_len;
// scheduler.py init_req_max_new_tokens clips max_new_tokens to
// max_req_len - len(input_ids) - 1.

func runSGL(t *testing.T, cfg Config, reqs ...Request) *Summary {
	t.Helper()
	cfg.Engine = EngineSGLang
	cfg.Time.ConstantStepS = 0.01
	sum, err := Run(context.Background(), cfg, &SliceSource{Reqs: reqs})
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// Pool 100: max_req_len 99, max_req_input_len 94; context 50: 49 and 44.
// The old rule refused only prompts longer than 99 (49).
func TestSGLangValidateInputLengthRefusesAtMaxReqInputLen(t *testing.T) {
	for _, c := range []struct {
		pool, context, prompt int
		unservable            int64
	}{
		{100, 0, 93, 0},
		{100, 0, 94, 1},
		{100, 0, 99, 1},
		{100, 50, 43, 0},
		{100, 50, 44, 1},
		{100, 50, 49, 1},
		{60, 100, 53, 0}, // the pool binds: min(99, 59) - 5 = 54
		{60, 100, 54, 1},
	} {
		sum := runSGL(t, Config{MaxTotalNumTokens: c.pool, ContextLength: c.context}, Request{PromptTokens: c.prompt, OutputTokens: 1})
		if sum.UnservableRequests != c.unservable || sum.RequestsCompleted != 1-c.unservable {
			t.Errorf("pool %d context %d prompt %d: unservable %d completed %d, want %d unservable", c.pool, c.context, c.prompt,
				sum.UnservableRequests, sum.RequestsCompleted, c.unservable)
		}
	}
}

// A request asking for more outputs than fit is served with
// max_req_len - prompt - 1 of them, not refused: pool 100, P40 M100 gets
// 99 - 40 - 1 = 58 (kvcfg used to count it unservable, exit 3); context
// 50, P20 M40 gets 49 - 20 - 1 = 28 (kvcfg used to give 50 - 20 = 30).
func TestSGLangInitReqMaxNewTokensClipsToMaxReqLen(t *testing.T) {
	for _, c := range []struct {
		pool, context, prompt, output int
		want                          int64
		clipped                       int64
	}{
		{100, 0, 40, 100, 58, 1},
		{100, 0, 40, 58, 58, 0},
		{100, 50, 20, 40, 28, 1},
		{100, 50, 20, 28, 28, 0},
		{100, 50, 43, 10, 5, 1}, // the longest prompt keeps 49 - 43 - 1 = 5
	} {
		sum := runSGL(t, Config{MaxTotalNumTokens: c.pool, ContextLength: c.context}, Request{PromptTokens: c.prompt, OutputTokens: c.output})
		if sum.UnservableRequests != 0 || sum.OutputTokens != c.want || sum.ClippedRequests != c.clipped {
			t.Errorf("pool %d context %d P%d M%d: unservable %d outputs %d clipped %d, want 0, %d, %d", c.pool, c.context, c.prompt, c.output,
				sum.UnservableRequests, sum.OutputTokens, sum.ClippedRequests, c.want, c.clipped)
		}
	}
}

// retract_decode (schedule_batch.py): new_token_ratio = min(1, (sum of the
// survivors' outputs + 20 x survivors) / (sum of their max_new_tokens + 1)).
// S2's survivor A (21 outputs, max_new_tokens 60): 41 / 61, not 41 / 60.
func TestSGLangRetractRatioDividesByMaxNewTokensPlusOne(t *testing.T) {
	e, s := sglTest(t, Config{MaxTotalNumTokens: 100, ScheduleConservativeness: 0.1})
	e.arrive(Request{PromptTokens: 30, OutputTokens: 60}, 0)
	iter(e, s)
	e.arrive(Request{PromptTokens: 30, OutputTokens: 30}, 1)
	for range 22 {
		iter(e, s)
	}
	if e.retractions != 1 || e.ratio != 41.0/61 {
		t.Fatalf("retractions %d ratio %v, want 1 and 41/61 = 0.672131", e.retractions, e.ratio)
	}
}

// SGLang refuses to start when no prompt fits (tp_worker's assertion
// "Memory pool size is too small").
func TestSGLangMaxReqInputLenMustBePositive(t *testing.T) {
	for _, c := range []Config{{MaxTotalNumTokens: 6}, {MaxTotalNumTokens: 100, ContextLength: 6}} {
		c.Engine = EngineSGLang
		c.Time.ConstantStepS = 1
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v, want a config error", c, err)
		}
	}
	ok := Config{Engine: EngineSGLang, MaxTotalNumTokens: 7, ContextLength: 7, Time: TimeModel{ConstantStepS: 1}}
	if err := ok.Validate(); err != nil {
		t.Errorf("pool 7 context 7 (max_req_input_len 1): %v", err)
	}
}
