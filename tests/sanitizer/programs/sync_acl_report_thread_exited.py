"""Seeded bug (synccheck, pyACL): the thread subscribed to the stream's callbacks has already
returned, so nobody runs process_report for the blocking callback.

expect: synccheck hang
"""
import acl

ACL_CALLBACK_BLOCK = 1
acl.init()
acl.rt.set_device(0)
stream, _ = acl.rt.create_stream()
tid, _ = acl.util.start_thread(lambda args: None, [])   # returns at once
acl.util.stop_thread(tid)
acl.rt.subscribe_report(tid, stream)
acl.rt.launch_callback(lambda data: None, None, ACL_CALLBACK_BLOCK, stream)
print("synchronize_stream returned", acl.rt.synchronize_stream(stream))
acl.rt.unsubscribe_report(tid, stream)
acl.rt.destroy_stream(stream)
acl.rt.reset_device(0)
acl.finalize()
