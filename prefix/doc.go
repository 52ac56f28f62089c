// Package prefix computes prefix-cache block hashes compatible with vLLM's
// sha256_cbor scheme and describes the KV cache events (BlockStored,
// BlockRemoved, AllBlocksCleared) that engine-side indexes such as llm-d's
// consume, in vLLM's kv_cache_spec_kind vocabulary.
//
// A block hash chains the hash of the previous block, the block's token ids
// and optional extra keys (LoRA name, multimodal hashes, cache salt):
//
//	hash_i = sha256(canonical_cbor([hash_{i-1}, [tok...], extra_keys_or_null]))
//
// and the chain starts from NoneHash(seed) = sha256(canonical_cbor(seed)),
// vLLM's NONE_HASH when PYTHONHASHSEED=seed. Only full blocks are hashed.
// The 64-bit key on the wire (vLLM's int block hashes, llm-d's engine keys)
// is the low 64 bits of the digest read big-endian: Hash.Uint64.
//
// Everything in the package is a pure function or an immutable value and is
// safe for concurrent use.
package prefix
