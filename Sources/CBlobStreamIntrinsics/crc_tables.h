#ifndef BS_CRC_TABLES_H
#define BS_CRC_TABLES_H

#include "internal.h"

// Slicing-by-8 tables for a reflected CRC-32 polynomial: table[0] is the classic byte-wise
// table, table[k][n] is the CRC of byte n followed by k zero bytes. Eight lookups per 8 bytes
// break the one-byte-at-a-time dependency chain of the classic algorithm.
typedef struct {
    uint32_t table[8][256];
} bs_crc_tables;

/// Fills `tables` for the reflected polynomial `polynomial` (0xedb88320 for CRC-32,
/// 0x82f63b78 for CRC-32C).
void bs_crc_tables_build(bs_crc_tables *tables, uint32_t polynomial);

/// Continues a pre-inverted CRC register over `length` bytes with slicing-by-8.
uint32_t bs_crc_slice8(const bs_crc_tables *tables, uint32_t crc, const uint8_t *data, size_t length);

#endif
