"""PNGD through acl.media: header information, size prediction and decoding (compared
exactly with Pillow's decode: PNG is lossless)."""
from __future__ import annotations

import numpy as np
import pytest
from media_kit import RGB888, RGBA, UNKNOWN, Dvpp, addr_of, align, gradient_rgb, png

import npurt.acl as acl

m = acl.media
OK, INVALID, FORMAT = 0, 100000, 100027


@pytest.fixture
def dvpp(fresh_runtime):
    return Dvpp()


def _host(data: bytes):
    arr = np.frombuffer(data, np.uint8).copy()
    return arr, addr_of(arr)


def _palette_png(w=40, h=36) -> bytes:
    from PIL import Image
    im = Image.fromarray(gradient_rgb(w, h)).convert("P")
    import io
    buf = io.BytesIO()
    im.save(buf, "PNG")
    return buf.getvalue()


# ---------------------------------------------------------------- header information
@pytest.mark.parametrize("arr,mode,components", [
    (gradient_rgb(40, 36)[..., 0], "L", 1), (np.dstack([gradient_rgb(40, 36)[..., 0]] * 2), "LA", 2),
    (gradient_rgb(40, 36), "RGB", 3), (np.dstack([gradient_rgb(40, 36), gradient_rgb(40, 36)[..., :1]]), "RGBA", 4)])
def test_image_info_counts_components_by_colour_type(arr, mode, components):
    data, ptr = _host(png(arr, mode))
    assert m.dvpp_png_get_image_info(ptr, data.size) == (40, 36, components, OK)


def test_image_info_of_a_palette_png_gives_the_size_and_format_not_match():
    data, ptr = _host(_palette_png())
    assert m.dvpp_png_get_image_info(ptr, data.size) == (40, 36, 0, FORMAT)


def test_image_info_needs_more_than_29_bytes_and_the_signature():
    data, ptr = _host(png(gradient_rgb(40, 36)))
    assert m.dvpp_png_get_image_info(ptr, 29) == (0, 0, 0, INVALID)
    bad, bad_ptr = _host(b"\x89PNX" + bytes(60))
    assert m.dvpp_png_get_image_info(bad_ptr, bad.size) == (0, 0, 0, INVALID)


# ---------------------------------------------------------------- size prediction
@pytest.mark.parametrize("fmt,samples", [(RGB888, 3), (RGBA, 4), (UNKNOWN, 4)])
def test_predict_dec_size_aligns_to_128_by_16_and_counts_samples(fmt, samples):
    data, ptr = _host(png(gradient_rgb(100, 50)))
    assert m.dvpp_png_predict_dec_size(ptr, data.size, fmt) == (128 * samples * 64, OK)


def test_predict_dec_size_counts_16_bit_samples():
    deep = (gradient_rgb(40, 36).astype(np.uint16) * 257)
    data, ptr = _host(png(deep[..., 0]))
    assert m.dvpp_png_predict_dec_size(ptr, data.size, RGB888) == (128 * 6 * 48, OK)


def test_predict_dec_size_takes_rgb_rgba_or_unknown_only():
    data, ptr = _host(png(gradient_rgb(40, 36)))
    assert m.dvpp_png_predict_dec_size(ptr, data.size, 1) == (0, FORMAT)


@pytest.mark.parametrize("w,h,ok", [(32, 32, True), (31, 40, False), (40, 4097, False)])
def test_predict_dec_size_accepts_32_to_4096_pixels(w, h, ok):
    data, ptr = _host(png(np.zeros((h, w), np.uint8), "L"))
    assert (m.dvpp_png_predict_dec_size(ptr, data.size, RGB888)[1] == OK) == ok


# ---------------------------------------------------------------- decoding
def _decode(dvpp, data: bytes, fmt: int):
    arr, ptr = _host(data)
    size, ret = m.dvpp_png_predict_dec_size(ptr, arr.size, RGBA)
    assert ret == OK
    src, n = dvpp.upload(data)
    out = dvpp.alloc(size)
    desc = m.dvpp_create_pic_desc()
    for field, value in (("data", out), ("size", size), ("format", fmt)):
        getattr(m, f"dvpp_set_pic_desc_{field}")(desc, value)
    ret = m.dvpp_png_decode_async(dvpp.channel, src, n, desc, dvpp.stream)
    return ret, (dvpp.sync() if ret == OK else None), desc, dvpp.download(out, size)


def _pixels(raw, desc, channels):
    w, h = m.dvpp_get_pic_desc_width(desc), m.dvpp_get_pic_desc_height(desc)
    ws, hs = m.dvpp_get_pic_desc_width_stride(desc), m.dvpp_get_pic_desc_height_stride(desc)
    return raw[:ws * hs].reshape(hs, ws)[:h, :w * channels].reshape(h, w, channels)


def test_decode_rgb_png_to_rgb_888_is_exact(dvpp):
    rgb = gradient_rgb(50, 40)
    ret, sync, desc, raw = _decode(dvpp, png(rgb), RGB888)
    assert (ret, sync, m.dvpp_get_pic_desc_ret_code(desc)) == (OK, OK, OK)
    assert m.dvpp_get_pic_desc_width_stride(desc) == align(50, 128) * 3
    assert m.dvpp_get_pic_desc_height_stride(desc) == align(40, 16)
    assert np.array_equal(_pixels(raw, desc, 3), rgb)


def test_decode_rgba_png_with_unknown_format_keeps_alpha(dvpp):
    rgba = np.dstack([gradient_rgb(50, 40), np.arange(50 * 40, dtype=np.uint8).reshape(40, 50)])
    ret, sync, desc, raw = _decode(dvpp, png(rgba, "RGBA"), UNKNOWN)
    assert (ret, sync) == (OK, OK)
    assert m.dvpp_get_pic_desc_format(desc) == RGBA
    assert np.array_equal(_pixels(raw, desc, 4), rgba)


def test_decode_rgb_png_with_unknown_format_gives_rgb(dvpp):
    ret, sync, desc, _ = _decode(dvpp, png(gradient_rgb(40, 36)), UNKNOWN)
    assert (ret, sync, m.dvpp_get_pic_desc_format(desc)) == (OK, OK, RGB888)


def test_decode_grey_png_to_rgb_replicates_the_grey(dvpp):
    grey = gradient_rgb(40, 36)[..., 1]
    ret, sync, desc, raw = _decode(dvpp, png(grey, "L"), RGB888)
    assert (ret, sync) == (OK, OK)
    assert np.array_equal(_pixels(raw, desc, 3), np.dstack([grey] * 3))


def test_decode_16_bit_grey_keeps_the_high_byte(dvpp):
    deep = np.arange(40 * 36, dtype=np.uint16).reshape(36, 40) * 45
    ret, sync, desc, raw = _decode(dvpp, png(deep), RGB888)
    assert (ret, sync) == (OK, OK)
    assert np.array_equal(_pixels(raw, desc, 3)[..., 0], (deep >> 8).astype(np.uint8))


def test_decode_of_a_palette_png_fails_at_synchronize_with_format_not_match(dvpp):
    ret, sync, desc, _ = _decode(dvpp, _palette_png(), RGB888)
    assert ret == OK and sync == FORMAT
    assert m.dvpp_get_pic_desc_ret_code(desc) == FORMAT


def test_decode_output_must_be_rgb_888_or_unknown(dvpp):
    src, n = dvpp.upload(png(gradient_rgb(40, 36)))
    desc, _, _ = dvpp.pic(RGBA, 40, 36)
    assert m.dvpp_png_decode_async(dvpp.channel, src, n, desc, dvpp.stream) == FORMAT


def test_decode_needs_a_pngd_channel_mode(dvpp):
    cd = m.dvpp_create_channel_desc()
    m.dvpp_set_channel_desc_mode(cd, 7)
    m.dvpp_create_channel(cd)
    src, n = dvpp.upload(png(gradient_rgb(40, 36)))
    desc, _, _ = dvpp.pic(RGB888, 40, 36)
    assert m.dvpp_png_decode_async(cd, src, n, desc, dvpp.stream) == INVALID
    assert "PNGD" in acl.get_recent_err_msg()


# ---------------------------------------------------------------- hostile files (issue 29)
def _chunk(kind: bytes, body: bytes) -> bytes:
    import struct
    import zlib
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def _two_ihdr_png(declared=(64, 64), real=(3000, 3000)) -> bytes:
    """A grey PNG whose first IHDR declares `declared` and whose second one (which Pillow
    reads) and pixel data are `real`: a decompression bomb behind an innocent header."""
    import struct
    import zlib
    ihdr = lambda w, h: struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)  # noqa: E731 - 8-bit grey
    w, h = real
    raw = zlib.compress(bytes(h * (w + 1)), 9)  # filter byte 0 + zeros per row
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr(*declared)) + _chunk(b"IHDR", ihdr(w, h))
            + _chunk(b"IDAT", raw) + _chunk(b"IEND", b""))


def test_a_png_with_a_second_ihdr_is_refused_before_anything_is_decoded(dvpp, monkeypatch):
    from PIL import ImageFile
    loads = []
    load = ImageFile.ImageFile.load
    monkeypatch.setattr(ImageFile.ImageFile, "load", lambda self: loads.append(self.size) or load(self))
    data = _two_ihdr_png()
    assert len(data) < 20_000  # a small file ...
    ret, sync, desc, _ = _decode(dvpp, data, RGB888)  # ... whose header says 64 x 64
    assert ret == OK and sync == INVALID
    assert m.dvpp_get_pic_desc_ret_code(desc) == INVALID
    message = acl.get_recent_err_msg()
    assert "3000 x 3000" in message and "64 x 64" in message, message
    assert loads == [], f"Pillow decoded the {loads} picture"
    ret, sync, _, _ = _decode(dvpp, png(gradient_rgb(40, 36)), RGB888)  # the channel goes on
    assert (ret, sync) == (OK, OK)


def test_a_png_past_pillows_decompression_bomb_limit_is_refused(dvpp, monkeypatch):
    from PIL import Image
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)  # a 40 x 36 picture is past it
    ret, sync, desc, _ = _decode(dvpp, png(gradient_rgb(40, 36)), RGB888)
    assert ret == OK and sync == INVALID
    assert "decompression-bomb" in acl.get_recent_err_msg()
