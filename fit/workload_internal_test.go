package fit

import (
	"errors"
	"io"
	"testing"

	"github.com/kvcfg/kvcfg/simulate"
)

func TestRoundRobinShares(t *testing.T) {
	var reqs []simulate.Request
	for i := range 7 {
		reqs = append(reqs, simulate.Request{ArrivalS: float64(i), PromptTokens: i + 1, OutputTokens: 1})
	}
	for i, want := range [][]int{{1, 4, 7}, {2, 5}, {3, 6}} {
		src := &roundRobin{src: &simulate.SliceSource{Reqs: reqs}, k: 3, i: i}
		var got []int
		for {
			r, err := src.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, r.PromptTokens)
		}
		if len(got) != len(want) {
			t.Fatalf("replica %d got %v, want %v", i, got, want)
		}
		for j := range got {
			if got[j] != want[j] {
				t.Errorf("replica %d got %v, want %v", i, got, want)
			}
		}
	}
}
