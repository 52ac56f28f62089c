// Package sizing holds SGLang's KV pool configurators as pure formulas: the
// bytes one token costs across a rank's pools ("cell" or coeff) and the
// coeff+bias model `available_bytes = max_tokens*coeff + bias` solved from
// an available byte budget or from a token cap.
//
// Nothing here measures memory or reads flags; the configurator package
// feeds it numbers (SGLang's pool_configurator.py, [V3] rules).
package sizing

import (
	"errors"
	"fmt"
	"math"
)

// Errors. Every error returned by the package wraps one of them.
var (
	// ErrInvalid reports inputs that cannot describe a pool (negative
	// sizes, zero page size, ...).
	ErrInvalid = errors.New("sizing: invalid input")
	// ErrNoMemory reports a budget too small for one page of tokens.
	ErrNoMemory = errors.New("sizing: not enough memory")
	// ErrSWAFloor reports a hybrid SWA pool that cannot hold one request
	// (sliding window + page must fit in the SWA pool).
	ErrSWAFloor = errors.New("sizing: SWA pool cannot hold one request")
	// ErrSWAChunkCap reports an SWA chunk cap that leaves no full pool.
	ErrSWAChunkCap = errors.New("sizing: SWA pool cap leaves no room for the full pool")
	// ErrMamba reports a mamba state cache that cannot hold one request.
	ErrMamba = errors.New("sizing: mamba state cache too small")
)

// Kind names a configurator as SGLang does.
type Kind string

// The configurator kinds, in the factory's order of preference.
const (
	KindDSV4        Kind = "DSV4PoolConfigurator"
	KindSWAChunkCap Kind = "SWAChunkCapPoolConfigurator"
	KindHybridSWA   Kind = "HybridSWAPoolConfigurator"
	KindDefault     Kind = "DefaultPoolConfigurator"
)

// PoolConfig is SGLang's MemoryPoolConfig: the token capacities of a rank's
// pools. Full and SWA are set for hybrid SWA pools only.
type PoolConfig struct {
	// MaxTotalNumTokens is max_total_num_tokens (page aligned).
	MaxTotalNumTokens int64 `json:"max_total_num_tokens"`
	// FullMaxTotalNumTokens and SWAMaxTotalNumTokens are the hybrid SWA
	// sub-pool sizes; zero otherwise.
	FullMaxTotalNumTokens int64 `json:"full_max_total_num_tokens,omitempty"`
	SWAMaxTotalNumTokens  int64 `json:"swa_max_total_num_tokens,omitempty"`
	// Hybrid reports a hybrid SWA split (Full/SWA meaningful).
	Hybrid bool `json:"hybrid,omitempty"`
	// DSV4 holds DeepSeek-V4's compressed sub-pools (DSV4 only).
	DSV4 *DSV4Sizes `json:"dsv4,omitempty"`
	// Logs are the info lines the configurator prints.
	Logs []string `json:"logs,omitempty"`
}

// Configurator is one of SGLang's pool configurators.
type Configurator interface {
	// Kind names the configurator.
	Kind() Kind
	// CellSize is the bytes one token of max_total_num_tokens costs
	// (fractional for hybrid SWA, where the SWA pool is ratio-scaled).
	CellSize() float64
	// FromBytes is calculate_pool_sizes: the profiling path.
	FromBytes(available int64, page int) (PoolConfig, error)
	// FromMaxTokens is calculate_pool_sizes_from_max_tokens: the constraint
	// path after a user cap or the PP minimum.
	FromMaxTokens(tokens int64, page int) (PoolConfig, error)
}

// FloorPage rounds n down to a multiple of page (page ≤ 1 → n).
func FloorPage(n int64, page int) int64 {
	if page <= 1 {
		return n
	}
	return n / int64(page) * int64(page)
}

// CeilPage rounds n up to a multiple of page (page ≤ 1 → n).
func CeilPage(n int64, page int) int64 {
	if page <= 1 {
		return n
	}
	p := int64(page)
	return (n + p - 1) / p * p
}

func checkPage(page int) error {
	if page < 1 {
		return fmt.Errorf("%w: page size %d (must be ≥ 1)", ErrInvalid, page)
	}
	return nil
}

// floorDiv returns ⌊a/b⌋ for a float divisor like Python's int(a // b),
// clamped to int64 and never negative.
func floorDiv(a int64, b float64) int64 {
	if b <= 0 || a <= 0 {
		return 0
	}
	q := math.Floor(float64(a) / b)
	if q >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}

// Default is DefaultPoolConfigurator: one integer cell for MHA, MLA, DSA,
// FP4/MXFP8 pools and the full-attention part of mamba hybrids.
type Default struct {
	// Cell is the bytes per token (from MHACell, MLACell, ... and the draft
	// scaling).
	Cell int64
	// ZeroKVTokens is the zero-KV stage guard (docs/sglang.md#cell-size-zero-kv-stage): the token count used
	// when Cell is 0 (a stage without full-attention layers).
	ZeroKVTokens int64
}

// Kind implements Configurator.
func (d Default) Kind() Kind { return KindDefault }

// CellSize implements Configurator.
func (d Default) CellSize() float64 { return float64(d.Cell) }

// FromBytes implements Configurator.
func (d Default) FromBytes(available int64, page int) (PoolConfig, error) {
	if err := checkPage(page); err != nil {
		return PoolConfig{}, err
	}
	if d.Cell < 0 {
		return PoolConfig{}, fmt.Errorf("%w: negative cell size %d", ErrInvalid, d.Cell)
	}
	if d.Cell == 0 {
		return PoolConfig{MaxTotalNumTokens: FloorPage(d.ZeroKVTokens, page)}, nil
	}
	if available < 0 {
		available = 0
	}
	return PoolConfig{MaxTotalNumTokens: FloorPage(available/d.Cell, page)}, nil
}

// FromMaxTokens implements Configurator.
func (d Default) FromMaxTokens(tokens int64, page int) (PoolConfig, error) {
	if err := checkPage(page); err != nil {
		return PoolConfig{}, err
	}
	if tokens < 0 {
		tokens = 0
	}
	return PoolConfig{MaxTotalNumTokens: FloorPage(tokens, page)}, nil
}
