#ifndef BS_CLMUL_FOLD_H
#define BS_CLMUL_FOLD_H

#if defined(__x86_64__)
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

// Carry-less-multiply folding shared by the reflected CRCs (CRC-32, CRC-64/NVME): only the
// constants and the final reduction differ between them.

// One fold: the low and high halves of `x` multiplied by their distance constants, plus the
// next 16 bytes.
__attribute__((target("pclmul,sse4.1")))
static inline __m128i bs_clmul_fold(__m128i x, __m128i constants, __m128i next) {
    __m128i low = _mm_clmulepi64_si128(x, constants, 0x00);
    __m128i high = _mm_clmulepi64_si128(x, constants, 0x11);
    return _mm_xor_si128(_mm_xor_si128(low, high), next);
}

// Folds `length` bytes (at least 64, a multiple of 16) into one 128-bit remainder congruent
// to them, `first` (the register as a 128-bit value) added to their first 16 bytes: four
// accumulators 64 bytes at a time with `fold_by_4`, then one with `fold_by_1`.
__attribute__((target("pclmul,sse4.1")))
static inline __m128i bs_clmul_fold_to_128(
    __m128i first, const uint8_t *data, size_t length, const uint64_t fold_by_4[2], const uint64_t fold_by_1[2]
) {
    __m128i x0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(data + 0)), first);
    __m128i x1 = _mm_loadu_si128((const __m128i *)(data + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(data + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(data + 48));
    data += 64;
    length -= 64;
    __m128i k = _mm_load_si128((const __m128i *)fold_by_4);
    for (; length >= 64; length -= 64, data += 64) {
        x0 = bs_clmul_fold(x0, k, _mm_loadu_si128((const __m128i *)(data + 0)));
        x1 = bs_clmul_fold(x1, k, _mm_loadu_si128((const __m128i *)(data + 16)));
        x2 = bs_clmul_fold(x2, k, _mm_loadu_si128((const __m128i *)(data + 32)));
        x3 = bs_clmul_fold(x3, k, _mm_loadu_si128((const __m128i *)(data + 48)));
    }
    k = _mm_load_si128((const __m128i *)fold_by_1);
    __m128i x = bs_clmul_fold(x0, k, x1);
    x = bs_clmul_fold(x, k, x2);
    x = bs_clmul_fold(x, k, x3);
    for (; length >= 16; length -= 16, data += 16) {
        x = bs_clmul_fold(x, k, _mm_loadu_si128((const __m128i *)data));
    }
    return x;
}
#endif

#endif
