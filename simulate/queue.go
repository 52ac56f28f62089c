package simulate

import "slices"

// desc is a waiting request's description: all arrive keeps of a request
// until it is first considered for admission (docs/simulate.md#memory).
// Its token ids and buffers are made then (sim.take).
type desc struct {
	arrival float64
	id      int64
	own     uint64    // token stream after the group prefix: the session's or the request's
	ids     *[]uint32 // the trace's prompt_ids (nil: made up)
	P, M    int32
	group   int32 // prefix group
	prefix  int32 // tokens from the group's stream
}

// qent is one waiting request: its description, and the request itself
// once it has been considered (a refused queue head, a retracted or
// preempted request).
type qent struct {
	d desc
	r *req
}

// qChunk is the entries of one queue chunk.
const qChunk = 1024

// queue is the waiting queue: a deque of fixed-size chunks, so that it
// never copies its entries to grow and frees chunks as its front moves
// on; a million waiting requests hold about 56 MB.
type queue struct {
	chunks [][]qent
	head   int // first entry's index in chunks[0]
	n      int
	spare  []qent // a freed chunk kept for the next one needed
}

func (q *queue) len() int { return q.n }

// at returns the i-th entry from the front.
func (q *queue) at(i int) *qent {
	i += q.head
	return &q.chunks[i/qChunk][i%qChunk]
}

func (q *queue) chunk() []qent {
	if c := q.spare; c != nil {
		q.spare = nil
		return c
	}
	return make([]qent, qChunk)
}

func (q *queue) pushBack(x qent) {
	i := q.head + q.n
	if i/qChunk == len(q.chunks) {
		q.chunks = append(q.chunks, q.chunk())
	}
	q.chunks[i/qChunk][i%qChunk] = x
	q.n++
}

func (q *queue) pushFront(x qent) {
	if q.head == 0 {
		q.chunks = slices.Insert(q.chunks, 0, q.chunk())
		q.head = qChunk
	}
	q.head--
	q.chunks[0][q.head] = x
	q.n++
}

// popFront drops the first k entries.
func (q *queue) popFront(k int) {
	for i := range k {
		*q.at(i) = qent{}
	}
	q.head += k
	q.n -= k
	if q.n == 0 {
		if len(q.chunks) > 0 {
			q.spare = q.chunks[0]
		}
		clear(q.chunks)
		q.chunks, q.head = q.chunks[:0], 0
		return
	}
	for q.head >= qChunk {
		q.spare = q.chunks[0]
		q.chunks[0] = nil
		q.chunks = q.chunks[1:]
		q.head -= qChunk
	}
}
