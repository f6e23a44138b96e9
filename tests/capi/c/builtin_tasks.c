/* Built-in tasks: reduce, random numbers in range, stream value write / wait ordering two streams. */
#include "check.h"

int main(void)
{
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    aclrtStream a, b;
    CHECK(aclrtCreateStream(&a));
    CHECK(aclrtCreateStream(&b));
    enum { N = 64 };
    float ones[N], twos[N], out[N];
    for (int i = 0; i < N; i++) { ones[i] = 1.0f; twos[i] = 2.0f; }
    void *x = NULL, *y = NULL;
    CHECK(aclrtMalloc(&x, sizeof ones, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(&y, sizeof ones, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemcpy(x, sizeof ones, ones, sizeof ones, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK(aclrtMemcpy(y, sizeof twos, twos, sizeof twos, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK(aclrtReduceAsync(x, y, sizeof ones, ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, ACL_FLOAT, a, NULL));
    CHECK(aclrtSynchronizeStream(a));
    CHECK(aclrtMemcpy(out, sizeof out, x, sizeof out, ACL_MEMCPY_DEVICE_TO_HOST));
    EXPECT(out[0] == 3.0f && out[N - 1] == 3.0f);

    aclrtRandomNumTaskInfo info;
    memset(&info, 0, sizeof info);
    info.dataType = ACL_FLOAT;
    info.randomNumFuncParaInfo.funcType = ACL_RT_RANDOM_NUM_FUNC_TYPE_UNIFORM_DIS;
    info.randomResultAddr = y;
    float lo = 5.0f, hi = 6.0f;
    uint64_t seed = 7, num = N;
    memcpy(info.randomNumFuncParaInfo.paramInfo.uniformDisInfo.min.valueOrAddr, &lo, sizeof lo);
    info.randomNumFuncParaInfo.paramInfo.uniformDisInfo.min.size = sizeof lo;
    memcpy(info.randomNumFuncParaInfo.paramInfo.uniformDisInfo.max.valueOrAddr, &hi, sizeof hi);
    info.randomNumFuncParaInfo.paramInfo.uniformDisInfo.max.size = sizeof hi;
    memcpy(info.randomSeed.valueOrAddr, &seed, sizeof seed);
    info.randomSeed.size = sizeof seed;
    memcpy(info.randomNum.valueOrAddr, &num, sizeof num);
    info.randomNum.size = sizeof num;
    CHECK(aclrtRandomNumAsync(&info, a, NULL));
    CHECK(aclrtSynchronizeStream(a));
    CHECK(aclrtMemcpy(out, sizeof out, y, sizeof out, ACL_MEMCPY_DEVICE_TO_HOST));
    int distinct = 0;
    for (int i = 0; i < N; i++) {
        EXPECT(out[i] >= 5.0f && out[i] < 6.0f);
        distinct += i > 0 && out[i] != out[i - 1];
    }
    EXPECT(distinct > N / 2);

    /* stream b waits for a flag stream a writes; b's copy runs only after it */
    void *flag = NULL;
    CHECK(aclrtMalloc(&flag, 8, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemset(flag, 8, 0, 8));
    CHECK(aclrtValueWait(flag, 9, ACL_STREAM_WAIT_VALUE_EQ, b));
    CHECK(aclrtMemcpyAsync(x, sizeof ones, y, sizeof ones, ACL_MEMCPY_DEVICE_TO_DEVICE, b));
    aclrtStreamStatus st;
    CHECK(aclrtStreamQuery(b, &st));
    EXPECT(st == ACL_STREAM_STATUS_NOT_READY);
    CHECK(aclrtValueWrite(flag, 9, 0, a));
    CHECK(aclrtSynchronizeStream(b));
    float check[N];
    CHECK(aclrtMemcpy(check, sizeof check, x, sizeof check, ACL_MEMCPY_DEVICE_TO_HOST));
    EXPECT(check[3] == out[3]);

    CHECK(aclrtFree(flag));
    CHECK(aclrtFree(x));
    CHECK(aclrtFree(y));
    CHECK(aclrtDestroyStream(a));
    CHECK(aclrtDestroyStream(b));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    printf("builtin_tasks: ok\n");
    return 0;
}
