package prefix

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"math"
)

// ErrExtraKey reports an extra key of a type canonical CBOR hashing does not
// support here (maps, floats, structs).
var ErrExtraKey = errors.New("prefix: unsupported extra key")

// ErrBlock reports a malformed hashing request (block size, token count).
var ErrBlock = errors.New("prefix: invalid block")

// Hash is a sha256 block hash (vLLM's BlockHash bytes).
type Hash [32]byte

// Uint64 is the 64-bit form of the hash used on the wire: the low 64 bits of
// the digest read as a big-endian integer (vLLM maybe_convert_block_hash,
// llm-d's engine key).
func (h Hash) Uint64() uint64 { return binary.BigEndian.Uint64(h[24:]) }

// String returns the digest in lower-case hex.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// MarshalText implements encoding.TextMarshaler (hex).
func (h Hash) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler (hex).
func (h *Hash) UnmarshalText(b []byte) error {
	if hex.DecodedLen(len(b)) != len(h) {
		return fmt.Errorf("%w: hash %q is not 64 hex digits", ErrBlock, b)
	}
	_, err := hex.Decode(h[:], b)
	if err != nil {
		return fmt.Errorf("%w: hash %q: %w", ErrBlock, b, err)
	}
	return nil
}

// NoneHash is vLLM's NONE_HASH for PYTHONHASHSEED=seed under sha256_cbor:
// sha256 of the canonical CBOR text string seed. (vLLM draws 32 random bytes
// when PYTHONHASHSEED is unset; hashes are then not reproducible.)
func NoneHash(seed string) Hash {
	var buf [64]byte
	b := appendHead(buf[:0], majorText, uint64(len(seed)))
	h := sha256.New()
	h.Write(b)
	h.Write([]byte(seed))
	var out Hash
	h.Sum(out[:0])
	return out
}

// BlockHash is vLLM's hash_block_tokens with sha256_cbor:
// sha256(canonical_cbor([parent, tokens, extra])). extra is encoded as CBOR
// null when nil (vLLM passes None when a block has no extra keys); otherwise
// as an array of its elements, which may be int, int64, uint64, string,
// []byte, bool, nil or a nested []any (a tuple).
func BlockHash(parent Hash, tokens []uint32, extra []any) (Hash, error) {
	var e encoder
	e.h = sha256.New()
	e.array(3)
	e.bytes(parent[:])
	e.array(uint64(len(tokens)))
	for _, t := range tokens {
		e.uint(uint64(t))
	}
	if extra == nil {
		e.null()
	} else if err := e.value(extra); err != nil {
		return Hash{}, err
	}
	e.flush()
	var out Hash
	e.h.Sum(out[:0])
	return out, nil
}

// Hasher hashes the full blocks of token sequences.
type Hasher struct {
	// BlockSize is the number of tokens per block (vLLM block_size, SGLang
	// page_size); must be positive.
	BlockSize int
	// Seed is the hash of the chain's virtual parent, usually NoneHash(seed).
	Seed Hash
}

// Hashes appends the chained hashes of the full blocks of tokens to dst.
// parent is the hash of the block before tokens[0] (nil: the chain starts at
// Seed). extra, when not nil, returns the extra keys of block i (nil for
// none); vLLM puts a cache salt in block 0 only and multimodal hashes in the
// blocks they overlap. A trailing partial block is not hashed.
func (h Hasher) Hashes(dst []Hash, parent *Hash, tokens []uint32, extra func(block int) []any) ([]Hash, error) {
	if h.BlockSize <= 0 {
		return dst, fmt.Errorf("%w: block size %d", ErrBlock, h.BlockSize)
	}
	prev := h.Seed
	if parent != nil {
		prev = *parent
	}
	for i := 0; (i+1)*h.BlockSize <= len(tokens); i++ {
		var ek []any
		if extra != nil {
			ek = extra(i)
		}
		next, err := BlockHash(prev, tokens[i*h.BlockSize:(i+1)*h.BlockSize], ek)
		if err != nil {
			return dst, fmt.Errorf("block %d: %w", i, err)
		}
		dst = append(dst, next)
		prev = next
	}
	return dst, nil
}

// CBOR major types.
const (
	majorUint  = 0
	majorNeg   = 1
	majorBytes = 2
	majorText  = 3
	majorArray = 4
)

// appendHead appends a canonical (shortest) CBOR head.
func appendHead(b []byte, major byte, v uint64) []byte {
	m := major << 5
	switch {
	case v < 24:
		return append(b, m|byte(v))
	case v <= math.MaxUint8:
		return append(b, m|24, byte(v))
	case v <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, m|25), uint16(v))
	case v <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, m|26), uint32(v))
	default:
		return binary.BigEndian.AppendUint64(append(b, m|27), v)
	}
}

// encoder streams canonical CBOR into a hash through a small buffer.
type encoder struct {
	h   hash.Hash
	buf [512]byte
	n   int
}

func (e *encoder) room(k int) {
	if e.n+k > len(e.buf) {
		e.flush()
	}
}

func (e *encoder) flush() {
	e.h.Write(e.buf[:e.n])
	e.n = 0
}

func (e *encoder) head(major byte, v uint64) {
	e.room(9)
	e.n = len(appendHead(e.buf[:e.n], major, v))
}

func (e *encoder) uint(v uint64)  { e.head(majorUint, v) }
func (e *encoder) array(n uint64) { e.head(majorArray, n) }
func (e *encoder) null()          { e.room(1); e.buf[e.n] = 0xf6; e.n++ }
func (e *encoder) raw(b []byte)   { e.flush(); e.h.Write(b) }
func (e *encoder) bytes(b []byte) { e.head(majorBytes, uint64(len(b))); e.raw(b) }
func (e *encoder) text(s string)  { e.head(majorText, uint64(len(s))); e.flush(); e.h.Write([]byte(s)) }
func (e *encoder) boolean(v bool) {
	e.room(1)
	if v {
		e.buf[e.n] = 0xf5
	} else {
		e.buf[e.n] = 0xf4
	}
	e.n++
}

func (e *encoder) int(v int64) {
	if v >= 0 {
		e.uint(uint64(v))
		return
	}
	e.head(majorNeg, uint64(-(v + 1)))
}

func (e *encoder) value(v any) error {
	switch x := v.(type) {
	case nil:
		e.null()
	case int:
		e.int(int64(x))
	case int32:
		e.int(int64(x))
	case int64:
		e.int(x)
	case uint32:
		e.uint(uint64(x))
	case uint64:
		e.uint(x)
	case string:
		e.text(x)
	case []byte:
		e.bytes(x)
	case Hash:
		e.bytes(x[:])
	case bool:
		e.boolean(x)
	case []any:
		e.array(uint64(len(x)))
		for i, y := range x {
			if err := e.value(y); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
	default:
		return fmt.Errorf("%w: %T", ErrExtraKey, v)
	}
	return nil
}
