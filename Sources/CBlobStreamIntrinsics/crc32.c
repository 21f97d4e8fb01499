#include "crc_tables.h"
#include <pthread.h>

#if defined(__x86_64__)
#include <immintrin.h>
#include "clmul_fold.h"
#endif

// CRC-32 (IEEE 802.3, zlib's crc32). x86 has no instruction for this polynomial, but the CRC
// is a remainder of polynomial division, and carry-less multiplication (PCLMULQDQ) lets four
// 128-bit accumulators "fold" 64 bytes per step, followed by a Barrett reduction to 32 bits
// (Gopal et al., "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ", Intel 2009).

static const uint32_t crc32_polynomial = 0xedb88320;

static bs_crc_tables tables;
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void build_tables(void) { bs_crc_tables_build(&tables, crc32_polynomial); }

static const bs_crc_tables *get_tables(void) {
    pthread_once(&tables_once, build_tables);
    return &tables;
}

#if defined(__x86_64__)
// Folding constants for the bit-reflected polynomial 0x104c11db7: x^(k) mod P for the
// distances of a 4×128-bit fold (k1, k2), a 128-bit fold (k3, k4), the 64-to-32-bit step (k5),
// and the Barrett pair (P itself and floor(x^64 / P)).
static const uint64_t fold_by_4[2] __attribute__((aligned(16))) = {0x0154442bd4, 0x01c6e41596};
static const uint64_t fold_by_1[2] __attribute__((aligned(16))) = {0x01751997d0, 0x00ccaa009e};
static const uint64_t fold_64[2] __attribute__((aligned(16))) = {0x0163cd6124, 0};
static const uint64_t barrett[2] __attribute__((aligned(16))) = {0x01db710641, 0x01f7011641};

// `length` is at least 64 and a multiple of 16; `crc` is the pre-inverted register.
__attribute__((target("pclmul,sse4.1")))
static uint32_t crc32_pclmul(uint32_t crc, const uint8_t *data, size_t length) {
    __m128i x = bs_clmul_fold_to_128(_mm_cvtsi32_si128((int)crc), data, length, fold_by_4, fold_by_1);
    __m128i k = _mm_load_si128((const __m128i *)fold_by_1);
    // 128 → 64 bits: the low half moves 64 bits up the polynomial (times k4).
    const __m128i low32 = _mm_setr_epi32(-1, 0, -1, 0);
    x = _mm_xor_si128(_mm_srli_si128(x, 8), _mm_clmulepi64_si128(x, k, 0x10));
    // 64 → 32 bits (times k5).
    k = _mm_loadl_epi64((const __m128i *)fold_64);
    x = _mm_xor_si128(_mm_srli_si128(x, 4), _mm_clmulepi64_si128(_mm_and_si128(x, low32), k, 0x00));
    // Barrett reduction: the remainder is x - floor(x·µ / x^64)·P, all carry-less.
    k = _mm_load_si128((const __m128i *)barrett);
    __m128i q = _mm_clmulepi64_si128(_mm_and_si128(x, low32), k, 0x10);
    q = _mm_clmulepi64_si128(_mm_and_si128(q, low32), k, 0x00);
    return (uint32_t)_mm_extract_epi32(_mm_xor_si128(x, q), 1);
}
#endif

uint32_t bs_crc32_update(uint32_t crc, const void *data, size_t length, int portable) {
    const bs_crc_tables *t = get_tables();
    const uint8_t *bytes = data;
    uint32_t reg = ~crc;
#if defined(__x86_64__)
    if (!portable && length >= 64 && (bs_cpu_features() & BS_CPU_PCLMUL)) {
        size_t folded = length & ~(size_t)15;
        reg = crc32_pclmul(reg, bytes, folded);
        bytes += folded;
        length -= folded;
    }
#endif
    return ~bs_crc_slice8(t, reg, bytes, length);
}
