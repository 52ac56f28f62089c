// Package dtype names the element types of a KV cache and resolves the
// --kv-cache-dtype string an engine is given into the storage type and
// layout it will really use.
//
// Two vocabularies meet here. DType is a tensor element type, the analogue
// of a torch dtype (bfloat16, float8_e4m3fn, float4_e2m1fn_x2, ...). Format
// is a KV cache storage recipe (fp8_e4m3, mxfp8, nvfp4, fp4_mx_block16,
// int4_g32, ...): element width plus per-block scale overhead. Format is the
// single source of truth for storage geometry: the sizing code, the pools and
// the codecs all take their byte counts from it.
package dtype

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnknown reports a dtype or format name that is not recognised.
var ErrUnknown = errors.New("dtype: unknown")

// DType is a tensor element type. The zero value is Invalid.
type DType uint8

// The element types a KV pool or a model can use.
const (
	Invalid     DType = iota
	Float32           // torch.float32
	Float16           // torch.float16
	BFloat16          // torch.bfloat16
	FP8E4M3FN         // torch.float8_e4m3fn (OCP E4M3)
	FP8E4M3FNUZ       // torch.float8_e4m3fnuz (AMD MI300)
	FP8E5M2           // torch.float8_e5m2
	FP4E2M1x2         // torch.float4_e2m1fn_x2: two E2M1 values packed in one byte
	E8M0              // torch.float8_e8m0fnu: MX power-of-two scale
	Int8              // torch.int8
	UInt8             // torch.uint8
	numDTypes
)

var dtypeInfo = [numDTypes]struct {
	name  string // canonical short name
	torch string // torch spelling
	size  int    // torch itemsize in bytes
	kv    string // canonical --kv-cache-dtype string for a pool of this element type
}{
	Invalid:     {"invalid", "invalid", 0, "invalid"},
	Float32:     {"float32", "torch.float32", 4, "fp32"},
	Float16:     {"float16", "torch.float16", 2, "fp16"},
	BFloat16:    {"bfloat16", "torch.bfloat16", 2, "bf16"},
	FP8E4M3FN:   {"float8_e4m3fn", "torch.float8_e4m3fn", 1, "fp8_e4m3"},
	FP8E4M3FNUZ: {"float8_e4m3fnuz", "torch.float8_e4m3fnuz", 1, "fp8_e4m3"},
	FP8E5M2:     {"float8_e5m2", "torch.float8_e5m2", 1, "fp8_e5m2"},
	FP4E2M1x2:   {"float4_e2m1fn_x2", "torch.float4_e2m1fn_x2", 1, "fp4_mx_block16"},
	E8M0:        {"float8_e8m0fnu", "torch.float8_e8m0fnu", 1, "e8m0"},
	Int8:        {"int8", "torch.int8", 1, "int8_g64"},
	UInt8:       {"uint8", "torch.uint8", 1, "int4_g32"},
}

func (d DType) valid() bool { return d > Invalid && d < numDTypes }

// String returns the canonical short name ("bfloat16", "float8_e4m3fn", ...).
func (d DType) String() string {
	if !d.valid() {
		return fmt.Sprintf("invalid(%d)", uint8(d))
	}
	return dtypeInfo[d].name
}

// Torch returns the torch spelling, as engines print it ("torch.bfloat16").
func (d DType) Torch() string {
	if !d.valid() {
		return "invalid"
	}
	return dtypeInfo[d].torch
}

// Size returns the element size in bytes as torch reports it (itemsize).
// FP4E2M1x2 is 1: one byte holds two values.
func (d DType) Size() int {
	if !d.valid() {
		return 0
	}
	return dtypeInfo[d].size
}

// KVString maps the element type of a KV pool back to its canonical
// --kv-cache-dtype string. It is total: every DType has an answer, so
// logging a resolved dtype can never fail (SGLang's TORCH_DTYPE_TO_KV_CACHE_STR
// covered only fp8 and bf16).
func (d DType) KVString() string {
	if !d.valid() {
		return "invalid"
	}
	return dtypeInfo[d].kv
}

// IsFP8 reports whether d is one of the 8-bit float data types.
func (d DType) IsFP8() bool { return d == FP8E4M3FN || d == FP8E4M3FNUZ || d == FP8E5M2 }

// MarshalText implements encoding.TextMarshaler with the canonical name.
func (d DType) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler via Parse.
func (d *DType) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

var dtypeAliases = map[string]DType{
	"float32": Float32, "float": Float32, "fp32": Float32, "f32": Float32,
	"float16": Float16, "half": Float16, "fp16": Float16, "f16": Float16,
	"bfloat16": BFloat16, "bf16": BFloat16,
	"float8_e4m3fn": FP8E4M3FN, "fp8_e4m3fn": FP8E4M3FN, "e4m3fn": FP8E4M3FN,
	"float8_e4m3fnuz": FP8E4M3FNUZ, "fp8_e4m3fnuz": FP8E4M3FNUZ, "e4m3fnuz": FP8E4M3FNUZ,
	"float8_e5m2": FP8E5M2, "fp8_e5m2": FP8E5M2, "e5m2": FP8E5M2,
	"float4_e2m1fn_x2": FP4E2M1x2,
	"float8_e8m0fnu":   E8M0, "e8m0": E8M0,
	"int8": Int8, "uint8": UInt8,
}

// Parse reads an element type name: the canonical name, the torch spelling
// ("torch.bfloat16") or a common alias ("bf16", "half", "float").
func Parse(s string) (DType, error) {
	k := strings.ToLower(strings.TrimSpace(s))
	k = strings.TrimPrefix(k, "torch.")
	if d, ok := dtypeAliases[k]; ok {
		return d, nil
	}
	return Invalid, fmt.Errorf("%w element type %q (accepted: float32, float16, bfloat16, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float4_e2m1fn_x2, float8_e8m0fnu, int8, uint8)", ErrUnknown, s)
}

// Auto is the --kv-cache-dtype value that follows the model and checkpoint;
// every engine accepts it.
const Auto = "auto"
