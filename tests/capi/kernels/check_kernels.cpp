// Kernels of tests/capi/kernels/kernel_checks.cpp.
#include "kernel_operator.h"

// z[i] = x[i] + y[i] (int32), blocks split n evenly; scalar code, direct GM access
extern "C" __global__ __aicore__ void iadd(__gm__ const int32_t *x, __gm__ const int32_t *y, __gm__ int32_t *z,
                                           uint32_t n)
{
    const uint32_t per = n / AscendC::GetBlockNum();
    for (uint32_t i = per * AscendC::GetBlockIdx(); i < per * (AscendC::GetBlockIdx() + 1); ++i) z[i] = x[i] + y[i];
}

// the placeholder form: n and scale arrive through GM pointers the runtime fills
extern "C" __global__ __aicore__ void iscale(__gm__ int32_t *z, __gm__ const int32_t *n, __gm__ const int32_t *scale)
{
    for (int32_t i = 0; i < *n; ++i) z[i] *= *scale;
}

extern "C" __global__ __aicore__ void trapping() { asm volatile("trap"); }

// traps when *flag equals code (the exception info then carries both arguments)
extern "C" __global__ __aicore__ void trap_if(__gm__ const int32_t *flag, uint32_t code)
{
    if (static_cast<uint32_t>(*flag) == code) asm volatile("trap");
}

// spins for about `loops` iterations (longer than a microsecond timeout)
extern "C" __global__ __aicore__ void spin(__gm__ volatile uint64_t *out, uint64_t loops)
{
    uint64_t acc = 0;
    for (uint64_t i = 0; i < loops; ++i) acc += i ^ (acc >> 3);
    out[0] = acc;
}

uint32_t launch_iadd(uint32_t blocks, void *stream, int32_t *x, int32_t *y, int32_t *z, uint32_t n)
{
    return iadd<<<blocks, nullptr, stream>>>(x, y, z, n);
}

uint32_t launch_trapping(void *stream) { return trapping<<<1, nullptr, stream>>>(); }
