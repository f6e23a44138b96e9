/*
 * npurt's kernel_operator.h: the Ascend C kernel API subset that runs on a host core.
 *
 * What a block of a kernel sees (AscendC namespace):
 * - GetBlockIdx() / GetBlockNum() (and the builtin variables block_idx / block_num);
 * - GlobalTensor<T>: a view of global memory (SetGlobalBuffer, operator[], Get/SetValue);
 * - TPipe, TQue<pos, depth>, TQueBind, TBuf<pos>: the unified buffer (192 KiB per core on
 *   the A2; InitBuffer beyond it traps), with the queue discipline AllocTensor -> EnQue ->
 *   DeQue -> FreeTensor (allocating from an exhausted queue, or dequeuing an empty one,
 *   traps: on the NPU it would hang);
 * - LocalTensor<T>: a view of unified-buffer memory;
 * - DataCopy between GM and UB (count form and DataCopyParams form, 32-byte blocks);
 * - elementwise vector ops on half/float/int: Add Sub Mul Div Max Min And Or (two
 *   sources), Adds Muls Maxs Mins LeakyRelu Axpy (a scalar), Abs Exp Ln Sqrt Rsqrt
 *   Reciprocal Relu Not (one source), Duplicate, Cast, ReduceSum/ReduceMax/ReduceMin over a
 *   count (result in dst[0]);
 * - pipeline sync (PipeBarrier, SetFlag/WaitFlag, pipe_barrier): no-ops, a block runs in
 *   program order on one host thread;
 * - printf / PRINTF: to the process's stdout; trap(): the launch fails (507035 on A2).
 * Arithmetic on half is done in float and rounded once per element, as the vector unit does.
 */
#ifndef NPURT_KERNEL_OPERATOR_H
#define NPURT_KERNEL_OPERATOR_H

#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <type_traits>
#include <vector>

#include "npurt_ascendc/types.h"
#include "npurt_ascendc/launch.h"

namespace AscendC {

using ::npurt_ascendc::trap;

constexpr uint32_t UB_SIZE = 192 * 1024; /* unified buffer per AI core (A2) */
constexpr uint32_t ONE_BLK_SIZE = 32;     /* DataCopy block: 32 bytes */

enum class TPosition : uint8_t { GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC, LCM = VECCALC, SPM,
                                 SHM, TSCM, C2PIPE2GM, C2PIPE2LOCAL, MAX };
using QuePosition = TPosition;
enum class HardEvent : uint8_t { MTE2_MTE1, MTE1_MTE2, MTE1_M, M_MTE1, MTE2_V, V_MTE2, MTE3_V, V_MTE3, M_V, V_M,
                                 V_V, MTE3_MTE1, MTE1_MTE3, MTE1_V, MTE2_M, M_MTE2, V_MTE1, M_FIX, FIX_M,
                                 MTE3_MTE2, MTE2_MTE3, S_V, V_S, S_MTE2, MTE2_S, S_MTE3, MTE3_S, MTE2_FIX,
                                 FIX_MTE2, FIX_S, M_S, FIX_MTE3, MAX };
enum pipe_t { PIPE_S, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL, PIPE_FIX };
enum class RoundMode : uint8_t { CAST_NONE, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD };

inline int64_t GetBlockIdx() { return ::block_idx; }
inline int64_t GetBlockNum() { return ::block_num; }
inline int64_t GetSubBlockIdx() { return 0; }
inline int64_t GetTaskRation() { return 1; }

template <pipe_t pipe = PIPE_ALL>
inline void PipeBarrier() {}
template <HardEvent event>
inline void SetFlag(int32_t) {}
template <HardEvent event>
inline void WaitFlag(int32_t) {}

namespace detail {
inline std::mutex &print_lock()
{
    static std::mutex lock;
    return lock;
}
[[noreturn]] inline void fail(const char *what)
{
    std::fprintf(stderr, "[npurt ascendc] block %lld: %s\n", static_cast<long long>(::block_idx), what);
    ::npurt_ascendc::trap();
}
template <typename T>
using Compute = std::conditional_t<std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>, float, T>;
}  // namespace detail

inline void printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
inline void printf(const char *fmt, ...)
{
    std::lock_guard<std::mutex> guard(detail::print_lock());
    va_list args;
    va_start(args, fmt);
    std::vprintf(fmt, args);
    va_end(args);
}
#define PRINTF AscendC::printf
/* kernel-type annotations of CANN's compiler: nothing to do on a host core */
#ifndef KERNEL_TASK_TYPE_DEFAULT
#define KERNEL_TASK_TYPE_DEFAULT(type)
#define KERNEL_TASK_TYPE(key, type)
#endif

template <typename T>
class GlobalTensor {
public:
    using PrimType = T;
    __aicore__ inline GlobalTensor() = default;
    __aicore__ inline void SetGlobalBuffer(__gm__ T *buffer, uint64_t bufferSize = 0)
    {
        address_ = buffer;
        size_ = bufferSize;
    }
    __aicore__ inline __gm__ T *GetPhyAddr() const { return address_; }
    __aicore__ inline __gm__ T *GetPhyAddr(uint64_t offset) const { return address_ + offset; }
    __aicore__ inline uint64_t GetSize() const { return size_; }
    __aicore__ inline T GetValue(uint64_t offset) const { return address_[offset]; }
    __aicore__ inline void SetValue(uint64_t offset, T value) const { address_[offset] = value; }
    __aicore__ inline T &operator()(uint64_t offset) const { return address_[offset]; }
    __aicore__ inline GlobalTensor operator[](uint64_t offset) const
    {
        GlobalTensor t;
        t.address_ = address_ + offset;
        t.size_ = size_ > offset ? size_ - offset : 0;
        return t;
    }
    template <typename C>
    __aicore__ inline void SetL2CacheHint(C) {}

private:
    __gm__ T *address_ = nullptr;
    uint64_t size_ = 0;
};

template <typename T>
class LocalTensor {
public:
    using PrimType = T;
    __aicore__ inline LocalTensor() = default;
    __aicore__ inline LocalTensor(T *address, uint32_t size) : address_(address), size_(size) {}
    __aicore__ inline T *GetPhyAddr() const { return address_; }
    __aicore__ inline uint32_t GetSize() const { return size_; }
    __aicore__ inline T GetValue(uint32_t offset) const { return address_[offset]; }
    __aicore__ inline void SetValue(uint32_t offset, T value) const { address_[offset] = value; }
    __aicore__ inline T &operator()(uint32_t offset) const { return address_[offset]; }
    __aicore__ inline LocalTensor operator[](uint32_t offset) const
    {
        return LocalTensor(address_ + offset, size_ > offset ? size_ - offset : 0);
    }
    template <typename U>
    __aicore__ inline LocalTensor<U> ReinterpretCast() const
    {
        return LocalTensor<U>(reinterpret_cast<U *>(address_), static_cast<uint32_t>(size_ * sizeof(T) / sizeof(U)));
    }
    __aicore__ inline void SetSize(uint32_t size) { size_ = size; }

private:
    T *address_ = nullptr;
    uint32_t size_ = 0; /* elements */
};

class TPipe;

/* the buffers of one queue: free ones are allocated, enqueued ones wait in FIFO order */
class TQueBase {
public:
    void Init(std::vector<uint8_t *> buffers, uint32_t length)
    {
        free_ = buffers;
        length_ = length;
        queued_.clear();
    }
    template <typename T>
    __aicore__ inline LocalTensor<T> AllocTensor()
    {
        if (free_.empty()) detail::fail("AllocTensor: every buffer of the queue is in use (free one first)");
        uint8_t *b = free_.front();
        free_.erase(free_.begin());
        return LocalTensor<T>(reinterpret_cast<T *>(b), length_ / sizeof(T));
    }
    template <typename T>
    __aicore__ inline void FreeTensor(const LocalTensor<T> &t)
    {
        free_.push_back(reinterpret_cast<uint8_t *>(t.GetPhyAddr()));
    }
    template <typename T>
    __aicore__ inline bool EnQue(const LocalTensor<T> &t)
    {
        queued_.push_back(reinterpret_cast<uint8_t *>(t.GetPhyAddr()));
        return true;
    }
    template <typename T>
    __aicore__ inline LocalTensor<T> DeQue()
    {
        if (queued_.empty()) detail::fail("DeQue: the queue is empty (EnQue a tensor first)");
        uint8_t *b = queued_.front();
        queued_.erase(queued_.begin());
        return LocalTensor<T>(reinterpret_cast<T *>(b), length_ / sizeof(T));
    }
    __aicore__ inline bool VacantInQue() const { return !free_.empty(); }
    __aicore__ inline bool HasTensorInQue() const { return !queued_.empty(); }
    __aicore__ inline int32_t GetTensorCountInQue() const { return static_cast<int32_t>(queued_.size()); }

private:
    std::vector<uint8_t *> free_, queued_;
    uint32_t length_ = 0;
};

template <TPosition pos, int32_t depth = 1, int32_t mask = 0>
class TQue : public TQueBase {};

template <TPosition src, TPosition dst, int32_t depth = 1, int32_t mask = 0>
class TQueBind : public TQueBase {};

template <TPosition pos = TPosition::VECCALC>
class TBuf {
public:
    void Init(uint8_t *buffer, uint32_t length)
    {
        buffer_ = buffer;
        length_ = length;
    }
    template <typename T>
    __aicore__ inline LocalTensor<T> Get() const
    {
        return LocalTensor<T>(reinterpret_cast<T *>(buffer_), length_ / sizeof(T));
    }
    template <typename T>
    __aicore__ inline LocalTensor<T> Get(uint32_t count) const
    {
        if (count * sizeof(T) > length_) detail::fail("TBuf::Get: more elements than the buffer holds");
        return LocalTensor<T>(reinterpret_cast<T *>(buffer_), count);
    }

private:
    uint8_t *buffer_ = nullptr;
    uint32_t length_ = 0;
};

/* the unified buffer of the core running this block */
class TPipe {
public:
    __aicore__ inline TPipe() = default;
    TPipe(const TPipe &) = delete;
    TPipe &operator=(const TPipe &) = delete;
    template <class Q>
    __aicore__ inline bool InitBuffer(Q &que, uint8_t num, uint32_t len)
    {
        uint32_t aligned = (len + ONE_BLK_SIZE - 1) / ONE_BLK_SIZE * ONE_BLK_SIZE;
        std::vector<uint8_t *> buffers;
        for (uint8_t i = 0; i < num; ++i) buffers.push_back(take(aligned));
        que.Init(buffers, len);
        return true;
    }
    template <TPosition pos>
    __aicore__ inline bool InitBuffer(TBuf<pos> &buf, uint32_t len)
    {
        uint32_t aligned = (len + ONE_BLK_SIZE - 1) / ONE_BLK_SIZE * ONE_BLK_SIZE;
        buf.Init(take(aligned), len);
        return true;
    }
    __aicore__ inline void Reset() { used_ = 0; }
    __aicore__ inline void Destroy() { used_ = 0; }

private:
    uint8_t *take(uint32_t bytes)
    {
        if (used_ + bytes > UB_SIZE) detail::fail("TPipe::InitBuffer: the buffers exceed the 192 KiB unified buffer");
        uint8_t *p = ub_ + used_;
        used_ += bytes;
        return p;
    }
    alignas(64) uint8_t ub_[UB_SIZE];
    uint32_t used_ = 0;
};

struct DataCopyParams {
    uint16_t blockCount = 1;
    uint16_t blockLen = 0;  /* in 32-byte blocks */
    uint16_t srcStride = 0; /* gap between blocks, in 32-byte blocks */
    uint16_t dstStride = 0;
    __aicore__ DataCopyParams() = default;
    __aicore__ DataCopyParams(uint16_t count, uint16_t len, uint16_t src, uint16_t dst)
        : blockCount(count), blockLen(len), srcStride(src), dstStride(dst) {}
};

namespace detail {
inline void copy_blocks(uint8_t *dst, const uint8_t *src, const DataCopyParams &p)
{
    const size_t len = static_cast<size_t>(p.blockLen) * ONE_BLK_SIZE;
    for (uint16_t i = 0; i < p.blockCount; ++i) {
        std::memcpy(dst + i * (len + static_cast<size_t>(p.dstStride) * ONE_BLK_SIZE),
                    src + i * (len + static_cast<size_t>(p.srcStride) * ONE_BLK_SIZE), len);
    }
}
}  // namespace detail

template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src, uint32_t count)
{
    std::memcpy(dst.GetPhyAddr(), src.GetPhyAddr(), count * sizeof(T));
}
template <typename T>
__aicore__ inline void DataCopy(const GlobalTensor<T> &dst, const LocalTensor<T> &src, uint32_t count)
{
    std::memcpy(dst.GetPhyAddr(), src.GetPhyAddr(), count * sizeof(T));
}
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T> &dst, const LocalTensor<T> &src, uint32_t count)
{
    std::memmove(dst.GetPhyAddr(), src.GetPhyAddr(), count * sizeof(T));
}
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src, const DataCopyParams &p)
{
    detail::copy_blocks(reinterpret_cast<uint8_t *>(dst.GetPhyAddr()),
                        reinterpret_cast<const uint8_t *>(src.GetPhyAddr()), p);
}
template <typename T>
__aicore__ inline void DataCopy(const GlobalTensor<T> &dst, const LocalTensor<T> &src, const DataCopyParams &p)
{
    detail::copy_blocks(reinterpret_cast<uint8_t *>(dst.GetPhyAddr()),
                        reinterpret_cast<const uint8_t *>(src.GetPhyAddr()), p);
}

/* ---- elementwise vector ops: dst[i] = f(src...[i]) for i < count (half via float) ---- */
#define NPURT_ASCENDC_BINARY(NAME, EXPR)                                                                  \
    template <typename T>                                                                                 \
    __aicore__ inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src0,                   \
                                const LocalTensor<T> &src1, const int32_t &count)                        \
    {                                                                                                     \
        using F = detail::Compute<T>;                                                                    \
        T *d = dst.GetPhyAddr();                                                                         \
        const T *x = src0.GetPhyAddr();                                                                  \
        const T *y = src1.GetPhyAddr();                                                                  \
        for (int32_t i = 0; i < count; ++i) {                                                            \
            F a = static_cast<F>(x[i]), b = static_cast<F>(y[i]);                                        \
            d[i] = static_cast<T>(EXPR);                                                                 \
        }                                                                                                 \
    }
NPURT_ASCENDC_BINARY(Add, a + b)
NPURT_ASCENDC_BINARY(Sub, a - b)
NPURT_ASCENDC_BINARY(Mul, a *b)
NPURT_ASCENDC_BINARY(Div, a / b)
NPURT_ASCENDC_BINARY(Max, a > b ? a : b)
NPURT_ASCENDC_BINARY(Min, a < b ? a : b)
#undef NPURT_ASCENDC_BINARY

#define NPURT_ASCENDC_BITWISE(NAME, OP)                                                                   \
    template <typename T>                                                                                 \
    __aicore__ inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src0,                   \
                                const LocalTensor<T> &src1, const int32_t &count)                        \
    {                                                                                                     \
        static_assert(std::is_integral_v<T>, #NAME " is for integer tensors");                           \
        for (int32_t i = 0; i < count; ++i)                                                              \
            dst.GetPhyAddr()[i] = static_cast<T>(src0.GetPhyAddr()[i] OP src1.GetPhyAddr()[i]);          \
    }
NPURT_ASCENDC_BITWISE(And, &)
NPURT_ASCENDC_BITWISE(Or, |)
#undef NPURT_ASCENDC_BITWISE

#define NPURT_ASCENDC_SCALAR(NAME, EXPR)                                                                  \
    template <typename T, typename S>                                                                     \
    __aicore__ inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const S &scalar,   \
                                const int32_t &count)                                                    \
    {                                                                                                     \
        using F = detail::Compute<T>;                                                                    \
        const F s = static_cast<F>(scalar);                                                              \
        T *d = dst.GetPhyAddr();                                                                         \
        const T *x = src.GetPhyAddr();                                                                   \
        for (int32_t i = 0; i < count; ++i) {                                                            \
            F a = static_cast<F>(x[i]);                                                                  \
            d[i] = static_cast<T>(EXPR);                                                                 \
        }                                                                                                 \
    }
NPURT_ASCENDC_SCALAR(Adds, a + s)
NPURT_ASCENDC_SCALAR(Muls, a *s)
NPURT_ASCENDC_SCALAR(Maxs, a > s ? a : s)
NPURT_ASCENDC_SCALAR(Mins, a < s ? a : s)
NPURT_ASCENDC_SCALAR(LeakyRelu, a >= F(0) ? a : a * s)
#undef NPURT_ASCENDC_SCALAR

/* dst[i] += src[i] * scalar */
template <typename T, typename U, typename S>
__aicore__ inline void Axpy(const LocalTensor<T> &dst, const LocalTensor<U> &src, const S &scalar,
                            const int32_t &count)
{
    using F = detail::Compute<T>;
    for (int32_t i = 0; i < count; ++i) {
        dst.GetPhyAddr()[i] = static_cast<T>(static_cast<F>(dst.GetPhyAddr()[i]) +
                                             static_cast<F>(src.GetPhyAddr()[i]) * static_cast<F>(scalar));
    }
}

#define NPURT_ASCENDC_UNARY(NAME, EXPR)                                                                   \
    template <typename T>                                                                                 \
    __aicore__ inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t &count) \
    {                                                                                                     \
        using F = detail::Compute<T>;                                                                    \
        T *d = dst.GetPhyAddr();                                                                         \
        const T *x = src.GetPhyAddr();                                                                   \
        for (int32_t i = 0; i < count; ++i) {                                                            \
            F a = static_cast<F>(x[i]);                                                                  \
            d[i] = static_cast<T>(EXPR);                                                                 \
        }                                                                                                 \
    }
NPURT_ASCENDC_UNARY(Abs, a < F(0) ? -a : a)
NPURT_ASCENDC_UNARY(Exp, std::exp(a))
NPURT_ASCENDC_UNARY(Ln, std::log(a))
NPURT_ASCENDC_UNARY(Sqrt, std::sqrt(a))
NPURT_ASCENDC_UNARY(Rsqrt, F(1) / std::sqrt(a))
NPURT_ASCENDC_UNARY(Reciprocal, F(1) / a)
NPURT_ASCENDC_UNARY(Relu, a > F(0) ? a : F(0))
#undef NPURT_ASCENDC_UNARY

template <typename T>
__aicore__ inline void Not(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t &count)
{
    static_assert(std::is_integral_v<T>, "Not is for integer tensors");
    for (int32_t i = 0; i < count; ++i) dst.GetPhyAddr()[i] = static_cast<T>(~src.GetPhyAddr()[i]);
}

template <typename T, typename S>
__aicore__ inline void Duplicate(const LocalTensor<T> &dst, const S &scalar, const int32_t &count)
{
    const T v = static_cast<T>(static_cast<detail::Compute<T>>(scalar));
    for (int32_t i = 0; i < count; ++i) dst.GetPhyAddr()[i] = v;
}

template <typename D, typename S>
__aicore__ inline void Cast(const LocalTensor<D> &dst, const LocalTensor<S> &src, const RoundMode &mode,
                            const uint32_t count)
{
    for (uint32_t i = 0; i < count; ++i) {
        double v = static_cast<double>(static_cast<detail::Compute<S>>(src.GetPhyAddr()[i]));
        if constexpr (std::is_integral_v<D>) {
            switch (mode) {
                case RoundMode::CAST_FLOOR: v = std::floor(v); break;
                case RoundMode::CAST_CEIL: v = std::ceil(v); break;
                case RoundMode::CAST_ROUND: v = std::round(v); break;
                case RoundMode::CAST_TRUNC: v = std::trunc(v); break;
                default: v = std::nearbyint(v); break; /* CAST_RINT / CAST_NONE: to nearest even */
            }
        }
        dst.GetPhyAddr()[i] = static_cast<D>(static_cast<detail::Compute<D>>(v));
    }
}

/* reductions over count elements; the result lands in dst[0] (work is scratch) */
#define NPURT_ASCENDC_REDUCE(NAME, INIT, STEP)                                                            \
    template <typename T>                                                                                 \
    __aicore__ inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src,                    \
                                const LocalTensor<T> &work, const int32_t count)                         \
    {                                                                                                     \
        (void)work;                                                                                      \
        using F = detail::Compute<T>;                                                                    \
        const T *x = src.GetPhyAddr();                                                                   \
        F acc = INIT;                                                                                    \
        for (int32_t i = 0; i < count; ++i) {                                                            \
            F a = static_cast<F>(x[i]);                                                                  \
            acc = STEP;                                                                                  \
        }                                                                                                 \
        dst.GetPhyAddr()[0] = static_cast<T>(acc);                                                       \
    }
NPURT_ASCENDC_REDUCE(ReduceSum, F(0), acc + a)
NPURT_ASCENDC_REDUCE(ReduceMax, static_cast<F>(x[0]), a > acc ? a : acc)
NPURT_ASCENDC_REDUCE(ReduceMin, static_cast<F>(x[0]), a < acc ? a : acc)
#undef NPURT_ASCENDC_REDUCE

}  // namespace AscendC

inline void pipe_barrier(AscendC::pipe_t) {}
using AscendC::PIPE_ALL;
using AscendC::PIPE_MTE2;
using AscendC::PIPE_MTE3;
using AscendC::PIPE_S;
using AscendC::PIPE_V;

#endif
