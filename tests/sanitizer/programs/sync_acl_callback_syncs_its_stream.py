"""Seeded bug (synccheck, pyACL): a blocking callback that synchronizes the stream it belongs
to. The stream waits for the callback, the callback waits for the stream: an NPU hangs; npurt's
runtime refuses the wait (107000) and the sanitizer reports it.

expect: synccheck hang
"""
import acl

ACL_CALLBACK_BLOCK = 1
state = {"stop": False}
acl.init()
acl.rt.set_device(0)
context, _ = acl.rt.get_context()
stream, _ = acl.rt.create_stream()


def on_done(data):
    print("callback: synchronize_stream returned", acl.rt.synchronize_stream(stream))


def report_loop(args):
    acl.rt.set_context(context)
    while not state["stop"]:
        acl.rt.process_report(50)


tid, _ = acl.util.start_thread(report_loop, [])
acl.rt.subscribe_report(tid, stream)
acl.rt.launch_callback(on_done, None, ACL_CALLBACK_BLOCK, stream)
print("main: synchronize_stream returned", acl.rt.synchronize_stream(stream))
state["stop"] = True
acl.util.stop_thread(tid)
acl.rt.unsubscribe_report(tid, stream)
acl.rt.destroy_stream(stream)
acl.rt.reset_device(0)
acl.finalize()
