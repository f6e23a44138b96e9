"""Host callbacks in stream order: a helper thread (acl.util.start_thread) loops on
acl.rt.process_report; subscribe_report binds it to the stream; launch_callback enqueues
Python functions that it runs when the stream reaches them. ACL_CALLBACK_BLOCK makes the
stream wait for the callback before its next task."""
import acl

ACL_SUCCESS = 0
ACL_ERROR_RT_REPORT_TIMEOUT = 507012
ACL_CALLBACK_NO_BLOCK = 0
ACL_CALLBACK_BLOCK = 1
ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_DEVICE_TO_DEVICE = 3

state = {"exit": False}
calls = []


def check(what, ret):
    if ret != ACL_SUCCESS:
        raise RuntimeError(f"{what} failed: ret={ret} {acl.get_recent_err_msg()}")


def report_loop(args_list):
    """The callback thread: runs every callback posted to it until asked to stop."""
    context, timeout_ms = args_list
    check("set_context (callback thread)", acl.rt.set_context(context))
    while not state["exit"]:
        ret = acl.rt.process_report(timeout_ms)
        if ret not in (ACL_SUCCESS, ACL_ERROR_RT_REPORT_TIMEOUT):
            acl.get_recent_err_msg()  # e.g. not subscribed yet: try again


def on_done(user_data):
    calls.append(user_data)


def main():
    check("acl.init", acl.init())
    check("set_device", acl.rt.set_device(0))
    context, ret = acl.rt.get_context()
    check("get_context", ret)
    stream, ret = acl.rt.create_stream()
    check("create_stream", ret)

    thread_id, ret = acl.util.start_thread(report_loop, [context, 100])
    check("start_thread", ret)
    check("subscribe_report", acl.rt.subscribe_report(thread_id, stream))

    nbytes = 1 << 20
    a, ret = acl.rt.malloc(nbytes, ACL_MEM_MALLOC_HUGE_FIRST)
    check("malloc", ret)
    b, ret = acl.rt.malloc(nbytes, ACL_MEM_MALLOC_HUGE_FIRST)
    check("malloc", ret)
    check("memset", acl.rt.memset(a, nbytes, 7, nbytes))  # the copies below read a: give it contents
    for i in range(3):  # the last callback blocks, so once the stream is done all three ran
        check("memcpy_async", acl.rt.memcpy_async(b, nbytes, a, nbytes, ACL_MEMCPY_DEVICE_TO_DEVICE, stream))
        block = ACL_CALLBACK_BLOCK if i % 2 == 0 else ACL_CALLBACK_NO_BLOCK
        check("launch_callback", acl.rt.launch_callback(on_done, [i, f"batch {i}"], block, stream))
    check("synchronize_stream", acl.rt.synchronize_stream(stream))

    state["exit"] = True
    check("stop_thread", acl.util.stop_thread(thread_id))
    check("unsubscribe_report", acl.rt.unsubscribe_report(thread_id, stream))
    print(f"callbacks run: {len(calls)}")
    print(f"callbacks in stream order: {[c[0] for c in calls] == [0, 1, 2]}")
    print(f"user data passed through: {calls[-1] == [2, 'batch 2']}")

    for ptr in (a, b):
        check("free", acl.rt.free(ptr))
    check("destroy_stream", acl.rt.destroy_stream(stream))
    check("reset_device", acl.rt.reset_device(0))
    check("acl.finalize", acl.finalize())


if __name__ == "__main__":
    main()
