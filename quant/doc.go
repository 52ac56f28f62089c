// Package quant converts KV cache values between float32/bf16/fp16 and the
// narrow storage formats of KV caches (FP8, MXFP8, block FP4, grouped int),
// bit-exact with the reference implementations they are named after.
//
// # Element formats
//
// Float is a narrow float (E4M3FN, E5M2, E4M3FNUZ, E2M1, BF16, FP16). Every
// narrowing from float32 goes through one integer round-to-nearest-even
// routine parameterised by the format (Float.Encode), with the overflow
// policy explicit: NonSat (OCP, ml_dtypes, PyTorch ≤ 2.11) or SatFinite
// (NVIDIA __NV_SATFINITE). Decoding uses lookup tables and is exact.
// EncodeE8M0 / DecodeE8M0 are the E8M0 cast used for MX scales.
//
// # KV recipes
//
// ForKV returns the codec of a KV cache dtype as dtype.LookupFormat names
// it; its Format() is that dtype.Format, the single source of storage
// geometry (payload bytes per element, scale bytes per block):
//
//   - fp8_e4m3, fp8_e5m2: per-tensor-scaled FP8 (SGLang k_scale / v_scale);
//     FP8 builds the FNUZ variant or a scaled one. Default policy NonSat,
//     as SGLang's plain pool write (x/scale in bf16, then .to(fp8)).
//   - mxfp8: E4M3 (saturating) with one E8M0 scale per 32 elements; SGLang's
//     ceil rule by default, OCP's floor rule with Options.Rule = ScaleFloor.
//   - fp4_mx_block16: SGLang's BlockFP4KVQuantizeUtil: 16-element blocks,
//     uint8 scale ceil(log2(max(amax/6, 1e-10))) + 127, midpoints rounded
//     away from zero, -0 coded as +0, low nibble = even element. A
//     [tokens, heads, head_dim] tensor encodes as payload
//     [tokens, heads, head_dim/2] and scales [tokens, heads·head_dim/16]
//     (Shape checks the geometry).
//   - mxfp4: OCP MXFP4: 32-element blocks, E8M0 scale floor(log2 amax) − 2,
//     E2M1 round-to-nearest-even with saturation.
//   - nvfp4: flashinfer's KV convention: E4M3 scale per 16 elements and a
//     per-tensor float32 global scale in the decode direction (Options.Scale,
//     SGLang's per-layer k_scale / v_scale, default 1): value =
//     e2m1 · e4m3 · g. Reciprocals are exact (the GPU's rcp.approx may
//     differ by one ulp at ties).
//   - int8_g64, int4_g32: SGLang PR #37798: fp16 scale per group of 64 / 32
//     channels, rint ties-to-even, int4 stored as q+8 with the even channel
//     in the low nibble.
//
// Values the references leave undefined are pinned and documented: a
// power-of-two block holding NaN or ±Inf gets scale 0xFF and decodes to
// NaN; E2M1 maps +NaN to 0x8 and −NaN to 0x0 as ml_dtypes does; nvfp4 codes
// a NaN product as +6; int groups holding NaN get the fp16 NaN scale.
//
// # Use
//
// Codecs are immutable: safe for concurrent use on disjoint buffers, and
// Encode/Decode never allocate. Buffers must have exactly the lengths the
// Format gives for the element count; anything else is ErrLength and
// nothing is written. Parallel splits large calls over goroutines.
//
// # Speed
//
// bf16 → FP8 is a 64 Ki-entry table (float32 input: 128 Ki entries with a
// sticky bit, exact for all 2^32 inputs); decoders use 256-entry tables and
// exponent arithmetic for power-of-two scales; scale exponents come from
// integer exponent fields, not math.Log2. The E2M1 power-of-two encoders
// subtract the block exponent from the bf16 bits and read the code, sign
// included, from one 64 Ki-entry table. Building with GOEXPERIMENT=simd on
// amd64 adds AVX-512 kernels (AVX2 where AVX-512 is missing) for the bf16
// FP8 / E2M1 encoders and the bf16 decoders; the default build is pure Go.
// docs/PERFORMANCE.md has the measurements.
package quant
