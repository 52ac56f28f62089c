package pool

import "fmt"

// verify checks the allocator's internal consistency: every free-list and
// release-list page is a distinct page in range marked free, every other
// page in range is used, pages beyond the size are spare. It runs only with
// the kvcfg_invariants build tag and panics on a violation (a bug in this
// package, never bad input).
func (a *PagedAllocator) verify() {
	if !invariants {
		return
	}
	seen := make([]bool, a.capPages+1)
	check := func(pg int32, where string) {
		if pg < 1 || int(pg) > a.numPages || seen[pg] || a.state[pg] != pageFree {
			panic(fmt.Sprintf("pool invariant: %s page %d (in range %v, duplicate %v, state %d)", where, pg, pg >= 1 && int(pg) <= a.numPages, pg >= 1 && int(pg) <= a.capPages && seen[pg], a.state[max(min(int(pg), a.capPages), 0)]))
		}
		seen[pg] = true
	}
	for i := range a.n {
		j := a.head + i
		if j >= len(a.ring) {
			j -= len(a.ring)
		}
		check(a.ring[j], "free-list")
	}
	for _, pg := range a.release {
		check(pg, "release-list")
	}
	for pg := 1; pg <= a.capPages; pg++ {
		switch {
		case pg > a.numPages && a.state[pg] != pageSpare:
			panic(fmt.Sprintf("pool invariant: page %d beyond the size is in state %d", pg, a.state[pg]))
		case pg <= a.numPages && !seen[pg] && a.state[pg] != pageUsed:
			panic(fmt.Sprintf("pool invariant: page %d is neither free nor used (state %d)", pg, a.state[pg]))
		}
	}
	if a.ev != nil {
		for pg, h := range a.ev.hashed {
			if h && a.state[pg] != pageUsed {
				panic(fmt.Sprintf("pool invariant: hashed page %d is not in use", pg))
			}
		}
	}
}

// verify checks the SWA mapping: every mapped full slot is allocated in the
// full pool and maps to an allocated SWA slot, and no SWA slot is mapped
// twice.
func (s *SWAAllocator) verify() {
	if !invariants {
		return
	}
	s.full.verify()
	s.swa.verify()
	seen := map[int32]int32{}
	for l, v := range s.mapping {
		if v == 0 {
			continue
		}
		if !s.full.usedLoc(int32(l)) || !s.swa.usedLoc(v) {
			panic(fmt.Sprintf("pool invariant: full slot %d maps to swa slot %d but one is not allocated", l, v))
		}
		if o, dup := seen[v]; dup {
			panic(fmt.Sprintf("pool invariant: swa slot %d mapped from full slots %d and %d", v, o, l))
		}
		seen[v] = int32(l)
	}
}
