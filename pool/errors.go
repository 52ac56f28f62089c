package pool

import (
	"errors"
	"fmt"
)

// Sentinel errors of the pool package. Every error the package returns wraps
// one of them, so callers can test with errors.Is.
var (
	// ErrOutOfMemory reports an allocation the pool cannot satisfy. The
	// error is an *OutOfMemoryError carrying what was needed and what was
	// free; the allocator's state is unchanged.
	ErrOutOfMemory = errors.New("pool: out of memory")
	// ErrInvalid reports a malformed request: a negative length, a prefix
	// longer than its sequence, a last location that does not match the
	// prefix length, a token count that is not a whole number of pages.
	ErrInvalid = errors.New("pool: invalid request")
	// ErrBadLocation reports a location (token slot, page or request slot)
	// outside the pool or not currently allocated: freeing it would be a
	// double free.
	ErrBadLocation = errors.New("pool: bad location")
	// ErrLiveOutside reports a Resize refused because live allocations lie
	// beyond the new size.
	ErrLiveOutside = errors.New("pool: live allocation outside the new size")
	// ErrConfig reports an invalid Config, KVConfig or StateConfig.
	ErrConfig = errors.New("pool: invalid config")
	// ErrNoCodec reports a KV read or write on a buffer built without a codec.
	ErrNoCodec = errors.New("pool: no codec for the kv format")
)

// OutOfMemoryError is the error of a failed allocation. Need and Have are in
// the allocator's unit (Unit: "tokens", "pages" or "slots").
type OutOfMemoryError struct {
	// What names the pool ("token allocator", "swa pool", "request slots", ...).
	What string
	// Unit is the unit of Need and Have.
	Unit string
	// Need is what the request asked for.
	Need int
	// Have is what was available.
	Have int
}

// Error implements error.
func (e *OutOfMemoryError) Error() string {
	return fmt.Sprintf("pool: out of memory: %s needs %d %s, has %d", e.What, e.Need, e.Unit, e.Have)
}

// Unwrap makes errors.Is(err, ErrOutOfMemory) hold.
func (e *OutOfMemoryError) Unwrap() error { return ErrOutOfMemory }

func oom(what, unit string, need, have int) error {
	return &OutOfMemoryError{What: what, Unit: unit, Need: need, Have: have}
}

// maxHostBytes bounds any one pool's host allocation (1 TiB): configs that
// ask for more are refused by Validate instead of failing in make.
const maxHostBytes = 1 << 40
