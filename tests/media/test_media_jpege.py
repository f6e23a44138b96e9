"""JPEGE through acl.media: the size prediction formula, encoding (decoded again with
Pillow and compared with the input planes: within 4 per sample at level 100, mean below
1), the size written back through the host pointer, and the input rules."""
from __future__ import annotations

import io

import numpy as np
import pytest
from media_kit import NV12, NV21, UYVY, YUYV, Dvpp, addr_of, align, box, gradient_rgb, put_nv12, ycbcr
from PIL import Image

import npurt.acl as acl

m = acl.media
OK, INVALID, FORMAT = 0, 100000, 100027
MIB2 = 2 * 1024 * 1024


@pytest.fixture
def dvpp(fresh_runtime):
    return Dvpp()


def _nv12_picture(dvpp, w, h, fmt=NV12, hs=None):
    rgb = gradient_rgb(w, h, noise=3)
    ycc = np.clip(np.floor(ycbcr(rgb) + 0.5), 0, 255).astype(np.uint8)
    y = ycc[..., 0]
    u = ycc[::2, ::2, 1]
    v = ycc[::2, ::2, 2]
    ws, hs = align(w, 16), hs or align(h, 2)
    buf = np.zeros(ws * hs * 3 // 2, np.uint8)
    put_nv12(buf, y, u, v, ws, hs, vu=fmt == NV21)
    ptr, n = dvpp.upload(buf)
    desc, _, _ = dvpp.pic(fmt, w, h, ws, hs, data=ptr, size=n)
    return desc, (y, u, v)


def _config(level):
    cfg = m.dvpp_create_jpege_config()
    assert m.dvpp_set_jpege_config_level(cfg, level) == OK
    return cfg


def _encode(dvpp, desc, level=100):
    cfg = _config(level)
    size, ret = m.dvpp_jpeg_predict_enc_size(desc, cfg)
    assert ret == OK, acl.get_recent_err_msg()
    out = dvpp.alloc(size)
    size_box = np.array([size], dtype=np.int32)
    ret = m.dvpp_jpeg_encode_async(dvpp.channel, desc, out, addr_of(size_box), cfg, dvpp.stream)
    assert ret == OK, acl.get_recent_err_msg()
    assert dvpp.sync() == OK
    return bytes(dvpp.download(out, int(size_box[0]))), size


def test_predict_enc_size_is_picture_bytes_plus_768_rounded_up_to_2_mib(dvpp):
    desc, _ = _nv12_picture(dvpp, 64, 48)
    assert m.dvpp_jpeg_predict_enc_size(desc, _config(100)) == (MIB2, OK)
    big = m.dvpp_create_pic_desc()
    for field, value in (("format", NV12), ("width", 1920), ("height", 1080), ("width_stride", 1920),
                         ("height_stride", 1088)):
        getattr(m, f"dvpp_set_pic_desc_{field}")(big, value)
    expected = align(1920 * 1088 * 3 // 2 + 640 + 128, MIB2)
    assert m.dvpp_jpeg_predict_enc_size(big, _config(100)) == (expected, OK)


def test_encode_writes_a_jpeg_of_the_picture_and_its_size(dvpp):
    desc, (y, u, v) = _nv12_picture(dvpp, 96, 64)
    data, capacity = _encode(dvpp, desc)
    assert data[:2] == b"\xff\xd8" and data[-2:] == b"\xff\xd9" and len(data) < capacity
    im = Image.open(io.BytesIO(data))
    assert im.size == (96, 64)
    im.draft("YCbCr", im.size)
    got = np.asarray(im).astype(int)
    d = np.abs(got[..., 0] - y)
    assert d.max() <= 4 and d.mean() < 1
    du = np.abs(box(got[..., 1], 2, 2) - u)  # libjpeg upsamples chroma: compare block means
    assert du.max() <= 4 and du.mean() < 1
    assert m.dvpp_get_pic_desc_ret_code(desc) == OK


def test_encode_keeps_420_subsampling(dvpp):
    desc, _ = _nv12_picture(dvpp, 64, 48)
    data, _ = _encode(dvpp, desc)
    arr = np.frombuffer(data, np.uint8).copy()
    assert m.dvpp_jpeg_get_image_info_v2(addr_of(arr), arr.size)[3] == 2


def test_encode_of_nv21_reads_v_before_u(dvpp):
    a, _ = _nv12_picture(dvpp, 64, 48, NV12)
    b, _ = _nv12_picture(dvpp, 64, 48, NV21)
    assert _encode(dvpp, a)[0] == _encode(dvpp, b)[0]


def test_a_lower_level_gives_a_smaller_jpeg(dvpp):
    desc, _ = _nv12_picture(dvpp, 96, 64)
    assert len(_encode(dvpp, desc, 20)[0]) < len(_encode(dvpp, desc, 95)[0])
    assert _encode(dvpp, desc, 0)[0] == _encode(dvpp, desc, 100)[0]  # level 0 encodes as 100


@pytest.mark.parametrize("fmt", [YUYV, UYVY])
def test_encode_of_packed_422_keeps_422_subsampling(dvpp, fmt):
    w, h = 64, 32
    rng = np.random.default_rng(4)
    packed = rng.integers(60, 200, (h, w * 2), dtype=np.uint8)
    ptr, n = dvpp.upload(packed.ravel())
    desc, _, _ = dvpp.pic(fmt, w, h, w * 2, h, data=ptr, size=n)
    data, _ = _encode(dvpp, desc)
    arr = np.frombuffer(data, np.uint8).copy()
    assert m.dvpp_jpeg_get_image_info_v2(addr_of(arr), arr.size)[:4] == (64, 32, 3, 1)


@pytest.mark.parametrize("fields,code", [
    (dict(width=31), INVALID), (dict(height=8200, height_stride=8208), INVALID),
    (dict(format=12), FORMAT), (dict(width_stride=72), INVALID), (dict(width_stride=48), INVALID),
    (dict(height_stride=50), INVALID), (dict(height_stride=64), OK)])
def test_predict_enc_size_rules(dvpp, fields, code):
    desc, _ = _nv12_picture(dvpp, 64, 48)
    for field, value in fields.items():
        getattr(m, f"dvpp_set_pic_desc_{field}")(desc, value)
    assert m.dvpp_jpeg_predict_enc_size(desc, _config(100))[1] == code


def test_packed_422_width_stride_must_be_exactly_twice_the_width_aligned(dvpp):
    desc, _, _ = dvpp.pic(YUYV, 64, 32, 144, 32)
    assert m.dvpp_jpeg_predict_enc_size(desc, _config(100))[1] == INVALID


def test_encode_refuses_a_zero_buffer_size_a_level_above_100_and_a_null_config(dvpp):
    desc, _ = _nv12_picture(dvpp, 64, 48)
    out = dvpp.alloc(MIB2)
    zero = np.array([0], dtype=np.int32)
    cfg = _config(100)
    assert m.dvpp_jpeg_encode_async(dvpp.channel, desc, out, addr_of(zero), cfg, dvpp.stream) == INVALID
    size_box = np.array([MIB2], dtype=np.int32)
    assert m.dvpp_jpeg_encode_async(dvpp.channel, desc, out, addr_of(size_box), _config(101),
                                    dvpp.stream) == INVALID
    assert m.dvpp_jpeg_encode_async(dvpp.channel, desc, out, addr_of(size_box), 0,
                                    dvpp.stream) == INVALID
    assert m.dvpp_jpeg_encode_async(dvpp.channel, desc, out, 0, cfg, dvpp.stream) == INVALID


def test_encode_into_a_too_small_buffer_fails_at_synchronize(dvpp):
    desc, _ = _nv12_picture(dvpp, 96, 64)
    out = dvpp.alloc(256)
    size_box = np.array([256], dtype=np.int32)
    ret = m.dvpp_jpeg_encode_async(dvpp.channel, desc, out, addr_of(size_box), _config(100),
                                   dvpp.stream)
    assert ret == OK
    assert dvpp.sync() == INVALID
    assert m.dvpp_get_pic_desc_ret_code(desc) == INVALID
    assert size_box[0] == 256  # untouched


def test_the_output_buffer_must_be_dvpp_memory_of_the_given_size(dvpp):
    desc, _ = _nv12_picture(dvpp, 64, 48)
    out = dvpp.alloc(1000)
    size_box = np.array([MIB2], dtype=np.int32)  # claims more than the buffer holds
    assert m.dvpp_jpeg_encode_async(dvpp.channel, desc, out, addr_of(size_box), _config(100),
                                    dvpp.stream) == INVALID
    assert "past the end" in acl.get_recent_err_msg()
