package pool

import (
	"errors"
	"fmt"

	"github.com/kvcfg/kvcfg/dtype"
)

// StateConfig configures a StatePool: the Mamba / linear-attention state
// slots of a hybrid model (docs/sglang.md#mamba-state, docs/sglang.md#pools-mamba-state).
type StateConfig struct {
	// Size is max_mamba_cache_size: the number of state slots (slot 0, the
	// padding slot, comes on top).
	Size int `json:"size"`
	// Layers is the number of mamba layers on this rank.
	Layers int `json:"layers"`
	// Conv are the conv-state shapes of one layer and slot; Temporal is the
	// SSM state shape.
	Conv     [][]int `json:"conv"`
	Temporal []int   `json:"temporal"`
	// ConvDType and SSMDType are the state element types (bfloat16 and
	// float32 by default in SGLang).
	ConvDType dtype.DType `json:"conv_dtype"`
	SSMDType  dtype.DType `json:"ssm_dtype"`
	// SlotRatio is the number of state slots budgeted per running request
	// (docs/sglang.md#max-running-requests: 1 without radix cache, 3 or more with it); 0 means 1.
	SlotRatio int `json:"slot_ratio,omitempty"`
	// SpecStateSize and DraftTokens add the speculative intermediate state
	// buffers [layers, SpecStateSize+1, DraftTokens, *shape]; 0 means none.
	SpecStateSize int `json:"spec_state_size,omitempty"`
	DraftTokens   int `json:"draft_tokens,omitempty"`
}

// Validate reports every problem with the config.
func (c StateConfig) Validate() error {
	var errs []error
	if c.Size < 0 || c.Layers <= 0 {
		errs = append(errs, fmt.Errorf("%w: state pool size %d, layers %d", ErrConfig, c.Size, c.Layers))
	}
	for i, s := range c.Conv {
		if shapeElems(s) <= 0 {
			errs = append(errs, fmt.Errorf("%w: conv shape %d %v", ErrConfig, i, s))
		}
	}
	if shapeElems(c.Temporal) <= 0 {
		errs = append(errs, fmt.Errorf("%w: temporal shape %v", ErrConfig, c.Temporal))
	}
	if c.ConvDType.Size() == 0 || c.SSMDType.Size() == 0 {
		errs = append(errs, fmt.Errorf("%w: state dtypes %v / %v", ErrConfig, c.ConvDType, c.SSMDType))
	}
	if c.SlotRatio < 0 || c.SpecStateSize < 0 || c.DraftTokens < 0 || (c.SpecStateSize > 0) != (c.DraftTokens > 0) {
		errs = append(errs, fmt.Errorf("%w: slot ratio %d, spec state size %d, draft tokens %d", ErrConfig, c.SlotRatio, c.SpecStateSize, c.DraftTokens))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	per := float64(c.convSlotBytes() + c.ssmSlotBytes())
	est := float64(c.Layers) * per * (float64(c.Size) + 1 + (float64(c.SpecStateSize)+1)*float64(c.DraftTokens))
	if est > maxHostBytes || c.Size >= maxRows {
		return fmt.Errorf("%w: state pool of about %.0f bytes is too large for host memory", ErrConfig, est)
	}
	return nil
}

// shapeElems is the element count of a shape, 0 for an empty shape, a
// non-positive dimension or a count beyond 2^40.
func shapeElems(s []int) int64 {
	if len(s) == 0 {
		return 0
	}
	n := int64(1)
	for _, d := range s {
		if d <= 0 || d > 1<<40 || n > (1<<40)/int64(d) {
			return 0
		}
		n *= int64(d)
	}
	return n
}

func (c StateConfig) convSlotBytes() int64 {
	var n int64
	for _, s := range c.Conv {
		n += shapeElems(s)
	}
	return n * int64(c.ConvDType.Size())
}

func (c StateConfig) ssmSlotBytes() int64 { return shapeElems(c.Temporal) * int64(c.SSMDType.Size()) }

func (c StateConfig) bytes() Bytes {
	l, k := int64(c.Layers), int64(c.Size+1)
	b := Bytes{Conv: l * k * c.convSlotBytes(), SSM: l * k * c.ssmSlotBytes()}
	if c.SpecStateSize > 0 {
		s, d := int64(c.SpecStateSize+1), int64(c.DraftTokens)
		b.SpecState = l * s * d * (c.convSlotBytes() + c.ssmSlotBytes())
	}
	return b
}

// StatePool is SGLang's MambaPool with its slot allocator: per-request
// conv and SSM state in tensors [layers, Size+1, *shape]; slot 0 is padding.
// Slots are reused FIFO.
//
// A StatePool is not safe for concurrent use.
type StatePool struct {
	cfg       StateConfig
	slots     *PagedAllocator
	conv      [][]byte // per conv tensor: [layers, size+1, *shape]
	ssm       []byte
	specConv  [][]byte
	specSSM   []byte
	convBytes []int64 // per conv tensor, one slot and layer
}

// NewStatePool allocates the state tensors cfg describes.
func NewStatePool(cfg StateConfig) (*StatePool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	slots, err := NewAllocator(AllocatorConfig{Size: cfg.Size, PageSize: 1, Name: "mamba state slots"})
	if err != nil {
		return nil, err
	}
	sp := &StatePool{cfg: cfg, slots: slots}
	l, k := int64(cfg.Layers), int64(cfg.Size+1)
	for _, s := range cfg.Conv {
		b := shapeElems(s) * int64(cfg.ConvDType.Size())
		sp.convBytes = append(sp.convBytes, b)
		sp.conv = append(sp.conv, make([]byte, l*k*b))
		if cfg.SpecStateSize > 0 {
			sp.specConv = append(sp.specConv, make([]byte, l*int64(cfg.SpecStateSize+1)*int64(cfg.DraftTokens)*b))
		}
	}
	sp.ssm = make([]byte, l*k*cfg.ssmSlotBytes())
	if cfg.SpecStateSize > 0 {
		sp.specSSM = make([]byte, l*int64(cfg.SpecStateSize+1)*int64(cfg.DraftTokens)*cfg.ssmSlotBytes())
	}
	return sp, nil
}

// Size is the number of state slots.
func (s *StatePool) Size() int { return s.slots.Size() }

// Available is the number of free state slots.
func (s *StatePool) Available() int { return s.slots.Available() }

// MaxRequests is the number of running requests the slots support at the
// configured slot ratio: Size / SlotRatio (docs/sglang.md#max-running-requests's cap).
func (s *StatePool) MaxRequests() int { return s.Size() / max(s.cfg.SlotRatio, 1) }

// Alloc takes n state slots, appended to dst; an *OutOfMemoryError (unit
// "slots") when fewer are free ("Not enough space for mamba cache" in SGLang).
func (s *StatePool) Alloc(dst []int32, n int) ([]int32, error) {
	if n < 0 {
		return dst, fmt.Errorf("%w: alloc of %d state slots", ErrInvalid, n)
	}
	if n > s.slots.Available() {
		s.slots.stats.FailedAllocs++
		return dst, oom("mamba state slots", "slots", n, s.slots.Available())
	}
	return s.slots.Alloc(dst, n)
}

// Free releases state slots.
func (s *StatePool) Free(slots ...int32) error { return s.slots.Free(slots) }

// Clear frees every slot.
func (s *StatePool) Clear() { s.slots.Clear() }

// Stats returns the slot allocator's counters (in slots).
func (s *StatePool) Stats() Stats { return s.slots.Stats() }

func (s *StatePool) index(layer int, slot int32) (int64, error) {
	if layer < 0 || layer >= s.cfg.Layers {
		return 0, fmt.Errorf("%w: mamba layer %d of %d", ErrInvalid, layer, s.cfg.Layers)
	}
	if slot < 0 || int(slot) > s.cfg.Size {
		return 0, fmt.Errorf("%w: state slot %d of %d", ErrBadLocation, slot, s.cfg.Size)
	}
	return int64(layer)*int64(s.cfg.Size+1) + int64(slot), nil
}

// Conv returns the bytes of conv tensor i for a layer and slot (a view).
func (s *StatePool) Conv(i, layer int, slot int32) ([]byte, error) {
	if i < 0 || i >= len(s.conv) {
		return nil, fmt.Errorf("%w: conv tensor %d of %d", ErrInvalid, i, len(s.conv))
	}
	j, err := s.index(layer, slot)
	if err != nil {
		return nil, err
	}
	b := s.convBytes[i]
	return s.conv[i][j*b : (j+1)*b : (j+1)*b], nil
}

// SSM returns the bytes of the SSM state of a layer and slot (a view).
func (s *StatePool) SSM(layer int, slot int32) ([]byte, error) {
	j, err := s.index(layer, slot)
	if err != nil {
		return nil, err
	}
	b := s.cfg.ssmSlotBytes()
	return s.ssm[j*b : (j+1)*b : (j+1)*b], nil
}

// Bytes reports the state tensors' memory by purpose.
func (s *StatePool) Bytes() Bytes { return s.cfg.bytes() }

// SpecSSM returns the speculative intermediate SSM state of a layer, spec
// slot (0..SpecStateSize, 0 is padding) and draft token (a view); an
// ErrInvalid when the pool has no speculative state.
func (s *StatePool) SpecSSM(layer int, slot int32, draft int) ([]byte, error) {
	j, err := s.specIndex(layer, slot, draft)
	if err != nil {
		return nil, err
	}
	b := s.cfg.ssmSlotBytes()
	return s.specSSM[j*b : (j+1)*b : (j+1)*b], nil
}

// SpecConv returns the speculative intermediate state of conv tensor i for
// a layer, spec slot and draft token (a view).
func (s *StatePool) SpecConv(i, layer int, slot int32, draft int) ([]byte, error) {
	if i < 0 || i >= len(s.specConv) {
		return nil, fmt.Errorf("%w: speculative conv tensor %d of %d", ErrInvalid, i, len(s.specConv))
	}
	j, err := s.specIndex(layer, slot, draft)
	if err != nil {
		return nil, err
	}
	b := s.convBytes[i]
	return s.specConv[i][j*b : (j+1)*b : (j+1)*b], nil
}

func (s *StatePool) specIndex(layer int, slot int32, draft int) (int64, error) {
	c := s.cfg
	if c.SpecStateSize == 0 {
		return 0, fmt.Errorf("%w: the state pool has no speculative state", ErrInvalid)
	}
	if layer < 0 || layer >= c.Layers || slot < 0 || int(slot) > c.SpecStateSize || draft < 0 || draft >= c.DraftTokens {
		return 0, fmt.Errorf("%w: speculative state layer %d, slot %d, draft %d (of %d, %d, %d)", ErrInvalid, layer, slot, draft, c.Layers, c.SpecStateSize, c.DraftTokens)
	}
	return (int64(layer)*int64(c.SpecStateSize+1)+int64(slot))*int64(c.DraftTokens) + int64(draft), nil
}
