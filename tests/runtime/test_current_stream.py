"""The current stream has one home: the runtime's context, per thread and per device.

The Pythonic API and torch write and read it there (`set_current_stream`,
`current_stream_on`); a device without one means its default stream.
"""
import threading

from npurt.runtime import current_stream_on, current_streams, set_current_stream


def test_a_stream_made_current_is_current_on_its_device_only(rt):
    s = rt.create_stream()
    assert current_stream_on(0) is None  # nothing set: the default stream
    set_current_stream(0, s)
    assert current_stream_on(0) is s
    assert current_stream_on(1) is None
    assert current_streams() == {0: s}
    set_current_stream(0, None)
    assert current_stream_on(0) is None
    rt.destroy_stream(s)


def test_each_thread_has_its_own_current_stream(rt):
    s = rt.create_stream()
    set_current_stream(0, s)
    seen = []
    t = threading.Thread(target=lambda: seen.append(current_stream_on(0)))
    t.start()
    t.join()
    assert seen == [None] and current_stream_on(0) is s
    set_current_stream(0, None)
    rt.destroy_stream(s)


def test_a_destroyed_stream_stops_being_current(rt):
    s = rt.create_stream()
    set_current_stream(0, s)
    rt.destroy_stream(s)
    assert current_stream_on(0) is None
    assert current_streams() == {}
