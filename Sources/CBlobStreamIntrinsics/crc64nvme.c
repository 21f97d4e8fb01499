#include "internal.h"
#include <pthread.h>

#if defined(__x86_64__)
#include <immintrin.h>
#include "clmul_fold.h"
#endif

// CRC-64/NVME: polynomial 0xAD93D23594C93659, reflected, init and xorout all ones; check value
// of "123456789" is 0xAE8B14860A799888. Portable code is slicing-by-8 with 64-bit tables; on
// x86-64 with PCLMULQDQ, four 128-bit accumulators fold 64 bytes per step, as in crc32.c.

// The polynomial bit-reversed: bit i is the coefficient of x^(63-i), x^64 implied.
static const uint64_t crc64nvme_polynomial = 0x9a6c9329ac4bc9b5;

typedef struct {
    uint64_t table[8][256];   // table[k][n]: the CRC of byte n followed by k zero bytes
    // Folding constants, {for the low qword, for the high qword} (see crc64_pclmul).
    uint64_t fold_by_4[2] __attribute__((aligned(16)));
    uint64_t fold_by_1[2] __attribute__((aligned(16)));
} crc64_tables;

static crc64_tables tables;
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

// x^k mod P in the reflected representation (bit i is the coefficient of x^(63-i)): start
// from 1 (bit 63) and multiply by x k times, a shift right with P folded back in. Computed
// rather than pasted, so a constant can never disagree with the polynomial.
static uint64_t x_power_mod_p(unsigned k) {
    uint64_t value = 1ull << 63;
    for (unsigned n = 0; n < k; n++) value = (value >> 1) ^ (crc64nvme_polynomial & (0 - (value & 1)));
    return value;
}

static void build_tables(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint64_t crc = n;
        for (int bit = 0; bit < 8; bit++) crc = (crc >> 1) ^ (crc64nvme_polynomial & (0 - (crc & 1)));
        tables.table[0][n] = crc;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint64_t crc = tables.table[0][n];
        for (int k = 1; k < 8; k++) {
            crc = tables.table[0][crc & 0xff] ^ (crc >> 8);
            tables.table[k][n] = crc;
        }
    }
    // Folding an accumulator A·x^64 + B forward by T bits multiplies A by x^(T+64) and B by
    // x^T; the reflected carry-less product carries one extra factor x, hence the -1.
    tables.fold_by_4[0] = x_power_mod_p(512 + 64 - 1);
    tables.fold_by_4[1] = x_power_mod_p(512 - 1);
    tables.fold_by_1[0] = x_power_mod_p(128 + 64 - 1);
    tables.fold_by_1[1] = x_power_mod_p(128 - 1);
}

static const crc64_tables *get_tables(void) {
    pthread_once(&tables_once, build_tables);
    return &tables;
}

static uint64_t slice8(const crc64_tables *tables, uint64_t crc, const uint8_t *data, size_t length) {
    const uint64_t (*t)[256] = tables->table;
    while (length > 0 && ((uintptr_t)data & 7) != 0) {
        crc = t[0][(crc ^ *data++) & 0xff] ^ (crc >> 8);
        length--;
    }
    for (; length >= 8; length -= 8, data += 8) {
        uint64_t word = bs_load64le(data) ^ crc;
        crc = t[7][word & 0xff] ^ t[6][(word >> 8) & 0xff] ^ t[5][(word >> 16) & 0xff]
            ^ t[4][(word >> 24) & 0xff] ^ t[3][(word >> 32) & 0xff] ^ t[2][(word >> 40) & 0xff]
            ^ t[1][(word >> 48) & 0xff] ^ t[0][word >> 56];
    }
    for (; length > 0; length--) crc = t[0][(crc ^ *data++) & 0xff] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__)
// `length` is at least 64 and a multiple of 16; `crc` is the pre-inverted register. Returns
// the register after the data.
__attribute__((target("pclmul,sse4.1")))
static uint64_t crc64_pclmul(const crc64_tables *t, uint64_t crc, const uint8_t *data, size_t length) {
    __m128i x = bs_clmul_fold_to_128(_mm_cvtsi64_si128((long long)crc), data, length, t->fold_by_4, t->fold_by_1);

    // The accumulator is congruent to everything so far, so the register is the CRC of its 16
    // bytes from a zero register: two table steps instead of a Barrett reduction, negligible
    // against the folding of the 64 or more bytes before.
    uint8_t rest[16];
    _mm_storeu_si128((__m128i *)rest, x);
    return slice8(t, 0, rest, sizeof rest);
}
#endif

uint64_t bs_crc64nvme_update(uint64_t crc, const void *data, size_t length, int portable) {
    const crc64_tables *t = get_tables();
    const uint8_t *bytes = data;
    uint64_t reg = ~crc;
#if defined(__x86_64__)
    if (!portable && length >= 64 && (bs_cpu_features() & BS_CPU_PCLMUL)) {
        size_t folded = length & ~(size_t)15;
        reg = crc64_pclmul(t, reg, bytes, folded);
        bytes += folded;
        length -= folded;
    }
#endif
    return ~slice8(t, reg, bytes, length);
}
