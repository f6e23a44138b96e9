"""Two streams ordered by an event: stream A uploads data and records an event; stream B
waits for that event (stream_wait_event) before copying the data on and back. The host
never waits in between: the device keeps the order."""
import acl
import numpy as np

ACL_SUCCESS = 0
ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_MEMCPY_DEVICE_TO_DEVICE = 3
ACL_EVENT_SYNC = 0x1
ACL_EVENT_RECORDED_STATUS_COMPLETE = 1
ACL_EVENT_WAIT_STATUS_COMPLETE = 0
ACL_STREAM_STATUS_COMPLETE = 0
ACL_STREAM_STATUS_NOT_READY = 1
NPY_FLOAT32 = 11


def check(what, ret):
    if ret != ACL_SUCCESS:
        raise RuntimeError(f"{what} failed: ret={ret} {acl.get_recent_err_msg()}")


def main():
    check("acl.init", acl.init())
    check("set_device", acl.rt.set_device(0))
    stream_a, ret = acl.rt.create_stream()
    check("create_stream", ret)
    stream_b, ret = acl.rt.create_stream()
    check("create_stream", ret)
    uploaded, ret = acl.rt.create_event_with_flag(ACL_EVENT_SYNC)
    check("create_event_with_flag", ret)

    n = 1 << 20
    nbytes = n * 4
    host_in, ret = acl.rt.malloc_host(nbytes)
    check("malloc_host", ret)
    host_out, ret = acl.rt.malloc_host(nbytes)
    check("malloc_host", ret)
    src = acl.util.ptr_to_numpy(host_in, (n,), NPY_FLOAT32)
    src[:] = np.random.default_rng().random(n, dtype=np.float32)
    d1, ret = acl.rt.malloc(nbytes, ACL_MEM_MALLOC_HUGE_FIRST)
    check("malloc", ret)
    d2, ret = acl.rt.malloc(nbytes, ACL_MEM_MALLOC_HUGE_FIRST)
    check("malloc", ret)

    # stream A: upload, then mark the point B must wait for
    check("memcpy_async H2D", acl.rt.memcpy_async(d1, nbytes, host_in, nbytes, ACL_MEMCPY_HOST_TO_DEVICE, stream_a))
    check("record_event", acl.rt.record_event(uploaded, stream_a))
    # stream B: wait on the device for A's upload, then copy on and back
    check("stream_wait_event", acl.rt.stream_wait_event(stream_b, uploaded))
    check("memcpy_async D2D", acl.rt.memcpy_async(d2, nbytes, d1, nbytes, ACL_MEMCPY_DEVICE_TO_DEVICE, stream_b))
    check("memcpy_async D2H", acl.rt.memcpy_async(host_out, nbytes, d2, nbytes, ACL_MEMCPY_DEVICE_TO_HOST, stream_b))

    check("synchronize_stream B", acl.rt.synchronize_stream(stream_b))
    status, ret = acl.rt.query_event_status(uploaded)
    check("query_event_status", ret)
    wait_status, ret = acl.rt.query_event_wait_status(uploaded)
    check("query_event_wait_status", ret)
    print(f"event recorded status complete: {status == ACL_EVENT_RECORDED_STATUS_COMPLETE}")
    print(f"event wait status complete: {wait_status == ACL_EVENT_WAIT_STATUS_COMPLETE}")
    # a SYNC event is reset (by the waiting stream) for reuse: a later wait then waits for
    # the next record, not for the one that already ran
    check("reset_event", acl.rt.reset_event(uploaded, stream_b))
    check("stream_wait_event", acl.rt.stream_wait_event(stream_b, uploaded))
    held, ret = acl.rt.stream_query(stream_b)
    check("stream_query", ret)
    check("record_event", acl.rt.record_event(uploaded, stream_a))
    check("synchronize_stream B", acl.rt.synchronize_stream(stream_b))
    released, ret = acl.rt.stream_query(stream_b)
    check("stream_query", ret)
    print(f"event reset for reuse: {held == ACL_STREAM_STATUS_NOT_READY and released == ACL_STREAM_STATUS_COMPLETE}")
    out = acl.util.ptr_to_numpy(host_out, (n,), NPY_FLOAT32)
    print(f"two-stream pipeline matches: {bool(np.array_equal(out, src))}")

    del src, out
    check("synchronize_stream A", acl.rt.synchronize_stream(stream_a))
    check("destroy_event", acl.rt.destroy_event(uploaded))
    for ptr in (d1, d2):
        check("free", acl.rt.free(ptr))
    for ptr in (host_in, host_out):
        check("free_host", acl.rt.free_host(ptr))
    for s in (stream_a, stream_b):
        check("destroy_stream", acl.rt.destroy_stream(s))
    check("reset_device", acl.rt.reset_device(0))
    check("acl.finalize", acl.finalize())


if __name__ == "__main__":
    main()
