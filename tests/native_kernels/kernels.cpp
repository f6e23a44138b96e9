// Test kernels for npurt's host Ascend C toolchain (tests/test_native_kernels.py).
#include "kernel_operator.h"

using namespace AscendC;

namespace {
constexpr int32_t BUFFER_NUM = 2;

// z = op(x, y) over n elements split evenly over the blocks, through the unified buffer
// (TPipe / TQue / DataCopy), tile by tile.
template <typename T>
class Elementwise {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t n, uint32_t tile)
    {
        per_block_ = n / GetBlockNum();
        tile_ = tile;
        const uint64_t start = per_block_ * GetBlockIdx();
        xGm_.SetGlobalBuffer((__gm__ T *)x + start, per_block_);
        yGm_.SetGlobalBuffer((__gm__ T *)y + start, per_block_);
        zGm_.SetGlobalBuffer((__gm__ T *)z + start, per_block_);
        pipe_.InitBuffer(inX_, BUFFER_NUM, tile_ * sizeof(T));
        pipe_.InitBuffer(inY_, BUFFER_NUM, tile_ * sizeof(T));
        pipe_.InitBuffer(out_, BUFFER_NUM, tile_ * sizeof(T));
        pipe_.InitBuffer(tmp_, tile_ * sizeof(T));
    }
    __aicore__ inline void Process(int32_t op, float scalar)
    {
        for (uint32_t i = 0; i < per_block_ / tile_; ++i) {
            LocalTensor<T> x = inX_.AllocTensor<T>();
            LocalTensor<T> y = inY_.AllocTensor<T>();
            DataCopy(x, xGm_[i * tile_], tile_);
            DataCopy(y, yGm_[i * tile_], tile_);
            inX_.EnQue(x);
            inY_.EnQue(y);
            x = inX_.DeQue<T>();
            y = inY_.DeQue<T>();
            LocalTensor<T> z = out_.AllocTensor<T>();
            LocalTensor<T> t = tmp_.Get<T>();
            switch (op) {
                case 0: Add(z, x, y, tile_); break;
                case 1: Sub(z, x, y, tile_); break;
                case 2: Mul(z, x, y, tile_); break;
                case 3: Div(z, x, y, tile_); break;
                case 4: Max(z, x, y, tile_); break;
                case 5: Min(z, x, y, tile_); break;
                case 6: Adds(z, x, static_cast<T>(scalar), tile_); break;
                case 7: Muls(z, x, static_cast<T>(scalar), tile_); break;
                case 8: Relu(z, x, tile_); break;
                case 9: Abs(z, x, tile_); break;
                case 10: Exp(z, x, tile_); break;
                case 11: Duplicate(t, static_cast<T>(scalar), tile_); Axpy(t, x, static_cast<T>(2), tile_);
                         DataCopy(z, t, tile_); break;
                case 12: Ln(z, x, tile_); break;
                case 13: Sqrt(z, x, tile_); break;
                case 14: Rsqrt(z, x, tile_); break;
                case 15: Reciprocal(z, x, tile_); break;
                case 16: Maxs(z, x, static_cast<T>(scalar), tile_); break;
                case 17: Mins(z, x, static_cast<T>(scalar), tile_); break;
                case 18: LeakyRelu(z, x, static_cast<T>(scalar), tile_); break;
                case 19: Cast(t.template ReinterpretCast<float>(), x, RoundMode::CAST_NONE, tile_);  // via float
                         Cast(z, t.template ReinterpretCast<float>(), RoundMode::CAST_NONE, tile_); break;
                case 20: ReduceMax(z, x, t, tile_); break;
                case 21: ReduceMin(z, x, t, tile_); break;
                case 22: ReduceSum(z, x, t, tile_); break;
                default:
                    if constexpr (std::is_integral_v<T>) {
                        if (op == 30) { And(z, x, y, tile_); break; }
                        if (op == 31) { Or(z, x, y, tile_); break; }
                        if (op == 32) { Not(z, x, tile_); break; }
                    }
                    trap();
            }
            out_.EnQue<T>(z);
            inX_.FreeTensor(x);
            inY_.FreeTensor(y);
            z = out_.DeQue<T>();
            DataCopy(zGm_[i * tile_], z, tile_);
            out_.FreeTensor(z);
        }
    }

private:
    TPipe pipe_;
    TQue<QuePosition::VECIN, BUFFER_NUM> inX_, inY_;
    TQue<QuePosition::VECOUT, BUFFER_NUM> out_;
    TBuf<QuePosition::VECCALC> tmp_;
    GlobalTensor<T> xGm_, yGm_, zGm_;
    uint32_t per_block_ = 0, tile_ = 0;
};
}  // namespace

extern "C" __global__ __aicore__ void ew_half(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t n, uint32_t tile, int32_t op,
                                              float scalar)
{
    Elementwise<half> k;
    k.Init(x, y, z, n, tile);
    k.Process(op, scalar);
}

extern "C" __global__ __aicore__ void ew_float(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t n, uint32_t tile, int32_t op,
                                               float scalar)
{
    Elementwise<float> k;
    k.Init(x, y, z, n, tile);
    k.Process(op, scalar);
}

extern "C" __global__ __aicore__ void ew_int32(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t n, uint32_t tile, int32_t op,
                                               float scalar)
{
    Elementwise<int32_t> k;
    k.Init(x, y, z, n, tile);
    k.Process(op, scalar);
}

// out[2 * b] = GetBlockIdx(), out[2 * b + 1] = GetBlockNum() (and the builtin variables agree)
extern "C" __global__ __aicore__ void block_ids(__gm__ int64_t *out)
{
    const int64_t b = GetBlockIdx();
    if (b != block_idx || GetBlockNum() != block_num) trap();
    out[2 * b] = b;
    out[2 * b + 1] = GetBlockNum();
}

// every scalar kind arrives with its value: out[i] = (double)arg_i
extern "C" __global__ __aicore__ void scalars(__gm__ double *out, int8_t a, uint16_t b, int64_t c, half d, float e,
                                              double f, bool g, uint64_t h)
{
    out[0] = a;
    out[1] = b;
    out[2] = static_cast<double>(c);
    out[3] = static_cast<float>(d);
    out[4] = e;
    out[5] = f;
    out[6] = g ? 1.0 : 0.0;
    out[7] = static_cast<double>(h);
}

// y = x cast to half (CAST_RINT), reading x through a pointer to const
extern "C" __global__ __aicore__ void cast_to_half(__gm__ const float *x, __gm__ half *y, uint32_t n)
{
    for (uint32_t i = 0; i < n; ++i) y[i] = static_cast<half>(x[i]);
}

// out[0] = sum of x[0..n) with ReduceSum over a TBuf copy (float)
extern "C" __global__ __aicore__ void reduce_sum(GM_ADDR x, GM_ADDR out, uint32_t n)
{
    TPipe pipe;
    TBuf<QuePosition::VECCALC> buf, work, res;
    pipe.InitBuffer(buf, n * sizeof(float));
    pipe.InitBuffer(work, n * sizeof(float));
    pipe.InitBuffer(res, 32);
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float *)x, n);
    og.SetGlobalBuffer((__gm__ float *)out, 1);
    LocalTensor<float> l = buf.Get<float>();
    LocalTensor<float> r = res.Get<float>();
    DataCopy(l, xg, n);
    ReduceSum(r, l, work.Get<float>(), n);
    og.SetValue(0, r.GetValue(0));
}

extern "C" __global__ __aicore__ void hello(int32_t value) { AscendC::printf("hello from block %ld: %d\n", (long)GetBlockIdx(), value); }

extern "C" __global__ __aicore__ void trapping(__gm__ int32_t *x)
{
    x[0] = 7;
    asm("trap");
}

// more unified buffer than an AI core has: the pipe traps
extern "C" __global__ __aicore__ void ub_overflow()
{
    TPipe pipe;
    TBuf<QuePosition::VECCALC> a, b;
    pipe.InitBuffer(a, 128 * 1024);
    pipe.InitBuffer(b, 128 * 1024);
}

// a launcher, as a program's kernel library has (compiled, not called from the binary)
void launch_hello(uint32_t blocks, void *stream, int32_t value) { hello<<<blocks, nullptr, stream>>>(value); }

// a barrier of all blocks through a GM counter: finishes only when the blocks of the
// launch run at the same time (a block holding the GIL, or blocks run one after another,
// would spin to the bound). out[1 + b] = 1 when block b saw every block arrive.
extern "C" __global__ __aicore__ void rendezvous(__gm__ int64_t *out, uint64_t bound)
{
    __atomic_fetch_add(&out[0], 1, __ATOMIC_SEQ_CST);
    uint64_t i = 0;
    while (__atomic_load_n(&out[0], __ATOMIC_SEQ_CST) < GetBlockNum() && i < bound) ++i;
    out[1 + GetBlockIdx()] = __atomic_load_n(&out[0], __ATOMIC_SEQ_CST) == GetBlockNum() ? 1 : 0;
}

// DataCopyParams: copy `count` blocks of `len` 32-byte blocks from x, skipping `gap` blocks of
// the source between them, packed into z (through the unified buffer)
extern "C" __global__ __aicore__ void strided_blocks(GM_ADDR x, GM_ADDR z, uint16_t count, uint16_t len, uint16_t gap)
{
    TPipe pipe;
    TBuf<QuePosition::VECCALC> buf;
    pipe.InitBuffer(buf, count * len * 32);
    GlobalTensor<uint8_t> xg, zg;
    xg.SetGlobalBuffer((__gm__ uint8_t *)x);
    zg.SetGlobalBuffer((__gm__ uint8_t *)z);
    LocalTensor<uint8_t> l = buf.Get<uint8_t>();
    DataCopy(l, xg, DataCopyParams(count, len, gap, 0));
    DataCopy(zg, l, DataCopyParams(count, len, 0, 0));
}
