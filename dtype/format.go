package dtype

import (
	"fmt"
	"sort"
	"strings"
)

// Format is the storage recipe of a KV cache (or of a codec): how wide one
// element is and how many scale bytes each block of elements carries. It is
// the one place where storage geometry is written down; sizing, pools and
// codecs all derive their byte counts from it.
type Format struct {
	// Name is the canonical name ("bf16", "fp8_e4m3", "nvfp4", ...).
	Name string `json:"name"`
	// Element is the data element type as the engine's pool holds it.
	Element DType `json:"element"`
	// ElementBits is the number of bits one element occupies (16, 8 or 4).
	ElementBits int `json:"element_bits"`
	// BlockSize is the number of elements that share one scale; 0 means the
	// format has no per-block scale.
	BlockSize int `json:"block_size,omitempty"`
	// ScaleBytes is the size of one block scale in bytes.
	ScaleBytes int `json:"scale_bytes,omitempty"`
	// Scale is the element type of the block scale (E8M0, FP8E4M3FN, Float16).
	Scale DType `json:"scale,omitempty"`
	// Description is a one-line human description.
	Description string `json:"description"`
}

// DataBytes returns the payload bytes of n elements (no scales), rounding a
// trailing half byte of a 4-bit format up.
func (f Format) DataBytes(n int64) int64 {
	return (n*int64(f.ElementBits) + 7) / 8
}

// ScaleBytesFor returns the block-scale bytes of n elements: one scale per
// started block.
func (f Format) ScaleBytesFor(n int64) int64 {
	if f.BlockSize <= 0 {
		return 0
	}
	return (n + int64(f.BlockSize) - 1) / int64(f.BlockSize) * int64(f.ScaleBytes)
}

// Bytes returns the exact storage of n elements: payload plus block scales.
func (f Format) Bytes(n int64) int64 { return f.DataBytes(n) + f.ScaleBytesFor(n) }

// BytesPerElement returns the average storage per element including scales,
// e.g. 0.5625 for nvfp4 (4 bits + one byte per 16).
func (f Format) BytesPerElement() float64 {
	b := float64(f.ElementBits) / 8
	if f.BlockSize > 0 {
		b += float64(f.ScaleBytes) / float64(f.BlockSize)
	}
	return b
}

// Quantized reports whether the format is narrower than 16 bits.
func (f Format) Quantized() bool { return f.ElementBits < 16 }

var formats = map[string]Format{
	"fp32":           {Name: "fp32", Element: Float32, ElementBits: 32, Description: "IEEE float32"},
	"fp16":           {Name: "fp16", Element: Float16, ElementBits: 16, Description: "IEEE float16"},
	"bf16":           {Name: "bf16", Element: BFloat16, ElementBits: 16, Description: "bfloat16"},
	"fp8_e4m3":       {Name: "fp8_e4m3", Element: FP8E4M3FN, ElementBits: 8, Description: "FP8 E4M3 (e4m3fnuz on FNUZ hardware), per-tensor k/v scale"},
	"fp8_e5m2":       {Name: "fp8_e5m2", Element: FP8E5M2, ElementBits: 8, Description: "FP8 E5M2, per-tensor k/v scale"},
	"mxfp8":          {Name: "mxfp8", Element: FP8E4M3FN, ElementBits: 8, BlockSize: 32, ScaleBytes: 1, Scale: E8M0, Description: "MXFP8: E4M3 data, one E8M0 scale per 32 elements"},
	"nvfp4":          {Name: "nvfp4", Element: FP4E2M1x2, ElementBits: 4, BlockSize: 16, ScaleBytes: 1, Scale: FP8E4M3FN, Description: "NVFP4: E2M1 data, one E4M3 scale per 16 elements, fp32 global scale per tensor"},
	"fp4_mx_block16": {Name: "fp4_mx_block16", Element: FP4E2M1x2, ElementBits: 4, BlockSize: 16, ScaleBytes: 1, Scale: E8M0, Description: "SGLang block FP4: E2M1 data, one power-of-two uint8 scale per 16 elements"},
	"mxfp4":          {Name: "mxfp4", Element: FP4E2M1x2, ElementBits: 4, BlockSize: 32, ScaleBytes: 1, Scale: E8M0, Description: "OCP MXFP4: E2M1 data, one E8M0 scale per 32 elements"},
	"int8_g64":       {Name: "int8_g64", Element: Int8, ElementBits: 8, BlockSize: 64, ScaleBytes: 2, Scale: Float16, Description: "symmetric int8, one fp16 scale per 64 channels"},
	"int4_g32":       {Name: "int4_g32", Element: UInt8, ElementBits: 4, BlockSize: 32, ScaleBytes: 2, Scale: Float16, Description: "symmetric int4 (q+8 nibbles), one fp16 scale per 32 channels"},
	"int8ring_int4":  {Name: "int8ring_int4", Element: UInt8, ElementBits: 4, BlockSize: 32, ScaleBytes: 2, Scale: Float16, Description: "int4_g32 rows plus an int8_g64 ring of recent tokens (ring not counted per token)"},
}

// LookupFormat returns the storage format with the given canonical name. It
// also accepts the KV dtype aliases "bfloat16" and "float16".
func LookupFormat(name string) (Format, error) {
	k := strings.ToLower(strings.TrimSpace(name))
	switch k {
	case "bfloat16":
		k = "bf16"
	case "float16":
		k = "fp16"
	case "float32":
		k = "fp32"
	}
	if f, ok := formats[k]; ok {
		return f, nil
	}
	return Format{}, fmt.Errorf("%w storage format %q (accepted: %s)", ErrUnknown, name, strings.Join(FormatNames(), ", "))
}

// FormatNames lists the canonical format names, sorted.
func FormatNames() []string {
	names := make([]string, 0, len(formats))
	for n := range formats {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
