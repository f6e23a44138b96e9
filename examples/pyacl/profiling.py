"""Profile a two-stream copy/compute pipeline with acl.prof, as a CANN application does:
acl.prof.init (where to write), create_config (devices, AI core metrics, data type
switches), start, msproftx stamps around the work (push/pop, a mark, a range), stop,
destroy_config, finalize. The profile lands in <out>/PROF_*/mindstudio_profiler_output/;
draw it with `npurt plot <out> -o timeline.png`.

    npurt run examples/pyacl/profiling.py [out_dir]      (default: a new temporary directory)
"""
import os
import sys
import tempfile

import acl
import numpy as np

ACL_SUCCESS = 0
ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_HOST_TO_HOST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_MEMCPY_DEVICE_TO_DEVICE = 3
ACL_EVENT_SYNC = 0x1
ACL_PROF_ACL_API = 0x0001
ACL_PROF_TASK_TIME = 0x0002
ACL_PROF_MSPROFTX = 0x0080
ACL_AICORE_NONE = 0xFF
BATCHES, N = 6, 1 << 20


def check(what, ret):
    if ret != ACL_SUCCESS:
        raise RuntimeError(f"{what} failed: ret={ret} {acl.get_recent_err_msg()}")


def main(out_dir):
    check("acl.init", acl.init())
    check("set_device", acl.rt.set_device(0))
    copy_stream, ret = acl.rt.create_stream()
    check("create_stream", ret)
    work_stream, ret = acl.rt.create_stream()
    check("create_stream", ret)

    check("acl.prof.init", acl.prof.init(out_dir))
    config = acl.prof.create_config([0], ACL_AICORE_NONE, 0,
                                    ACL_PROF_ACL_API | ACL_PROF_TASK_TIME | ACL_PROF_MSPROFTX)
    if config == 0:
        raise RuntimeError(f"acl.prof.create_config failed: {acl.get_recent_err_msg()}")
    check("acl.prof.start", acl.prof.start(config))
    stamp = acl.prof.create_stamp()
    check("set_stamp_trace_message", acl.prof.set_stamp_trace_message(stamp, "pipeline", len("pipeline")))

    nbytes = N * 4
    host, ret = acl.rt.malloc_host(nbytes * BATCHES)
    check("malloc_host", ret)
    data = np.arange(N * BATCHES, dtype=np.float32)
    raw = data.tobytes()
    check("memcpy", acl.rt.memcpy(host, len(raw), acl.util.bytes_to_ptr(raw), len(raw), ACL_MEMCPY_HOST_TO_HOST))
    back, ret = acl.rt.malloc_host(nbytes * BATCHES)
    check("malloc_host", ret)
    dev_in = [acl.rt.malloc(nbytes, ACL_MEM_MALLOC_HUGE_FIRST)[0] for _ in range(BATCHES)]
    dev_out = [acl.rt.malloc(nbytes, ACL_MEM_MALLOC_HUGE_FIRST)[0] for _ in range(BATCHES)]
    ready = [acl.rt.create_event_with_flag(ACL_EVENT_SYNC)[0] for _ in range(BATCHES)]

    check("push", acl.prof.push(stamp))           # a range around the whole pipeline
    for i in range(BATCHES):                      # copy stream uploads, work stream waits, copies on, back
        check("memcpy_async", acl.rt.memcpy_async(dev_in[i], nbytes, host + i * nbytes, nbytes,
                                                  ACL_MEMCPY_HOST_TO_DEVICE, copy_stream))
        check("record_event", acl.rt.record_event(ready[i], copy_stream))
        check("stream_wait_event", acl.rt.stream_wait_event(work_stream, ready[i]))
        check("memcpy_async", acl.rt.memcpy_async(dev_out[i], nbytes, dev_in[i], nbytes,
                                                  ACL_MEMCPY_DEVICE_TO_DEVICE, work_stream))
        check("memcpy_async", acl.rt.memcpy_async(back + i * nbytes, nbytes, dev_out[i], nbytes,
                                                  ACL_MEMCPY_DEVICE_TO_HOST, work_stream))
    check("mark_ex", acl.prof.mark_ex("all batches queued", work_stream))
    range_id, ret = acl.prof.range_start(stamp)  # a range that another thread could stop
    check("range_start", ret)
    check("synchronize_stream", acl.rt.synchronize_stream(work_stream))
    check("synchronize_stream", acl.rt.synchronize_stream(copy_stream))
    check("range_stop", acl.prof.range_stop(range_id))
    check("pop", acl.prof.pop())
    check("mark", acl.prof.mark(stamp))

    same = np.array_equal(np.frombuffer(acl.util.ptr_to_bytes(back, nbytes * BATCHES), np.float32), data)
    acl.prof.destroy_stamp(stamp)
    check("acl.prof.stop", acl.prof.stop(config))
    check("destroy_config", acl.prof.destroy_config(config))
    check("acl.prof.finalize", acl.prof.finalize())

    for p in dev_in + dev_out:
        check("free", acl.rt.free(p))
    for e in ready:
        check("destroy_event", acl.rt.destroy_event(e))
    check("free_host", acl.rt.free_host(host))
    check("free_host", acl.rt.free_host(back))
    check("destroy_stream", acl.rt.destroy_stream(copy_stream))
    check("destroy_stream", acl.rt.destroy_stream(work_stream))
    check("reset_device", acl.rt.reset_device(0))
    check("acl.finalize", acl.finalize())

    outputs = [os.path.join(out_dir, d, "mindstudio_profiler_output") for d in sorted(os.listdir(out_dir))
               if d.startswith("PROF_")]
    print(f"pipeline result matches: {same}")
    print(f"profile written: {bool(outputs) and os.path.isfile(os.path.join(outputs[-1], 'msprof.json'))}")
    print(f"summaries written: {bool(outputs) and os.path.isfile(os.path.join(outputs[-1], 'op_summary.csv'))}")
    if outputs:
        print(f"profile directory: {outputs[-1]}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="npurt_prof_"))
