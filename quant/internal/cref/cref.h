#include <stdint.h>
#include <stddef.h>
void cref_init(void);
void cref_fp8_encode_bf16(uint8_t *dst, const uint16_t *src, size_t n, int sat);
void cref_fp8_decode_bf16(uint16_t *dst, const uint8_t *src, size_t n);
void cref_block16_encode_bf16(uint8_t *dst, uint8_t *scales, const uint16_t *src, size_t n);
void cref_block16_decode_bf16(uint16_t *dst, const uint8_t *src, const uint8_t *scales, size_t n);
void cref_mxfp4_encode_bf16(uint8_t *dst, uint8_t *scales, const uint16_t *src, size_t n);
void cref_mxfp4_decode_bf16(uint16_t *dst, const uint8_t *src, const uint8_t *scales, size_t n);
void cref_nvfp4_encode_bf16(uint8_t *dst, uint8_t *scales, const uint16_t *src, size_t n, float g);
void cref_nvfp4_decode_bf16(uint16_t *dst, const uint8_t *src, const uint8_t *scales, size_t n, float g);
void cref_mxfp8_encode_bf16(uint8_t *dst, uint8_t *scales, const uint16_t *src, size_t n);
void cref_mxfp8_decode_bf16(uint16_t *dst, const uint8_t *src, const uint8_t *scales, size_t n);
