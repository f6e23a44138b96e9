"""Seeded bug (synccheck, Pythonic): a blocking host callback served by the main thread,
which synchronizes the stream first.

expect: synccheck hang
"""
import threading

import npurt
from npurt.runtime import api
from npurt.runtime import constants as C

s = npurt.Stream()
api.subscribe_report(threading.get_ident(), s.runtime_stream)
api.launch_callback(print, "callback ran", C.ACL_CALLBACK_BLOCK, s.runtime_stream)
try:
    s.synchronize()
except npurt.NpuError as exc:
    print("synchronize failed:", type(exc).__name__)
