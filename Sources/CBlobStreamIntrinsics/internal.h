#ifndef BS_INTERNAL_H
#define BS_INTERNAL_H

#include "CBlobStreamIntrinsics.h"
#include <string.h>

// Unaligned loads and stores through memcpy: the compiler turns them into single moves, and
// they are defined behaviour for any address, which matters because callers hand us buffers
// at arbitrary offsets.
static inline uint32_t bs_load32le(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    return v;
}

static inline uint32_t bs_load32be(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    return v;
}

static inline uint64_t bs_load64le(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static inline uint32_t bs_rotl32(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }
static inline uint32_t bs_rotr32(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

/// Compresses `count` consecutive 64-byte blocks into `state`.
typedef void (*bs_block_function)(uint32_t *state, const uint8_t *blocks, size_t count);

/// Buffers partial blocks and hands whole ones to `compress`, straight from the caller's
/// memory when possible, so large updates never copy.
void bs_md_update(bs_md_context *context, const void *data, size_t length,
                  bs_block_function compress);

/// Pads a copy of the context (0x80, zeros, 64-bit bit length in the given byte order),
/// compresses it and writes `words` state words in the same byte order.
void bs_md_final(const bs_md_context *context, uint8_t *digest, int words, int big_endian,
                 bs_block_function compress);

#endif
