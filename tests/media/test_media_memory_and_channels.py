"""DVPP memory (dvpp_malloc / dvpp_free) and channels: open and close, modes, the CSC
parameter, and what a channel in the wrong state returns."""
from __future__ import annotations

import numpy as np
import pytest
from media_kit import NV12, Dvpp, addr_of, gradient_rgb, jpeg

import npurt.acl as acl

m = acl.media
OK, INVALID, NO_CONTEXT = 0, 100000, 107002


@pytest.fixture
def dvpp(fresh_runtime):
    return Dvpp()


# ---------------------------------------------------------------- memory
@pytest.mark.parametrize("size,real", [(1, 64), (32, 64), (33, 96), (1000, 1056), (0, 32)])
def test_dvpp_malloc_rounds_up_to_32_and_adds_32(dvpp, size, real):
    ptr, ret = m.dvpp_malloc(size)
    assert ret == OK
    attrs, ret = acl.rt.pointer_get_attributes(ptr)
    assert ret == OK and attrs["size"] == real and attrs["allocation"] == ptr


def test_dvpp_memory_starts_128_byte_aligned(dvpp):
    assert all(m.dvpp_malloc(n)[0] % 128 == 0 for n in (1, 100, 5000, 3 << 20))


def test_dvpp_memory_is_ordinary_device_memory_for_copies(dvpp):
    ptr, _ = m.dvpp_malloc(256)
    data = np.arange(256, dtype=np.uint8)
    back = np.zeros(256, np.uint8)
    assert acl.rt.memcpy(ptr, 256, addr_of(data), 256, 1) == OK
    assert acl.rt.memcpy(addr_of(back), 256, ptr, 256, 2) == OK
    assert np.array_equal(back, data)


def test_dvpp_free_releases_and_a_second_free_is_invalid(dvpp):
    ptr, _ = m.dvpp_malloc(100)
    assert m.dvpp_free(ptr) == OK
    assert m.dvpp_free(ptr) == INVALID
    assert m.dvpp_free(0) == INVALID


def test_acl_rt_free_also_releases_dvpp_memory(dvpp):
    ptr, _ = m.dvpp_malloc(100)
    assert acl.rt.free(ptr) == OK
    assert acl.rt.pointer_get_attributes(ptr)[1] == INVALID


def test_dvpp_malloc_with_cfg_takes_an_empty_or_attribute_dict(dvpp):
    ptr, ret = m.dvpp_malloc_with_cfg(100, 0, {})
    assert ret == OK and ptr % 128 == 0
    with pytest.raises(TypeError, match="pyCfg is not dict!"):
        m.dvpp_malloc_with_cfg(100, 0, [])


def test_dvpp_malloc_before_init_and_set_device_is_context_null(fresh_runtime):
    # no init gate (issue 10 item 2): the runtime starts lazily and then needs a context
    assert m.dvpp_malloc(100) == (0, NO_CONTEXT)


def test_dvpp_malloc_without_a_current_context_is_context_null(fresh_runtime):
    acl.init()
    assert m.dvpp_malloc(100) == (0, NO_CONTEXT)


def test_dvpp_malloc_of_an_impossible_size_is_an_allocation_error(dvpp):
    ptr, ret = m.dvpp_malloc(1 << 60)
    assert ptr == 0 and ret == 207001
    assert m.dvpp_malloc(100)[1] == OK  # still usable


def test_dvpp_malloc_size_must_be_an_int():
    with pytest.raises(TypeError, match=r"^acl.media.dvpp_malloc args parse failed!$"):
        m.dvpp_malloc(1.0)


# ---------------------------------------------------------------- channels
def test_each_channel_description_gets_the_next_channel_id(dvpp):
    a, b = m.dvpp_create_channel_desc(), m.dvpp_create_channel_desc()
    assert m.dvpp_get_channel_desc_channel_id(b) == m.dvpp_get_channel_desc_channel_id(a) + 1
    assert m.dvpp_get_channel_desc_channel_id(0) == 0


def test_a_channel_is_created_then_destroyed(dvpp):
    cd = m.dvpp_create_channel_desc()
    assert m.dvpp_create_channel(cd) == OK
    assert m.dvpp_destroy_channel(cd) == OK
    assert m.dvpp_destroy_channel(cd) == INVALID  # not open any more
    assert m.dvpp_destroy_channel_desc(cd) == OK


def test_creating_a_channel_needs_a_context(fresh_runtime):
    acl.init()
    cd = m.dvpp_create_channel_desc()
    assert m.dvpp_create_channel(cd) == NO_CONTEXT
    assert m.dvpp_create_channel(0) == INVALID


def _nv12_job(dvpp, channel):
    src, _, _ = dvpp.pic(NV12, 64, 48)
    dst, _, _ = dvpp.pic(NV12, 32, 24)
    return m.dvpp_vpc_resize_async(channel, src, dst, m.dvpp_create_resize_config(), dvpp.stream)


def test_an_operation_on_a_channel_that_is_not_open_is_invalid_param(dvpp):
    cd = m.dvpp_create_channel_desc()
    assert _nv12_job(dvpp, cd) == INVALID
    assert "dvpp_create_channel" in acl.get_recent_err_msg()
    m.dvpp_create_channel(cd)
    assert _nv12_job(dvpp, cd) == OK
    m.dvpp_destroy_channel(cd)
    assert _nv12_job(dvpp, cd) == INVALID


@pytest.mark.parametrize("mode,code", [(1, OK), (7, OK), (15, OK), (8, OK), (0, INVALID), (16, INVALID)])
def test_channel_modes_are_combinations_of_the_four_blocks(dvpp, mode, code):
    assert m.dvpp_set_channel_desc_mode(m.dvpp_create_channel_desc(), mode) == code


def test_a_channel_runs_only_the_blocks_of_its_mode(dvpp):
    cd = m.dvpp_create_channel_desc()
    assert m.dvpp_set_channel_desc_mode(cd, 1) == OK  # VPC only
    assert m.dvpp_create_channel(cd) == OK
    assert _nv12_job(dvpp, cd) == OK
    data = jpeg(gradient_rgb(64, 48))
    src, n = dvpp.upload(data)
    out, _, _ = dvpp.pic(NV12, 64, 48, ws=128, hs=48)
    assert m.dvpp_jpeg_decode_async(cd, src, n, out, dvpp.stream) == INVALID
    assert "JPEGD" in acl.get_recent_err_msg()
    assert m.dvpp_jpeg_decode_async(dvpp.channel, src, n, out, dvpp.stream) == OK
    assert dvpp.sync() == OK


def test_the_csc_matrix_is_the_channel_parameter(dvpp):
    cd = m.dvpp_create_channel_desc()
    assert m.dvpp_get_channel_desc_param(cd, 0) == (4, 0, OK)  # BT.601 wide by default
    assert m.dvpp_set_channel_desc_param(cd, 0, 5) == (cd, OK)
    assert m.dvpp_get_channel_desc_param(cd, 0) == (4, 5, OK)
    assert m.dvpp_set_channel_desc_param(cd, 0, 6) == (cd, INVALID)


def test_other_channel_parameters_arrive_with_length_0_and_are_refused(dvpp):
    cd = m.dvpp_create_channel_desc()
    assert m.dvpp_set_channel_desc_param(cd, 1, 3) == (cd, INVALID)
    assert m.dvpp_get_channel_desc_param(cd, 1) == (0, 0, INVALID)
    assert m.dvpp_set_channel_desc_param(0, 0, 1) == (0, INVALID)


def test_a_stream_of_another_device_is_refused(dvpp):
    assert acl.rt.set_device(1) == OK
    other, _ = acl.rt.create_stream()
    src, _, _ = (None, None, None)
    assert acl.rt.set_device(0) == OK
    src, _, _ = dvpp.pic(NV12, 64, 48)
    dst, _, _ = dvpp.pic(NV12, 32, 24)
    assert m.dvpp_vpc_resize_async(dvpp.channel, src, dst, m.dvpp_create_resize_config(), other) == INVALID
    assert "device" in acl.get_recent_err_msg()


def test_destroying_the_description_closes_its_channel(dvpp):
    cd = m.dvpp_create_channel_desc()
    m.dvpp_create_channel(cd)
    assert m.dvpp_destroy_channel_desc(cd) == OK
    assert _nv12_job(dvpp, cd) == INVALID


def test_reset_device_closes_the_channels_opened_on_it(dvpp):
    assert acl.rt.destroy_stream(dvpp.stream) == OK
    assert acl.rt.reset_device(0) == OK and acl.rt.set_device(0) == OK
    dvpp.stream, _ = acl.rt.create_stream()
    assert _nv12_job(dvpp, dvpp.channel) == INVALID
    assert "create the channel again" in acl.get_recent_err_msg()
    assert m.dvpp_create_channel(dvpp.channel) == OK  # opening it again works
