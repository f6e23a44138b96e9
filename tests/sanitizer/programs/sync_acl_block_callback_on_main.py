"""Seeded bug (synccheck, pyACL): a blocking callback whose report thread is the main thread,
which synchronizes the stream before it ever calls process_report. On an NPU: a hang.

expect: synccheck hang
"""
import threading

import acl

ACL_CALLBACK_BLOCK = 1
acl.init()
acl.rt.set_device(0)
stream, _ = acl.rt.create_stream()
acl.rt.subscribe_report(threading.get_ident(), stream)
acl.rt.launch_callback(lambda data: print("callback", data), "done", ACL_CALLBACK_BLOCK, stream)
ret = acl.rt.synchronize_stream(stream)          # waits for the callback, which waits for this thread
print("synchronize_stream returned", ret)
acl.rt.process_report(100)
acl.rt.unsubscribe_report(threading.get_ident(), stream)
acl.rt.destroy_stream(stream)
acl.rt.reset_device(0)
acl.finalize()
