"""Timing device work with events: record a start and an end event around copies on a
stream, synchronize, then read event_elapsed_time (milliseconds, float) and the events'
device timestamps (microseconds)."""
import acl

ACL_SUCCESS = 0
ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_DEVICE_TO_DEVICE = 3
ACL_EVENT_TIME_LINE = 0x8
ACL_EVENT_RECORDED_STATUS_COMPLETE = 1


def check(what, ret):
    if ret != ACL_SUCCESS:
        raise RuntimeError(f"{what} failed: ret={ret} {acl.get_recent_err_msg()}")


def main():
    check("acl.init", acl.init())
    check("set_device", acl.rt.set_device(0))
    stream, ret = acl.rt.create_stream()
    check("create_stream", ret)
    start, ret = acl.rt.create_event()
    check("create_event", ret)
    end, ret = acl.rt.create_event_with_flag(ACL_EVENT_TIME_LINE)
    check("create_event_with_flag", ret)

    nbytes = 32 << 20
    src, ret = acl.rt.malloc(nbytes, ACL_MEM_MALLOC_HUGE_FIRST)
    check("malloc", ret)
    dst, ret = acl.rt.malloc(nbytes, ACL_MEM_MALLOC_HUGE_FIRST)
    check("malloc", ret)
    check("memset", acl.rt.memset(src, nbytes, 7, nbytes))

    repeats = 4
    check("record_event start", acl.rt.record_event(start, stream))
    for _ in range(repeats):
        check("memcpy_async", acl.rt.memcpy_async(dst, nbytes, src, nbytes, ACL_MEMCPY_DEVICE_TO_DEVICE, stream))
    check("record_event end", acl.rt.record_event(end, stream))
    check("synchronize_stream", acl.rt.synchronize_stream(stream))

    status, ret = acl.rt.query_event_status(end)
    check("query_event_status", ret)
    ms, ret = acl.rt.event_elapsed_time(start, end)
    check("event_elapsed_time", ret)
    t0, ret = acl.rt.event_get_timestamp(start)
    check("event_get_timestamp", ret)
    t1, ret = acl.rt.event_get_timestamp(end)
    check("event_get_timestamp", ret)
    print(f"end event complete: {status == ACL_EVENT_RECORDED_STATUS_COMPLETE}")
    print(f"elapsed time is a non-negative float: {isinstance(ms, float) and ms >= 0}")
    print(f"timestamps ordered: {t1 >= t0}")
    gbps = repeats * nbytes / (ms / 1e3) / 1e9 if ms > 0 else float("inf")
    print(f"{repeats} x {nbytes >> 20} MiB D2D copies took {ms:.3f} ms ({gbps:.1f} GB/s)")

    for ev in (start, end):
        check("destroy_event", acl.rt.destroy_event(ev))
    for ptr in (src, dst):
        check("free", acl.rt.free(ptr))
    check("destroy_stream", acl.rt.destroy_stream(stream))
    check("reset_device", acl.rt.reset_device(0))
    check("acl.finalize", acl.finalize())


if __name__ == "__main__":
    main()
