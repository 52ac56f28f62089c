package prefix_test

import (
	"crypto/sha256"
	"encoding/binary"
	"testing"

	"github.com/kvcfg/kvcfg/prefix"
)

// refCBOR is an independent canonical CBOR encoder for the value kinds
// BlockHash accepts, written from RFC 8949 sections 3 and 4.2.1.
func refCBOR(b []byte, v any) []byte {
	head := func(major byte, n uint64) {
		switch {
		case n < 24:
			b = append(b, major<<5|byte(n))
		case n < 1<<8:
			b = append(b, major<<5|24, byte(n))
		case n < 1<<16:
			b = append(b, major<<5|25, byte(n>>8), byte(n))
		case n < 1<<32:
			b = append(b, major<<5|26)
			b = binary.BigEndian.AppendUint32(b, uint32(n))
		default:
			b = append(b, major<<5|27)
			b = binary.BigEndian.AppendUint64(b, n)
		}
	}
	switch x := v.(type) {
	case nil:
		b = append(b, 0xf6)
	case bool:
		if x {
			b = append(b, 0xf5)
		} else {
			b = append(b, 0xf4)
		}
	case int64:
		if x < 0 {
			head(1, uint64(-1-x))
		} else {
			head(0, uint64(x))
		}
	case uint32:
		head(0, uint64(x))
	case string:
		head(3, uint64(len(x)))
		b = append(b, x...)
	case []byte:
		head(2, uint64(len(x)))
		b = append(b, x...)
	case []any:
		head(4, uint64(len(x)))
		for _, y := range x {
			b = refCBOR(b, y)
		}
	case []uint32:
		head(4, uint64(len(x)))
		for _, y := range x {
			head(0, uint64(y))
		}
	}
	return b
}

// FuzzBlockHash decodes bytes into a parent, tokens and nested extra keys
// and checks BlockHash against sha256 of refCBOR.
func FuzzBlockHash(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	f.Add([]byte{255, 0, 24, 25, 0xff, 0xff, 3, 'a', 'b', 7, 1, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		var parent prefix.Hash
		copy(parent[:], data)
		pos := 0
		next := func() byte {
			if pos >= len(data) {
				return 0
			}
			pos++
			return data[pos-1]
		}
		var toks []uint32
		for range int(next()) % 40 {
			toks = append(toks, binary.LittleEndian.Uint32([]byte{next(), next(), next(), next()})>>(next()%32))
		}
		var build func(depth int) any
		build = func(depth int) any {
			switch next() % 7 {
			case 0:
				return nil
			case 1:
				return int64(int8(next())) * int64(next()) << (next() % 40)
			case 2:
				return string(data[min(pos, len(data)):min(pos+int(next()%30), len(data))])
			case 3:
				return []byte{next(), next()}
			case 4:
				return next()%2 == 0
			default:
				if depth > 3 {
					return nil
				}
				var arr []any
				for range int(next()) % 5 {
					arr = append(arr, build(depth+1))
				}
				if arr == nil {
					arr = []any{}
				}
				return arr
			}
		}
		var extra []any
		if next()%2 == 1 {
			extra = []any{}
			for range int(next()) % 4 {
				extra = append(extra, build(0))
			}
		}
		got, err := prefix.BlockHash(parent, toks, extra)
		if err != nil {
			t.Fatal(err)
		}
		var ex any
		if extra != nil {
			ex = extra
		}
		want := sha256.Sum256(refCBOR(nil, []any{parent[:], toks, ex}))
		if got != prefix.Hash(want) {
			t.Fatalf("hash mismatch for tokens %v extra %#v", toks, extra)
		}
	})
}
