#include "internal.h"

void bs_md_update(bs_md_context *context, const void *data, size_t length,
                  bs_block_function compress) {
    const uint8_t *bytes = data;
    if (length == 0) return;
    context->length += length;
    if (context->buffered > 0) {
        size_t take = 64 - context->buffered;
        if (take > length) take = length;
        memcpy(context->buffer + context->buffered, bytes, take);
        context->buffered += (uint32_t)take;
        bytes += take;
        length -= take;
        if (context->buffered < 64) return;
        compress(context->state, context->buffer, 1);
        context->buffered = 0;
    }
    if (length >= 64) {
        size_t blocks = length / 64;
        compress(context->state, bytes, blocks);
        bytes += blocks * 64;
        length -= blocks * 64;
    }
    if (length > 0) {
        memcpy(context->buffer, bytes, length);
        context->buffered = (uint32_t)length;
    }
}

void bs_md_final(const bs_md_context *context, uint8_t *digest, int words, int big_endian,
                 bs_block_function compress) {
    uint32_t state[8];
    uint8_t tail[128];
    memcpy(state, context->state, sizeof state);
    size_t used = context->buffered;
    memcpy(tail, context->buffer, used);
    tail[used++] = 0x80;
    // The 8-byte length must end a block: one block if it still fits after the 0x80, else two.
    size_t total = used + 8 <= 64 ? 64 : 128;
    memset(tail + used, 0, total - used);
    uint64_t bits = context->length * 8;
    for (int i = 0; i < 8; i++) {
        int shift = big_endian ? 56 - 8 * i : 8 * i;
        tail[total - 8 + i] = (uint8_t)(bits >> shift);
    }
    compress(state, tail, total / 64);
    for (int i = 0; i < words; i++) {
        for (int j = 0; j < 4; j++) {
            int shift = big_endian ? 24 - 8 * j : 8 * j;
            digest[4 * i + j] = (uint8_t)(state[i] >> shift);
        }
    }
}
