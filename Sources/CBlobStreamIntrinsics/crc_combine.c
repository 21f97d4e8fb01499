#include "internal.h"

// Combining two CRCs (zlib's crc32_combine, generalised to 64 bits). Appending n zero bytes
// to a CRC register multiplies it by x^(8n) mod P, and CRC(A‖B) = CRC(A)·x^(8|B|) ⊕ CRC(B)
// for CRCs that start from all ones and end inverted (the inversions cancel). x^(8n) is the
// product of x^(2^k) over the set bits k of 8n: O(log n) multiplications, each O(width).
// Values are reflected: bit (width-1-i) is the coefficient of x^i.

// a·b mod P, shift-and-add over the bits of a from x^0 upwards.
static uint64_t multiply_mod_p(uint64_t a, uint64_t b, uint64_t polynomial, int width) {
    uint64_t product = 0;
    for (uint64_t bit = 1ull << (width - 1); bit != 0; bit >>= 1) {
        if (a & bit) product ^= b;
        b = (b >> 1) ^ (polynomial & (0 - (b & 1)));   // b·x
    }
    return product;
}

// crc·x^(8·length) mod P.
static uint64_t shift(uint64_t crc, uint64_t length, uint64_t polynomial, int width) {
    uint64_t power = 1ull << (width - 9);   // x^8: a byte is 8 bits
    for (; length != 0; length >>= 1) {
        if (length & 1) crc = multiply_mod_p(power, crc, polynomial, width);
        power = multiply_mod_p(power, power, polynomial, width);   // x^(2^(k+1))
    }
    return crc;
}

uint32_t bs_crc32_combine(uint32_t crc_a, uint32_t crc_b, uint64_t length_b) {
    return (uint32_t)shift(crc_a, length_b, 0xedb88320, 32) ^ crc_b;
}

uint32_t bs_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t length_b) {
    return (uint32_t)shift(crc_a, length_b, 0x82f63b78, 32) ^ crc_b;
}

uint64_t bs_crc64nvme_combine(uint64_t crc_a, uint64_t crc_b, uint64_t length_b) {
    return shift(crc_a, length_b, 0x9a6c9329ac4bc9b5, 64) ^ crc_b;
}
