/*
 * npurt host Ascend C toolchain: the device qualifiers and data types on the host.
 * __global__, __aicore__ and __gm__ mean nothing on a host core; half is the compiler's
 * IEEE binary16 (_Float16, arithmetic in hardware or float), bfloat16_t a storage type
 * converting to and from float (round to nearest even).
 */
#ifndef NPURT_ASCENDC_TYPES_H
#define NPURT_ASCENDC_TYPES_H

#include <cstdint>
#include <cstring>

#define __global__
#define __aicore__
#define __gm__
#define __ubuf__
#define __inout_pipe__(x)
#define __in_pipe__(x)
#define __out_pipe__(x)
#ifndef GM_ADDR
#define GM_ADDR __gm__ uint8_t *
#endif
#ifndef __NPU_ARCH__
#define __NPU_ARCH__ 2201 /* Ascend 910B (A2), npurt's default SoC */
#endif
#ifndef __CCE_KT_TEST__
#define __NPURT_ASCENDC__ 1
#endif

using half = _Float16;

struct bfloat16_t {
    uint16_t bits = 0;
    bfloat16_t() = default;
    bfloat16_t(float f)
    {
        uint32_t u;
        std::memcpy(&u, &f, 4);
        if ((u & 0x7fffffffu) > 0x7f800000u) {
            bits = static_cast<uint16_t>((u >> 16) | 0x40u); /* quiet NaN */
        } else {
            bits = static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
        }
    }
    operator float() const
    {
        uint32_t u = static_cast<uint32_t>(bits) << 16;
        float f;
        std::memcpy(&f, &u, 4);
        return f;
    }
};

#endif
