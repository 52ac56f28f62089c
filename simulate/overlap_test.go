package simulate

import (
	"context"
	"testing"
)

func runReqs(t *testing.T, cfg Config, reqs []Request) *Summary {
	t.Helper()
	cfg.Time = TimeModel{ConstantStepS: 1}
	sum, err := Run(context.Background(), cfg, &SliceSource{Reqs: reqs})
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// TestSGLangOverlapSchedulerResultsOneStepLate: under event_loop_overlap a
// batch's results are processed after the next batch is scheduled. Pool
// 100, radix cache off, A and B P60 M2 at t=0; B (total 63) does not fit
// beside A (remaining 37): NO_TOKEN, latch.
//
//	non-overlap: It1 prefill A (out 1) | It2 decode A: out 2, freed |
//	  It3 idle (latch cleared) | It4 prefill B | It5 decode B.
//	overlap: It1 prefill A | It2 decode A (slot 41; A's first token
//	  arrives) | It3 decode A again (slot 42: A's last token is still in
//	  flight; then A finishes and frees 42) | It4 idle | It5 prefill B |
//	  It6, It7 decode B.
//
// So overlap runs 6 steps (4 decodes) where the loop runs 4 (2), holds 61
// tokens at its peak against 60, and B's first token comes a step later.
func TestSGLangOverlapSchedulerResultsOneStepLate(t *testing.T) {
	reqs := []Request{{PromptTokens: 60, OutputTokens: 2}, {PromptTokens: 60, OutputTokens: 2}}
	cfg := Config{Engine: EngineSGLang, MaxTotalNumTokens: 100, DisableRadixCache: true}
	for _, c := range []struct {
		overlap                         bool
		steps, decodes, reqSteps, peak  int64
		ttft, duration, firstDecodeStep float64
	}{
		{overlap: false, steps: 4, decodes: 2, reqSteps: 4, peak: 60, ttft: 2, duration: 4},
		{overlap: true, steps: 6, decodes: 4, reqSteps: 6, peak: 61, ttft: 2.5, duration: 6},
	} {
		cfg.OverlapSchedule = c.overlap
		sum := runReqs(t, cfg, reqs)
		if sum.Steps != c.steps || sum.DecodeSteps != c.decodes || sum.RequestSteps != c.reqSteps || sum.PeakKVTokens != c.peak ||
			!near(sum.MeanTTFTEstS, c.ttft) || !near(sum.DurationEstS, c.duration) || sum.RequestsCompleted != 2 || sum.OutputTokens != 4 {
			t.Errorf("overlap %v: steps %d decodes %d request-steps %d peak %d ttft %v duration %v completed %d outputs %d; want %d %d %d %d %v %v 2 4",
				c.overlap, sum.Steps, sum.DecodeSteps, sum.RequestSteps, sum.PeakKVTokens, sum.MeanTTFTEstS, sum.DurationEstS,
				sum.RequestsCompleted, sum.OutputTokens, c.steps, c.decodes, c.reqSteps, c.peak, c.ttft, c.duration)
		}
	}
}

// TestSGLangOverlapPageCountSeqlenModPage: with pages, the overlap
// scheduler's check_decode_mem counts a new page for every request whose
// seqlen (prompt + outputs processed so far, one result behind) is a
// multiple of the page (new_page_count_next_decode); the non-overlap loop
// tests (seqlen - 1) % page. Either way it is the page the next token
// opens: under overlap a request of the batch in flight holds seqlen slots.
// Page 4, A P8 M6: before each decode A's seqlen is 8, 9, 10, 11, 12, 13
// (the sixth decode runs while A's last token is in flight) and the
// decodes at seqlen 8 and 12 open a page.
func TestSGLangOverlapPageCountSeqlenModPage(t *testing.T) {
	for _, overlap := range []bool{false, true} {
		e, s := sglTest(t, Config{MaxTotalNumTokens: 64, PageSize: 4, OverlapSchedule: overlap})
		e.arrive(Request{PromptTokens: 8, OutputTokens: 6}, 0)
		var seqlens, pages []int
		for e.busy() {
			if len(e.run) > 0 && e.live > 0 && !e.latch && e.waitq.len() == 0 {
				r := e.run[0]
				seq := r.P + r.out
				lag := 0
				if !overlap {
					lag = 1
				}
				formula := 0
				if (seq-lag)%e.ps == 0 {
					formula = e.ps
				}
				if got := e.decodeNeed(e.run); got != formula {
					t.Fatalf("overlap %v: seqlen %d: decodeNeed %d, SGLang's count %d", overlap, seq, got, formula)
				}
				if overlap {
					seqlens = append(seqlens, seq)
					pages = append(pages, formula)
				}
			}
			iter(e, s)
		}
		if overlap && (len(seqlens) != 6 || seqlens[0] != 8 || seqlens[5] != 13 || pages[0] != 4 || pages[1] != 0 || pages[4] != 4 || pages[5] != 0) {
			t.Errorf("overlap: seqlens %v pages %v, want 8..13 with pages at 8 and 12", seqlens, pages)
		}
	}
}

// TestSGLangEvictShortfallVersusWholeNeed: evict_from_tree_cache with 3
// slots free and 5 needed. The tree holds two unlocked leaves, X (2
// tokens, least recently used) then Y (10). The newest main evicts the
// shortfall, 2: X alone (available 5, Y stays cached); released versions
// evict the whole 5: X then Y (available 15, nothing cached).
func TestSGLangEvictShortfallVersusWholeNeed(t *testing.T) {
	for _, c := range []struct {
		shortfall            bool
		available, evictable int
	}{{true, 5, 10}, {false, 15, 0}} {
		e, _ := sglTest(t, Config{MaxTotalNumTokens: 20, EvictShortfall: c.shortfall})
		x, err := e.alloc.Alloc(nil, 2)
		if err != nil {
			t.Fatal(err)
		}
		e.tree.insert([]uint32{1, 2}, x)
		y, err := e.alloc.Alloc(nil, 10)
		if err != nil {
			t.Fatal(err)
		}
		e.tree.insert([]uint32{7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, y)
		if _, err := e.alloc.Alloc(nil, 5); err != nil {
			t.Fatal(err)
		}
		if e.alloc.Available() != 3 || e.tree.evictable != 12 {
			t.Fatalf("setup: available %d evictable %d, want 3 12", e.alloc.Available(), e.tree.evictable)
		}
		e.evictFor(5)
		if e.alloc.Available() != c.available || e.tree.evictable != c.evictable {
			t.Errorf("shortfall %v: available %d evictable %d, want %d %d", c.shortfall, e.alloc.Available(), e.tree.evictable, c.available, c.evictable)
		}
	}
}

// TestSGLangIgnoreEOSAdmissionProjectsPeak: with the radix cache disabled
// an ignore_eos request is admitted by add_one_req_ignore_eos. Pool 100, A
// P20 M10 runs (out 1, 80 free, its reservation 9 x 0.7 = 6.3); B P50 M30
// arrives. add_one_req: 50 + 30 + 1 = 81 >= 80 - 6.3 = 73.7: NO_TOKEN, B
// waits for A. add_one_req_ignore_eos: 50 <= min(80, 73.7); states
// sorted (9 left, 21 held) A, (30, 50) B; after B's prompt 30 free:
// 30 - 9 x 2 = 12 > 1 x 2, then 30 + 21 - 30 = 21 > 1: B is admitted at
// once and runs beside A.
func TestSGLangIgnoreEOSAdmissionProjectsPeak(t *testing.T) {
	reqs := []Request{{PromptTokens: 20, OutputTokens: 10}, {ArrivalS: 0.5, PromptTokens: 50, OutputTokens: 30}}
	for _, c := range []struct {
		ignoreEOS bool
		peakRun   int
		ttftB     float64
	}{{false, 1, 10.5}, {true, 2, 1.5}} {
		sum := runReqs(t, Config{Engine: EngineSGLang, MaxTotalNumTokens: 100, DisableRadixCache: true, IgnoreEOS: c.ignoreEOS}, reqs)
		// A's first token is at t=1.
		if sum.PeakRunning != c.peakRun || !near(sum.MeanTTFTEstS*2-1, c.ttftB) || sum.RequestsCompleted != 2 || *sum.Retractions != 0 {
			t.Errorf("ignore_eos %v: peak running %d, B's TTFT %v, completed %d, retractions %d; want %d %v 2 0",
				c.ignoreEOS, sum.PeakRunning, sum.MeanTTFTEstS*2-1, sum.RequestsCompleted, *sum.Retractions, c.peakRun, c.ttftB)
		}
	}
}

// TestVLLMRejectsRequestsOverMaxModelLen: vLLM's OpenAI server refuses a
// request whose prompt plus max_tokens exceeds max_model_len ("This
// model's maximum context length is M tokens. However, you requested N
// output tokens and your prompt contains at least P input tokens", HTTP
// 400) and the input processor a prompt longer than max_model_len: it
// neither caps nor truncates. max_model_len 64: 40 + 24 is served, 40 + 25
// and a 65-token prompt are refused.
func TestVLLMRejectsRequestsOverMaxModelLen(t *testing.T) {
	cfg := Config{Engine: EngineVLLM, NumGPUBlocks: 20, BlockSize: 16, MaxModelLen: 64}
	sum := runReqs(t, cfg, []Request{{PromptTokens: 40, OutputTokens: 24}, {PromptTokens: 40, OutputTokens: 25}, {PromptTokens: 65, OutputTokens: 1}})
	if sum.RequestsCompleted != 1 || sum.UnservableRequests != 2 || sum.OutputTokens != 24 {
		t.Errorf("completed %d unservable %d outputs %d, want 1 2 24", sum.RequestsCompleted, sum.UnservableRequests, sum.OutputTokens)
	}
}
