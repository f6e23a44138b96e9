"""Correct (Pythonic): a worker thread computes on its own stream and tells the main thread
through a done-callback and a threading.Event; a second result travels through a queue.

expect: nothing
"""
import queue
import threading

import numpy as np

import npurt

host = np.ones(1 << 14, np.float32)
finished, results = threading.Event(), queue.Queue()
box = {}


def work():
    s = npurt.Stream()
    with npurt.stream(s):
        box["y"] = npurt.ops.relu(npurt.to_device(host) - 0.5)
        z = box["y"] * 4
    s.add_done_callback(lambda stream: finished.set())
    s.synchronize()
    results.put(z)


t = threading.Thread(target=work)
t.start()
finished.wait()
y = box["y"].to_host()                           # ordered: the callback ran after y was computed
z = results.get()
t.join()
print("results:", float(y[0]), float(z.to_host()[0]))
