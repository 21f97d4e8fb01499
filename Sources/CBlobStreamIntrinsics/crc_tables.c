#include "crc_tables.h"

void bs_crc_tables_build(bs_crc_tables *tables, uint32_t polynomial) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t crc = n;
        for (int bit = 0; bit < 8; bit++) crc = (crc >> 1) ^ (polynomial & (0u - (crc & 1)));
        tables->table[0][n] = crc;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t crc = tables->table[0][n];
        for (int k = 1; k < 8; k++) {
            crc = tables->table[0][crc & 0xff] ^ (crc >> 8);
            tables->table[k][n] = crc;
        }
    }
}

uint32_t bs_crc_slice8(const bs_crc_tables *tables, uint32_t crc, const uint8_t *data, size_t length) {
    const uint32_t (*t)[256] = tables->table;
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
    while (length > 0) {
        crc = t[0][(crc ^ *data++) & 0xff] ^ (crc >> 8);
        length--;
    }
    return crc;
}
