#include "internal.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

// SHA-1 (FIPS 180-4): a plain C compression for any CPU and a SHA-NI one for x86-64 CPUs that
// have the SHA extensions, which do four rounds per instruction.

static void sha1_blocks_portable(uint32_t *state, const uint8_t *blocks, size_t count) {
    for (; count > 0; count--, blocks += 64) {
        uint32_t w[80];
        for (int t = 0; t < 16; t++) w[t] = bs_load32be(blocks + 4 * t);
        for (int t = 16; t < 80; t++) w[t] = bs_rotl32(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
        uint32_t a = state[0], b = state[1], c = state[2], d = state[3], e = state[4];
        for (int t = 0; t < 80; t++) {
            uint32_t f, k;
            if (t < 20) { f = d ^ (b & (c ^ d)); k = 0x5a827999; }
            else if (t < 40) { f = b ^ c ^ d; k = 0x6ed9eba1; }
            else if (t < 60) { f = (b & c) | (d & (b | c)); k = 0x8f1bbcdc; }
            else { f = b ^ c ^ d; k = 0xca62c1d6; }
            uint32_t next = bs_rotl32(a, 5) + f + e + k + w[t];
            e = d; d = c; c = bs_rotl32(b, 30); b = a; a = next;
        }
        state[0] += a; state[1] += b; state[2] += c; state[3] += d; state[4] += e;
    }
}

#if defined(__x86_64__)
// The SHA-NI register layout: A in the highest lane of one register, E in the highest lane of
// another, message words reversed so W[0] is in the highest lane too. sha1rnds4 runs four
// rounds with the round function chosen by its immediate (0-3 for rounds 0-19, ..., 60-79);
// sha1nexte derives the E of the next four rounds from the A of four rounds before and adds it
// to the next message words; sha1msg1/sha1msg2 expand the schedule four words at a time:
// W[t..t+3] = msg2(msg1(W[t-16..], W[t-12..]) ^ W[t-8..], W[t-4..]).

// Each quad runs four rounds on schedule group i; `e_plus` holds E + W of that group. Afterwards it
// prepares E + W for group i+1 from the A that entered these rounds.
#define SHA1_QUAD(function, group_next)                                      \
    previous = abcd;                                                            \
    abcd = _mm_sha1rnds4_epu32(abcd, e_plus, function);                         \
    e_plus = _mm_sha1nexte_epu32(previous, group_next);

// Expands group i+4 into the slot of group i, which the rounds no longer need.
#define SHA1_EXPAND(g0, g1, g2, g3) \
    g0 = _mm_sha1msg2_epu32(_mm_xor_si128(_mm_sha1msg1_epu32(g0, g1), g2), g3);

__attribute__((target("sha,sse4.1,ssse3")))
static void sha1_blocks_shani(uint32_t *state, const uint8_t *blocks, size_t count) {
    const __m128i reverse = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __m128i abcd = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)state), 0x1b);
    __m128i e = _mm_set_epi32((int)state[4], 0, 0, 0);
    for (; count > 0; count--, blocks += 64) {
        const __m128i abcd_start = abcd, e_start = e;
        __m128i g0 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(blocks + 0)), reverse);
        __m128i g1 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(blocks + 16)), reverse);
        __m128i g2 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(blocks + 32)), reverse);
        __m128i g3 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(blocks + 48)), reverse);
        __m128i previous;
        __m128i e_plus = _mm_add_epi32(e, g0);

        SHA1_QUAD(0, g1)  SHA1_EXPAND(g0, g1, g2, g3)   // g0 = group 4
        SHA1_QUAD(0, g2)  SHA1_EXPAND(g1, g2, g3, g0)   // g1 = group 5
        SHA1_QUAD(0, g3)  SHA1_EXPAND(g2, g3, g0, g1)   // g2 = group 6
        SHA1_QUAD(0, g0)  SHA1_EXPAND(g3, g0, g1, g2)   // g3 = group 7
        SHA1_QUAD(0, g1)  SHA1_EXPAND(g0, g1, g2, g3)   // group 8
        SHA1_QUAD(1, g2)  SHA1_EXPAND(g1, g2, g3, g0)   // group 9
        SHA1_QUAD(1, g3)  SHA1_EXPAND(g2, g3, g0, g1)   // group 10
        SHA1_QUAD(1, g0)  SHA1_EXPAND(g3, g0, g1, g2)   // group 11
        SHA1_QUAD(1, g1)  SHA1_EXPAND(g0, g1, g2, g3)   // group 12
        SHA1_QUAD(1, g2)  SHA1_EXPAND(g1, g2, g3, g0)   // group 13
        SHA1_QUAD(2, g3)  SHA1_EXPAND(g2, g3, g0, g1)   // group 14
        SHA1_QUAD(2, g0)  SHA1_EXPAND(g3, g0, g1, g2)   // group 15
        SHA1_QUAD(2, g1)  SHA1_EXPAND(g0, g1, g2, g3)   // group 16
        SHA1_QUAD(2, g2)  SHA1_EXPAND(g1, g2, g3, g0)   // group 17
        SHA1_QUAD(2, g3)  SHA1_EXPAND(g2, g3, g0, g1)   // group 18
        SHA1_QUAD(3, g0)  SHA1_EXPAND(g3, g0, g1, g2)   // group 19
        SHA1_QUAD(3, g1)
        SHA1_QUAD(3, g2)
        SHA1_QUAD(3, g3)
        // The last quad: the E to add to the saved state is derived like any other E.
        previous = abcd;
        abcd = _mm_sha1rnds4_epu32(abcd, e_plus, 3);
        e = _mm_sha1nexte_epu32(previous, e_start);
        abcd = _mm_add_epi32(abcd, abcd_start);
    }
    _mm_storeu_si128((__m128i *)state, _mm_shuffle_epi32(abcd, 0x1b));
    state[4] = (uint32_t)_mm_extract_epi32(e, 3);
}
#endif

static void sha1_blocks_auto(uint32_t *state, const uint8_t *blocks, size_t count) {
#if defined(__x86_64__)
    if (bs_cpu_features() & BS_CPU_SHA) {
        sha1_blocks_shani(state, blocks, count);
        return;
    }
#endif
    sha1_blocks_portable(state, blocks, count);
}

static bs_block_function sha1_compress(const bs_md_context *context) {
    return context->portable ? sha1_blocks_portable : sha1_blocks_auto;
}

void bs_sha1_init(bs_md_context *context, int portable) {
    static const uint32_t initial[5] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0};
    memset(context, 0, sizeof *context);
    memcpy(context->state, initial, sizeof initial);
    context->portable = portable != 0;
}

void bs_sha1_update(bs_md_context *context, const void *data, size_t length) {
    bs_md_update(context, data, length, sha1_compress(context));
}

void bs_sha1_final(const bs_md_context *context, uint8_t digest[20]) {
    bs_md_final(context, digest, 5, 1, sha1_compress(context));
}
