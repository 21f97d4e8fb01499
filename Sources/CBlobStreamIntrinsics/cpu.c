#include "internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

// Bit 31 marks "already detected", so 0 can mean "not yet" without a separate flag. Races
// between first callers are harmless: they all compute and store the same value.
static uint32_t detected_features;

static uint32_t detect(void) {
    uint32_t features = 0;
#if defined(__x86_64__) || defined(__i386__)
    unsigned int eax, ebx, ecx, edx;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx)) {
        // SSE4.2 implies SSE4.1 and SSSE3 on every CPU that ships it; the kernels that use
        // SSE4.1/SSSE3 instructions alongside PCLMULQDQ or SHA still check them explicitly.
        int sse41 = (ecx >> 19) & 1, ssse3 = (ecx >> 9) & 1;
        if ((ecx >> 20) & 1) features |= BS_CPU_SSE42;
        if (((ecx >> 1) & 1) && sse41) features |= BS_CPU_PCLMUL;
        if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && ((ebx >> 29) & 1) && sse41 && ssse3) {
            features |= BS_CPU_SHA;
        }
    }
#endif
    return features;
}

uint32_t bs_cpu_features(void) {
    uint32_t cached = __atomic_load_n(&detected_features, __ATOMIC_RELAXED);
    if (cached == 0) {
        cached = detect() | (1u << 31);
        __atomic_store_n(&detected_features, cached, __ATOMIC_RELAXED);
    }
    return cached & ~(1u << 31);
}
