/*
 * npurt host Ascend C toolchain: the kernel ABI between host-built kernels and npurt.
 *
 * Every kernel `extern "C" __global__ __aicore__ void k(P...)` is reached through a
 * trampoline<P...>: it sets block_idx / block_num for the calling thread (one simulated AI
 * core running one block), unpacks one 8-byte slot per parameter and calls the kernel.
 * Its result: 0 done, 1 trap, 2 a C++ exception escaped the kernel.
 * A launch `k<<<blocks, l2ctrl, stream>>>(args...)` (rewritten by the toolchain into
 * npurt_ascendc::launcher(k, "k", blocks, l2ctrl, stream)(args...)) packs the arguments
 * (pointers as their device addresses) and hands them to npurt through
 * npurtLaunchNativeKernel, exported by libacl_rt.so; npurt runs the blocks as an ordinary
 * kernel task of the stream, translating pointer slots to host addresses.
 * The parameter kinds string (one char per parameter) is documented in
 * npurt/runtime/native.py.
 */
#ifndef NPURT_ASCENDC_LAUNCH_H
#define NPURT_ASCENDC_LAUNCH_H

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "npurt_ascendc/types.h"

/* the block this thread runs, as Ascend C's builtin variables (per simulated core) */
inline thread_local int64_t block_idx = 0;
inline thread_local int64_t block_num = 1;

extern "C" int npurtLaunchNativeKernel(const char *name, void *kernel, void *trampoline, const char *kinds,
                                            uint32_t blockDim, void *stream, const uint64_t *slots,
                                            uint32_t count);

namespace npurt_ascendc {

struct Trap {};

/* asm("trap") in a kernel: the AI core stops with an exception (the launch fails) */
[[noreturn]] inline void trap() { throw Trap{}; }

template <typename T>
constexpr char kind_of()
{
    using U = std::remove_cv_t<T>;
    if constexpr (std::is_pointer_v<U>) {
        return std::is_const_v<std::remove_pointer_t<U>> ? 'R' : 'P';
    } else if constexpr (std::is_same_v<U, bool>) {
        return '?';
    } else if constexpr (std::is_same_v<U, half>) {
        return 'e';
    } else if constexpr (std::is_same_v<U, bfloat16_t>) {
        return 'H';  // passed as its 16 bits
    } else if constexpr (std::is_same_v<U, float>) {
        return 'f';
    } else if constexpr (std::is_same_v<U, double>) {
        return 'd';
    } else if constexpr (std::is_enum_v<U>) {
        return kind_of<std::underlying_type_t<U>>();
    } else if constexpr (std::is_integral_v<U>) {
        constexpr bool s = std::is_signed_v<U>;
        if constexpr (sizeof(U) == 1) return s ? 'b' : 'B';
        else if constexpr (sizeof(U) == 2) return s ? 'h' : 'H';
        else if constexpr (sizeof(U) == 4) return s ? 'i' : 'I';
        else return s ? 'q' : 'Q';
    } else {
        static_assert(std::is_pointer_v<U>, "npurt: a kernel parameter must be a pointer, an integer, bool, "
                                            "half, float or double (pass structs through GM memory)");
        return 0;
    }
}

template <typename... P>
struct Signature {
    static constexpr char kinds[sizeof...(P) + 1] = {kind_of<P>()..., '\0'};
};

template <typename T>
inline uint64_t to_slot(T value)
{
    uint64_t slot = 0;
    std::memcpy(&slot, &value, sizeof(T));
    return slot;
}

template <typename T>
inline T from_slot(uint64_t slot)
{
    T value;
    std::memcpy(&value, &slot, sizeof(T));
    return value;
}

template <typename... P, std::size_t... I>
inline void call(void (*kernel)(P...), const uint64_t *slots, std::index_sequence<I...>)
{
    (void)slots;
    kernel(from_slot<P>(slots[I])...);
}

template <typename... P>
int32_t trampoline(void *kernel, uint32_t idx, uint32_t num, const uint64_t *slots)
{
    block_idx = idx;
    block_num = num;
    try {
        call(reinterpret_cast<void (*)(P...)>(kernel), slots, std::index_sequence_for<P...>{});
    } catch (const Trap &) {
        return 1;
    } catch (...) {
        return 2;
    }
    return 0;
}

/* the kernels of this image, for a kernel binary's table (see npurt_kernel_table.cpp) */
struct KernelEntry {
    const char *name;
    void *kernel;
    void *trampoline;
    const char *kinds;
};

inline std::vector<KernelEntry> &registry()
{
    static std::vector<KernelEntry> entries;
    return entries;
}

template <typename... P>
bool register_kernel(void (*kernel)(P...), const char *name)
{
    registry().push_back({name, reinterpret_cast<void *>(kernel), reinterpret_cast<void *>(&trampoline<P...>),
                          Signature<P...>::kinds});
    return true;
}

template <typename P, typename A>
inline P convert(A &&arg)
{
    return arg;  // the implicit conversion a call of the kernel would make
}

template <typename... P>
struct Launch {
    void (*kernel)(P...);
    const char *name;
    uint32_t blocks;
    void *stream;

    template <typename... A>
    uint32_t operator()(A &&...args) const
    {
        static_assert(sizeof...(A) == sizeof...(P), "npurt: wrong number of kernel launch arguments");
        const uint64_t slots[sizeof...(P) + 1] = {to_slot<P>(convert<P>(std::forward<A>(args)))..., 0};
        return (uint32_t)npurtLaunchNativeKernel(name, reinterpret_cast<void *>(kernel),
                                       reinterpret_cast<void *>(&trampoline<P...>), Signature<P...>::kinds,
                                       blocks, stream, slots, static_cast<uint32_t>(sizeof...(P)));
    }
};

template <typename... P, typename B, typename L, typename S>
Launch<P...> launcher(void (*kernel)(P...), const char *name, B blocks, L l2ctrl, S stream)
{
    (void)l2ctrl;
    return Launch<P...>{kernel, name, static_cast<uint32_t>(blocks), (void *)(stream)};
}

}  // namespace npurt_ascendc

#define NPURT_ASCENDC_REGISTER(name) \
    [[maybe_unused]] static const bool npurt_ascendc_registered_##name = ::npurt_ascendc::register_kernel(&name, #name)

#endif
