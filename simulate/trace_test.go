package simulate

import (
	"math"
	"slices"
	"testing"
)

// The worked traces of docs/simulate.md#worked-traces, step by step.

func testSim() *sim { return &sim{sum: &Summary{BlockedSteps: map[string]int64{}}} }

func sglTest(t *testing.T, cfg Config) (*sglang, *sim) {
	t.Helper()
	cfg.Engine = EngineSGLang
	cfg.Time.ConstantStepS = 1
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := testSim()
	e, err := newSGLang(cfg, s)
	if err != nil {
		t.Fatal(err)
	}
	return e, s
}

func vllmTest(t *testing.T, cfg Config) (*vllm, *sim) {
	t.Helper()
	cfg.Engine = EngineVLLM
	cfg.Time.ConstantStepS = 1
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := testSim()
	e, err := newVLLM(cfg, s)
	if err != nil {
		t.Fatal(err)
	}
	return e, s
}

func iter(e engine, s *sim) stepInfo {
	st := e.step(s.now)
	s.firsts, s.dones = s.firsts[:0], s.dones[:0]
	return st
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func findReq(rs []*req, id int64) *req {
	for _, r := range rs {
		if r.id == id {
			return r
		}
	}
	return nil
}

func TestSGLangS1AdmissionLatchEviction(t *testing.T) {
	e, s := sglTest(t, Config{MaxTotalNumTokens: 100})
	e.arrive(Request{PromptTokens: 40, OutputTokens: 10}, 0) // A
	e.arrive(Request{PromptTokens: 40, OutputTokens: 10}, 1) // B
	e.arrive(Request{PromptTokens: 10, OutputTokens: 10}, 2) // C
	st := iter(e, s)
	if !st.prefill || st.reqs != 1 || st.blocked != LimitKVPool || !e.latch {
		t.Fatalf("It1: %+v latch %v, want A alone admitted, B refused NO_TOKEN", st, e.latch)
	}
	if e.alloc.Available() != 60 || e.tree.evictable != 0 || e.tree.protected != 40 {
		t.Fatalf("It1: available %d evictable %d protected %d, want 60 0 40", e.alloc.Available(), e.tree.evictable, e.tree.protected)
	}
	for it := 2; it <= 10; it++ {
		st = iter(e, s)
		if st.prefill {
			t.Fatalf("It%d: prefill despite the latch", it)
		}
	}
	if !near(e.ratio, 0.7-9*(0.7-0.098)/600) || !near(e.ratio, 0.69097) && math.Abs(e.ratio-0.69097) > 1e-5 {
		t.Errorf("ratio after It10 = %v, want 0.69097", e.ratio)
	}
	if e.alloc.Available() != 51 || e.tree.evictable != 49 {
		t.Fatalf("after A finished: available %d evictable %d, want 51 49", e.alloc.Available(), e.tree.evictable)
	}
	st = iter(e, s) // It11: idle
	if !st.idle || e.latch || e.ratio != 0.7 {
		t.Fatalf("It11: %+v latch %v ratio %v, want idle, latch cleared, ratio reset", st, e.latch, e.ratio)
	}
	st = iter(e, s) // It12
	if !st.prefill || st.reqs != 2 || e.alloc.Available() != 1 {
		t.Fatalf("It12: %+v available %d, want B and C admitted, available 1", st, e.alloc.Available())
	}
	iter(e, s) // It13: evicts A's 9-token node
	if e.alloc.Available() != 8 || e.tree.evictable != 40 {
		t.Fatalf("It13: available %d evictable %d, want 8 and A's 40-token prompt left", e.alloc.Available(), e.tree.evictable)
	}
}

func TestSGLangS2RetractionRatioReset(t *testing.T) {
	e, s := sglTest(t, Config{MaxTotalNumTokens: 100, ScheduleConservativeness: 0.1})
	e.arrive(Request{PromptTokens: 30, OutputTokens: 60}, 0) // A
	iter(e, s)
	if e.alloc.Available() != 70 || e.latch {
		t.Fatalf("It1: available %d latch %v", e.alloc.Available(), e.latch)
	}
	e.arrive(Request{PromptTokens: 30, OutputTokens: 30}, 1) // B
	st := iter(e, s)
	if !st.prefill || st.reqs != 1 || e.alloc.Available() != 40 {
		t.Fatalf("It2: %+v available %d, want B admitted (30+30+1 = 61 < 65.87)", st, e.alloc.Available())
	}
	for it := 3; it <= 22; it++ {
		iter(e, s)
	}
	if e.alloc.Available() != 0 || !near(e.ratio, 0.07-20*(0.07-0.0098)/600) {
		t.Fatalf("It22: available %d ratio %v, want 0 and 0.067993", e.alloc.Available(), e.ratio)
	}
	iter(e, s) // It23: retract B
	if e.retractions != 1 || len(e.run) != 1 || e.run[0].id != 0 || e.waitq.len() != 1 || e.waitq.at(0).r.out != 21 {
		t.Fatalf("It23: retractions %d running %d waiting %d, want B retracted with 21 outputs", e.retractions, len(e.run), e.waitq.len())
	}
	if !near(e.ratio, 41.0/61) {
		t.Errorf("ratio after retraction %v, want (21+20)/(60+1) = 0.672131", e.ratio)
	}
	if e.alloc.Available() != 19 || e.tree.evictable != 30 {
		t.Errorf("It23: available %d evictable %d, want 19 and B's 30-token prompt", e.alloc.Available(), e.tree.evictable)
	}
	st = iter(e, s) // It24: B refused (31 >= 19 - 38 x 41/61 = -6.54), A decodes
	if st.prefill || st.blocked != LimitKVPool || !e.latch || !near(e.ratio, 41.0/61-(0.07-0.0098)/600) {
		t.Fatalf("It24: %+v latch %v ratio %v, want B refused and ratio 0.672031", st, e.latch, e.ratio)
	}
	// Run to the end: B is re-prefilled in full after A finishes.
	for i := 0; e.busy() && i < 200; i++ {
		iter(e, s)
	}
	if e.busy() || e.retractions != 1 || s.sum.RecomputedTokens != 50 {
		t.Errorf("end: busy %v retractions %d recomputed %d, want done, 1, 50 (B's 50 KV tokens, prompt evicted)", e.busy(), e.retractions, s.sum.RecomputedTokens)
	}
}

func TestSGLangS3PrefixHitsAndSplit(t *testing.T) {
	e, s := sglTest(t, Config{MaxTotalNumTokens: 100})
	a := make([]uint32, 40)
	for i := range a {
		a[i] = uint32(1000 + i)
	}
	e.arrive(Request{PromptIDs: a, OutputTokens: 5}, 0)
	for i := 0; i < 10 && e.busy(); i++ {
		iter(e, s)
	}
	if e.alloc.Available() != 56 || e.tree.evictable != 44 {
		t.Fatalf("after A: available %d evictable %d, want 56 44", e.alloc.Available(), e.tree.evictable)
	}
	b := append(slices.Clone(a), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	e.arrive(Request{PromptIDs: b, OutputTokens: 5}, 1)
	e.arrive(Request{PromptIDs: slices.Clone(a), OutputTokens: 5}, 2)
	s.sum.PromptTokens, s.sum.CachedPromptTokens = 0, 0
	st := iter(e, s)
	if st.reqs != 2 || st.newTokens != 11 || s.sum.CachedPromptTokens != 79 || s.sum.PromptTokens != 90 {
		t.Fatalf("batch %+v cached %d of %d, want #new-token 11, #cached-token 79 of 90", st, s.sum.CachedPromptTokens, s.sum.PromptTokens)
	}
	// The 40-token node was split at 39.
	var lens []int
	e.tree.walk(func(n *rnode) { lens = append(lens, len(n.key)) })
	slices.Sort(lens)
	if !slices.Contains(lens, 39) || !slices.Contains(lens, 1) {
		t.Errorf("tree node lengths %v, want the 40-token node split into 39 + 1", lens)
	}
}

func TestSGLangS4ChunkedReservesUpFront(t *testing.T) {
	e, s := sglTest(t, Config{MaxTotalNumTokens: 100, ChunkedPrefillSize: 32})
	e.arrive(Request{PromptTokens: 80, OutputTokens: 10}, 0) // A
	e.arrive(Request{PromptTokens: 10, OutputTokens: 5}, 1)  // B
	st := iter(e, s)
	if st.newTokens != 32 || st.blocked != LimitTokenBudget || e.alloc.Available() != 68 || e.chunked == nil {
		t.Fatalf("It1: %+v available %d, want a 32-token chunk of A", st, e.alloc.Available())
	}
	st = iter(e, s)
	if st.newTokens != 32 || st.reqs != 1 || e.alloc.Available() != 36 {
		t.Fatalf("It2: %+v available %d, want A's second chunk only", st, e.alloc.Available())
	}
	st = iter(e, s)
	if st.newTokens != 16 || st.blocked != LimitKVPool || !e.latch || e.alloc.Available() != 20 || e.chunked != nil {
		t.Fatalf("It3: %+v available %d latch %v, want A's last chunk, B refused", st, e.alloc.Available(), e.latch)
	}
	it := 3
	for ; it < 20; it++ {
		if e.waitq.len() == 0 {
			break
		}
		iter(e, s)
	}
	if it != 14 {
		t.Errorf("B admitted at It%d, want It14", it)
	}
}

func TestVLLMV1V2BudgetPreemptionRecompute(t *testing.T) {
	e, s := vllmTest(t, Config{NumGPUBlocks: 7, BlockSize: 16, MaxNumBatchedTokens: 64, MaxNumSeqs: 256})
	e.arrive(Request{PromptTokens: 40, OutputTokens: 20}, 0) // A
	e.arrive(Request{PromptTokens: 40, OutputTokens: 20}, 1) // B
	iter(e, s)
	A, B := findReq(e.run, 0), findReq(e.run, 1)
	if A == nil || B == nil || A.computed != 40 || B.computed != 24 || e.bp.NumFree() != 1 || A.out != 1 || B.out != 0 {
		t.Fatalf("step 1: free %d, want A 40 computed (3 blocks), B chunk of 24 (2 blocks), free 1", e.bp.NumFree())
	}
	iter(e, s)
	if A.computed != 41 || B.computed != 40 || B.out != 1 || e.bp.NumFree() != 0 {
		t.Fatalf("step 2: A %d B %d free %d", A.computed, B.computed, e.bp.NumFree())
	}
	for k := 3; k <= 9; k++ {
		iter(e, s)
	}
	if A.computed != 48 || B.computed != 47 {
		t.Fatalf("step 9: A %d B %d, want 48 47", A.computed, B.computed)
	}
	iter(e, s) // step 10: A needs a 4th block, B preempted
	if e.preemptions != 1 || len(e.run) != 1 || e.waitq.len() != 1 || e.waitq.at(0).r != B || B.computed != 0 || e.bp.NumFree() != 2 {
		t.Fatalf("step 10: preemptions %d running %d waiting %d free %d", e.preemptions, len(e.run), e.waitq.len(), e.bp.NumFree())
	}
	if B.P+B.out != 48 {
		t.Errorf("B tokens %d, want 48", B.P+B.out)
	}
	for k := 11; k <= 20; k++ {
		st := iter(e, s)
		if k < 20 && (st.blocked != LimitKVPool || e.waitq.len() != 1) {
			t.Fatalf("step %d: %+v, want B refused (needs 3 blocks, 2 free)", k, st)
		}
	}
	if len(e.run) != 0 || e.bp.NumFree() != 6 {
		t.Fatalf("step 20: A should be done; running %d free %d", len(e.run), e.bp.NumFree())
	}
	if q := e.bp.FreeQueue(); len(q) != 6 {
		t.Fatalf("free queue %v", q)
	}
	iter(e, s) // step 21: B resumes with 32 hit tokens
	if B.computed != 48 || s.sum.RecomputedTokens != 15 {
		t.Errorf("step 21: B computed %d recomputed %d, want 48 (32 hit + 16) and 47-32 = 15", B.computed, s.sum.RecomputedTokens)
	}
	if s.sum.CachedPromptTokens != 0 {
		t.Errorf("a resumed request's hits count in the hit rate: %d", s.sum.CachedPromptTokens)
	}
}

func TestVLLMV3BlockGranularHits(t *testing.T) {
	a := make([]uint32, 40)
	for i := range a {
		a[i] = uint32(5000 + i)
	}
	f := slices.Clone(a)
	f[5] = 1
	for _, c := range []struct {
		name   string
		prompt []uint32
		hit    int64
	}{
		{"C", a[:32], 16},
		{"D", a, 32},
		{"E", append(slices.Clone(a[:32]), 7), 32},
		{"F", f, 0},
	} {
		e, s := vllmTest(t, Config{NumGPUBlocks: 7, BlockSize: 16, MaxNumBatchedTokens: 64})
		e.arrive(Request{PromptIDs: slices.Clone(a), OutputTokens: 1}, 0)
		iter(e, s)
		s.sum.CachedPromptTokens = 0
		e.arrive(Request{PromptIDs: slices.Clone(c.prompt), OutputTokens: 1}, 1)
		iter(e, s)
		if s.sum.CachedPromptTokens != c.hit {
			t.Errorf("%s: hit %d, want %d", c.name, s.sum.CachedPromptTokens, c.hit)
		}
	}
}

func TestVLLMV4FreeQueueLRU(t *testing.T) {
	e, s := vllmTest(t, Config{NumGPUBlocks: 7, BlockSize: 16, MaxNumBatchedTokens: 64})
	x := make([]uint32, 64)
	for i := range x {
		x[i] = uint32(100 + i)
	}
	e.arrive(Request{PromptIDs: x, OutputTokens: 1}, 0)
	iter(e, s)
	if q := e.bp.FreeQueue(); !slices.Equal(q, []int32{5, 6, 4, 3, 2, 1}) {
		t.Fatalf("after X: free queue %v, want [5 6 4 3 2 1]", q)
	}
	e.arrive(Request{PromptTokens: 40, OutputTokens: 1}, 1)
	iter(e, s)
	if q := e.bp.FreeQueue(); !slices.Equal(q, []int32{3, 2, 1, 4, 6, 5}) {
		t.Fatalf("after Y: free queue %v, want [3 2 1 4 6 5]", q)
	}
	z := append(slices.Clone(x), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	s.sum.CachedPromptTokens = 0
	e.arrive(Request{PromptIDs: z, OutputTokens: 2}, 2)
	st := iter(e, s)
	if s.sum.CachedPromptTokens != 48 || st.newTokens != 26 {
		t.Fatalf("Z: hit %d new %d, want 48 and 26", s.sum.CachedPromptTokens, st.newTokens)
	}
	if q := e.bp.FreeQueue(); !slices.Equal(q, []int32{5}) {
		t.Errorf("after Z: free queue %v, want [5]", q)
	}
}

// A radix hit after the eviction of another branch: A = X+a and B = X+b
// share X; C's allocation evicts the least recently used leaf, A's branch
// [a]; D = X+b still hits 39 tokens (capped at P-1), E = X+a only X's 20.
func TestSGLangRadixHitAfterEvictingOtherBranch(t *testing.T) {
	e, s := sglTest(t, Config{MaxTotalNumTokens: 70})
	ids := func(base uint32, n int) []uint32 {
		out := make([]uint32, n)
		for i := range out {
			out[i] = base + uint32(i)
		}
		return out
	}
	x, a, b := ids(100, 20), ids(200, 20), ids(300, 20)
	xa, xb := append(slices.Clone(x), a...), append(slices.Clone(x), b...)
	hit := func(p []uint32) int64 {
		before := s.sum.CachedPromptTokens
		e.arrive(Request{PromptIDs: slices.Clone(p), OutputTokens: 1}, int64(e.waitq.len())+s.sum.RequestsCompleted+100)
		for i := 0; i < 5 && e.busy(); i++ {
			iter(e, s)
		}
		return s.sum.CachedPromptTokens - before
	}
	if h := hit(xa); h != 0 {
		t.Fatalf("A hit %d", h)
	}
	if h := hit(xb); h != 20 || e.alloc.Available() != 10 || e.tree.evictable != 60 {
		t.Fatalf("B hit %d, available %d, evictable %d; want 20, 10, 60", h, e.alloc.Available(), e.tree.evictable)
	}
	if h := hit(ids(900, 15)); h != 0 || e.alloc.Available() != 15 || e.tree.evictable != 55 {
		t.Fatalf("C: hit %d available %d evictable %d; want [a] evicted: 0, 15, 55", h, e.alloc.Available(), e.tree.evictable)
	}
	if h := hit(xb); h != 39 {
		t.Errorf("D = X+b hit %d, want 39", h)
	}
	if h := hit(xa); h != 20 {
		t.Errorf("E = X+a hit %d, want 20 (branch a was evicted)", h)
	}
}
