package simulate

import (
	"testing"
	"unsafe"
)

// A waiting request holds only its description (docs/simulate.md#memory):
// queued arrivals make no request, no token ids and no buffers.
func TestWaitingRequestHoldsOnlyItsDescription(t *testing.T) {
	if n := unsafe.Sizeof(qent{}); n > 56 {
		t.Errorf("a queue entry is %d bytes, want at most 56", n)
	}
	for _, eng := range []string{EngineSGLang, EngineVLLM} {
		s := testSim()
		var e engine
		if eng == EngineSGLang {
			e, _ = newSGLang(Config{Engine: eng, MaxTotalNumTokens: 1 << 20}, s)
		} else {
			e, _ = newVLLM(Config{Engine: eng, NumGPUBlocks: 1 << 16, BlockSize: 16}, s)
		}
		for i := range 3 * qChunk {
			e.arrive(Request{PromptTokens: 500, OutputTokens: 10, PrefixGroup: 1, PrefixTokens: 100, Session: i % 7}, int64(i))
		}
		if s.live != 0 || e.waiting() != 3*qChunk {
			t.Fatalf("%s: %d requests made, %d waiting", eng, s.live, e.waiting())
		}
		iter(e, s)
		if s.live == 0 || s.live > 300 {
			t.Errorf("%s: %d requests made by the first step, want those it considered", eng, s.live)
		}
	}
}

// The queue keeps FIFO order across chunks, pushes to the front (vLLM's
// preemption) and frees chunks as the front moves on.
func TestQueueChunks(t *testing.T) {
	var q queue
	want := []int64{}
	push := func(id int64, front bool) {
		if front {
			q.pushFront(qent{d: desc{id: id}})
			want = append([]int64{id}, want...)
		} else {
			q.pushBack(qent{d: desc{id: id}})
			want = append(want, id)
		}
	}
	check := func(what string) {
		t.Helper()
		if q.len() != len(want) {
			t.Fatalf("%s: %d entries, want %d", what, q.len(), len(want))
		}
		for i, id := range want {
			if q.at(i).d.id != id {
				t.Fatalf("%s: entry %d is %d, want %d", what, i, q.at(i).d.id, id)
			}
		}
	}
	for i := range int64(2*qChunk + 5) {
		push(i, false)
	}
	check("pushed back")
	q.popFront(qChunk + 3)
	want = want[qChunk+3:]
	check("popped")
	if len(q.chunks) != 2 {
		t.Errorf("%d chunks after the front moved past one, want 2", len(q.chunks))
	}
	for i := range int64(qChunk + 10) {
		push(-i-1, true)
	}
	check("pushed front")
	q.popFront(q.len())
	want = nil
	check("emptied")
	push(7, true)
	push(8, false)
	check("reused")
}
