// A small MLP layer with aclnn: y = relu(x @ w + b), then the row sums of y, all enqueued on
// one stream; the workspace of every op is what its first phase asks for.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_add.h"
#include "aclnnop/aclnn_matmul.h"
#include "aclnnop/aclnn_reduce_sum.h"
#include "aclnnop/aclnn_relu.h"

#define CHECK(call)                                                                                  \
    do {                                                                                             \
        int ret_ = static_cast<int>(call);                                                           \
        if (ret_ != 0) {                                                                             \
            std::printf("%s failed: %d (%s)\n", #call, ret_, aclGetRecentErrMsg());                  \
            return 1;                                                                                \
        }                                                                                            \
    } while (0)

struct DeviceTensor {
    void *data = nullptr;
    aclTensor *tensor = nullptr;
};

// a contiguous float tensor on the device, filled from `host` (or zeros)
static int make(const std::vector<int64_t> &shape, const std::vector<float> &host, DeviceTensor *t)
{
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    CHECK(aclrtMalloc(&t->data, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    std::vector<float> fill = host.empty() ? std::vector<float>(n, 0.0f) : host;
    CHECK(aclrtMemcpy(t->data, bytes, fill.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE));
    std::vector<int64_t> strides(shape.size(), 1);
    for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
    t->tensor = aclCreateTensor(shape.data(), shape.size(), ACL_FLOAT, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                                shape.size(), t->data);
    return t->tensor == nullptr;
}

// run one op's second phase with the workspace its first phase asked for
static int run(aclnnStatus (*op)(void *, uint64_t, aclOpExecutor *, aclrtStream), uint64_t size,
               aclOpExecutor *executor, aclrtStream stream)
{
    void *workspace = nullptr;
    if (size > 0) CHECK(aclrtMalloc(&workspace, size, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(op(workspace, size, executor, stream));
    if (workspace) CHECK(aclrtFree(workspace));  // stream-ordered: the queued op keeps it
    return 0;
}

int main()
{
    const int64_t rows = 4, in = 8, out = 3;
    std::vector<float> x(rows * in), w(in * out), b(out);
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i));
    for (size_t i = 0; i < w.size(); ++i) w[i] = std::cos(static_cast<float>(i)) / 2;
    for (size_t i = 0; i < b.size(); ++i) b[i] = 0.1f * static_cast<float>(i) - 0.1f;

    CHECK(aclInit(nullptr));
    CHECK(aclrtSetDevice(0));
    aclrtStream stream = nullptr;
    CHECK(aclrtCreateStream(&stream));
    DeviceTensor tx, tw, tb, th, ty, ts;
    if (make({rows, in}, x, &tx) || make({in, out}, w, &tw) || make({out}, b, &tb) || make({rows, out}, {}, &th) ||
        make({rows, out}, {}, &ty) || make({rows}, {}, &ts))
        return 1;
    float one = 1.0f;
    aclScalar *alpha = aclCreateScalar(&one, ACL_FLOAT);
    int64_t axis = 1;
    aclIntArray *dims = aclCreateIntArray(&axis, 1);

    uint64_t size = 0;
    aclOpExecutor *executor = nullptr;
    CHECK(aclnnMatmulGetWorkspaceSize(tx.tensor, tw.tensor, th.tensor, 0, &size, &executor));
    if (run(aclnnMatmul, size, executor, stream)) return 1;
    CHECK(aclnnAddGetWorkspaceSize(th.tensor, tb.tensor, alpha, ty.tensor, &size, &executor));  // b broadcasts
    std::printf("aclnnAdd with a broadcast bias asks for %llu workspace bytes\n", (unsigned long long)size);
    if (run(aclnnAdd, size, executor, stream)) return 1;
    CHECK(aclnnInplaceReluGetWorkspaceSize(ty.tensor, &size, &executor));
    if (run(aclnnInplaceRelu, size, executor, stream)) return 1;
    CHECK(aclnnReduceSumGetWorkspaceSize(ty.tensor, dims, false, ACL_FLOAT, ts.tensor, &size, &executor));
    if (run(aclnnReduceSum, size, executor, stream)) return 1;
    CHECK(aclrtSynchronizeStream(stream));

    std::vector<float> y(rows * out), s(rows);
    CHECK(aclrtMemcpy(y.data(), y.size() * 4, ty.data, y.size() * 4, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(aclrtMemcpy(s.data(), s.size() * 4, ts.data, s.size() * 4, ACL_MEMCPY_DEVICE_TO_HOST));
    for (int64_t r = 0; r < rows; ++r) {
        float sum = 0;
        for (int64_t c = 0; c < out; ++c) {
            float acc = b[c];
            for (int64_t k = 0; k < in; ++k) acc += x[r * in + k] * w[k * out + c];
            acc = acc > 0 ? acc : 0;
            if (std::fabs(acc - y[r * out + c]) > 1e-4f) {
                std::printf("y[%lld][%lld] = %f, expected %f\n", (long long)r, (long long)c, y[r * out + c], acc);
                return 1;
            }
            sum += acc;
        }
        if (std::fabs(sum - s[r]) > 1e-4f) {
            std::printf("sum[%lld] = %f, expected %f\n", (long long)r, s[r], sum);
            return 1;
        }
        std::printf("row %lld: sum of relu(x @ w + b) = %f\n", (long long)r, s[r]);
    }

    for (DeviceTensor *t : {&tx, &tw, &tb, &th, &ty, &ts}) {
        CHECK(aclDestroyTensor(t->tensor));
        CHECK(aclrtFree(t->data));
    }
    CHECK(aclDestroyScalar(alpha));
    CHECK(aclDestroyIntArray(dims));
    CHECK(aclrtDestroyStream(stream));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    std::printf("aclnn: ok\n");
    return 0;
}
