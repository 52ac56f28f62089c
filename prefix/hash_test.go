package prefix_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kvcfg/kvcfg/prefix"
)

func mustHash(t *testing.T, s string) prefix.Hash {
	t.Helper()
	var h prefix.Hash
	if err := h.UnmarshalText([]byte(s)); err != nil {
		t.Fatal(err)
	}
	return h
}

// Published vectors: vLLM v0.17.0 hash core (cbor2.dumps([parent, tokens,
// None], canonical=True) -> sha256), as recorded in the loxilb inference
// gateway's shared KV-hash fixtures (cicd/common/kv_hash/fixtures/
// kv_hash_vectors.json), which also pin NONE_HASH for PYTHONHASHSEED=0.
var (
	block0Tokens = []uint32{101, 202, 303, 404, 505, 606, 707, 808, 909, 1010, 1111, 1212, 1313, 1414, 1515, 1616}
	block1Tokens = []uint32{1717, 1818, 1919, 2020, 2121, 2222, 2323, 2424, 2525, 2626, 2727, 2828, 2929, 3030, 3131, 3232}
)

func TestNoneHashPublished(t *testing.T) {
	got := prefix.NoneHash("0").String()
	if want := "4e1195df020de59e0d65a33a4279f1183e7ae4e5d980e309f8b55adff2e61c3e"; got != want {
		t.Errorf("NoneHash(\"0\") = %s, want %s", got, want)
	}
}

func TestBlockHashPublished(t *testing.T) {
	tests := []struct {
		name       string
		parent     string
		tokens     []uint32
		wantDigest string
		wantKey    uint64
	}{
		{"block0 zero parent", "0000000000000000000000000000000000000000000000000000000000000000", block0Tokens,
			"8c0a1c7a0ea0f3ed0c543c28859440fae8821a38a9e83fb3c971ffe3d56197ea", 14515664427994421226},
		{"block1 chained", "8c0a1c7a0ea0f3ed0c543c28859440fae8821a38a9e83fb3c971ffe3d56197ea", block1Tokens,
			"da3fc2812685b7d6c6533bed5cdc08f7d5374524535773fa91dd4016fdd8b6ce", 10510627572844902094},
		{"block0 seed 0", "4e1195df020de59e0d65a33a4279f1183e7ae4e5d980e309f8b55adff2e61c3e", block0Tokens,
			"d450abdaf2c9ebdd0e0cbfbc4e24a5c07ff71dcab37be7426d4fa0e5fdb93342", 7876691182959014722},
		{"block1 seed 0", "d450abdaf2c9ebdd0e0cbfbc4e24a5c07ff71dcab37be7426d4fa0e5fdb93342", block1Tokens,
			"0d95d2dc02f528b32afbd33ebffedd911ed1978087b0a01679b4ddd62261c5db", 8769878286166771163},
		{"qwen2.5 block0", "4e1195df020de59e0d65a33a4279f1183e7ae4e5d980e309f8b55adff2e61c3e",
			[]uint32{785, 3974, 13876, 38835, 34208, 916, 279, 15678, 5562, 13, 44801, 2266, 25, 8287, 1411, 27217},
			"caba889d3604b3df8dcdd10e42088879dbda2a1da4d19650da393e3b3c4a3207", 15724667998076285447},
		{"qwen2.5 block1", "caba889d3604b3df8dcdd10e42088879dbda2a1da4d19650da393e3b3c4a3207",
			[]uint32{1161, 11567, 9477, 1687, 11756, 2252, 4640, 19120, 9500, 27711, 40538, 3891, 15045, 78, 4568, 64},
			"2793adec91bdc57e9fb06c5b8271ecfbe933691c1d547990b48007a01bb9a609", 13006404108087305737},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := prefix.BlockHash(mustHash(t, tt.parent), tt.tokens, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tt.wantDigest {
				t.Errorf("digest = %s, want %s", got, tt.wantDigest)
			}
			if got.Uint64() != tt.wantKey {
				t.Errorf("Uint64 = %d, want %d", got.Uint64(), tt.wantKey)
			}
		})
	}
}

func TestHasherChain(t *testing.T) {
	h := prefix.Hasher{BlockSize: 16, Seed: prefix.NoneHash("0")}
	toks := append(append(append([]uint32{}, block0Tokens...), block1Tokens...), 1, 2, 3) // partial tail ignored
	got, err := h.Hashes(nil, nil, toks, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []uint64{7876691182959014722, 8769878286166771163}
	if diff := cmp.Diff(want, prefix.Keys(nil, got)); diff != "" {
		t.Errorf("chain keys (-want +got):\n%s", diff)
	}
	// Continuing from block 0's hash gives block 1 again.
	cont, err := h.Hashes(nil, &got[0], block1Tokens, nil)
	if err != nil || len(cont) != 1 || cont[0] != got[1] {
		t.Errorf("continued chain = %v, %v; want [%s]", cont, err, got[1])
	}
	if _, err := (prefix.Hasher{}).Hashes(nil, nil, toks, nil); !errors.Is(err, prefix.ErrBlock) {
		t.Errorf("zero block size: err = %v, want ErrBlock", err)
	}
}

// TestExtraKeysReference checks extra-key encoding against CBOR bytes
// written out by hand from RFC 8949 (canonical: shortest heads).
func TestExtraKeysReference(t *testing.T) {
	parent := prefix.Hash{1}
	tests := []struct {
		name  string
		extra []any
		tail  string // CBOR of the extra element
	}{
		{"none", nil, "f6"},
		{"lora name and salt", []any{"my-lora", "salt"}, "82" + "676d792d6c6f7261" + "6473616c74"},
		{"mm hash with offset", []any{[]any{"abc", 3}}, "81" + "82" + "63616263" + "03"},
		{"ints", []any{0, 23, 24, 255, 256, 65536, -1, -25, int64(1) << 40}, "89" + "00" + "17" + "1818" + "18ff" + "190100" + "1a00010000" + "20" + "3818" + "1b0000010000000000"},
		{"bytes and bools", []any{[]byte{0xde, 0xad}, true, false, nil}, "84" + "42dead" + "f5" + "f4" + "f6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// [parent(bytes 32), [5, 1000], extra]
			want := "83" + "5820" + hex.EncodeToString(parent[:]) + "82" + "05" + "1903e8" + tt.tail
			raw, _ := hex.DecodeString(want)
			wantHash := sha256.Sum256(raw)
			got, err := prefix.BlockHash(parent, []uint32{5, 1000}, tt.extra)
			if err != nil {
				t.Fatal(err)
			}
			if got != prefix.Hash(wantHash) {
				t.Errorf("hash = %s, want sha256(%s) = %x", got, want, wantHash)
			}
		})
	}
	if _, err := prefix.BlockHash(parent, nil, []any{map[string]int{}}); !errors.Is(err, prefix.ErrExtraKey) {
		t.Errorf("map extra key: err = %v, want ErrExtraKey", err)
	}
	if _, err := prefix.BlockHash(parent, nil, []any{1.5}); !errors.Is(err, prefix.ErrExtraKey) {
		t.Errorf("float extra key: err = %v, want ErrExtraKey", err)
	}
}

func TestLongTokenArray(t *testing.T) {
	// 300 tokens force a two-byte array head and several buffer flushes.
	toks := make([]uint32, 300)
	raw := []byte{0x83, 0x58, 0x20}
	raw = append(raw, make([]byte, 32)...)
	raw = append(raw, 0x99, 0x01, 0x2c)
	for i := range toks {
		toks[i] = uint32(i * 70000)
		v := uint32(i * 70000)
		switch {
		case v < 24:
			raw = append(raw, byte(v))
		case v < 256:
			raw = append(raw, 0x18, byte(v))
		case v < 65536:
			raw = append(raw, 0x19, byte(v>>8), byte(v))
		default:
			raw = append(raw, 0x1a, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
		}
	}
	raw = append(raw, 0xf6)
	got, err := prefix.BlockHash(prefix.Hash{}, toks, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := sha256.Sum256(raw); got != prefix.Hash(want) {
		t.Errorf("hash = %s, want %x", got, want)
	}
}

func TestHashText(t *testing.T) {
	var h prefix.Hash
	if err := h.UnmarshalText([]byte("zz")); !errors.Is(err, prefix.ErrBlock) {
		t.Errorf("short hex: err = %v", err)
	}
	if err := h.UnmarshalText([]byte("zz" + "00000000000000000000000000000000000000000000000000000000000000")); !errors.Is(err, prefix.ErrBlock) {
		t.Errorf("bad hex: err = %v", err)
	}
}

func BenchmarkBlockHash(b *testing.B) {
	toks := make([]uint32, 16)
	for i := range toks {
		toks[i] = uint32(i * 1000)
	}
	b.ReportAllocs()
	var h prefix.Hash
	for b.Loop() {
		h, _ = prefix.BlockHash(h, toks, nil)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/16, "ns/token")
}
