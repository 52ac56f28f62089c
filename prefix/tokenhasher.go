package prefix

import "crypto/sha256"

// TokenHasher computes BlockHash(parent, tokens, nil) — a block without
// extra keys — reusing its digest and buffers, so hashing allocates
// nothing (simulators hash millions of blocks). The zero value is ready;
// a TokenHasher is not safe for concurrent use.
type TokenHasher struct {
	e   encoder
	sum []byte
}

// Hash returns BlockHash(parent, tokens, nil).
func (t *TokenHasher) Hash(parent Hash, tokens []uint32) Hash {
	if t.e.h == nil {
		t.e.h = sha256.New()
		t.sum = make([]byte, 0, sha256.Size)
	}
	e := &t.e
	e.h.Reset()
	e.n = 0
	e.array(3)
	e.head(majorBytes, uint64(len(parent)))
	e.room(len(parent))
	e.n += copy(e.buf[e.n:], parent[:])
	e.array(uint64(len(tokens)))
	for _, v := range tokens {
		e.uint(uint64(v))
	}
	e.null()
	e.flush()
	t.sum = e.h.Sum(t.sum[:0])
	var out Hash
	copy(out[:], t.sum)
	return out
}
