// z = x + alpha * y on half, every block a contiguous slice, tile by tile through the
// unified buffer: the classic Ascend C vector kernel (TPipe, TQue, DataCopy, Muls, Add).
#include "kernel_operator.h"

using namespace AscendC;

namespace {
constexpr int32_t BUFFER_NUM = 2;  // double buffering

class ScaledAdd {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t total, uint32_t tile, float alpha)
    {
        length_ = total / GetBlockNum();
        tile_ = tile;
        alpha_ = alpha;
        const uint64_t start = static_cast<uint64_t>(length_) * GetBlockIdx();
        x_.SetGlobalBuffer((__gm__ half *)x + start, length_);
        y_.SetGlobalBuffer((__gm__ half *)y + start, length_);
        z_.SetGlobalBuffer((__gm__ half *)z + start, length_);
        pipe_.InitBuffer(inX_, BUFFER_NUM, tile_ * sizeof(half));
        pipe_.InitBuffer(inY_, BUFFER_NUM, tile_ * sizeof(half));
        pipe_.InitBuffer(out_, BUFFER_NUM, tile_ * sizeof(half));
    }

    __aicore__ inline void Process()
    {
        for (uint32_t i = 0; i < length_ / tile_; ++i) {
            LocalTensor<half> x = inX_.AllocTensor<half>();
            LocalTensor<half> y = inY_.AllocTensor<half>();
            DataCopy(x, x_[i * tile_], tile_);
            DataCopy(y, y_[i * tile_], tile_);
            inX_.EnQue(x);
            inY_.EnQue(y);

            x = inX_.DeQue<half>();
            y = inY_.DeQue<half>();
            LocalTensor<half> z = out_.AllocTensor<half>();
            Muls(y, y, static_cast<half>(alpha_), tile_);
            Add(z, x, y, tile_);
            out_.EnQue<half>(z);
            inX_.FreeTensor(x);
            inY_.FreeTensor(y);

            z = out_.DeQue<half>();
            DataCopy(z_[i * tile_], z, tile_);
            out_.FreeTensor(z);
        }
    }

private:
    TPipe pipe_;
    TQue<QuePosition::VECIN, BUFFER_NUM> inX_, inY_;
    TQue<QuePosition::VECOUT, BUFFER_NUM> out_;
    GlobalTensor<half> x_, y_, z_;
    uint32_t length_ = 0, tile_ = 0;
    float alpha_ = 1.0f;
};
}  // namespace

extern "C" __global__ __aicore__ void scaled_add(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t total, uint32_t tile,
                                                 float alpha)
{
    ScaledAdd op;
    op.Init(x, y, z, total, tile, alpha);
    op.Process();
}

// the host-side launcher the program calls (a <<<>>> launch is one task of `stream`)
uint32_t launch_scaled_add(uint32_t blocks, void *stream, uint8_t *x, uint8_t *y, uint8_t *z, uint32_t total,
                           uint32_t tile, float alpha)
{
    return scaled_add<<<blocks, nullptr, stream>>>(x, y, z, total, tile, alpha);
}
