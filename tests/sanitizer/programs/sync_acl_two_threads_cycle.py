"""Seeded bug (synccheck, pyACL): a cycle of waits across two streams and two threads. Stream 1's
blocking callback runs on thread B, stream 2's on the main thread; the main thread
synchronizes stream 1 while thread B synchronizes stream 2, so neither ever runs the other's
callback.

expect: synccheck hang
"""
import threading

import acl

ACL_CALLBACK_BLOCK = 1
acl.init()
acl.rt.set_device(0)
context, _ = acl.rt.get_context()
s1, _ = acl.rt.create_stream()
s2, _ = acl.rt.create_stream()
started = threading.Event()


def thread_b(args):
    acl.rt.set_context(context)
    started.wait()
    print("thread B: synchronize_stream(s2) returned", acl.rt.synchronize_stream(s2))
    acl.rt.process_report(200)


tid, _ = acl.util.start_thread(thread_b, [])
acl.rt.subscribe_report(tid, s1)
acl.rt.subscribe_report(threading.get_ident(), s2)
acl.rt.launch_callback(print, "s1 callback", ACL_CALLBACK_BLOCK, s1)
acl.rt.launch_callback(print, "s2 callback", ACL_CALLBACK_BLOCK, s2)
started.set()
print("main: synchronize_stream(s1) returned", acl.rt.synchronize_stream(s1))
acl.rt.process_report(200)
acl.util.stop_thread(tid)
acl.rt.unsubscribe_report(tid, s1)
acl.rt.unsubscribe_report(threading.get_ident(), s2)
acl.rt.destroy_stream(s1)
acl.rt.destroy_stream(s2)
acl.rt.reset_device(0)
acl.finalize()
