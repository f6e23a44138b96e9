"""Seeded bug (racecheck, Pythonic): the event is recorded before the producer's write, so
the consumer's wait orders nothing that matters.

expect: racecheck RAW hazard
"""
import numpy as np

import npurt

x = npurt.zeros((4096,), np.float32)
producer, consumer = npurt.Stream(), npurt.Stream()
producer.wait_stream(npurt.current_stream())
consumer.wait_stream(npurt.current_stream())
ready = npurt.Event()
ready.record(producer)                           # should come after the fill
x.fill(3.0, stream=producer)
consumer.wait_event(ready)
y = x.to_host(stream=consumer)
