/* ACL graph from C: capture (work recorded, not run), replay with new inputs at the same
   addresses, cross-stream capture through events, the codes of calls a capture forbids. */
#include "check.h"

int main(void)
{
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    aclrtStream s, side;
    CHECK(aclrtCreateStream(&s));
    CHECK(aclrtCreateStream(&side));
    aclrtEvent fork, back;
    CHECK(aclrtCreateEvent(&fork));
    CHECK(aclrtCreateEvent(&back));
    enum { N = 16 };
    float in[N], out[N];
    void *a = NULL, *b = NULL, *c = NULL;
    CHECK(aclrtMalloc(&a, sizeof in, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(&b, sizeof in, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(&c, sizeof in, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemset(b, sizeof in, 0, sizeof in));

    CHECK(aclmdlRICaptureBegin(s, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL));
    CHECK(aclrtMemcpyAsync(b, sizeof in, a, sizeof in, ACL_MEMCPY_DEVICE_TO_DEVICE, s));
    CHECK(aclrtRecordEvent(fork, s));
    CHECK(aclrtStreamWaitEvent(side, fork));             /* side joins the capture */
    CHECK(aclrtMemcpyAsync(c, sizeof in, b, sizeof in, ACL_MEMCPY_DEVICE_TO_DEVICE, side));
    CHECK(aclrtRecordEvent(back, side));
    CHECK(aclrtStreamWaitEvent(s, back));
    aclmdlRICaptureStatus status;
    aclmdlRI during = NULL, ri = NULL;
    CHECK(aclmdlRICaptureGetInfo(s, &status, &during));
    EXPECT(status == ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE && during != NULL);
    aclError sync = aclrtSynchronizeStream(side);
    printf("synchronize during capture: %d\n", sync);
    EXPECT(sync == ACL_ERROR_RT_STREAM_CAPTURED);
    CHECK(aclmdlRICaptureGetInfo(s, &status, &during));  /* the refusal ended nothing, as in CANN */
    EXPECT(status == ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE);
    aclError end = aclmdlRICaptureEnd(s, &ri);
    printf("end after a refused synchronize: %d\n", end);
    EXPECT(end == ACL_SUCCESS && ri != NULL);
    CHECK(aclmdlRIDestroy(ri));
    ri = NULL;

    /* again, cleanly */
    CHECK(aclmdlRICaptureBegin(s, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL));
    CHECK(aclrtMemcpyAsync(b, sizeof in, a, sizeof in, ACL_MEMCPY_DEVICE_TO_DEVICE, s));
    CHECK(aclrtRecordEvent(fork, s));
    CHECK(aclrtStreamWaitEvent(side, fork));
    CHECK(aclrtMemcpyAsync(c, sizeof in, b, sizeof in, ACL_MEMCPY_DEVICE_TO_DEVICE, side));
    CHECK(aclrtRecordEvent(back, side));
    CHECK(aclrtStreamWaitEvent(s, back));
    aclError refused = aclrtMemcpy(out, sizeof out, a, sizeof out, ACL_MEMCPY_DEVICE_TO_HOST);
    printf("synchronous copy in GLOBAL mode: %d\n", refused);
    EXPECT(refused == ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT);
    EXPECT(aclmdlRICaptureEnd(s, &ri) == ACL_SUCCESS);   /* the refused copy did nothing */
    CHECK(aclmdlRIDestroy(ri));
    ri = NULL;

    CHECK(aclmdlRICaptureBegin(s, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL));
    CHECK(aclrtMemcpyAsync(b, sizeof in, a, sizeof in, ACL_MEMCPY_DEVICE_TO_DEVICE, s));
    CHECK(aclrtRecordEvent(fork, s));
    CHECK(aclrtStreamWaitEvent(side, fork));
    CHECK(aclrtMemcpyAsync(c, sizeof in, b, sizeof in, ACL_MEMCPY_DEVICE_TO_DEVICE, side));
    CHECK(aclrtRecordEvent(back, side));
    CHECK(aclrtStreamWaitEvent(s, back));
    aclmdlRICaptureMode mode = ACL_MODEL_RI_CAPTURE_MODE_RELAXED;
    CHECK(aclmdlRICaptureThreadExchangeMode(&mode));
    EXPECT(mode == ACL_MODEL_RI_CAPTURE_MODE_GLOBAL);
    for (int i = 0; i < N; i++) in[i] = -1.0f;
    CHECK(aclrtMemcpy(a, sizeof in, in, sizeof in, ACL_MEMCPY_HOST_TO_DEVICE));  /* runs now */
    CHECK(aclmdlRICaptureThreadExchangeMode(&mode));
    CHECK(aclmdlRICaptureEnd(s, &ri));
    CHECK(aclrtMemcpy(out, sizeof out, c, sizeof out, ACL_MEMCPY_DEVICE_TO_HOST));
    for (int k = 1; k <= 3; k++) {
        for (int i = 0; i < N; i++) in[i] = (float)(k * 10 + i);
        CHECK(aclrtMemcpy(a, sizeof in, in, sizeof in, ACL_MEMCPY_HOST_TO_DEVICE));
        CHECK(aclmdlRIExecuteAsync(ri, s));
        CHECK(aclrtSynchronizeStream(s));
        CHECK(aclrtMemcpy(out, sizeof out, c, sizeof out, ACL_MEMCPY_DEVICE_TO_HOST));
        EXPECT(out[0] == (float)(k * 10) && out[N - 1] == (float)(k * 10 + N - 1));
    }
    CHECK(aclmdlRIExecute(ri, 5000));
    CHECK(aclmdlRIDestroy(ri));
    EXPECT(aclmdlRIExecuteAsync(ri, s) == ACL_ERROR_RT_INVALID_HANDLE);
    EXPECT(aclmdlRICaptureEnd(s, &ri) == ACL_ERROR_RT_STREAM_NOT_CAPTURED);
    EXPECT(aclmdlRICaptureBegin(NULL, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL) == ACL_ERROR_RT_PARAM_INVALID);

    CHECK(aclrtFree(a));
    CHECK(aclrtFree(b));
    CHECK(aclrtFree(c));
    CHECK(aclrtDestroyEvent(fork));
    CHECK(aclrtDestroyEvent(back));
    CHECK(aclrtDestroyStream(s));
    CHECK(aclrtDestroyStream(side));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    printf("graph: ok\n");
    return 0;
}
