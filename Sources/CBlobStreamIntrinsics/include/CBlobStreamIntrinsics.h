#ifndef CBLOBSTREAMINTRINSICS_H
#define CBLOBSTREAMINTRINSICS_H

// Checksum kernels for BlobStream. Every function exists on every CPU: the accelerated paths
// (SSE4.2 crc32, PCLMULQDQ folding, SHA-NI) are compiled with function-level target attributes
// and chosen at run time from cpuid, so the package needs no compiler flags and a binary built
// here runs correctly on a CPU without those instructions.
//
// `portable` arguments force the plain C code even where the CPU could do better; the Swift
// layer uses them to prove both paths compute the same digests.

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// CPU features the kernels can use, as reported by cpuid (0 on non-x86 CPUs).
enum {
    BS_CPU_SSE42 = 1u << 0,
    BS_CPU_PCLMUL = 1u << 1,
    BS_CPU_SHA = 1u << 2,
};

/// The BS_CPU_* bits this CPU supports; detected once, then cached.
uint32_t bs_cpu_features(void);

/// zlib's crc32(): continues `crc` (0 for a fresh checksum) over `length` bytes.
uint32_t bs_crc32_update(uint32_t crc, const void *data, size_t length, int portable);

/// CRC-32C (Castagnoli, iSCSI), with the same conventions as bs_crc32_update.
uint32_t bs_crc32c_update(uint32_t crc, const void *data, size_t length, int portable);

/// CRC-64/NVME (polynomial 0xAD93D23594C93659, reflected, inverted; what S3 calls CRC64NVME),
/// with the same conventions as bs_crc32_update.
uint64_t bs_crc64nvme_update(uint64_t crc, const void *data, size_t length, int portable);

/// The CRC of A followed by B, from `crc_a` (A's CRC), `crc_b` (B's) and B's length in bytes,
/// in O(log length_b) time (zlib's crc32_combine). Valid for these CRCs because each starts
/// from all ones and ends inverted, so the two inversions cancel.
uint32_t bs_crc32_combine(uint32_t crc_a, uint32_t crc_b, uint64_t length_b);
/// bs_crc32_combine for CRC-32C.
uint32_t bs_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t length_b);
/// bs_crc32_combine for CRC-64/NVME.
uint64_t bs_crc64nvme_combine(uint64_t crc_a, uint64_t crc_b, uint64_t length_b);

/// The running state of a Merkle–Damgård hash with 64-byte blocks (MD5, SHA-1, SHA-256).
/// Plain data, so a copy is an independent snapshot.
typedef struct {
    uint32_t state[8];
    uint64_t length;
    uint8_t buffer[64];
    uint32_t buffered;
    uint32_t portable;
} bs_md_context;

/// Starts an MD5 of zero bytes (`portable` is recorded but MD5 has only portable code).
void bs_md5_init(bs_md_context *context, int portable);
/// Appends `length` bytes at `data` (any alignment; `data` may be NULL when `length` is 0).
void bs_md5_update(bs_md_context *context, const void *data, size_t length);
/// Writes the 16-byte digest of everything passed so far; the context is left unchanged.
void bs_md5_final(const bs_md_context *context, uint8_t digest[16]);

/// Starts a SHA-1 of zero bytes; `portable` forbids the SHA-NI code.
void bs_sha1_init(bs_md_context *context, int portable);
/// Appends `length` bytes at `data` (any alignment; `data` may be NULL when `length` is 0).
void bs_sha1_update(bs_md_context *context, const void *data, size_t length);
/// Writes the 20-byte digest of everything passed so far; the context is left unchanged.
void bs_sha1_final(const bs_md_context *context, uint8_t digest[20]);

/// Starts a SHA-256 of zero bytes; `portable` forbids the SHA-NI code.
void bs_sha256_init(bs_md_context *context, int portable);
/// Appends `length` bytes at `data` (any alignment; `data` may be NULL when `length` is 0).
void bs_sha256_update(bs_md_context *context, const void *data, size_t length);
/// Writes the 32-byte digest of everything passed so far; the context is left unchanged.
void bs_sha256_final(const bs_md_context *context, uint8_t digest[32]);

#ifdef __cplusplus
}
#endif

#endif
