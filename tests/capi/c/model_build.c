/* Building and editing ACL graphs from C: a built model with a label switch, a stream switch
   and an activated stream; a task group updated after capture; an IF task whose condition is a
   device word; external event records and waits; names and ids; the codes of bad use. */
#include "check.h"

static unsigned char byte_at(void *dev)
{
    unsigned char b = 0;
    CHECK(aclrtMemcpy(&b, 1, dev, 1, ACL_MEMCPY_DEVICE_TO_HOST));
    return b;
}

static void put_u32(void *dev, uint32_t v)
{
    CHECK(aclrtMemcpy(dev, sizeof v, &v, sizeof v, ACL_MEMCPY_HOST_TO_DEVICE));
}

static int destroyed_with = 0;

static void on_destroy(void *user)
{
    destroyed_with = *(int *)user;
}

static void run_model(aclmdlRI ri, aclrtStream s)
{
    CHECK(aclmdlRIExecuteAsync(ri, s));
    CHECK(aclrtSynchronizeStream(s));
}

int main(void)
{
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    aclrtStream exec, plain, head, taken;
    CHECK(aclrtCreateStream(&exec));
    CHECK(aclrtCreateStream(&plain));
    CHECK(aclrtCreateStreamWithConfig(&head, 0, ACL_STREAM_PERSISTENT));
    CHECK(aclrtCreateStreamWithConfig(&taken, 0, ACL_STREAM_PERSISTENT));
    void *a, *b, *idx, *left, *right;
    CHECK(aclrtMalloc(&a, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(&b, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(&idx, 8, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(&left, 8, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(&right, 8, ACL_MEM_MALLOC_HUGE_FIRST));

    /* a built model: label switch on the head stream, then a stream switch to `taken` */
    aclmdlRI ri = NULL;
    CHECK(aclmdlRIBuildBegin(&ri, 0));
    aclError e = aclmdlRIBindStream(ri, plain, ACL_MODEL_STREAM_FLAG_HEAD);
    printf("bind a non-persistent stream: %d\n", e);
    EXPECT(e == ACL_ERROR_RT_PARAM_INVALID);
    e = aclrtActiveStream(taken, plain);
    printf("activate from an unbound stream: %d\n", e);
    EXPECT(e == ACL_ERROR_RT_STREAM_MODEL);
    CHECK(aclmdlRIBindStream(ri, head, ACL_MODEL_STREAM_FLAG_HEAD));
    CHECK(aclmdlRIBindStream(ri, taken, ACL_MODEL_STREAM_FLAG_DEFAULT));
    aclrtLabel labels[2];
    CHECK(aclrtCreateLabel(&labels[0]));
    CHECK(aclrtCreateLabel(&labels[1]));
    aclrtLabelList list;
    CHECK(aclrtCreateLabelList(labels, 2, &list));
    CHECK(aclrtSwitchLabelByIndex(idx, 2, list, head));
    CHECK(aclrtSetLabel(labels[0], head));
    CHECK(aclrtMemsetAsync(a, 64, 0x11, 64, head));           /* index 0 only */
    CHECK(aclrtSetLabel(labels[1], head));
    CHECK(aclrtSwitchStream(left, ACL_RT_EQUAL, right, ACL_RT_SWITCH_INT32, taken, NULL, head));
    CHECK(aclrtMemsetAsync(b, 64, 0x22, 64, taken));
    CHECK(aclmdlRIEndTask(ri, taken));
    CHECK(aclmdlRIBuildEnd(ri, NULL));
    CHECK(aclrtMemset(a, 64, 0, 64));
    put_u32(idx, 1);
    put_u32(left, 7);
    put_u32(right, 7);
    run_model(ri, exec);
    printf("label 1: a=%#x b=%#x\n", byte_at(a), byte_at(b));
    EXPECT(byte_at(a) == 0 && byte_at(b) == 0x22);
    put_u32(idx, 0);
    run_model(ri, exec);
    EXPECT(byte_at(a) == 0x11);
    uint32_t id = 0;
    CHECK(aclmdlRISetName(ri, "switches"));
    char name[16];
    CHECK(aclmdlRIGetName(ri, sizeof name, name));
    CHECK(aclmdlRIGetId(ri, &id));
    EXPECT(strcmp(name, "switches") == 0 && id > 0);
    static int token = 42;
    CHECK(aclmdlRIDestroyRegisterCallback(ri, on_destroy, &token));
    CHECK(aclmdlRIUnbindStream(ri, head));
    CHECK(aclmdlRIUnbindStream(ri, taken));
    CHECK(aclmdlRIDestroy(ri));
    printf("destroy callback saw %d\n", destroyed_with);
    EXPECT(destroyed_with == 42);
    CHECK(aclrtDestroyLabelList(list));
    CHECK(aclrtDestroyLabel(labels[0]));
    CHECK(aclrtDestroyLabel(labels[1]));

    /* a task group, updated after capture */
    aclrtStream s, upd, sub;
    CHECK(aclrtCreateStream(&s));
    CHECK(aclrtCreateStream(&upd));
    CHECK(aclrtCreateStream(&sub));
    aclrtTaskGrp grp = NULL;
    CHECK(aclmdlRICaptureBegin(s, ACL_MODEL_RI_CAPTURE_MODE_RELAXED));
    CHECK(aclmdlRICaptureTaskGrpBegin(s));
    CHECK(aclrtMemsetAsync(a, 64, 0x33, 64, s));
    CHECK(aclmdlRICaptureTaskGrpEnd(s, &grp));
    CHECK(aclmdlRICaptureEnd(s, &ri));
    run_model(ri, s);
    EXPECT(byte_at(a) == 0x33);
    CHECK(aclmdlRICaptureTaskUpdateBegin(upd, grp));
    CHECK(aclrtMemsetAsync(a, 64, 0x44, 64, upd));
    CHECK(aclmdlRICaptureTaskUpdateEnd(upd));
    CHECK(aclrtSynchronizeStream(upd));
    run_model(ri, s);
    printf("after the update: a=%#x\n", byte_at(a));
    EXPECT(byte_at(a) == 0x44);
    e = aclmdlRICaptureTaskUpdateEnd(upd);
    printf("update end without begin: %d\n", e);
    EXPECT(e == ACL_ERROR_RT_STREAM_NOT_CAPTURED);
    CHECK(aclmdlRIDestroy(ri));

    /* an IF task: the word nonzero runs body 0, zero body 1 */
    aclmdlRI parent = NULL, bodies[2] = {NULL, NULL};
    aclmdlRICaptureStatus status;
    CHECK(aclmdlRICaptureBegin(s, ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL));
    CHECK(aclmdlRICaptureGetInfo(s, &status, &parent));
    aclmdlRICondHandle cond;
    CHECK(aclmdlRICondHandleCreate(parent, 0, 0, &cond));
    uint64_t *word = NULL;
    CHECK(aclmdlRICondHandleGetCondPtr(cond, &word));
    aclmdlRICondTaskParams params;
    params.handle = cond;
    params.type = ACL_MODEL_RI_COND_TYPE_IF;
    params.size = 2;
    params.modelRIArray = bodies;
    CHECK(aclmdlRIAddCondTask(params, s, 0));
    EXPECT(bodies[0] != NULL && bodies[1] != NULL);
    CHECK(aclmdlRICaptureToModelRIBegin(sub, bodies[0], ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL));
    CHECK(aclrtMemsetAsync(b, 64, 0x55, 64, sub));
    CHECK(aclmdlRICaptureEnd(sub, &bodies[0]));
    CHECK(aclmdlRICaptureToModelRIBegin(sub, bodies[1], ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL));
    CHECK(aclrtMemsetAsync(b, 64, 0x66, 64, sub));
    CHECK(aclmdlRICaptureEnd(sub, &bodies[1]));
    CHECK(aclmdlRICaptureEnd(s, &parent));
    uint64_t one = 1, zero = 0;
    CHECK(aclrtMemcpy(word, 8, &one, 8, ACL_MEMCPY_HOST_TO_DEVICE));
    run_model(parent, s);
    EXPECT(byte_at(b) == 0x55);
    CHECK(aclrtMemcpy(word, 8, &zero, 8, ACL_MEMCPY_HOST_TO_DEVICE));
    run_model(parent, s);
    printf("IF on zero: b=%#x\n", byte_at(b));
    EXPECT(byte_at(b) == 0x66);
    e = aclmdlRIAddCondTask(params, s, 0);
    printf("cond task outside a capture: %d\n", e);
    EXPECT(e == ACL_ERROR_RT_STREAM_NOT_CAPTURED);
    CHECK(aclmdlRIDestroy(parent));

    /* a graph records an event for real at each replay; a stream outside waits for it */
    aclrtEvent ev;
    CHECK(aclrtCreateEventExWithFlag(&ev, ACL_EVENT_SYNC));
    CHECK(aclmdlRICaptureBegin(s, ACL_MODEL_RI_CAPTURE_MODE_RELAXED));
    CHECK(aclrtMemsetAsync(a, 64, 0x77, 64, s));
    CHECK(aclrtRecordEventWithFlag(ev, s, ACL_EVENT_RECORD_EXTERNAL));
    CHECK(aclmdlRICaptureEnd(s, &ri));
    CHECK(aclmdlRIExecuteAsync(ri, s));
    CHECK(aclrtStreamWaitEventWithFlag(upd, ev, 0, ACL_EVENT_WAIT_DEFAULT));
    unsigned char seen = 0;
    CHECK(aclrtMemcpyAsync(&seen, 1, a, 1, ACL_MEMCPY_DEVICE_TO_HOST, upd));
    CHECK(aclrtSynchronizeStream(upd));
    EXPECT(seen == 0x77);
    CHECK(aclmdlRIDestroy(ri));
    CHECK(aclrtDestroyEvent(ev));

    /* per-task queries: the value write of a captured graph, changed by SetParams + Update */
    CHECK(aclmdlRICaptureBegin(s, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL));
    CHECK(aclrtValueWrite(left, 5, 0, s));
    CHECK(aclmdlRICaptureEnd(s, &ri));
    uint32_t nstreams = 0, ntasks = 0;
    CHECK(aclmdlRIGetStreams(ri, NULL, &nstreams));
    EXPECT(nstreams == 1);
    aclrtStream ms[1];
    CHECK(aclmdlRIGetStreams(ri, ms, &nstreams));
    CHECK(aclmdlRIGetTasksByStream(ms[0], NULL, &ntasks));
    EXPECT(ntasks == 1);
    aclmdlRITask task;
    CHECK(aclmdlRIGetTasksByStream(ms[0], &task, &ntasks));
    aclmdlRITaskType ttype;
    CHECK(aclmdlRITaskGetType(task, &ttype));
    EXPECT(ttype == ACL_MODEL_RI_TASK_VALUE_WRITE);
    aclmdlRITaskParams tp;
    CHECK(aclmdlRITaskGetParams(task, &tp));
    EXPECT(tp.valueWriteTaskParams.devAddr == left && tp.valueWriteTaskParams.value == 5);
    tp.valueWriteTaskParams.value = 9;
    CHECK(aclmdlRITaskSetParams(task, &tp));
    CHECK(aclmdlRIUpdate(ri));
    run_model(ri, s);
    uint64_t got = 0;
    CHECK(aclrtMemcpy(&got, 8, left, 8, ACL_MEMCPY_DEVICE_TO_HOST));
    printf("value after SetParams + Update: %llu\n", (unsigned long long)got);
    EXPECT(got == 9);
    ntasks = 0;
    e = aclmdlRIGetTasksByStream(ms[0], &task, &ntasks);
    printf("a task array too small: %d\n", e);
    EXPECT(e == ACL_ERROR_RT_INSUFFICIENT_INPUT_ARRAY);
    CHECK(aclmdlRIDestroy(ri));

    CHECK(aclrtFree(a));
    CHECK(aclrtFree(b));
    CHECK(aclrtFree(idx));
    CHECK(aclrtFree(left));
    CHECK(aclrtFree(right));
    CHECK(aclrtResetDeviceForce(0));
    CHECK(aclFinalize());
    printf("model_build: ok\n");
    return 0;
}
