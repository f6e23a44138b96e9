/* aclnn operators are tasks like any other: aclrtGetThreadLastTaskId names the op's task,
 * and the data dump configured by aclInit's JSON (argument 1) sees the op's tensors after it
 * ran: handed to the acldumpRegCallback callback (argument 2 "callback") or written under the
 * dump path (argument 2 "files"). */
#include "check.h"
#include "acl/acl_dump.h"
#include "aclnnop/aclnn_add.h"

static int chunks = 0, inputs = 0, outputs = 0, out_ok = 0;

static int32_t on_chunk(const acldumpChunk *chunk, int32_t len)
{
    EXPECT(chunk != NULL && (int32_t)(sizeof(acldumpChunk) + chunk->bufLen) == len);
    ++chunks;
    if (strstr(chunk->fileName, ".input.")) ++inputs;
    if (strstr(chunk->fileName, ".output.0.")) {
        ++outputs;
        const float *v = (const float *)chunk->dataBuf;
        out_ok = chunk->bufLen == 16 && v[0] == 11 && v[1] == 22 && v[2] == 33 && v[3] == 44;
    }
    printf("chunk %s: %u bytes, last %u\n", chunk->fileName, chunk->bufLen, chunk->isLastChunk);
    return 0;
}

static aclTensor *vec(void *data)
{
    int64_t shape[1] = {4}, strides[1] = {1};
    return aclCreateTensor(shape, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 1, data);
}

int main(int argc, char **argv)
{
    EXPECT(argc == 3);
    int callback = strcmp(argv[2], "callback") == 0;
    CHECK(aclInit(argv[1]));
    CHECK(aclrtSetDevice(0));
    aclrtStream stream;
    CHECK(aclrtCreateStream(&stream));
    if (callback) CHECK(acldumpRegCallback(on_chunk, 0));
    EXPECT(acldumpGetPath(DATA_DUMP) != NULL);
    float x[4] = {1, 2, 3, 4}, y[4] = {10, 20, 30, 40}, back[4] = {0};
    void *a, *b, *c;
    CHECK(aclrtMalloc(&a, 16, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(&b, 16, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(&c, 16, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemcpyAsync(a, 16, x, 16, ACL_MEMCPY_HOST_TO_DEVICE, stream));
    uint32_t copy_task = 0, op_task = 0;
    CHECK(aclrtGetThreadLastTaskId(&copy_task));
    CHECK(aclrtMemcpyAsync(b, 16, y, 16, ACL_MEMCPY_HOST_TO_DEVICE, stream));
    CHECK(aclrtGetThreadLastTaskId(&copy_task));
    aclTensor *ta = vec(a), *tb = vec(b), *tc = vec(c);
    float one = 1.0f;
    aclScalar *alpha = aclCreateScalar(&one, ACL_FLOAT);
    uint64_t size = 0;
    aclOpExecutor *ex = NULL;
    CHECK(aclnnAddGetWorkspaceSize(ta, tb, alpha, tc, &size, &ex));
    EXPECT(size == 0);
    CHECK(aclnnAdd(NULL, 0, ex, stream));
    CHECK(aclrtGetThreadLastTaskId(&op_task));
    printf("task ids: copy %u, aclnnAdd %u\n", copy_task, op_task);
    EXPECT(op_task > copy_task);
    CHECK(aclrtSynchronizeStream(stream));
    CHECK(aclrtMemcpy(back, 16, c, 16, ACL_MEMCPY_DEVICE_TO_HOST));
    for (int i = 0; i < 4; ++i) EXPECT(back[i] == x[i] + y[i]);
    if (callback) {
        printf("callback: %d chunks, %d inputs, %d outputs, output bytes %s\n", chunks, inputs, outputs,
               out_ok ? "correct" : "wrong");
        EXPECT(chunks == 3 && inputs == 2 && outputs == 1 && out_ok);
        acldumpUnregCallback();
    }
    aclDestroyTensor(ta);
    aclDestroyTensor(tb);
    aclDestroyTensor(tc);
    aclDestroyScalar(alpha);
    CHECK(aclrtFree(a));
    CHECK(aclrtFree(b));
    CHECK(aclrtFree(c));
    CHECK(aclrtDestroyStream(stream));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    printf("aclnn_dump: ok\n");
    return 0;
}
