/* aclnn's bad input from C: the aclnn status codes, NULL from a failed create, messages that
 * name the C function, and the workspace check; the library stays usable. */
#include "check.h"
#include "aclnnop/aclnn_add.h"
#include "aclnnop/aclnn_softmax.h"

static aclTensor *vec(void *data, int64_t n)
{
    int64_t shape[1] = {n}, strides[1] = {1};
    return aclCreateTensor(shape, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 1, data);
}

int main(void)
{
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    aclrtStream stream;
    CHECK(aclrtCreateStream(&stream));
    float host[4] = {1, 2, 3, 4}, back[4] = {0};
    void *a, *b;
    CHECK(aclrtMalloc(&a, 16, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(&b, 16, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemcpy(a, 16, host, 16, ACL_MEMCPY_HOST_TO_DEVICE));
    aclTensor *ta = vec(a, 4), *tb = vec(b, 4), *t1 = vec(a, 1);
    float one = 1.0f;
    aclScalar *alpha = aclCreateScalar(&one, ACL_FLOAT);
    EXPECT(ta && tb && t1 && alpha);

    int64_t bad[1] = {-3};
    EXPECT(aclCreateTensor(bad, 1, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, bad, 1, a) == NULL);
    printf("negative dim: NULL (%s)\n", aclGetRecentErrMsg());

    uint64_t size = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus st = aclnnAddGetWorkspaceSize(ta, NULL, alpha, tb, &size, &ex);
    EXPECT(st == 161001);
    printf("null other: %d %s\n", st, aclGetRecentErrMsg());
    st = aclnnSoftmaxGetWorkspaceSize(ta, 3, tb, &size, &ex);
    EXPECT(st == 161002);
    printf("bad dim: %d %s\n", st, aclGetRecentErrMsg());

    /* a broadcast operand needs workspace; one byte less is refused, the exact size works */
    CHECK(aclnnAddGetWorkspaceSize(ta, t1, alpha, tb, &size, &ex));
    EXPECT(size > 0);
    void *ws;
    CHECK(aclrtMalloc(&ws, size, ACL_MEM_MALLOC_HUGE_FIRST));
    st = aclnnAdd(ws, size - 1, ex, stream);
    EXPECT(st == 161002);
    printf("small workspace: %d %s\n", st, aclGetRecentErrMsg());
    CHECK(aclnnAddGetWorkspaceSize(ta, t1, alpha, tb, &size, &ex));
    CHECK(aclnnAdd(ws, size, ex, stream));
    CHECK(aclrtSynchronizeStream(stream));
    CHECK(aclrtMemcpy(back, 16, b, 16, ACL_MEMCPY_DEVICE_TO_HOST));
    for (int i = 0; i < 4; ++i) EXPECT(back[i] == host[i] + 1.0f);

    /* the queries: shape and strides in a buffer the caller frees */
    int64_t *dims = NULL;
    uint64_t ndims = 0;
    CHECK(aclGetViewShape(ta, &dims, &ndims));
    EXPECT(ndims == 1 && dims[0] == 4);
    free(dims);
    aclDataType dt;
    CHECK(aclGetDataType(ta, &dt));
    EXPECT(dt == ACL_FLOAT);
    aclFormat fmt;
    CHECK(aclGetFormat(ta, &fmt));
    EXPECT(fmt == ACL_FORMAT_ND);

    EXPECT(aclDestroyTensor(ta) == 0);
    EXPECT(aclDestroyTensor(ta) == 161002); /* destroyed twice */
    CHECK(aclDestroyTensor(tb));
    CHECK(aclDestroyTensor(t1));
    CHECK(aclDestroyScalar(alpha));
    CHECK(aclrtFree(ws));
    CHECK(aclrtFree(a));
    CHECK(aclrtFree(b));
    CHECK(aclrtDestroyStream(stream));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    printf("aclnn_errors: ok\n");
    return 0;
}
