"""Seeded bug (synccheck, Pythonic): stream b waits for an event recorded on stream a behind a
blocking callback that no live thread will run; synchronizing b would hang. The report shows
the chain b -> a -> the missing report thread.

expect: synccheck hang
"""
import threading

import npurt
from npurt.runtime import api
from npurt.runtime import constants as C

a, b = npurt.Stream(), npurt.Stream()
gone = threading.Thread(target=lambda: None)
gone.start()
gone.join()
api.subscribe_report(gone.ident, a.runtime_stream)
api.launch_callback(print, "never", C.ACL_CALLBACK_BLOCK, a.runtime_stream)
ready = a.record_event()
b.wait_event(ready)
try:
    b.synchronize()
except npurt.NpuError as exc:
    print("synchronize failed:", type(exc).__name__)
