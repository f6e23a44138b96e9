"""Every alignment, size and ROI rule of VPC (spec sheet section 5.6) and the code a call
breaking it returns: ACL_ERROR_INVALID_PARAM (100000) for geometry and memory, and
ACL_ERROR_FORMAT_NOT_MATCH (100027) for formats. Each bad call is refused at the call (no
task is queued, the output is untouched) and the runtime stays usable afterwards."""
from __future__ import annotations

import numpy as np
import pytest
from media_kit import BGR888, NV12, NV21, RGBA, YUV400, YUYV, Dvpp, addr_of, align

import npurt.acl as acl

m = acl.media
OK, INVALID, FORMAT = 0, 100000, 100027


@pytest.fixture
def dvpp(fresh_runtime):
    return Dvpp()


def _resize(dvpp, src, dst, interpolation=0):
    cfg = m.dvpp_create_resize_config()
    m.dvpp_set_resize_config_interpolation(cfg, interpolation)
    return m.dvpp_vpc_resize_async(dvpp.channel, src, dst, cfg, dvpp.stream)


def _set(desc, **fields):
    for field, value in fields.items():
        assert getattr(m, f"dvpp_set_pic_desc_{field}")(desc, value) == 0


# (name, input spec, output spec, expected code); a spec is dvpp.pic's (fmt, w, h, ws, hs) with
# optional overrides applied after the buffer is made
CASES = [
    ("valid NV12 to NV12", dict(fmt=NV12, w=64, h=48), dict(fmt=NV12, w=32, h=24), OK),
    ("input format outside the VPC list", dict(fmt=20, w=64, h=48, ws=64, hs=48), dict(fmt=NV12, w=32, h=24), FORMAT),
    ("output format other than YUV/YVU 4:2:0", dict(fmt=NV12, w=64, h=48), dict(fmt=BGR888, w=32, h=24), FORMAT),
    ("output YUV 4:0:0 refused by resize", dict(fmt=NV12, w=64, h=48), dict(fmt=YUV400, w=32, h=24), FORMAT),
    ("input narrower than 10", dict(fmt=YUV400, w=8, h=48, ws=32), dict(fmt=NV12, w=32, h=24), INVALID),
    ("input lower than 6", dict(fmt=YUV400, w=64, h=4, hs=6), dict(fmt=NV12, w=32, h=24), INVALID),
    ("input wider than 8192", dict(fmt=YUV400, w=8200, h=16, ws=8208, hs=16), dict(fmt=NV12, w=512, h=16), INVALID),
    ("input 8192 wide", dict(fmt=NV12, w=8192, h=16), dict(fmt=NV12, w=4096, h=16), OK),
    ("output 4096 wide", dict(fmt=NV12, w=4096, h=16), dict(fmt=NV12, w=4096, h=16), OK),
    ("output wider than 4096", dict(fmt=NV12, w=4096, h=16), dict(fmt=NV12, w=4098, h=16), INVALID),
    ("output higher than 4096", dict(fmt=NV12, w=16, h=4096), dict(fmt=NV12, w=16, h=4098), INVALID),
    ("output narrower than 10", dict(fmt=NV12, w=64, h=48), dict(fmt=NV12, w=8, h=24, ws=32), INVALID),
    ("odd output width for 4:2:0", dict(fmt=NV12, w=64, h=48), dict(fmt=NV12, w=33, h=24), INVALID),
    ("odd output height for 4:2:0", dict(fmt=NV12, w=64, h=48), dict(fmt=NV12, w=32, h=25, hs=26), INVALID),
    ("odd input width for 4:2:0, taken aligned down", dict(fmt=NV12, w=63, h=48), dict(fmt=NV12, w=32, h=24), OK),
    ("width stride below ALIGN_UP(width, 16)", dict(fmt=NV12, w=64, h=48), dict(fmt=NV12, w=40, h=24, ws=32),
     INVALID),
    ("width stride not a multiple of 16", dict(fmt=NV12, w=64, h=48, ws=72), dict(fmt=NV12, w=32, h=24), INVALID),
    ("width stride below 32", dict(fmt=YUV400, w=16, h=48, ws=16), dict(fmt=NV12, w=32, h=24), INVALID),
    ("width stride above 16384", dict(fmt=YUV400, w=64, h=8, ws=16400), dict(fmt=NV12, w=32, h=24), INVALID),
    ("packed 4:2:2 stride below ALIGN_UP(width * 2, 16)", dict(fmt=YUYV, w=64, h=48, ws=112),
     dict(fmt=NV12, w=32, h=24), INVALID),
    ("valid packed 4:2:2 stride", dict(fmt=YUYV, w=64, h=48, ws=128), dict(fmt=NV12, w=32, h=24), OK),
    ("BGR stride below ALIGN_UP(width * 3, 16)", dict(fmt=BGR888, w=64, h=48, ws=176),
     dict(fmt=NV12, w=32, h=24), INVALID),
    ("valid BGR stride", dict(fmt=BGR888, w=64, h=48, ws=192), dict(fmt=NV12, w=32, h=24), OK),
    ("xRGB stride below ALIGN_UP(width * 4, 16)", dict(fmt=RGBA, w=64, h=48, ws=240),
     dict(fmt=NV12, w=32, h=24), INVALID),
    ("height stride below the height", dict(fmt=NV12, w=64, h=48, hs=46), dict(fmt=NV12, w=32, h=24), INVALID),
    ("odd height stride", dict(fmt=NV12, w=64, h=48), dict(fmt=NV12, w=32, h=24, hs=25), INVALID),
    ("height stride below 6", dict(fmt=YUV400, w=64, h=6, hs=4), dict(fmt=NV12, w=32, h=24), INVALID),
    ("output height stride above 4096", dict(fmt=NV12, w=64, h=48), dict(fmt=NV12, w=32, h=24, hs=4098),
     INVALID),
    ("input height stride up to 8192", dict(fmt=YUV400, w=64, h=48, hs=8192), dict(fmt=NV12, w=32, h=24), OK),
    ("input height stride above 8192", dict(fmt=YUV400, w=64, h=48, hs=8194), dict(fmt=NV12, w=32, h=24), INVALID),
    ("description size below the layout's bytes", dict(fmt=NV12, w=64, h=48, size=64 * 48), dict(fmt=NV12, w=32,
                                                                                                h=24), INVALID),
    ("upscale beyond 16x", dict(fmt=NV12, w=16, h=16, ws=32), dict(fmt=NV12, w=258, h=16), INVALID),
    ("downscale beyond 1/32", dict(fmt=NV12, w=4096, h=64), dict(fmt=NV12, w=126, h=64), INVALID),
    ("scale exactly 16x", dict(fmt=NV12, w=16, h=16, ws=32), dict(fmt=NV12, w=256, h=16), OK),
]


@pytest.mark.parametrize("name,src,dst,code", CASES, ids=[c[0] for c in CASES])
def test_vpc_picture_rule(dvpp, name, src, dst, code):
    def make(spec, fill):
        spec = dict(spec)
        size = spec.pop("size", None)
        desc, ptr, n = dvpp.pic(spec.pop("fmt"), spec.pop("w"), spec.pop("h"), spec.pop("ws", None),
                                spec.pop("hs", None), fill=fill)
        if size is not None:
            _set(desc, size=size)
        return desc, ptr, n
    s, _, _ = make(src, 0x20)
    d, ptr, n = make(dst, 0x77)
    assert _resize(dvpp, s, d) == code, acl.get_recent_err_msg()
    assert dvpp.sync() == 0
    if code != OK:
        assert (dvpp.download(ptr, n) == 0x77).all()  # nothing ran


# ---------------------------------------------------------------- ROI rules
ROI_CASES = [
    ("even left and top, odd right and bottom", (2, 33, 4, 27), OK),
    ("odd left", (1, 33, 4, 27), INVALID),
    ("odd top", (2, 33, 3, 27), INVALID),
    ("even right", (2, 32, 4, 27), INVALID),
    ("even bottom", (2, 33, 4, 26), INVALID),
    ("right outside the picture", (2, 65, 4, 27), INVALID),
    ("bottom outside the picture", (2, 33, 4, 49), INVALID),
    ("narrower than 10", (2, 9, 4, 27), INVALID),
    ("lower than 6", (2, 33, 4, 7), INVALID),
    ("empty", (10, 9, 4, 27), INVALID),
]


@pytest.mark.parametrize("name,roi,code", ROI_CASES, ids=[c[0] for c in ROI_CASES])
def test_crop_area_rule(dvpp, name, roi, code):
    src, _, _ = dvpp.pic(NV12, 64, 48)
    dst, _, _ = dvpp.pic(NV12, 32, 24)
    assert m.dvpp_vpc_crop_async(dvpp.channel, src, dst, m.dvpp_create_roi_config(*roi), dvpp.stream) == code


@pytest.mark.parametrize("name,roi,code", ROI_CASES, ids=[c[0] for c in ROI_CASES])
def test_paste_area_rule(dvpp, name, roi, code):
    src, _, _ = dvpp.pic(NV12, 64, 48)
    dst, _, _ = dvpp.pic(NV12, 64, 48)
    crop = m.dvpp_create_roi_config(0, 63, 0, 47)
    assert m.dvpp_vpc_crop_and_paste_async(dvpp.channel, src, dst, crop, m.dvpp_create_roi_config(*roi),
                                           dvpp.stream) == code


def test_roi_offsets_are_uint16():
    assert m.dvpp_create_roi_config(0, 65536, 0, 1) == 0
    roi = m.dvpp_create_roi_config(0, 65535, 0, 1)
    assert roi != 0
    assert m.dvpp_set_roi_config_right(roi, 65536) == INVALID
    assert m.dvpp_set_roi_config(roi, 0, 1, 0, 70000) == INVALID


# ---------------------------------------------------------------- memory rules
def test_picture_data_must_be_dvpp_memory(dvpp):
    src, _, _ = dvpp.pic(NV12, 64, 48)
    plain, _ = acl.rt.malloc(align(32, 16) * 24 * 3 // 2, 0)
    dst, _, _ = dvpp.pic(NV12, 32, 24, data=plain, size=32 * 24 * 3 // 2)
    assert _resize(dvpp, src, dst) == INVALID
    assert "dvpp_malloc" in acl.get_recent_err_msg()


def test_picture_data_in_host_memory_is_refused(dvpp):
    host = np.zeros(64 * 48 * 3 // 2, np.uint8)
    src, _, _ = dvpp.pic(NV12, 64, 48, data=addr_of(host), size=host.size)
    dst, _, _ = dvpp.pic(NV12, 32, 24)
    assert _resize(dvpp, src, dst) == INVALID
    assert "host memory" in acl.get_recent_err_msg()


def test_picture_data_must_start_128_byte_aligned(dvpp):
    big = dvpp.alloc(64 * 48 * 3)
    src, _, _ = dvpp.pic(NV12, 64, 48, data=big + 64)
    dst, _, _ = dvpp.pic(NV12, 32, 24)
    assert _resize(dvpp, src, dst) == INVALID
    assert "128-byte" in acl.get_recent_err_msg()
    src2, _, _ = dvpp.pic(NV12, 64, 48, data=big + 128)  # an aligned sub-range is fine
    assert _resize(dvpp, src2, dst) == OK


def test_picture_running_past_its_allocation_is_refused(dvpp):
    small = dvpp.alloc(64 * 48)  # room for the luma only
    src, _, _ = dvpp.pic(NV12, 64, 48, data=small)
    dst, _, _ = dvpp.pic(NV12, 32, 24)
    assert _resize(dvpp, src, dst) == INVALID
    assert "past the end" in acl.get_recent_err_msg()


def test_freed_picture_memory_is_refused(dvpp):
    src, ptr, _ = dvpp.pic(NV12, 64, 48)
    dst, _, _ = dvpp.pic(NV12, 32, 24)
    assert m.dvpp_free(ptr) == 0
    assert _resize(dvpp, src, dst) == INVALID
    assert "freed" in acl.get_recent_err_msg() or "not inside" in acl.get_recent_err_msg()


def test_null_picture_data_is_refused(dvpp):
    src = m.dvpp_create_pic_desc()
    _set(src, size=64 * 48 * 3 // 2, format=NV12, width=64, height=48, width_stride=64, height_stride=48)
    dst, _, _ = dvpp.pic(NV12, 32, 24)
    assert _resize(dvpp, src, dst) == INVALID
    assert m.dvpp_set_pic_desc_data(src, 0) == INVALID


# ---------------------------------------------------------------- handles, channel, config
def test_null_channel_pictures_and_config_are_invalid_param(dvpp):
    src, _, _ = dvpp.pic(NV12, 64, 48)
    dst, _, _ = dvpp.pic(NV12, 32, 24)
    cfg = m.dvpp_create_resize_config()
    assert m.dvpp_vpc_resize_async(0, src, dst, cfg, dvpp.stream) == INVALID
    assert m.dvpp_vpc_resize_async(dvpp.channel, 0, dst, cfg, dvpp.stream) == INVALID
    assert m.dvpp_vpc_resize_async(dvpp.channel, src, 0, cfg, dvpp.stream) == INVALID
    assert m.dvpp_vpc_resize_async(dvpp.channel, src, dst, 0, dvpp.stream) == INVALID
    assert m.dvpp_vpc_crop_async(dvpp.channel, src, dst, 0, dvpp.stream) == INVALID


def test_a_destroyed_description_is_invalid_param(dvpp):
    src, _, _ = dvpp.pic(NV12, 64, 48)
    dst, _, _ = dvpp.pic(NV12, 32, 24)
    assert m.dvpp_destroy_pic_desc(src) == OK
    assert _resize(dvpp, src, dst) == INVALID
    assert "stale" in acl.get_recent_err_msg()


def test_an_unknown_stream_is_invalid_handle(dvpp):
    src, _, _ = dvpp.pic(NV12, 64, 48)
    dst, _, _ = dvpp.pic(NV12, 32, 24)
    assert m.dvpp_vpc_resize_async(dvpp.channel, src, dst, m.dvpp_create_resize_config(), 12345) == 107017


def test_interpolation_above_4_is_invalid_param():
    cfg = m.dvpp_create_resize_config()
    assert [m.dvpp_set_resize_config_interpolation(cfg, i) for i in range(6)] == [OK] * 5 + [INVALID]
    assert m.dvpp_get_resize_config_interpolation(cfg) == 4


def test_the_runtime_is_usable_after_refused_calls(dvpp):
    src, _, _ = dvpp.pic(NV12, 64, 48, fill=10)
    bad, _, _ = dvpp.pic(NV12, 33, 24)
    assert _resize(dvpp, src, bad) == INVALID
    dst, ptr, n = dvpp.pic(NV12, 32, 24)
    assert _resize(dvpp, src, dst) == OK and dvpp.sync() == OK
    assert (dvpp.download(ptr, n)[:32 * 24] == 10).all()


# ---------------------------------------------------------------- the other operations' rules
def test_convert_color_keeps_the_size(dvpp):
    src, _, _ = dvpp.pic(NV12, 64, 48)
    dst, _, _ = dvpp.pic(BGR888, 32, 24)
    assert m.dvpp_vpc_convert_color_async(dvpp.channel, src, dst, dvpp.stream) == INVALID


def test_convert_color_needs_the_input_geometry(dvpp):
    src, _, _ = dvpp.pic(NV12, 64, 48)
    _set(src, width_stride=0)
    dst, _, _ = dvpp.pic(BGR888, 64, 48)
    assert m.dvpp_vpc_convert_color_async(dvpp.channel, src, dst, dvpp.stream) == INVALID


def test_convert_color_output_formats(dvpp):
    src, _, _ = dvpp.pic(NV12, 64, 48)
    for fmt, code in ((BGR888, OK), (NV21, OK), (YUYV, FORMAT), (5, FORMAT)):
        dst, _, _ = dvpp.pic(fmt, 64, 48)
        assert m.dvpp_vpc_convert_color_async(dvpp.channel, src, dst, dvpp.stream) == code, fmt


def test_pyr_down_takes_yuv400_only_and_halves_the_size(dvpp):
    src, _, _ = dvpp.pic(YUV400, 64, 48)
    half, _, _ = dvpp.pic(YUV400, 32, 24)
    assert m.dvpp_vpc_pyr_down_async(dvpp.channel, src, half, 0, dvpp.stream) == OK
    wrong, _, _ = dvpp.pic(YUV400, 30, 24, ws=32)
    assert m.dvpp_vpc_pyr_down_async(dvpp.channel, src, wrong, 0, dvpp.stream) == INVALID
    nv, _, _ = dvpp.pic(NV12, 32, 24)
    assert m.dvpp_vpc_pyr_down_async(dvpp.channel, src, nv, 0, dvpp.stream) == FORMAT
    assert m.dvpp_vpc_pyr_down_async(dvpp.channel, src, half, 1, dvpp.stream) == INVALID  # reserve


def test_make_border_output_must_add_the_borders(dvpp):
    src, _, _ = dvpp.pic(NV12, 64, 48)
    cfg = m.dvpp_create_border_config()
    for side in ("top", "bottom", "left", "right"):
        getattr(m, f"dvpp_set_border_config_{side}")(cfg, 2)
    good, _, _ = dvpp.pic(NV12, 68, 52)
    assert m.dvpp_vpc_make_border_async(dvpp.channel, src, good, cfg, dvpp.stream) == OK
    wrong, _, _ = dvpp.pic(NV12, 64, 48)
    assert m.dvpp_vpc_make_border_async(dvpp.channel, src, wrong, cfg, dvpp.stream) == INVALID
    m.dvpp_set_border_config_left(cfg, 1)
    m.dvpp_set_border_config_right(cfg, 3)  # odd borders do not fit 4:2:0 chroma
    assert m.dvpp_vpc_make_border_async(dvpp.channel, src, good, cfg, dvpp.stream) == INVALID
    m.dvpp_set_border_config_left(cfg, 2)
    m.dvpp_set_border_config_right(cfg, 2)
    m.dvpp_set_border_config_border_type(cfg, 4)
    assert m.dvpp_vpc_make_border_async(dvpp.channel, src, good, cfg, dvpp.stream) == INVALID
    assert m.dvpp_vpc_make_border_async(dvpp.channel, src, good, 0, dvpp.stream) == INVALID


# ---------------------------------------------------------------- batch rules
def _batch(dvpp, n, fmt=NV12, w=64, h=48):
    batch = m.dvpp_create_batch_pic_desc(n)
    for i in range(n):
        desc = m.dvpp_get_pic_desc(batch, i)
        ptr = dvpp.alloc(align(w, 16) * h * 3 // 2)
        _set(desc, data=ptr, size=align(w, 16) * h * 3 // 2, format=fmt, width=w, height=h,
             width_stride=align(w, 16), height_stride=h)
    return batch


def test_batch_crop_list_arguments_must_be_lists(dvpp):
    src, dst = _batch(dvpp, 1), _batch(dvpp, 1)
    roi = m.dvpp_create_roi_config(0, 31, 0, 23)
    with pytest.raises(TypeError, match="argument 3 or 5 is not list"):
        m.dvpp_vpc_batch_crop_async(dvpp.channel, src, (1,), dst, [roi], dvpp.stream)
    with pytest.raises(TypeError, match="argument 3, 5 or 6 is not list"):
        m.dvpp_vpc_batch_crop_and_paste_async(dvpp.channel, src, [1], dst, [roi], (roi,), dvpp.stream)
    with pytest.raises(TypeError, match="argument 5 is not list"):
        m.dvpp_vpc_batch_crop_resize_async(dvpp.channel, src, [1], dst, roi, 0, dvpp.stream)
    with pytest.raises(TypeError, match="the sixth argument is not list"):
        m.dvpp_vpc_batch_crop_resize_make_border_async(dvpp.channel, src, [1], dst, [roi], 7, 0, dvpp.stream)
    with pytest.raises(TypeError, match="the list argument is not list of int"):
        m.dvpp_vpc_batch_crop_async(dvpp.channel, src, [1], dst, ["roi"], dvpp.stream)


def test_batch_crop_counts_outside_1_to_256_are_value_errors(dvpp):
    src, dst = _batch(dvpp, 1), _batch(dvpp, 1)
    roi = m.dvpp_create_roi_config(0, 31, 0, 23)
    for roi_nums, crops in (([], [roi]), ([1], []), ([1] * 257, [roi]), ([257], [roi])):
        with pytest.raises(ValueError, match="between 1 and 256"):
            m.dvpp_vpc_batch_crop_async(dvpp.channel, src, roi_nums, dst, crops, dvpp.stream)
    with pytest.raises(ValueError):
        m.dvpp_vpc_batch_crop_and_paste_async(dvpp.channel, src, [1], dst, [roi], [roi, roi], dvpp.stream)


def test_batch_crop_returns_the_output_batch_with_its_code(dvpp):
    src, dst = _batch(dvpp, 2), _batch(dvpp, 2)
    roi = m.dvpp_create_roi_config(0, 31, 0, 23)
    assert m.dvpp_vpc_batch_crop_async(dvpp.channel, src, [1, 1], dst, [roi, roi], dvpp.stream) == (dst, OK)
    assert m.dvpp_vpc_batch_crop_async(dvpp.channel, src, [0, 2], dst, [roi, roi], dvpp.stream) == (dst, INVALID)


@pytest.mark.parametrize("roi_nums,outputs,code", [
    ([1, 1], 2, OK), ([2], 1, INVALID),            # more areas than output pictures
    ([1, 1, 1], 3, INVALID),                       # more roi_nums entries than source pictures
    ([0, 1], 1, INVALID),                          # an entry of 0
    ([200, 57], 256, INVALID),                     # 257 areas in total: at most 256 per call
])
def test_batch_roi_counts_are_checked_by_the_c_function(dvpp, roi_nums, outputs, code):
    src = _batch(dvpp, 2)
    dst = _batch(dvpp, outputs, w=32, h=24)
    crops = [m.dvpp_create_roi_config(0, 31, 0, 23)] * sum(roi_nums)
    cfg = m.dvpp_create_resize_config()
    assert m.dvpp_vpc_batch_crop_resize_async(dvpp.channel, src, roi_nums, dst, crops, cfg, dvpp.stream) == code


def test_every_output_picture_of_a_batch_needs_an_output_format(dvpp):
    src = _batch(dvpp, 1)
    dst = _batch(dvpp, 1, w=32, h=24)
    spare = m.dvpp_create_batch_pic_desc(2)  # picture 1 stays unconfigured: format 0 is YUV_400
    for i, value in enumerate((m.dvpp_get_pic_desc(dst, 0), 0)):
        if value:
            d = m.dvpp_get_pic_desc(spare, i)
            for field in ("data", "size", "format", "width", "height", "width_stride", "height_stride"):
                getattr(m, f"dvpp_set_pic_desc_{field}")(d, getattr(m, f"dvpp_get_pic_desc_{field}")(value))
    roi = [m.dvpp_create_roi_config(0, 31, 0, 23)]
    assert m.dvpp_vpc_batch_crop_async(dvpp.channel, src, [1], spare, roi, dvpp.stream) == (spare, FORMAT)
    assert m.dvpp_vpc_batch_crop_async(dvpp.channel, src, [1], dst, roi, dvpp.stream) == (dst, OK)
