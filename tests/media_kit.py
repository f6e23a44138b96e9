"""Shared tools of the media tests: a DVPP session through acl.media, test pictures made
with Pillow (and a tiny baseline JPEG encoder for samplings Pillow cannot write), and the
numpy references the results are compared with. The references are written from the
formulas, independently of npurt.media's code."""
from __future__ import annotations

import io
import struct

import numpy as np
from PIL import Image

import npurt.acl as acl

m = acl.media
NV12, NV21 = 1, 2
YUV400, YUV422SP, YVU422SP, YUV444SP, YVU444SP = 0, 3, 4, 5, 6
YUYV, UYVY, YVYU, VYUY, YUV444PACKED = 7, 8, 9, 10, 11
RGB888, BGR888, ARGB, ABGR, RGBA, BGRA = 12, 13, 14, 15, 16, 17
YVU440SP, UNKNOWN = 1001, 10000


def align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def addr_of(arr: np.ndarray) -> int:
    """The host address of an array's data (acl.util.numpy_to_ptr without its deprecation
    warning)."""
    return arr.ctypes.data


class Dvpp:
    """acl initialized with device 0 current, a stream and an open DVPP channel."""

    def __init__(self):
        assert acl.init() == 0
        assert acl.rt.set_device(0) == 0
        self.stream, ret = acl.rt.create_stream()
        assert ret == 0
        self.channel = m.dvpp_create_channel_desc()
        assert m.dvpp_create_channel(self.channel) == 0

    def sync(self) -> int:
        return acl.rt.synchronize_stream(self.stream)

    def alloc(self, n: int) -> int:
        ptr, ret = m.dvpp_malloc(n)
        assert ret == 0, acl.get_recent_err_msg()
        return ptr

    def upload(self, data) -> tuple[int, int]:
        """(DVPP address, bytes) of a copy of `data` (bytes or a uint8 array)."""
        arr = np.frombuffer(bytes(data), np.uint8) if not isinstance(data, np.ndarray) else data
        arr = np.ascontiguousarray(arr)
        ptr = self.alloc(arr.nbytes)
        assert acl.rt.memcpy(ptr, arr.nbytes, addr_of(arr), arr.nbytes, 1) == 0
        return ptr, arr.nbytes

    def download(self, ptr: int, n: int) -> np.ndarray:
        out = np.empty(n, np.uint8)
        assert acl.rt.memcpy(addr_of(out), n, ptr, n, 2) == 0, acl.get_recent_err_msg()
        return out

    def pic(self, fmt: int, w: int, h: int, ws: int | None = None, hs: int | None = None, data: int | None = None,
            size: int | None = None, fill: int | None = None) -> tuple[int, int, int]:
        """(pic desc, DVPP address, buffer size) of a picture with DVPP's strides by default."""
        bpp = {YUYV: 2, UYVY: 2, YVYU: 2, VYUY: 2, YUV444PACKED: 3, RGB888: 3, BGR888: 3,
               ARGB: 4, ABGR: 4, RGBA: 4, BGRA: 4}.get(fmt, 1)
        ws = align(w * bpp, 16) if ws is None else ws
        hs = align(h, 2) if hs is None else hs
        factor = {NV12: 1.5, NV21: 1.5, YUV422SP: 2, YVU422SP: 2, YUV444SP: 3, YVU444SP: 3, YVU440SP: 2}.get(fmt, 1)
        n = int(ws * hs * factor) if size is None else size
        if data is None:
            data = self.alloc(max(n, 1))
            if fill is not None:
                assert acl.rt.memset(data, n, fill, n) == 0
        desc = m.dvpp_create_pic_desc()
        for field, value in (("data", data), ("size", n), ("format", fmt), ("width", w), ("height", h),
                             ("width_stride", ws), ("height_stride", hs)):
            assert getattr(m, f"dvpp_set_pic_desc_{field}")(desc, value) == 0
        return desc, data, n


# ---------------------------------------------------------------- pictures
def gradient_rgb(w: int, h: int, seed: int = 0, noise: int = 12) -> np.ndarray:
    """A smooth colour picture with a little noise (JPEG-friendly, not saturated)."""
    y, x = np.mgrid[0:h, 0:w]
    rgb = np.stack([40 + x * 170 // max(w - 1, 1), 40 + y * 170 // max(h - 1, 1),
                    200 - (x + y) * 150 // max(w + h - 2, 1)], -1)
    rng = np.random.default_rng(seed)
    return np.clip(rgb + rng.integers(-noise, noise + 1, rgb.shape), 0, 255).astype(np.uint8)


def jpeg(rgb: np.ndarray, subsampling: str = "4:2:0", quality: int = 95, **save) -> bytes:
    buf = io.BytesIO()
    mode = "L" if rgb.ndim == 2 else "RGB"
    Image.fromarray(rgb, mode).save(buf, "JPEG", quality=quality, subsampling=subsampling, **save)
    return buf.getvalue()


def png(arr: np.ndarray, mode: str | None = None, **save) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(arr, mode).save(buf, "PNG", **save)
    return buf.getvalue()


def exif_orientation(value: int) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = value
    return exif.tobytes()


# ---------------------------------------------------------------- references
def ycbcr(rgb: np.ndarray) -> np.ndarray:
    """JFIF (BT.601 full range) YCbCr of an RGB array, float64."""
    r, g, b = (rgb[..., i].astype(np.float64) for i in range(3))
    y = 0.299 * r + 0.587 * g + 0.114 * b
    return np.stack([y, (b - y) / 1.772 + 128, (r - y) / 1.402 + 128], -1)


def box(plane: np.ndarray, fx: int, fy: int) -> np.ndarray:
    h, w = plane.shape[0] // fy * fy, plane.shape[1] // fx * fx
    return plane[:h, :w].reshape(h // fy, fy, w // fx, fx).mean(axis=(1, 3))


def semiplanar(buf: np.ndarray, w: int, h: int, ws: int, hs: int, sub=(2, 2), vu=False):
    """(Y, U, V) of a semi-planar picture in raw bytes."""
    y = buf[:ws * hs].reshape(hs, ws)[:h, :w]
    cw, ch = w // sub[0], h // sub[1]
    pitch = ws * 2 // sub[0]
    c = buf[ws * hs:ws * hs + pitch * (hs // sub[1])].reshape(hs // sub[1], pitch)[:ch, :2 * cw]
    a, b = c[:, 0::2], c[:, 1::2]
    return (y, b, a) if vu else (y, a, b)


def put_nv12(buf: np.ndarray, y, u, v, ws: int, hs: int, vu=False) -> None:
    h, w = y.shape
    buf[:ws * hs].reshape(hs, ws)[:h, :w] = y
    c = buf[ws * hs:ws * hs * 3 // 2].reshape(hs // 2, ws)[:h // 2, :w]
    c[:, 0::2], c[:, 1::2] = (v, u) if vu else (u, v)


def resize_ref(plane: np.ndarray, oh: int, ow: int, interpolation: int) -> np.ndarray:
    """Per-pixel reference of the documented interpolations (bilinear with 11-bit weights)."""
    ih, iw = plane.shape
    out = np.empty((oh, ow), np.uint8)
    p = plane.astype(np.int64)
    for dy in range(oh):
        for dx in range(ow):
            if interpolation in (2, 4):
                out[dy, dx] = plane[min(dy * ih // oh, ih - 1), min(dx * iw // ow, iw - 1)]
                continue
            if interpolation in (0, 1):
                sy, sx = (dy + 0.5) * ih / oh - 0.5, (dx + 0.5) * iw / ow - 0.5
            else:
                sy, sx = dy * ih / oh, dx * iw / ow
            sy, sx = min(max(sy, 0.0), ih - 1), min(max(sx, 0.0), iw - 1)
            y0, x0 = int(np.floor(sy)), int(np.floor(sx))
            y1, x1 = min(y0 + 1, ih - 1), min(x0 + 1, iw - 1)
            wy, wx = int(np.floor((sy - y0) * 2048 + 0.5)), int(np.floor((sx - x0) * 2048 + 0.5))
            total = ((2048 - wy) * ((2048 - wx) * p[y0, x0] + wx * p[y0, x1])
                     + wy * ((2048 - wx) * p[y1, x0] + wx * p[y1, x1]))
            out[dy, dx] = (total + (1 << 21)) >> 22
    return out


# ---------------------------------------------------------------- a tiny baseline JPEG encoder
def _dct_matrix() -> np.ndarray:
    c = np.array([[np.cos((2 * x + 1) * u * np.pi / 16) for x in range(8)] for u in range(8)])
    c[0] /= np.sqrt(2)
    return c / 2


_DCT = _dct_matrix()
_ZIGZAG = sorted(((u, v) for u in range(8) for v in range(8)),
                 key=lambda t: (t[0] + t[1], t[1] if (t[0] + t[1]) % 2 == 0 else t[0]))
_AC_SYMBOLS = [0x00, 0xF0] + [(r << 4) | s for r in range(16) for s in range(1, 11)]
_AC_CODE = {sym: i for i, sym in enumerate(_AC_SYMBOLS)}  # all 8 bits long: the code is the index


def baseline_jpeg(planes: list, factors: list, ids: bytes = b"\x01\x02\x03", q: int = 2,
                  sof: int = 0xC0) -> bytes:
    """A baseline JPEG of `planes` (component planes already at their sampled sizes) with
    sampling `factors` [(h, v), ...]: flat quantisation `q`, one fixed-length Huffman table
    pair (every symbol 4 / 8 bits). For samplings Pillow cannot write (4:4:0, 4:1:1), RGB
    component ids, 4 components, or other start-of-frame markers."""
    hmax, vmax = max(f[0] for f in factors), max(f[1] for f in factors)
    height = planes[0].shape[0] * vmax // factors[0][1]
    width = planes[0].shape[1] * hmax // factors[0][0]
    mcux, mcuy = -(-width // (8 * hmax)), -(-height // (8 * vmax))
    padded = []
    for p, (fh, fv) in zip(planes, factors):
        ph, pw = mcuy * fv * 8, mcux * fh * 8
        padded.append(np.pad(p.astype(np.float64), ((0, ph - p.shape[0]), (0, pw - p.shape[1])), mode="edge"))
    bits, nbits = [0], [0]

    def put(code: int, n: int) -> None:
        bits[0] = (bits[0] << n) | code
        nbits[0] += n

    def size_bits(v: int) -> tuple[int, int]:
        s = abs(v).bit_length()
        return s, (v if v >= 0 else v + (1 << s) - 1)

    pred = [0] * len(planes)
    for my in range(mcuy):
        for mx in range(mcux):
            for ci, (p, (fh, fv)) in enumerate(zip(padded, factors)):
                for by in range(fv):
                    for bx in range(fh):
                        y0, x0 = (my * fv + by) * 8, (mx * fh + bx) * 8
                        coef = np.round(_DCT @ (p[y0:y0 + 8, x0:x0 + 8] - 128) @ _DCT.T / q).astype(int)
                        zz = [int(coef[u, v]) for u, v in _ZIGZAG]
                        s, b = size_bits(zz[0] - pred[ci])
                        pred[ci] = zz[0]
                        put(s, 4)
                        put(b, s)
                        run = 0
                        for a in zz[1:]:
                            if a == 0:
                                run += 1
                                continue
                            while run > 15:
                                put(_AC_CODE[0xF0], 8)
                                run -= 16
                            s, b = size_bits(a)
                            put(_AC_CODE[(run << 4) | s], 8)
                            put(b, s)
                            run = 0
                        if run:
                            put(_AC_CODE[0x00], 8)
    pad = (-nbits[0]) % 8
    put((1 << pad) - 1, pad)
    data = bits[0].to_bytes(nbits[0] // 8, "big").replace(b"\xff", b"\xff\x00")

    def seg(marker: int, body: bytes) -> bytes:
        return bytes([0xFF, marker]) + struct.pack(">H", len(body) + 2) + body

    dc_symbols, ac_symbols = list(range(12)), _AC_SYMBOLS
    dht = (bytes([0x00]) + bytes([0, 0, 0, 12] + [0] * 12) + bytes(dc_symbols)
           + bytes([0x10]) + bytes([0] * 7 + [len(ac_symbols)] + [0] * 8) + bytes(ac_symbols))
    n = len(planes)
    sof_body = struct.pack(">BHHB", 8, height, width, n) + b"".join(
        bytes([ids[i], (factors[i][0] << 4) | factors[i][1], 0]) for i in range(n))
    sos_body = bytes([n]) + b"".join(bytes([ids[i], 0x00]) for i in range(n)) + bytes([0, 63, 0])
    return (b"\xff\xd8" + seg(0xDB, bytes([0]) + bytes([q] * 64)) + seg(sof, sof_body) + seg(0xC4, dht)
            + seg(0xDA, sos_body) + data + b"\xff\xd9")
