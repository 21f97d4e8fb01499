#include "crc_tables.h"
#include <pthread.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

// CRC-32C (Castagnoli). The SSE4.2 crc32 instruction does 8 bytes per instruction but has a
// latency of three cycles, so one stream of data leaves two thirds of the unit idle. The fast
// path therefore runs three independent CRCs over three adjacent stretches of the buffer and
// joins them with "append zeros" operators: CRC(A‖B) = shift(CRC(A), |B|) ^ CRC₀(B).

static const uint32_t crc32c_polynomial = 0x82f63b78;

// Stretch lengths for the three-stream loops. LONG keeps the joins (two table-driven shifts)
// rare for large buffers; SHORT lets medium buffers use all three streams too.
enum { crc32c_long = 8192, crc32c_short = 256 };

typedef struct {
    bs_crc_tables bytes;
    uint32_t shift_long[4][256];   // multiplies a register by x^(8·LONG) mod P, a byte at a time
    uint32_t shift_short[4][256];
} crc32c_tables;

static crc32c_tables tables;
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static uint32_t gf2_times(const uint32_t *matrix, uint32_t vector) {
    uint32_t sum = 0;
    for (; vector != 0; vector >>= 1, matrix++) {
        if (vector & 1) sum ^= *matrix;
    }
    return sum;
}

// The 32×32 bit matrix that appends `count` zero bytes (a power of two) to a register: start
// with one zero bit (shift right, fold the polynomial back in) and square until it covers
// 8·count bits.
static void build_shift(uint32_t shift[4][256], size_t count) {
    uint32_t matrix[32], square[32];
    matrix[0] = crc32c_polynomial;
    for (int n = 1; n < 32; n++) matrix[n] = 1u << (n - 1);
    for (size_t bits = 1; bits < 8 * count; bits *= 2) {
        for (int n = 0; n < 32; n++) square[n] = gf2_times(matrix, matrix[n]);
        memcpy(matrix, square, sizeof matrix);
    }
    for (uint32_t n = 0; n < 256; n++) {
        for (int k = 0; k < 4; k++) shift[k][n] = gf2_times(matrix, n << (8 * k));
    }
}

static void build_tables(void) {
    bs_crc_tables_build(&tables.bytes, crc32c_polynomial);
    build_shift(tables.shift_long, crc32c_long);
    build_shift(tables.shift_short, crc32c_short);
}

static const crc32c_tables *get_tables(void) {
    pthread_once(&tables_once, build_tables);
    return &tables;
}

#if defined(__x86_64__)
static inline uint32_t apply_shift(const uint32_t shift[4][256], uint32_t crc) {
    return shift[0][crc & 0xff] ^ shift[1][(crc >> 8) & 0xff] ^ shift[2][(crc >> 16) & 0xff]
         ^ shift[3][crc >> 24];
}

__attribute__((target("sse4.2")))
static uint32_t crc32c_sse42(const crc32c_tables *t, uint32_t crc, const uint8_t *data, size_t length) {
    uint64_t crc0 = crc;
    while (length > 0 && ((uintptr_t)data & 7) != 0) {
        crc0 = _mm_crc32_u8((uint32_t)crc0, *data++);
        length--;
    }
    // Three streams over 3·stride bytes, then the same with the shorter stride for the rest.
    const size_t strides[2] = {crc32c_long, crc32c_short};
    for (int s = 0; s < 2; s++) {
        const size_t stride = strides[s];
        const uint32_t (*shift)[256] = s == 0 ? t->shift_long : t->shift_short;
        while (length >= 3 * stride) {
            uint64_t crc1 = 0, crc2 = 0;
            const uint8_t *end = data + stride;
            do {
                crc0 = _mm_crc32_u64(crc0, bs_load64le(data));
                crc1 = _mm_crc32_u64(crc1, bs_load64le(data + stride));
                crc2 = _mm_crc32_u64(crc2, bs_load64le(data + 2 * stride));
                data += 8;
            } while (data < end);
            crc0 = apply_shift(shift, (uint32_t)crc0) ^ (uint32_t)crc1;
            crc0 = apply_shift(shift, (uint32_t)crc0) ^ (uint32_t)crc2;
            data += 2 * stride;
            length -= 3 * stride;
        }
    }
    for (; length >= 8; length -= 8, data += 8) crc0 = _mm_crc32_u64(crc0, bs_load64le(data));
    for (; length > 0; length--) crc0 = _mm_crc32_u8((uint32_t)crc0, *data++);
    return (uint32_t)crc0;
}
#endif

uint32_t bs_crc32c_update(uint32_t crc, const void *data, size_t length, int portable) {
    const crc32c_tables *t = get_tables();
    uint32_t reg = ~crc;
#if defined(__x86_64__)
    if (!portable && (bs_cpu_features() & BS_CPU_SSE42)) {
        return ~crc32c_sse42(t, reg, data, length);
    }
#endif
    return ~bs_crc_slice8(&t->bytes, reg, data, length);
}
