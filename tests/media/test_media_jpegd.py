"""JPEGD through acl.media: header information, size prediction, and decoding into DVPP
memory compared with Pillow's own decode.

Tolerance: the reference converts Pillow's RGB decode back to YCbCr with the JFIF matrix
and averages chroma over the output's 2x2 (2x1) blocks. Luma differs only by the RGB
rounding: at most 2 per sample, mean below 0.5. Chroma differs by at most 5 (mean below
1.0): the decoder writes a 4:2:0 JPEG's coded chroma samples as they are (shown exactly
with a JPEG whose coded planes are known), while the reference went through libjpeg's
chroma upsampling, RGB, and averaging back down.
"""
from __future__ import annotations

import io

import numpy as np
import pytest
from media_kit import (NV12, NV21, UNKNOWN, YUV400, YVU422SP, YVU440SP, YVU444SP, Dvpp, addr_of, align,
                       baseline_jpeg, box, exif_orientation, gradient_rgb, jpeg, semiplanar, ycbcr)
from PIL import Image, ImageOps

import npurt.acl as acl

m = acl.media
INVALID, FORMAT, FAILURE, UNSUPPORTED = 100000, 100027, 500001, 148052
LUMA, CHROMA = (2, 0.5), (5, 1.0)  # (max, mean) absolute difference from the reference


@pytest.fixture
def dvpp(fresh_runtime):
    return Dvpp()


def _host(data: bytes):
    arr = np.frombuffer(data, np.uint8).copy()
    return arr, addr_of(arr)


def _decode(dvpp, data: bytes, fmt: int = NV12, size: int | None = None):
    """Decode through acl.media; (ret of decode, ret of sync, output desc, raw bytes)."""
    arr, ptr = _host(data)
    if size is None:
        size, ret = m.dvpp_jpeg_predict_dec_size(ptr, arr.size, fmt)
        assert ret == 0, acl.get_recent_err_msg()
    src, n = dvpp.upload(data)
    out = dvpp.alloc(size)
    desc = m.dvpp_create_pic_desc()
    m.dvpp_set_pic_desc_data(desc, out)
    m.dvpp_set_pic_desc_size(desc, size)
    m.dvpp_set_pic_desc_format(desc, fmt)
    ret = m.dvpp_jpeg_decode_async(dvpp.channel, src, n, desc, dvpp.stream)
    sync = dvpp.sync() if ret == 0 else None
    return ret, sync, desc, dvpp.download(out, size)


def _strides(desc) -> tuple[int, int]:
    """The strides JPEGD wrote back (the SoC's decoder picks them on Ascend310P3 / 910B3)."""
    return m.dvpp_get_pic_desc_width_stride(desc), m.dvpp_get_pic_desc_height_stride(desc)


def _reference(data: bytes) -> np.ndarray:
    return ycbcr(np.asarray(Image.open(io.BytesIO(data)).convert("RGB")))


def _close(a, b, tolerance=LUMA) -> bool:
    d = np.abs(a.astype(np.float64) - b)
    return d.max() <= tolerance[0] and d.mean() <= tolerance[1]


# ---------------------------------------------------------------- header information
def test_image_info_reports_size_components_and_subsampling():
    data = jpeg(gradient_rgb(96, 64), "4:2:2")
    arr, ptr = _host(data)
    assert m.dvpp_jpeg_get_image_info(ptr, arr.size) == (96, 64, 3, 0)
    assert m.dvpp_jpeg_get_image_info_v2(ptr, arr.size) == (96, 64, 3, 1, 0)


@pytest.mark.parametrize("subsampling,factors,css", [
    ("444", [(1, 1)] * 3, 0), ("422", [(2, 1), (1, 1), (1, 1)], 1), ("420", [(2, 2), (1, 1), (1, 1)], 2),
    ("440", [(1, 2), (1, 1), (1, 1)], 4), ("411", [(4, 1), (1, 1), (1, 1)], 1000)])
def test_image_info_v2_names_the_subsampling(subsampling, factors, css):
    planes = [np.full((32 * f[1] // max(g[1] for g in factors), 64 * f[0] // max(g[0] for g in factors)), 128,
                      np.uint8) for f in factors]
    arr, ptr = _host(baseline_jpeg(planes, factors))
    assert m.dvpp_jpeg_get_image_info_v2(ptr, arr.size)[3:] == (css, 0)


def test_image_info_of_a_grey_jpeg_has_one_component_and_gray_format():
    arr, ptr = _host(jpeg(gradient_rgb(64, 48)[..., 0]))
    assert m.dvpp_jpeg_get_image_info_v2(ptr, arr.size) == (64, 48, 1, 3, 0)


def test_image_info_swaps_width_and_height_for_exif_orientation_5_to_8():
    rgb = gradient_rgb(96, 64)
    for orientation, size in ((1, (96, 64)), (3, (96, 64)), (6, (64, 96)), (8, (64, 96))):
        arr, ptr = _host(jpeg(rgb, exif=exif_orientation(orientation)))
        assert m.dvpp_jpeg_get_image_info(ptr, arr.size)[:2] == size, orientation


def test_image_info_of_data_that_is_not_a_jpeg_is_acl_error_failure():
    arr, ptr = _host(b"\x89PNG\r\n\x1a\n" + bytes(100))
    assert m.dvpp_jpeg_get_image_info(ptr, arr.size) == (0, 0, 0, FAILURE)
    assert m.dvpp_jpeg_get_image_info_v2(ptr, arr.size) == (0, 0, 0, 1000, FAILURE)


def test_image_info_of_a_truncated_header_is_acl_error_failure():
    data = jpeg(gradient_rgb(64, 48))
    arr, ptr = _host(data[:20])
    assert m.dvpp_jpeg_get_image_info(ptr, arr.size)[-1] == FAILURE


def test_image_info_needs_host_memory_not_dvpp_memory(dvpp):
    data = jpeg(gradient_rgb(64, 48))
    src, n = dvpp.upload(data)
    assert m.dvpp_jpeg_get_image_info(src, n)[-1] == INVALID
    assert "host memory" in acl.get_recent_err_msg()


def test_image_info_of_a_null_pointer_is_invalid_param():
    assert m.dvpp_jpeg_get_image_info(0, 100)[-1] == INVALID


# ---------------------------------------------------------------- size prediction
def test_predict_dec_size_for_yuv420sp_aligns_width_to_128_and_height_to_16():
    arr, ptr = _host(jpeg(gradient_rgb(100, 50)))
    expected = align(100, 128) * align(50, 16) * 3 // 2
    assert m.dvpp_jpeg_predict_dec_size(ptr, arr.size, NV12) == (expected, 0)
    assert m.dvpp_jpeg_predict_dec_size(ptr, arr.size, NV21) == (expected, 0)


@pytest.mark.parametrize("subsampling,fmt,factor", [("4:2:2", YVU422SP, 2), ("4:4:4", YVU444SP, 3),
                                                    ("4:2:0", UNKNOWN, 1.5), ("4:2:2", UNKNOWN, 2)])
def test_predict_dec_size_follows_the_output_subsampling(subsampling, fmt, factor):
    arr, ptr = _host(jpeg(gradient_rgb(64, 48), subsampling))
    assert m.dvpp_jpeg_predict_dec_size(ptr, arr.size, fmt) == (int(128 * 48 * factor), 0)


def test_predict_dec_size_refuses_an_output_format_jpegd_does_not_write():
    arr, ptr = _host(jpeg(gradient_rgb(64, 48)))
    assert m.dvpp_jpeg_predict_dec_size(ptr, arr.size, 12) == (0, FORMAT)  # RGB_888


def test_predict_dec_size_refuses_a_subsampling_the_source_cannot_give():
    arr, ptr = _host(jpeg(gradient_rgb(64, 48), "4:2:0"))
    assert m.dvpp_jpeg_predict_dec_size(ptr, arr.size, YVU444SP) == (0, FORMAT)


@pytest.mark.parametrize("w,h,ok", [(32, 32, True), (31, 64, False), (64, 31, False)])
def test_predict_dec_size_accepts_32_to_8192_pixels(w, h, ok):
    arr, ptr = _host(jpeg(gradient_rgb(w, h)))
    assert (m.dvpp_jpeg_predict_dec_size(ptr, arr.size, NV12)[1] == 0) == ok


def test_predict_dec_size_above_8192_is_invalid_param():
    planes = [np.full((8, 8200), 100, np.uint8)]  # a grey JPEG 8200 pixels wide, 8 rows
    arr, ptr = _host(baseline_jpeg(planes, [(1, 1)], ids=b"\x01"))
    assert m.dvpp_jpeg_predict_dec_size(ptr, arr.size, NV12)[1] == INVALID


# ---------------------------------------------------------------- decoding
@pytest.mark.parametrize("subsampling", ["4:2:0", "4:2:2", "4:4:4"])
def test_decode_to_nv12_matches_pillows_decode(dvpp, subsampling):
    data = jpeg(gradient_rgb(160, 96), subsampling)
    ret, sync, desc, raw = _decode(dvpp, data, NV12)
    assert (ret, sync, m.dvpp_get_pic_desc_ret_code(desc)) == (0, 0, 0)
    y, u, v = semiplanar(raw, 160, 96, *_strides(desc))
    ref = _reference(data)
    assert _close(y, ref[..., 0])
    assert _close(u, box(ref[..., 1], 2, 2), CHROMA) and _close(v, box(ref[..., 2], 2, 2), CHROMA)


def test_decode_of_a_420_jpeg_gives_its_coded_planes(dvpp):
    ycc = ycbcr(gradient_rgb(96, 64))
    coded = [np.clip(np.round(p), 0, 255).astype(np.uint8)
             for p in (ycc[..., 0], box(ycc[..., 1], 2, 2), box(ycc[..., 2], 2, 2))]
    ret, sync, desc, raw = _decode(dvpp, baseline_jpeg(coded, [(2, 2), (1, 1), (1, 1)], q=2), NV12)
    assert (ret, sync) == (0, 0)
    for got, sent in zip(semiplanar(raw, 96, 64, *_strides(desc)), coded):
        assert np.abs(got.astype(int) - sent).max() <= 2  # the quantisation step only


def test_decode_to_nv21_puts_v_before_u(dvpp):
    data = jpeg(gradient_rgb(64, 48))
    _, _, d12, nv12 = _decode(dvpp, data, NV12)
    _, _, d21, nv21 = _decode(dvpp, data, NV21)
    y12, u12, v12 = semiplanar(nv12, 64, 48, *_strides(d12))
    y21, u21, v21 = semiplanar(nv21, 64, 48, *_strides(d21), vu=True)
    assert np.array_equal(y12, y21) and np.array_equal(u12, u21) and np.array_equal(v12, v21)
    assert not np.array_equal(u12, v12)


def test_decode_writes_the_real_geometry_back_into_the_description(dvpp):
    ret, sync, desc, _ = _decode(dvpp, jpeg(gradient_rgb(100, 50)), NV12)
    assert (ret, sync) == (0, 0)
    assert (m.dvpp_get_pic_desc_width(desc), m.dvpp_get_pic_desc_height(desc)) == (100, 50)
    assert (m.dvpp_get_pic_desc_width_stride(desc), m.dvpp_get_pic_desc_height_stride(desc)) == (128, 64)


@pytest.mark.parametrize("subsampling", ["4:4:4", "4:2:0"])
def test_decode_of_an_odd_sized_picture_to_420_aligns_width_and_height_down_to_even(dvpp, subsampling):
    data = jpeg(gradient_rgb(75, 45), subsampling)
    ret, sync, desc, raw = _decode(dvpp, data, NV12)
    assert (ret, sync) == (0, 0)
    assert (m.dvpp_get_pic_desc_width(desc), m.dvpp_get_pic_desc_height(desc)) == (74, 44)
    y, _, _ = semiplanar(raw, 74, 44, *_strides(desc))
    assert _close(y, _reference(data)[:44, :74, 0])


def test_decode_on_ascend910a_keeps_the_strides_the_description_sets_when_they_hold_the_picture(
        fresh_runtime, monkeypatch):
    monkeypatch.setenv("NPURT_SOC", "Ascend910A")
    dvpp = Dvpp()
    data = jpeg(gradient_rgb(64, 48))
    arr, ptr = _host(data)
    src, n = dvpp.upload(data)
    desc, out, size = dvpp.pic(NV12, 64, 48, ws=80, hs=50)
    assert m.dvpp_jpeg_decode_async(dvpp.channel, src, n, desc, dvpp.stream) == 0
    assert dvpp.sync() == 0
    assert (m.dvpp_get_pic_desc_width_stride(desc), m.dvpp_get_pic_desc_height_stride(desc)) == (80, 50)
    y, _, _ = semiplanar(dvpp.download(out, size), 64, 48, 80, 50)
    assert _close(y, _reference(data)[..., 0])


def test_decode_on_ascend910a_defaults_to_128_aligned_strides(fresh_runtime, monkeypatch):
    monkeypatch.setenv("NPURT_SOC", "Ascend910A")
    dvpp = Dvpp()
    ret, sync, desc, raw = _decode(dvpp, jpeg(gradient_rgb(150, 50)), NV12)
    assert (ret, sync, _strides(desc)) == (0, 0, (256, 64))


@pytest.mark.parametrize("soc", ["Ascend310P3", "Ascend910B3"])
def test_decode_on_v200_socs_picks_64_aligned_strides_whatever_the_description_asks(fresh_runtime, monkeypatch, soc):
    monkeypatch.setenv("NPURT_SOC", soc)
    data = jpeg(gradient_rgb(150, 50))
    dvpp = Dvpp()
    src, n = dvpp.upload(data)
    desc, out, size = dvpp.pic(NV12, 150, 50, ws=256, hs=64)  # acllite's ALIGN_UP(w, 128) request
    assert m.dvpp_jpeg_decode_async(dvpp.channel, src, n, desc, dvpp.stream) == 0
    assert dvpp.sync() == 0
    assert (m.dvpp_get_pic_desc_width_stride(desc), m.dvpp_get_pic_desc_height_stride(desc)) == (192, 64)
    y, _, _ = semiplanar(dvpp.download(out, size), 150, 50, 192, 64)
    assert _close(y, _reference(data)[..., 0])


def test_decode_of_a_grey_jpeg_to_420_fills_chroma_with_0x80(dvpp):
    grey = gradient_rgb(64, 48)[..., 1]
    ret, sync, desc, raw = _decode(dvpp, jpeg(grey), NV12)
    assert (ret, sync) == (0, 0)
    y, u, v = semiplanar(raw, 64, 48, *_strides(desc))
    assert (u == 0x80).all() and (v == 0x80).all()
    assert _close(y, np.asarray(Image.open(io.BytesIO(jpeg(grey)))))


@pytest.mark.parametrize("subsampling,fmt,sub", [("4:2:2", YVU422SP, (2, 1)), ("4:4:4", YVU444SP, (1, 1))])
def test_decode_to_the_sources_own_subsampling_keeps_it_in_vu_order(dvpp, subsampling, fmt, sub):
    data = jpeg(gradient_rgb(64, 48), subsampling)
    ret, sync, desc, raw = _decode(dvpp, data, fmt)
    assert (ret, sync) == (0, 0)
    y, u, v = semiplanar(raw, 64, 48, *_strides(desc), sub=sub, vu=True)
    ref = _reference(data)
    assert _close(u, box(ref[..., 1], *sub), CHROMA) and _close(v, box(ref[..., 2], *sub), CHROMA)


def test_decode_of_a_440_jpeg_to_its_own_subsampling(dvpp):
    rgb = gradient_rgb(64, 48)
    ycc = ycbcr(rgb)
    planes = [np.clip(np.round(p), 0, 255).astype(np.uint8)
              for p in (ycc[..., 0], box(ycc[..., 1], 1, 2), box(ycc[..., 2], 1, 2))]
    data = baseline_jpeg(planes, [(1, 2), (1, 1), (1, 1)])
    ret, sync, desc, raw = _decode(dvpp, data, UNKNOWN)
    assert (ret, sync) == (0, 0)
    assert m.dvpp_get_pic_desc_format(desc) == YVU440SP
    y, u, v = semiplanar(raw, 64, 48, *_strides(desc), sub=(1, 2), vu=True)
    # against the planes that were encoded: quantisation, plus libjpeg's chroma upsampling
    # averaged back down, stay within 4
    for got, sent in zip((y, u, v), planes):
        d = np.abs(got.astype(int) - sent)
        assert d.max() <= 4 and d.mean() < 1


def test_decode_with_unknown_output_format_reports_the_format_it_wrote(dvpp):
    ret, sync, desc, _ = _decode(dvpp, jpeg(gradient_rgb(64, 48), "4:2:0"), UNKNOWN)
    assert (ret, sync, m.dvpp_get_pic_desc_format(desc)) == (0, 0, NV21)
    ret, sync, desc, raw = _decode(dvpp, jpeg(gradient_rgb(64, 48)[..., 0]), UNKNOWN)
    assert (ret, sync, m.dvpp_get_pic_desc_format(desc)) == (0, 0, YUV400)


@pytest.mark.parametrize("subsampling", ["4:4:4", "4:2:0"])
def test_decode_applies_the_exif_orientation(dvpp, subsampling):
    rgb = gradient_rgb(96, 64)
    data = jpeg(rgb, subsampling, exif=exif_orientation(6))  # stored picture is shown rotated 90 degrees
    ret, sync, desc, raw = _decode(dvpp, data, NV12)
    assert (ret, sync) == (0, 0)
    assert (m.dvpp_get_pic_desc_width(desc), m.dvpp_get_pic_desc_height(desc)) == (64, 96)
    y, u, _ = semiplanar(raw, 64, 96, *_strides(desc))
    shown = ycbcr(np.asarray(ImageOps.exif_transpose(Image.open(io.BytesIO(data))).convert("RGB")))
    assert _close(y, shown[..., 0]) and _close(u, box(shown[..., 1], 2, 2), CHROMA)


def test_decode_of_a_progressive_jpeg_fails_with_unsupported_jpeg(dvpp):
    ret, sync, desc, _ = _decode(dvpp, jpeg(gradient_rgb(64, 48), progressive=True), NV12, size=128 * 48 * 3 // 2)
    assert ret == 0  # the call is accepted; the decoder finds out when it runs
    assert sync == UNSUPPORTED
    assert m.dvpp_get_pic_desc_ret_code(desc) == UNSUPPORTED
    assert "progressive" in acl.get_recent_err_msg()


@pytest.mark.parametrize("sof,name", [(0xC9, "arithmetic"), (0xC3, "lossless")])
def test_decode_of_arithmetic_or_lossless_jpegs_fails_with_unsupported_jpeg(dvpp, sof, name):
    data = baseline_jpeg([np.full((32, 32), 99, np.uint8)], [(1, 1)], ids=b"\x01", sof=sof)
    _, sync, desc, _ = _decode(dvpp, data, NV12, size=128 * 32 * 3 // 2)
    assert sync == UNSUPPORTED and m.dvpp_get_pic_desc_ret_code(desc) == UNSUPPORTED


def test_decode_of_an_rgb_coded_jpeg_fails_with_unsupported_jpeg(dvpp):
    planes = [np.full((32, 32), v, np.uint8) for v in (10, 20, 30)]
    _, sync, _, _ = _decode(dvpp, baseline_jpeg(planes, [(1, 1)] * 3, ids=b"RGB"), NV12, size=128 * 32 * 3 // 2)
    assert sync == UNSUPPORTED


def test_decode_into_a_buffer_smaller_than_the_picture_fails_at_synchronize(dvpp):
    ret, sync, desc, _ = _decode(dvpp, jpeg(gradient_rgb(64, 48)), NV12, size=1000)
    assert ret == 0 and sync == INVALID
    assert m.dvpp_get_pic_desc_ret_code(desc) == INVALID
    assert "1000" in acl.get_recent_err_msg()


def test_decode_refuses_an_output_format_it_cannot_write_at_the_call(dvpp):
    src, n = dvpp.upload(jpeg(gradient_rgb(64, 48)))
    desc, _, _ = dvpp.pic(12, 64, 48)  # RGB_888
    assert m.dvpp_jpeg_decode_async(dvpp.channel, src, n, desc, dvpp.stream) == FORMAT


def test_decode_needs_the_jpeg_in_dvpp_memory(dvpp):
    data = jpeg(gradient_rgb(64, 48))
    arr, host_ptr = _host(data)
    desc, _, _ = dvpp.pic(NV12, 64, 48, ws=128, hs=48)
    assert m.dvpp_jpeg_decode_async(dvpp.channel, host_ptr, arr.size, desc, dvpp.stream) == INVALID
    assert "dvpp_malloc" in acl.get_recent_err_msg()
    plain, _ = acl.rt.malloc(arr.size, 0)
    assert m.dvpp_jpeg_decode_async(dvpp.channel, plain, arr.size, desc, dvpp.stream) == INVALID
    assert "not DVPP memory" in acl.get_recent_err_msg()


def test_decode_with_a_zero_size_is_invalid_param(dvpp):
    src, _ = dvpp.upload(jpeg(gradient_rgb(64, 48)))
    desc, _, _ = dvpp.pic(NV12, 64, 48)
    assert m.dvpp_jpeg_decode_async(dvpp.channel, src, 0, desc, dvpp.stream) == INVALID


def test_decode_of_a_size_beyond_the_allocation_is_refused_at_the_call(dvpp):
    src, n = dvpp.upload(jpeg(gradient_rgb(64, 48)))
    desc, _, _ = dvpp.pic(NV12, 64, 48, ws=128, hs=48)
    assert m.dvpp_jpeg_decode_async(dvpp.channel, src, n + 4096, desc, dvpp.stream) == INVALID
    assert "past the end" in acl.get_recent_err_msg()
