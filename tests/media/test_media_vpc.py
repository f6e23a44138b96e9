"""VPC through acl.media: resize, crop, paste, colour conversion, borders, pyramid down and
the batch forms, compared with numpy references written from the documented formulas
(media_kit.resize_ref for the interpolations, the BT.601 full-range matrix for colour).
Scaling results must be equal to the reference; colour conversion may differ by 1 (float32
against float64 rounding)."""
from __future__ import annotations

import numpy as np
import pytest
from media_kit import (ABGR, ARGB, BGR888, BGRA, NV12, NV21, RGB888, RGBA, UYVY, VYUY, YUV400, YUV422SP,
                       YUV444PACKED, YUV444SP, YUYV, YVU422SP, YVYU, Dvpp, align, box, gradient_rgb, put_nv12,
                       resize_ref, semiplanar, ycbcr)

import npurt.acl as acl

m = acl.media


@pytest.fixture
def dvpp(fresh_runtime):
    return Dvpp()


def _planes(w: int, h: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 256, (h, w), dtype=np.uint8)
    u = rng.integers(0, 256, (h // 2, w // 2), dtype=np.uint8)
    v = rng.integers(0, 256, (h // 2, w // 2), dtype=np.uint8)
    return y, u, v


def _nv12_input(dvpp, y, u, v, ws=None, hs=None, vu=False):
    h, w = y.shape
    ws, hs = ws or align(w, 16), hs or align(h, 2)
    buf = np.zeros(ws * hs * 3 // 2, np.uint8)
    put_nv12(buf, y, u, v, ws, hs, vu)
    ptr, n = dvpp.upload(buf)
    desc, _, _ = dvpp.pic(NV21 if vu else NV12, w, h, ws, hs, data=ptr, size=n)
    return desc


def _packed_input(dvpp, fmt, arr: np.ndarray, bpp: int):
    h, w = arr.shape[:2]
    ws = align(w * bpp, 16)
    buf = np.zeros((h, ws), np.uint8)
    buf[:, :w * bpp] = arr.reshape(h, w * bpp)
    ptr, n = dvpp.upload(buf.ravel())
    desc, _, _ = dvpp.pic(fmt, w, h, ws, h, data=ptr, size=n)
    return desc


def _output(dvpp, w, h, fmt=NV12, fill=0x11):
    desc, ptr, n = dvpp.pic(fmt, w, h, fill=fill)
    return desc, ptr, n


def _read(dvpp, ptr, n, w, h, fmt=NV12):
    return semiplanar(dvpp.download(ptr, n), w, h, align(w, 16), align(h, 2), vu=fmt == 2)


def _resize_config(interpolation):
    cfg = m.dvpp_create_resize_config()
    assert m.dvpp_set_resize_config_interpolation(cfg, interpolation) == 0
    return cfg


# ---------------------------------------------------------------- resize
@pytest.mark.parametrize("interpolation", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("size", [(24, 18), (90, 60)])
def test_resize_scales_each_plane_with_the_configured_interpolation(dvpp, interpolation, size):
    y, u, v = _planes(48, 32)
    src = _nv12_input(dvpp, y, u, v)
    ow, oh = size
    dst, ptr, n = _output(dvpp, ow, oh)
    assert m.dvpp_vpc_resize_async(dvpp.channel, src, dst, _resize_config(interpolation), dvpp.stream) == 0
    assert dvpp.sync() == 0
    gy, gu, gv = _read(dvpp, ptr, n, ow, oh)
    assert np.array_equal(gy, resize_ref(y, oh, ow, interpolation))
    assert np.array_equal(gu, resize_ref(u, oh // 2, ow // 2, interpolation))
    assert np.array_equal(gv, resize_ref(v, oh // 2, ow // 2, interpolation))
    assert m.dvpp_get_pic_desc_ret_code(dst) == 0


def test_resize_to_the_same_size_copies_the_picture(dvpp):
    y, u, v = _planes(32, 16)
    src = _nv12_input(dvpp, y, u, v)
    dst, ptr, n = _output(dvpp, 32, 16)
    assert m.dvpp_vpc_resize_async(dvpp.channel, src, dst, _resize_config(0), dvpp.stream) == 0
    assert dvpp.sync() == 0
    got = _read(dvpp, ptr, n, 32, 16)
    assert all(np.array_equal(a, b) for a, b in zip(got, (y, u, v)))


def test_resize_reads_input_strides_and_leaves_output_padding_alone(dvpp):
    y, u, v = _planes(40, 20)
    src = _nv12_input(dvpp, y, u, v, ws=64, hs=24)
    dst, ptr, n = dvpp.pic(NV12, 20, 10, ws=48, hs=16, fill=0x5A)
    assert m.dvpp_vpc_resize_async(dvpp.channel, src, dst, _resize_config(1), dvpp.stream) == 0
    assert dvpp.sync() == 0
    raw = dvpp.download(ptr, n)
    assert np.array_equal(raw[:48 * 16].reshape(16, 48)[:10, :20], resize_ref(y, 10, 20, 1))
    luma = raw[:48 * 16].reshape(16, 48)
    assert (luma[:10, 20:] == 0x5A).all() and (luma[10:] == 0x5A).all()


def test_resize_to_nv21_writes_v_before_u(dvpp):
    y, u, v = _planes(32, 16)
    src = _nv12_input(dvpp, y, u, v)
    dst, ptr, n = _output(dvpp, 32, 16, NV21)
    assert m.dvpp_vpc_resize_async(dvpp.channel, src, dst, _resize_config(0), dvpp.stream) == 0
    assert dvpp.sync() == 0
    gy, gu, gv = _read(dvpp, ptr, n, 32, 16, NV21)
    assert np.array_equal(gu, u) and np.array_equal(gv, v)


def test_resize_of_an_nv21_input_reads_v_before_u(dvpp):
    y, u, v = _planes(32, 16)
    src = _nv12_input(dvpp, y, u, v, vu=True)
    dst, ptr, n = _output(dvpp, 32, 16)
    assert m.dvpp_vpc_resize_async(dvpp.channel, src, dst, _resize_config(0), dvpp.stream) == 0
    assert dvpp.sync() == 0
    _, gu, gv = _read(dvpp, ptr, n, 32, 16)
    assert np.array_equal(gu, u) and np.array_equal(gv, v)


# ---------------------------------------------------------------- crop and paste
def test_crop_scales_the_roi_to_the_output(dvpp):
    y, u, v = _planes(64, 48)
    src = _nv12_input(dvpp, y, u, v)
    dst, ptr, n = _output(dvpp, 40, 30)
    roi = m.dvpp_create_roi_config(10, 33, 4, 27)  # 24 x 24 at (10, 4)
    assert m.dvpp_vpc_crop_async(dvpp.channel, src, dst, roi, dvpp.stream) == 0
    assert dvpp.sync() == 0
    gy, gu, _ = _read(dvpp, ptr, n, 40, 30)
    assert np.array_equal(gy, resize_ref(y[4:28, 10:34], 30, 40, 0))
    assert np.array_equal(gu, resize_ref(u[2:14, 5:17], 15, 20, 0))


def test_crop_resize_uses_its_interpolation(dvpp):
    y, u, v = _planes(64, 48)
    src = _nv12_input(dvpp, y, u, v)
    dst, ptr, n = _output(dvpp, 36, 20)
    roi = m.dvpp_create_roi_config(0, 47, 8, 39)
    assert m.dvpp_vpc_crop_resize_async(dvpp.channel, src, dst, roi, _resize_config(2), dvpp.stream) == 0
    assert dvpp.sync() == 0
    gy, _, gv = _read(dvpp, ptr, n, 36, 20)
    assert np.array_equal(gy, resize_ref(y[8:40, 0:48], 20, 36, 2))
    assert np.array_equal(gv, resize_ref(v[4:20, 0:24], 10, 18, 2))


def test_crop_and_paste_writes_only_the_paste_area(dvpp):
    y, u, v = _planes(64, 48)
    src = _nv12_input(dvpp, y, u, v)
    dst, ptr, n = _output(dvpp, 64, 64, fill=0x33)
    crop = m.dvpp_create_roi_config(0, 63, 0, 47)
    paste = m.dvpp_create_roi_config(16, 47, 8, 31)  # 32 x 24 at (16, 8)
    assert m.dvpp_vpc_crop_and_paste_async(dvpp.channel, src, dst, crop, paste, dvpp.stream) == 0
    assert dvpp.sync() == 0
    gy, gu, gv = _read(dvpp, ptr, n, 64, 64)
    assert np.array_equal(gy[8:32, 16:48], resize_ref(y, 24, 32, 0))
    assert np.array_equal(gu[4:16, 8:24], resize_ref(u, 12, 16, 0))
    outside = np.ones((64, 64), bool)
    outside[8:32, 16:48] = False
    assert (gy[outside] == 0x33).all()
    chroma_outside = np.ones((32, 32), bool)
    chroma_outside[4:16, 8:24] = False
    assert (gv[chroma_outside] == 0x33).all()


def test_crop_resize_paste_combines_crop_interpolation_and_paste(dvpp):
    y, u, v = _planes(64, 48)
    src = _nv12_input(dvpp, y, u, v)
    dst, ptr, n = _output(dvpp, 48, 48, fill=0)
    crop = m.dvpp_create_roi_config(16, 47, 16, 47)
    paste = m.dvpp_create_roi_config(2, 21, 30, 45)  # 20 x 16 at (2, 30)
    assert m.dvpp_vpc_crop_resize_paste_async(dvpp.channel, src, dst, crop, paste, _resize_config(3),
                                              dvpp.stream) == 0
    assert dvpp.sync() == 0
    gy, _, _ = _read(dvpp, ptr, n, 48, 48)
    assert np.array_equal(gy[30:46, 2:22], resize_ref(y[16:48, 16:48], 16, 20, 3))


# ---------------------------------------------------------------- other input formats
def _rgb_to_yuv(rgb):
    return [np.clip(np.floor(p + 0.5), 0, 255) for p in np.moveaxis(ycbcr(rgb), -1, 0)]


@pytest.mark.parametrize("fmt,order", [(RGB888, "RGB"), (BGR888, "BGR"), (ARGB, "ARGB"), (ABGR, "ABGR"),
                                       (RGBA, "RGBA"), (BGRA, "BGRA")])
def test_rgb_inputs_are_converted_with_bt601_full_range(dvpp, fmt, order):
    rgb = gradient_rgb(32, 16)
    channels = {"R": rgb[..., 0], "G": rgb[..., 1], "B": rgb[..., 2], "A": np.full((16, 32), 7, np.uint8)}
    packed = np.stack([channels[c] for c in order], -1)
    src = _packed_input(dvpp, fmt, packed, len(order))
    dst, ptr, n = _output(dvpp, 32, 16)
    assert m.dvpp_vpc_resize_async(dvpp.channel, src, dst, _resize_config(0), dvpp.stream) == 0
    assert dvpp.sync() == 0
    gy, gu, gv = _read(dvpp, ptr, n, 32, 16)
    ry, ru, rv = _rgb_to_yuv(rgb)
    assert np.abs(gy - ry).max() <= 1
    assert np.abs(gu - np.floor(box(ru, 2, 2) + 0.5)).max() <= 1
    assert np.abs(gv - np.floor(box(rv, 2, 2) + 0.5)).max() <= 1


@pytest.mark.parametrize("fmt,order", [(YUYV, "YUYV"), (UYVY, "UYVY"), (YVYU, "YVYU"), (VYUY, "VYUY")])
def test_packed_422_inputs_are_unpacked(dvpp, fmt, order):
    rng = np.random.default_rng(5)
    y = rng.integers(0, 256, (16, 32), dtype=np.uint8)
    u = rng.integers(0, 256, (16, 16), dtype=np.uint8)
    v = rng.integers(0, 256, (16, 16), dtype=np.uint8)
    quad = {"Y": None, "U": u, "V": v}
    first, second = [i for i, c in enumerate(order) if c == "Y"]
    packed = np.empty((16, 16, 4), np.uint8)
    packed[..., first], packed[..., second] = y[:, 0::2], y[:, 1::2]
    packed[..., order.index("U")], packed[..., order.index("V")] = quad["U"], quad["V"]
    src = _packed_input(dvpp, fmt, packed.reshape(16, 32, 2), 2)
    dst, ptr, n = _output(dvpp, 32, 16)
    assert m.dvpp_vpc_resize_async(dvpp.channel, src, dst, _resize_config(0), dvpp.stream) == 0
    assert dvpp.sync() == 0
    gy, gu, gv = _read(dvpp, ptr, n, 32, 16)
    assert np.array_equal(gy, y)
    assert np.array_equal(gu, resize_ref(u, 8, 16, 0)) and np.array_equal(gv, resize_ref(v, 8, 16, 0))


@pytest.mark.parametrize("fmt,sub,vu", [(YUV422SP, (2, 1), False), (YVU422SP, (2, 1), True),
                                        (YUV444SP, (1, 1), False)])
def test_semiplanar_422_and_444_inputs_scale_chroma_to_420(dvpp, fmt, sub, vu):
    rng = np.random.default_rng(9)
    w, h = 32, 16
    y = rng.integers(0, 256, (h, w), dtype=np.uint8)
    u = rng.integers(0, 256, (h // sub[1], w // sub[0]), dtype=np.uint8)
    v = rng.integers(0, 256, (h // sub[1], w // sub[0]), dtype=np.uint8)
    pitch = w * 2 // sub[0]
    chroma = np.empty((h // sub[1], pitch), np.uint8)
    chroma[:, 0::2], chroma[:, 1::2] = (v, u) if vu else (u, v)
    ptr, n = dvpp.upload(np.concatenate([y.ravel(), chroma.ravel()]))
    src, _, _ = dvpp.pic(fmt, w, h, w, h, data=ptr, size=n)
    dst, optr, on = _output(dvpp, w, h)
    assert m.dvpp_vpc_resize_async(dvpp.channel, src, dst, _resize_config(1), dvpp.stream) == 0
    assert dvpp.sync() == 0
    gy, gu, gv = _read(dvpp, optr, on, w, h)
    assert np.array_equal(gy, y)
    assert np.array_equal(gu, resize_ref(u, h // 2, w // 2, 1)) and np.array_equal(gv, resize_ref(v, h // 2, w // 2, 1))


def test_a_yuv400_input_gets_neutral_chroma(dvpp):
    y = np.arange(32 * 16, dtype=np.uint8).reshape(16, 32)
    ptr, n = dvpp.upload(y.ravel())
    src, _, _ = dvpp.pic(YUV400, 32, 16, 32, 16, data=ptr, size=n)
    dst, optr, on = _output(dvpp, 32, 16)
    assert m.dvpp_vpc_resize_async(dvpp.channel, src, dst, _resize_config(0), dvpp.stream) == 0
    assert dvpp.sync() == 0
    gy, gu, gv = _read(dvpp, optr, on, 32, 16)
    assert np.array_equal(gy, y) and (gu == 128).all() and (gv == 128).all()


def test_the_channel_csc_matrix_picks_the_conversion(dvpp):
    rgb = gradient_rgb(32, 16)
    src = _packed_input(dvpp, RGB888, rgb, 3)
    channel, ret = m.dvpp_set_channel_desc_param(dvpp.channel, 0, 3)  # BT.709 narrow
    assert (channel, ret) == (dvpp.channel, 0)
    dst, ptr, n = _output(dvpp, 32, 16)
    assert m.dvpp_vpc_resize_async(dvpp.channel, src, dst, _resize_config(0), dvpp.stream) == 0
    assert dvpp.sync() == 0
    gy, _, _ = _read(dvpp, ptr, n, 32, 16)
    r, g, b = (rgb[..., i].astype(np.float64) for i in range(3))
    ref = 16 + (0.2126 * r + 0.7152 * g + 0.0722 * b) * 219 / 255
    assert np.abs(gy - np.floor(ref + 0.5)).max() <= 1


# ---------------------------------------------------------------- convert colour
def test_convert_color_nv12_to_rgb_uses_the_inverse_matrix(dvpp):
    y, u, v = _planes(32, 16, seed=3)
    src = _nv12_input(dvpp, y, u, v)
    dst = m.dvpp_create_pic_desc()
    buf = dvpp.alloc(align(32 * 3, 16) * 16)
    for field, value in (("data", buf), ("size", align(32 * 3, 16) * 16), ("format", RGB888)):
        getattr(m, f"dvpp_set_pic_desc_{field}")(dst, value)
    assert m.dvpp_vpc_convert_color_async(dvpp.channel, src, dst, dvpp.stream) == 0
    assert dvpp.sync() == 0
    # the output's geometry (left 0) is filled in from the input
    assert (m.dvpp_get_pic_desc_width(dst), m.dvpp_get_pic_desc_height(dst)) == (32, 16)
    assert (m.dvpp_get_pic_desc_width_stride(dst), m.dvpp_get_pic_desc_height_stride(dst)) == (96, 16)
    rgb = dvpp.download(buf, 96 * 16).reshape(16, 32, 3)
    yf = y.astype(np.float64)
    uf = np.repeat(np.repeat(u, 2, 0), 2, 1).astype(np.float64) - 128
    vf = np.repeat(np.repeat(v, 2, 0), 2, 1).astype(np.float64) - 128
    ref = np.stack([yf + 1.402 * vf, yf - 0.344136 * uf - 0.714136 * vf, yf + 1.772 * uf], -1)
    assert np.abs(rgb - np.clip(np.floor(ref + 0.5), 0, 255)).max() <= 1


def test_convert_color_to_yuv400_keeps_the_luma(dvpp):
    y, u, v = _planes(32, 16)
    src = _nv12_input(dvpp, y, u, v)
    dst, ptr, n = dvpp.pic(YUV400, 32, 16)
    assert m.dvpp_vpc_convert_color_async(dvpp.channel, src, dst, dvpp.stream) == 0
    assert dvpp.sync() == 0
    assert np.array_equal(dvpp.download(ptr, n).reshape(16, 32), y)


def test_convert_color_to_packed_yuv444_upsamples_chroma(dvpp):
    y, u, v = _planes(32, 16)
    src = _nv12_input(dvpp, y, u, v)
    dst, ptr, n = dvpp.pic(YUV444PACKED, 32, 16)
    assert m.dvpp_vpc_convert_color_async(dvpp.channel, src, dst, dvpp.stream) == 0
    assert dvpp.sync() == 0
    px = dvpp.download(ptr, n).reshape(16, 96).reshape(16, 32, 3)
    assert np.array_equal(px[..., 0], y) and np.array_equal(px[..., 1], np.repeat(np.repeat(u, 2, 0), 2, 1))


# ---------------------------------------------------------------- borders, pyramid
def _border(kind, top, bottom, left, right, values=(0, 0, 0, 0)):
    cfg = m.dvpp_create_border_config()
    assert m.dvpp_set_border_config_border_type(cfg, kind) == 0
    for side, value in (("top", top), ("bottom", bottom), ("left", left), ("right", right)):
        assert getattr(m, f"dvpp_set_border_config_{side}")(cfg, value) == 0
    for i, value in enumerate(values):
        assert m.dvpp_set_border_config_value(cfg, i, float(value)) == 0
    return cfg


@pytest.mark.parametrize("kind,mode", [(1, "edge"), (2, "symmetric"), (3, "reflect")])
def test_make_border_pads_like_the_border_type(dvpp, kind, mode):
    y, u, v = _planes(32, 16)
    src = _nv12_input(dvpp, y, u, v)
    dst, ptr, n = _output(dvpp, 32 + 4 + 8, 16 + 2 + 6)
    assert m.dvpp_vpc_make_border_async(dvpp.channel, src, dst, _border(kind, 2, 6, 4, 8), dvpp.stream) == 0
    assert dvpp.sync() == 0
    gy, gu, _ = _read(dvpp, ptr, n, 44, 24)
    assert np.array_equal(gy, np.pad(y, ((2, 6), (4, 8)), mode=mode))
    assert np.array_equal(gu, np.pad(u, ((1, 3), (2, 4)), mode=mode))


def test_make_border_constant_uses_the_values_per_component(dvpp):
    y, u, v = _planes(32, 16)
    src = _nv12_input(dvpp, y, u, v)
    dst, ptr, n = _output(dvpp, 36, 20)
    assert m.dvpp_vpc_make_border_async(dvpp.channel, src, dst, _border(0, 2, 2, 2, 2, (16, 100, 200, 0)),
                                        dvpp.stream) == 0
    assert dvpp.sync() == 0
    gy, gu, gv = _read(dvpp, ptr, n, 36, 20)
    assert np.array_equal(gy, np.pad(y, 2, constant_values=16))
    assert np.array_equal(gu, np.pad(u, 1, constant_values=100))
    assert np.array_equal(gv, np.pad(v, 1, constant_values=200))


def test_pyr_down_is_the_gaussian_5x5_step(dvpp):
    rng = np.random.default_rng(2)
    y = rng.integers(0, 256, (20, 32), dtype=np.uint8)
    ptr, n = dvpp.upload(y.ravel())
    src, _, _ = dvpp.pic(YUV400, 32, 20, 32, 20, data=ptr, size=n)
    dst, optr, on = dvpp.pic(YUV400, 16, 10, ws=32)  # the smallest width stride is 32
    assert m.dvpp_vpc_pyr_down_async(dvpp.channel, src, dst, 0, dvpp.stream) == 0
    assert dvpp.sync() == 0
    k = np.array([1, 4, 6, 4, 1])
    p = np.pad(y.astype(np.int64), 2, mode="reflect")
    ref = np.empty((10, 16), np.int64)
    for r in range(10):
        for c in range(16):
            ref[r, c] = (k[:, None] * k[None, :] * p[2 * r:2 * r + 5, 2 * c:2 * c + 5]).sum()
    got = dvpp.download(optr, on).reshape(10, 32)[:, :16]
    assert np.array_equal(got, (ref + 128) >> 8)


# ---------------------------------------------------------------- batches
def _batch(dvpp, pictures):
    """A batch description whose pictures are configured by `pictures`: (fmt, w, h, data, size) tuples."""
    batch = m.dvpp_create_batch_pic_desc(len(pictures))
    for i, (fmt, w, h, data, size) in enumerate(pictures):
        desc = m.dvpp_get_pic_desc(batch, i)
        for field, value in (("data", data), ("size", size), ("format", fmt), ("width", w), ("height", h),
                             ("width_stride", align(w, 16)), ("height_stride", align(h, 2))):
            assert getattr(m, f"dvpp_set_pic_desc_{field}")(desc, value) == 0
    return batch


def _batch_setup(dvpp, outputs=3):
    sources = [_planes(48, 32, seed=s) for s in (11, 12)]
    src_items = []
    for y, u, v in sources:
        buf = np.zeros(48 * 32 * 3 // 2, np.uint8)
        put_nv12(buf, y, u, v, 48, 32)
        ptr, n = dvpp.upload(buf)
        src_items.append((NV12, 48, 32, ptr, n))
    out_items = []
    for _ in range(outputs):
        n = 32 * 16 * 3 // 2
        ptr = dvpp.alloc(n)
        acl.rt.memset(ptr, n, 0, n)
        out_items.append((NV12, 32, 16, ptr, n))
    return sources, _batch(dvpp, src_items), _batch(dvpp, out_items), out_items


def test_batch_crop_sends_each_roi_to_the_next_output_picture(dvpp):
    sources, src, dst, outs = _batch_setup(dvpp)
    rois = [m.dvpp_create_roi_config(0, 31, 0, 15), m.dvpp_create_roi_config(16, 47, 16, 31),
            m.dvpp_create_roi_config(8, 39, 8, 23)]
    assert m.dvpp_vpc_batch_crop_async(dvpp.channel, src, [2, 1], dst, rois, dvpp.stream) == (dst, 0)
    assert dvpp.sync() == 0
    expect = [sources[0][0][0:16, 0:32], sources[0][0][16:32, 16:48], sources[1][0][8:24, 8:40]]
    for (_, w, h, ptr, n), ref in zip(outs, expect):
        assert np.array_equal(_read(dvpp, ptr, n, w, h)[0], ref)
    assert all(m.dvpp_get_pic_desc_ret_code(m.dvpp_get_pic_desc(dst, i)) == 0 for i in range(3))


def test_batch_crop_resize_scales_with_the_interpolation(dvpp):
    sources, src, dst, outs = _batch_setup(dvpp, 2)
    rois = [m.dvpp_create_roi_config(0, 47, 0, 31), m.dvpp_create_roi_config(0, 23, 0, 11)]
    assert m.dvpp_vpc_batch_crop_resize_async(dvpp.channel, src, [1, 1], dst, rois, _resize_config(2),
                                              dvpp.stream) == 0
    assert dvpp.sync() == 0
    assert np.array_equal(_read(dvpp, outs[0][3], outs[0][4], 32, 16)[0], resize_ref(sources[0][0], 16, 32, 2))
    assert np.array_equal(_read(dvpp, outs[1][3], outs[1][4], 32, 16)[0],
                          resize_ref(sources[1][0][0:12, 0:24], 16, 32, 2))


def test_batch_crop_and_paste_places_each_crop_in_its_paste_area(dvpp):
    sources, src, dst, outs = _batch_setup(dvpp, 2)
    crops = [m.dvpp_create_roi_config(0, 47, 0, 31), m.dvpp_create_roi_config(0, 47, 0, 31)]
    pastes = [m.dvpp_create_roi_config(0, 15, 0, 11), m.dvpp_create_roi_config(16, 31, 4, 15)]
    assert m.dvpp_vpc_batch_crop_and_paste_async(dvpp.channel, src, [1, 1], dst, crops, pastes,
                                                 dvpp.stream) == (dst, 0)
    assert dvpp.sync() == 0
    y0 = _read(dvpp, outs[0][3], outs[0][4], 32, 16)[0]
    y1 = _read(dvpp, outs[1][3], outs[1][4], 32, 16)[0]
    assert np.array_equal(y0[0:12, 0:16], resize_ref(sources[0][0], 12, 16, 0)) and (y0[:, 16:] == 0).all()
    assert np.array_equal(y1[4:16, 16:32], resize_ref(sources[1][0], 12, 16, 0)) and (y1[:4] == 0).all()


def test_batch_crop_resize_paste_uses_paste_areas_and_interpolation(dvpp):
    sources, src, dst, outs = _batch_setup(dvpp, 1)
    crop = [m.dvpp_create_roi_config(0, 47, 0, 31)]
    paste = [m.dvpp_create_roi_config(2, 21, 2, 13)]
    assert m.dvpp_vpc_batch_crop_resize_paste_async(dvpp.channel, src, [1], dst, crop, paste, _resize_config(4),
                                                    dvpp.stream) == 0
    assert dvpp.sync() == 0
    y0 = _read(dvpp, outs[0][3], outs[0][4], 32, 16)[0]
    assert np.array_equal(y0[2:14, 2:22], resize_ref(sources[0][0], 12, 20, 4))


def test_batch_crop_resize_make_border_frames_each_scaled_crop(dvpp):
    sources, src, dst, outs = _batch_setup(dvpp, 1)
    crop = [m.dvpp_create_roi_config(0, 47, 0, 31)]
    border = [_border(0, 2, 2, 4, 4, (50, 60, 70, 0))]
    assert m.dvpp_vpc_batch_crop_resize_make_border_async(dvpp.channel, src, [1], dst, crop, border,
                                                          _resize_config(1), dvpp.stream) == 0
    assert dvpp.sync() == 0
    y0, u0, _ = _read(dvpp, outs[0][3], outs[0][4], 32, 16)
    assert np.array_equal(y0, np.pad(resize_ref(sources[0][0], 12, 24, 1), ((2, 2), (4, 4)), constant_values=50))
    assert (u0[0] == 60).all()
