/*
 * npurt host Ascend C toolchain: the kernel table of a kernel binary
 * (ascendc_fatbin_library). aclrtBinaryLoadFromFile dlopens the binary and calls
 * npurtKernelTable to learn its kernels: name, address, trampoline and parameter kinds.
 */
#include "npurt_ascendc/launch.h"

extern "C" __attribute__((visibility("default"))) const npurt_ascendc::KernelEntry *npurtKernelTable(uint32_t *count)
{
    std::vector<npurt_ascendc::KernelEntry> &entries = npurt_ascendc::registry();
    *count = static_cast<uint32_t>(entries.size());
    return entries.data();
}
