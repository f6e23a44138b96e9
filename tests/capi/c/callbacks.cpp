// Callbacks and host functions: aclrtLaunchCallback runs on the subscribed C thread (by its
// std::thread id, as the runtime's samples pass it), aclrtLaunchHostFunc never runs on the
// thread that enqueued or synchronizes, host functions of a subscribed stream run in
// aclrtProcessHostFunc on the subscribing thread; per-thread current contexts.
#include "check.h"
#include <atomic>
#include <mutex>
#include <sstream>
#include <thread>

static std::atomic<int> callbacks{0}, hostFuncs{0};
static std::atomic<bool> wrongThread{false};
static std::thread::id mainId, reportId, hostId;
static std::mutex lock;

static uint64_t asInt(std::thread::id id)
{
    std::ostringstream s;
    s << id;
    return std::stoull(s.str());
}

static void onCallback(void *arg)
{
    if (std::this_thread::get_id() != reportId) wrongThread = true;
    callbacks += *static_cast<int *>(arg);
}

static void onHostFunc(void *arg)
{
    if (std::this_thread::get_id() == mainId) wrongThread = true;
    std::lock_guard<std::mutex> guard(lock);  // main holds no lock: a host function may take it
    hostFuncs += *static_cast<int *>(arg);
}

static void onSubscribedHostFunc(void *arg)
{
    if (std::this_thread::get_id() != hostId) wrongThread = true;
    hostFuncs += *static_cast<int *>(arg);
}

int main()
{
    CHECK(aclInit(nullptr));
    CHECK(aclrtSetDevice(0));
    aclrtContext ctx;
    CHECK(aclrtGetCurrentContext(&ctx));
    aclrtStream stream, other;
    CHECK(aclrtCreateStream(&stream));
    CHECK(aclrtCreateStream(&other));
    mainId = std::this_thread::get_id();
    std::atomic<bool> running{true};
    std::thread report([&] {
        CHECK(aclrtSetCurrentContext(ctx));
        while (running) aclrtProcessReport(50);
    });
    std::thread host([&] {
        CHECK(aclrtSetCurrentContext(ctx));
        while (running) aclrtProcessHostFunc(50);
    });
    reportId = report.get_id();
    hostId = host.get_id();
    CHECK(aclrtSubscribeReport(asInt(reportId), stream));
    int one = 1;
    for (int i = 0; i < 5; i++) CHECK(aclrtLaunchCallback(onCallback, &one, ACL_CALLBACK_BLOCK, stream));
    CHECK(aclrtLaunchHostFunc(stream, onHostFunc, &one));
    CHECK(aclrtSynchronizeStream(stream));
    EXPECT(callbacks == 5 && hostFuncs == 1);

    CHECK(aclrtSubscribeHostFunc(asInt(hostId), other));
    int ten = 10;
    CHECK(aclrtLaunchHostFunc(other, onSubscribedHostFunc, &ten));
    CHECK(aclrtSynchronizeStream(other));
    EXPECT(hostFuncs == 11);
    CHECK(aclrtUnSubscribeHostFunc(asInt(hostId), other));

    // a C thread that never set a device has no current context until it makes one current
    std::thread fresh([&] {
        aclrtContext none = nullptr;
        aclError e = aclrtGetCurrentContext(&none);
        printf("fresh thread context: %d\n", e);
        CHECK(aclrtSetCurrentContext(ctx));
        int32_t dev = -1;
        CHECK(aclrtGetDevice(&dev));
        EXPECT(dev == 0);
    });
    fresh.join();

    // aclrtProcessReport with nothing posted times out with its code
    aclError e = aclrtProcessReport(10);
    EXPECT(e == ACL_ERROR_RT_REPORT_TIMEOUT || e == ACL_ERROR_RT_THREAD_SUBSCRIBE || e != ACL_SUCCESS);

    running = false;
    report.join();
    host.join();
    CHECK(aclrtUnSubscribeReport(asInt(reportId), stream));
    EXPECT(!wrongThread);
    CHECK(aclrtDestroyStream(stream));
    CHECK(aclrtDestroyStream(other));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    printf("callbacks: ok\n");
    return 0;
}
