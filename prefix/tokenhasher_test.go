package prefix

import (
	"testing"
)

func TestTokenHasherMatchesBlockHash(t *testing.T) {
	var th TokenHasher
	parent := NoneHash("0")
	for _, n := range []int{0, 1, 16, 23, 200} {
		toks := make([]uint32, n)
		for i := range toks {
			toks[i] = uint32(i*7919) << (i % 24)
		}
		want, err := BlockHash(parent, toks, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := th.Hash(parent, toks); got != want {
			t.Errorf("%d tokens: %s, want %s", n, got, want)
		}
		parent = want
	}
	toks := make([]uint32, 16)
	if a := testing.AllocsPerRun(100, func() { th.Hash(parent, toks) }); a != 0 {
		t.Errorf("%v allocations per block", a)
	}
}
