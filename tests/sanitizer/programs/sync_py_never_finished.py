"""Seeded bug (synccheck, Pythonic): the program ends while a stream still waits for a
blocking callback nobody processes; its later work never runs.

expect: synccheck hang
"""
import threading

import numpy as np

import npurt
from npurt.runtime import api
from npurt.runtime import constants as C

s = npurt.Stream()
api.subscribe_report(threading.get_ident(), s.runtime_stream)
api.launch_callback(print, "never", C.ACL_CALLBACK_BLOCK, s.runtime_stream)
x = npurt.to_device(np.ones(16, np.float32), stream=s)   # queued behind the callback: never runs
print("done (without synchronizing)")
