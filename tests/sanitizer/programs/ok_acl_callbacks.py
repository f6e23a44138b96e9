"""Correct (pyACL): results are read in host callbacks, which run after the work before them
on the stream (blocking and non-blocking), served by a report thread.

expect: nothing
"""
import acl

N = 4096
ACL_CALLBACK_NO_BLOCK, ACL_CALLBACK_BLOCK = 0, 1
seen, state = [], {"stop": False}
acl.init()
acl.rt.set_device(0)
context, _ = acl.rt.get_context()
stream, _ = acl.rt.create_stream()
dev, _ = acl.rt.malloc(N, 0)
results = [acl.rt.malloc_host(N)[0] for _ in range(3)]


def report_loop(args):
    acl.rt.set_context(context)
    while not state["stop"]:
        acl.rt.process_report(20)


def on_result(ptr):
    seen.append(int(acl.util.ptr_to_numpy(ptr, (N,), 2)[0]))   # the copy before the callback is done


tid, _ = acl.util.start_thread(report_loop, [])
acl.rt.subscribe_report(tid, stream)
for i, ptr in enumerate(results):
    acl.rt.memset_async(dev, N, i + 1, N, stream)
    acl.rt.memcpy_async(ptr, N, dev, N, 2, stream)
    acl.rt.launch_callback(on_result, ptr, ACL_CALLBACK_BLOCK if i % 2 else ACL_CALLBACK_NO_BLOCK, stream)
acl.rt.synchronize_stream(stream)
state["stop"] = True
acl.util.stop_thread(tid)
print("callbacks saw", sorted(seen))
acl.rt.unsubscribe_report(tid, stream)
acl.rt.free(dev)
for ptr in results:
    acl.rt.free_host(ptr)
acl.rt.destroy_stream(stream)
acl.rt.reset_device(0)
acl.finalize()
