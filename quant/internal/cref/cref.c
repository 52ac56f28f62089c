// Scalar C reference of the kvcfg KV codecs, written from the spec (integer
// round-to-nearest-even narrowing, SGLang / OCP / flashinfer block recipes).
// Benchmarks compare the Go codecs with it; tests assert identical bytes.
#include <stdint.h>
#include <string.h>
#include <stddef.h>
#include "cref.h"

// The reference is meant to be scalar: -O3 -march=native would otherwise let
// gcc auto-vectorise some loops with AVX-512. cgo does not accept
// -fno-tree-vectorize in #cgo CFLAGS, so it is set here (gcc; clang ignores
// this pragma and builds -O3 as given).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-tree-vectorize")
#endif

static inline uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline float bf2f(uint16_t b) { return u2f((uint32_t)b << 16); }
static inline uint16_t f2bf(float f) {
	uint32_t u = f2u(f);
	if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0;
	return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
static inline float pow2f(int k) {
	if (k > 127) return u2f(0x7F800000u);
	if (k >= -126) return u2f((uint32_t)(k + 127) << 23);
	if (k >= -149) return u2f(1u << (k + 149));
	return 0.0f;
}

// Generic RNE narrowing (spec 1.8) for E4M3FN: m=3, bias=7, max 0x7E.
static inline uint8_t e4m3(float x, int sat) {
	uint32_t u = f2u(x), a = u & 0x7FFFFFFFu;
	uint8_t s = (uint8_t)((u >> 31) << 7);
	if (a > 0x7F800000u) return sat ? 0x7F : (s | 0x7F);
	uint32_t mag = 0;
	int over = a == 0x7F800000u;
	if (!over) {
		int e; uint32_t sig;
		if ((a >> 23) == 0) { e = -126; sig = a; } else { e = (int)(a >> 23) - 127; sig = (a & 0x7FFFFFu) | 0x800000u; }
		int shift = 20, te = e + 7;
		if (e < -6) { shift += -6 - e; te = 0; }
		if (shift <= 25) {
			uint32_t q = sig >> shift, r = sig & ((1u << shift) - 1), h = 1u << (shift - 1);
			if (r > h || (r == h && (q & 1))) q++;
			mag = te == 0 ? q : ((uint32_t)(te - 1) << 3) + q;
		}
		over = mag > 0x7E;
	}
	if (over) return sat ? (s | 0x7E) : (s | 0x7F);
	return s | (uint8_t)mag;
}

static float e4m3_value(uint8_t c) {
	uint32_t s = (uint32_t)(c >> 7) << 31;
	int E = (c >> 3) & 15, M = c & 7;
	if ((c & 0x7F) == 0x7F) return u2f(s | 0x7FC00000u);
	float v = E == 0 ? (float)M * pow2f(-9) : (1.0f + (float)M / 8.0f) * pow2f(E - 7);
	return u2f(s | f2u(v));
}

static const float e2m1_vals[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};

static inline int ceil_log2(float q) {
	uint32_t u = f2u(q);
	return (int)(u >> 23) - 127 + ((u & 0x7FFFFFu) != 0);
}

void cref_fp8_encode_bf16(uint8_t *dst, const uint16_t *src, size_t n, int sat) {
	for (size_t i = 0; i < n; i++) dst[i] = e4m3(bf2f(src[i]), sat);
}

static uint16_t fp8_lut[256];

void cref_init(void) {
	for (int c = 0; c < 256; c++) fp8_lut[c] = f2bf(e4m3_value((uint8_t)c));
}

void cref_fp8_decode_bf16(uint16_t *dst, const uint8_t *src, size_t n) {
	for (size_t i = 0; i < n; i++) dst[i] = fp8_lut[src[i]];
}

// SGLang fp4_mx_block16: e = ceil(log2(max(amax/6, 1e-10))), y = x/2^e,
// code = (y<0)<<3 | count(|y| >= bounds).
void cref_block16_encode_bf16(uint8_t *dst, uint8_t *scales, const uint16_t *src, size_t n) {
	for (size_t b = 0; b < n / 16; b++) {
		const uint16_t *x = src + 16 * b;
		float amax = 0;
		for (int i = 0; i < 16; i++) { float a = bf2f(x[i] & 0x7FFF); if (a > amax) amax = a; }
		if (!(amax < u2f(0x7F800000u))) { scales[b] = 0xFF; memset(dst + 8 * b, 0, 8); continue; }
		float q = amax / 6.0f;
		if (q < 1e-10f) q = 1e-10f;
		int e = ceil_log2(q);
		scales[b] = (uint8_t)(e + 127);
		float inv = pow2f(-e);
		uint8_t c[16];
		for (int i = 0; i < 16; i++) {
			float y = bf2f(x[i]) * inv, a = y < 0 ? -y : y;
			uint8_t k = (a >= 0.25f) + (a >= 0.75f) + (a >= 1.25f) + (a >= 1.75f) + (a >= 2.5f) + (a >= 3.5f) + (a >= 5.0f);
			c[i] = k | (y < 0 ? 8 : 0);
		}
		for (int j = 0; j < 8; j++) dst[8 * b + j] = c[2 * j] | (uint8_t)(c[2 * j + 1] << 4);
	}
}

static inline uint8_t e2m1_rne(float y) {
	float a = y < 0 ? -y : y;
	uint8_t k = (a > 0.25f) + (a >= 0.75f) + (a > 1.25f) + (a >= 1.75f) + (a > 2.5f) + (a >= 3.5f) + (a > 5.0f);
	return k | (uint8_t)((f2u(y) >> 31) << 3);
}

static void fp4_decode(uint16_t *dst, const uint8_t *src, const uint8_t *scales, size_t n, int bs, int e8m0) {
	for (size_t b = 0; b < n / bs; b++) {
		uint8_t s = scales[b];
		float f = (e8m0 && s == 0xFF) ? u2f(0x7FC00000u) : pow2f((int)s - 127);
		for (int j = 0; j < bs / 2; j++) {
			uint8_t q = src[b * bs / 2 + j];
			dst[b * bs + 2 * j] = f2bf(e2m1_vals[q & 15] * f);
			dst[b * bs + 2 * j + 1] = f2bf(e2m1_vals[q >> 4] * f);
		}
	}
}

void cref_block16_decode_bf16(uint16_t *dst, const uint8_t *src, const uint8_t *scales, size_t n) {
	fp4_decode(dst, src, scales, n, 16, 0);
}

// OCP MXFP4: e = max(floor(log2 amax) - 2, -127), RNE with saturation.
void cref_mxfp4_encode_bf16(uint8_t *dst, uint8_t *scales, const uint16_t *src, size_t n) {
	for (size_t b = 0; b < n / 32; b++) {
		const uint16_t *x = src + 32 * b;
		uint16_t amax = 0;
		for (int i = 0; i < 32; i++) { uint16_t a = x[i] & 0x7FFF; if (a > amax) amax = a; }
		if (amax >= 0x7F80) { scales[b] = 0xFF; memset(dst + 16 * b, 0, 16); continue; }
		int e = (int)(amax >> 7) - 127 - 2;
		if (e < -127) e = -127;
		scales[b] = (uint8_t)(e + 127);
		float inv = pow2f(-e);
		for (int j = 0; j < 16; j++)
			dst[16 * b + j] = e2m1_rne(bf2f(x[2 * j]) * inv) | (uint8_t)(e2m1_rne(bf2f(x[2 * j + 1]) * inv) << 4);
	}
}

void cref_mxfp4_decode_bf16(uint16_t *dst, const uint8_t *src, const uint8_t *scales, size_t n) {
	fp4_decode(dst, src, scales, n, 32, 1);
}

// flashinfer nvfp4 KV convention with decode-direction global scale g.
void cref_nvfp4_encode_bf16(uint8_t *dst, uint8_t *scales, const uint16_t *src, size_t n, float g) {
	float invg = 1.0f / g, rcp6 = 1.0f / 6.0f;
	for (size_t b = 0; b < n / 16; b++) {
		const uint16_t *x = src + 16 * b;
		float vmax = 0;
		for (int i = 0; i < 16; i++) { uint16_t a = x[i] & 0x7FFF; if (a <= 0x7F80) { float v = bf2f(a); if (v > vmax) vmax = v; } }
		float sf = invg * (vmax * rcp6);
		uint8_t sf8 = e4m3(sf, 1);
		float os = vmax != 0 ? 1.0f / (e4m3_value(sf8) * g) : 0.0f;
		scales[b] = sf8;
		for (int j = 0; j < 8; j++) {
			float y0 = bf2f(x[2 * j]) * os, y1 = bf2f(x[2 * j + 1]) * os;
			uint8_t c0 = y0 != y0 ? 7 : e2m1_rne(y0), c1 = y1 != y1 ? 7 : e2m1_rne(y1);
			dst[8 * b + j] = c0 | (uint8_t)(c1 << 4);
		}
	}
}

void cref_nvfp4_decode_bf16(uint16_t *dst, const uint8_t *src, const uint8_t *scales, size_t n, float g) {
	for (size_t b = 0; b < n / 16; b++) {
		float sf = e4m3_value(scales[b]);
		for (int j = 0; j < 8; j++) {
			uint8_t q = src[8 * b + j];
			dst[16 * b + 2 * j] = f2bf(e2m1_vals[q & 15] * sf * g);
			dst[16 * b + 2 * j + 1] = f2bf(e2m1_vals[q >> 4] * sf * g);
		}
	}
}

// SGLang mxfp8: sb = clamp(ceil(log2(max(amax,1e-30)/448)) + 127, 0, 254),
// data = e4m3(clamp(x / 2^(sb-127), +-448)).
void cref_mxfp8_encode_bf16(uint8_t *dst, uint8_t *scales, const uint16_t *src, size_t n) {
	for (size_t b = 0; b < n / 32; b++) {
		const uint16_t *x = src + 32 * b;
		float amax = 0;
		for (int i = 0; i < 32; i++) { float a = bf2f(x[i] & 0x7FFF); if (a > amax) amax = a; }
		if (!(amax < u2f(0x7F800000u))) { scales[b] = 0xFF; memset(dst + 32 * b, 0, 32); continue; }
		if (amax < 1e-30f) amax = 1e-30f;
		int sb = ceil_log2(amax / 448.0f) + 127;
		if (sb < 0) sb = 0;
		if (sb > 254) sb = 254;
		scales[b] = (uint8_t)sb;
		float inv = pow2f(127 - sb);
		for (int i = 0; i < 32; i++) {
			float y = bf2f(x[i]) * inv;
			if (y > 448.0f) y = 448.0f;
			if (y < -448.0f) y = -448.0f;
			dst[32 * b + i] = e4m3(y, 1);
		}
	}
}

void cref_mxfp8_decode_bf16(uint16_t *dst, const uint8_t *src, const uint8_t *scales, size_t n) {
	for (size_t b = 0; b < n / 32; b++) {
		float f = scales[b] == 0xFF ? u2f(0x7FC00000u) : pow2f((int)scales[b] - 127);
		for (int i = 0; i < 32; i++) dst[32 * b + i] = f2bf(e4m3_value(src[32 * b + i]) * f);
	}
}
