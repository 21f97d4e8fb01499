#include "internal.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

// SHA-256 (FIPS 180-4): a plain C compression for any CPU and a SHA-NI one for x86-64 CPUs
// that have the SHA extensions (two rounds per sha256rnds2).

static const uint32_t sha256_k[64] __attribute__((aligned(16))) = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static void sha256_blocks_portable(uint32_t *state, const uint8_t *blocks, size_t count) {
    for (; count > 0; count--, blocks += 64) {
        uint32_t w[64];
        for (int t = 0; t < 16; t++) w[t] = bs_load32be(blocks + 4 * t);
        for (int t = 16; t < 64; t++) {
            uint32_t s0 = bs_rotr32(w[t - 15], 7) ^ bs_rotr32(w[t - 15], 18) ^ (w[t - 15] >> 3);
            uint32_t s1 = bs_rotr32(w[t - 2], 17) ^ bs_rotr32(w[t - 2], 19) ^ (w[t - 2] >> 10);
            w[t] = w[t - 16] + s0 + w[t - 7] + s1;
        }
        uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
        uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
        for (int t = 0; t < 64; t++) {
            uint32_t t1 = h + (bs_rotr32(e, 6) ^ bs_rotr32(e, 11) ^ bs_rotr32(e, 25))
                        + (g ^ (e & (f ^ g))) + sha256_k[t] + w[t];
            uint32_t t2 = (bs_rotr32(a, 2) ^ bs_rotr32(a, 13) ^ bs_rotr32(a, 22))
                        + ((a & b) | (c & (a | b)));
            h = g; g = f; f = e; e = d + t1;
            d = c; c = b; b = a; a = t1 + t2;
        }
        state[0] += a; state[1] += b; state[2] += c; state[3] += d;
        state[4] += e; state[5] += f; state[6] += g; state[7] += h;
    }
}

#if defined(__x86_64__)
// SHA-NI keeps the state as two registers, ABEF and CDGH (A and C in the highest lanes).
// sha256rnds2 runs two rounds with W+K from the low half of its third operand, so each group
// of four schedule words feeds two of them, the second after moving the high half down.
// sha256msg1/sha256msg2 expand the schedule four words at a time:
// W[t..t+3] = msg2(msg1(W[t-16..], W[t-12..]) + W[t-7..t-4], W[t-4..]).

#define SHA256_QUAD(group, index)                                                            \
    wk = _mm_add_epi32(group, _mm_load_si128((const __m128i *)&sha256_k[4 * (index)]));    \
    cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);                                           \
    abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0e));

// Expands the group after g3 into the slot of g0, which the rounds no longer need.
#define SHA256_EXPAND(g0, g1, g2, g3)                                                        \
    g0 = _mm_sha256msg2_epu32(                                                               \
        _mm_add_epi32(_mm_sha256msg1_epu32(g0, g1), _mm_alignr_epi8(g3, g2, 4)), g3);

__attribute__((target("sha,sse4.1,ssse3")))
static void sha256_blocks_shani(uint32_t *state, const uint8_t *blocks, size_t count) {
    const __m128i swap_words = _mm_set_epi8(12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3);
    // state[] is A..H in memory order: lanes (low to high) {A,B,C,D} and {E,F,G,H}.
    __m128i dcba = _mm_loadu_si128((const __m128i *)&state[0]);
    __m128i hgfe = _mm_loadu_si128((const __m128i *)&state[4]);
    __m128i badc = _mm_shuffle_epi32(dcba, 0xb1);          // lanes {B,A,D,C}
    __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1b);          // lanes {H,G,F,E}
    __m128i abef = _mm_alignr_epi8(badc, efgh, 8);         // lanes {F,E,B,A}
    __m128i cdgh = _mm_blend_epi16(efgh, badc, 0xf0);      // lanes {H,G,D,C}
    for (; count > 0; count--, blocks += 64) {
        const __m128i abef_start = abef, cdgh_start = cdgh;
        __m128i g0 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(blocks + 0)), swap_words);
        __m128i g1 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(blocks + 16)), swap_words);
        __m128i g2 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(blocks + 32)), swap_words);
        __m128i g3 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(blocks + 48)), swap_words);
        __m128i wk;

        SHA256_QUAD(g0, 0)   SHA256_EXPAND(g0, g1, g2, g3)   // g0 = W[16..19]
        SHA256_QUAD(g1, 1)   SHA256_EXPAND(g1, g2, g3, g0)   // g1 = W[20..23]
        SHA256_QUAD(g2, 2)   SHA256_EXPAND(g2, g3, g0, g1)
        SHA256_QUAD(g3, 3)   SHA256_EXPAND(g3, g0, g1, g2)
        SHA256_QUAD(g0, 4)   SHA256_EXPAND(g0, g1, g2, g3)
        SHA256_QUAD(g1, 5)   SHA256_EXPAND(g1, g2, g3, g0)
        SHA256_QUAD(g2, 6)   SHA256_EXPAND(g2, g3, g0, g1)
        SHA256_QUAD(g3, 7)   SHA256_EXPAND(g3, g0, g1, g2)
        SHA256_QUAD(g0, 8)   SHA256_EXPAND(g0, g1, g2, g3)
        SHA256_QUAD(g1, 9)   SHA256_EXPAND(g1, g2, g3, g0)
        SHA256_QUAD(g2, 10)  SHA256_EXPAND(g2, g3, g0, g1)
        SHA256_QUAD(g3, 11)  SHA256_EXPAND(g3, g0, g1, g2)   // g3 = W[60..63]
        SHA256_QUAD(g0, 12)
        SHA256_QUAD(g1, 13)
        SHA256_QUAD(g2, 14)
        SHA256_QUAD(g3, 15)

        abef = _mm_add_epi32(abef, abef_start);
        cdgh = _mm_add_epi32(cdgh, cdgh_start);
    }
    // Undo the packing: back to {A,B,C,D} and {E,F,G,H}.
    __m128i feba = _mm_shuffle_epi32(abef, 0x1b);          // lanes {A,B,E,F}
    __m128i dchg = _mm_shuffle_epi32(cdgh, 0xb1);          // lanes {G,H,C,D}
    _mm_storeu_si128((__m128i *)&state[0], _mm_blend_epi16(feba, dchg, 0xf0));
    _mm_storeu_si128((__m128i *)&state[4], _mm_alignr_epi8(dchg, feba, 8));
}
#endif

static void sha256_blocks_auto(uint32_t *state, const uint8_t *blocks, size_t count) {
#if defined(__x86_64__)
    if (bs_cpu_features() & BS_CPU_SHA) {
        sha256_blocks_shani(state, blocks, count);
        return;
    }
#endif
    sha256_blocks_portable(state, blocks, count);
}

static bs_block_function sha256_compress(const bs_md_context *context) {
    return context->portable ? sha256_blocks_portable : sha256_blocks_auto;
}

void bs_sha256_init(bs_md_context *context, int portable) {
    static const uint32_t initial[8] = {
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
    };
    memset(context, 0, sizeof *context);
    memcpy(context->state, initial, sizeof initial);
    context->portable = portable != 0;
}

void bs_sha256_update(bs_md_context *context, const void *data, size_t length) {
    bs_md_update(context, data, length, sha256_compress(context));
}

void bs_sha256_final(const bs_md_context *context, uint8_t digest[32]) {
    bs_md_final(context, digest, 8, 1, sha256_compress(context));
}
