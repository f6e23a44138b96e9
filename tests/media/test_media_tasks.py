"""DVPP operations are ordinary tasks of their stream: they run in stream order with other
work, wait behind events, keep the memory they use alive (stream-ordered free), report to
observers, and fail into the stream's error like other tasks. Also: the engine API raises
exceptions, and Pillow is needed only by the codecs and is not imported by `import npurt`."""
from __future__ import annotations

import ctypes
import subprocess
import sys

import numpy as np
import pytest
from media_kit import NV12, Dvpp, gradient_rgb, jpeg, put_nv12, semiplanar

import npurt
import npurt.acl as acl
from npurt.acl.constants import ACL_EVENT_SYNC
from npurt.media import descs, vpc
from npurt.runtime.observers import HOOKS

m = acl.media
OK, INVALID = 0, 100000


@pytest.fixture
def dvpp(fresh_runtime):
    return Dvpp()


def _nv12_source(dvpp, value=None):
    y = np.full((48, 64), 0, np.uint8) if value is not None else np.arange(64 * 48, dtype=np.uint8).reshape(48, 64)
    if value is not None:
        y[:] = value
    buf = np.zeros(64 * 48 * 3 // 2, np.uint8)
    put_nv12(buf, y, y[::2, ::2], y[::2, ::2], 64, 48)
    return buf


def _resize(dvpp, src, dst):
    return m.dvpp_vpc_resize_async(dvpp.channel, src, dst, m.dvpp_create_resize_config(), dvpp.stream)


def test_a_resize_runs_after_the_copy_queued_before_it_on_the_stream(dvpp):
    host, ret = acl.rt.malloc_host(64 * 48 * 3 // 2)
    assert ret == OK
    arr = np.frombuffer((ctypes.c_ubyte * (64 * 48 * 3 // 2)).from_address(host), np.uint8)
    arr[:] = _nv12_source(dvpp, 77)
    src, ptr, n = dvpp.pic(NV12, 64, 48, fill=0)
    dst, optr, on = dvpp.pic(NV12, 64, 48, fill=0)
    assert acl.rt.memcpy_async(ptr, n, host, n, 1, dvpp.stream) == OK
    assert _resize(dvpp, src, dst) == OK
    assert dvpp.sync() == OK
    assert (dvpp.download(optr, on)[:64 * 48] == 77).all()
    acl.rt.free_host(host)


def test_a_decode_waits_for_an_event_like_any_task(dvpp):
    event, _ = acl.rt.create_event_with_flag(ACL_EVENT_SYNC)  # a wait before any record holds the stream
    data = jpeg(gradient_rgb(64, 48))
    src, n = dvpp.upload(data)
    out, optr, on = dvpp.pic(NV12, 64, 48, ws=128, hs=48, fill=0x11)
    assert acl.rt.stream_wait_event(dvpp.stream, event) == OK  # never recorded yet: the stream waits
    assert m.dvpp_jpeg_decode_async(dvpp.channel, src, n, out, dvpp.stream) == OK
    assert acl.rt.stream_query(dvpp.stream)[0] == 1  # ACL_STREAM_STATUS_NOT_READY
    assert (dvpp.download(optr, on) == 0x11).all()
    other, _ = acl.rt.create_stream()
    assert acl.rt.record_event(event, other) == OK
    assert dvpp.sync() == OK
    assert not (dvpp.download(optr, on)[:64] == 0x11).all()


def test_freeing_an_input_while_the_task_is_queued_keeps_it_until_the_task_ran(dvpp):
    event, _ = acl.rt.create_event_with_flag(ACL_EVENT_SYNC)  # a wait before any record holds the stream
    src, sptr, n = dvpp.pic(NV12, 64, 48, fill=200)
    dst, optr, on = dvpp.pic(NV12, 64, 48, fill=0)
    assert acl.rt.stream_wait_event(dvpp.stream, event) == OK
    assert _resize(dvpp, src, dst) == OK
    assert m.dvpp_free(sptr) == OK
    for _ in range(4):  # allocations of the same size must not get the pending block
        p = dvpp.alloc(n)
        assert p != sptr
        acl.rt.memset(p, n, 1, n)
    other, _ = acl.rt.create_stream()
    acl.rt.record_event(event, other)
    assert dvpp.sync() == OK
    assert (dvpp.download(optr, on)[:64 * 48] == 200).all()


def test_dvpp_tasks_are_reported_to_observers_with_the_memory_they_touch(dvpp):
    seen = []

    def observer(name, **fields):
        if name in ("task_enqueued", "task_finished"):
            task = fields["task"]
            seen.append((name, task.kind, task.accesses(), task.details()["name"]))
    src, sptr, sn = dvpp.pic(NV12, 64, 48)
    dst, dptr, dn = dvpp.pic(NV12, 32, 24)
    HOOKS.add(observer)
    try:
        assert _resize(dvpp, src, dst) == OK and dvpp.sync() == OK
    finally:
        HOOKS.remove(observer)
    memory = ((sptr, sn, "r"), (dptr, dn, "w"))
    assert ("task_enqueued", "dvpp_vpc_resize", memory, "dvpp_vpc_resize") in seen
    assert ("task_finished", "dvpp_vpc_resize", memory, "dvpp_vpc_resize") in seen


def test_a_failed_decode_is_reported_once_and_the_stream_carries_on(dvpp):
    bad = jpeg(gradient_rgb(64, 48), progressive=True)
    good = jpeg(gradient_rgb(64, 48))
    src_bad, nb = dvpp.upload(bad)
    src_good, ng = dvpp.upload(good)
    out_bad, _, _ = dvpp.pic(NV12, 64, 48, ws=128, hs=48)
    out_good, _, _ = dvpp.pic(NV12, 64, 48, ws=128, hs=48)
    assert m.dvpp_jpeg_decode_async(dvpp.channel, src_bad, nb, out_bad, dvpp.stream) == OK
    assert m.dvpp_jpeg_decode_async(dvpp.channel, src_good, ng, out_good, dvpp.stream) == OK
    assert dvpp.sync() == 148052
    assert dvpp.sync() == OK
    assert m.dvpp_get_pic_desc_ret_code(out_bad) == 148052 and m.dvpp_get_pic_desc_ret_code(out_good) == OK


def test_queued_work_reads_the_description_as_it_was_at_the_call(dvpp):
    event, _ = acl.rt.create_event_with_flag(ACL_EVENT_SYNC)  # a wait before any record holds the stream
    buf = _nv12_source(dvpp)
    ptr, n = dvpp.upload(buf)
    src, _, _ = dvpp.pic(NV12, 64, 48, data=ptr, size=n)
    dst, optr, on = dvpp.pic(NV12, 64, 48, fill=0)
    assert acl.rt.stream_wait_event(dvpp.stream, event) == OK
    assert _resize(dvpp, src, dst) == OK
    m.dvpp_set_pic_desc_width(dst, 32)  # changing it now does not change the queued resize
    other, _ = acl.rt.create_stream()
    acl.rt.record_event(event, other)
    assert dvpp.sync() == OK
    y, _, _ = semiplanar(dvpp.download(optr, on), 64, 48, 64, 48)
    assert np.array_equal(y, buf[:64 * 48].reshape(48, 64))


def test_the_engine_api_raises_clear_exceptions(dvpp):
    src, dst = descs.PicDesc(), descs.PicDesc()
    channel = descs.lookup(descs.channels, dvpp.channel, "the channel description")
    with pytest.raises(npurt.InvalidValueError, match="DVPP needs a width"):
        src.format = dst.format = NV12
        vpc.resize(channel, src, dst, descs.ResizeConfig())
    dst.format = 12
    with pytest.raises(npurt.InvalidValueError) as info:
        vpc.resize(channel, src, dst, descs.ResizeConfig())
    assert info.value.code == 100027 and "YUV_SEMIPLANAR_420" in str(info.value)


def test_without_pillow_the_codecs_say_which_extra_to_install(dvpp, monkeypatch):
    from npurt.media import _pillow
    src, n = dvpp.upload(jpeg(gradient_rgb(64, 48)))
    out, _, _ = dvpp.pic(NV12, 64, 48, ws=128, hs=48)
    monkeypatch.setattr(_pillow, "_image", None)
    monkeypatch.setitem(sys.modules, "PIL", None)
    monkeypatch.setitem(sys.modules, "PIL.Image", None)
    assert m.dvpp_jpeg_decode_async(dvpp.channel, src, n, out, dvpp.stream) == 207000
    assert "pip install 'npurt[media]'" in acl.get_recent_err_msg()
    # VPC needs no codec
    a, _, _ = dvpp.pic(NV12, 64, 48)
    b, _, _ = dvpp.pic(NV12, 32, 24)
    assert _resize(dvpp, a, b) == OK and dvpp.sync() == OK


def test_importing_npurt_and_its_facade_does_not_import_pillow():
    code = "import sys, npurt, npurt.acl, npurt.media.vpc; print('PIL' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
