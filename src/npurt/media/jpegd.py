"""JPEGD: JPEG header information, the decode-size prediction, and decoding into DVPP
memory as a task of a stream.

The header helpers read a JPEG held in host memory (as ACL's do, with libjpeg's header
reader): a header that cannot be parsed is ACL_ERROR_FAILURE (500001). Width and height
are swapped when the EXIF orientation is 5..8 (the picture is stored transposed).

Decoding (Pillow's libjpeg, asked for its YCbCr output at full scale, so no colour
round-trip through RGB) writes the decoded YUV planes in the output description's pixel
format: NV12/NV21 from any source, YVU 4:2:2 / 4:4:4 / 4:4:0 semi-planar from a source of
that subsampling, PIXEL_FORMAT_UNKNOWN for the source's own subsampling (VU order; a grey
JPEG gives YUV 4:0:0). A grey JPEG decoded to 4:2:0 gets chroma bytes 0x80. Chroma is
subsampled by averaging 2x2 (or 2x1) blocks of libjpeg's upsampled chroma. For 4:2:x
output an odd width or height is aligned down to even. The output strides: on Ascend910A
ALIGN_UP(width, 128) x ALIGN_UP(height, 16), unless the description sets strides of its own
that hold the picture (a multiple of 16 >= width, an even number >= height); on Ascend310P3
and Ascend910B3 always ALIGN_UP(width, 64) x ALIGN_UP(height, 16). The decoded width,
height and strides are written back into the description. Only baseline
and extended sequential Huffman JPEGs decode; progressive, lossless and arithmetic-coded
ones fail with ACL_ERROR_UNSUPPORTED_JPEG (148052), as do CMYK/RGB-coded ones.
"""
from __future__ import annotations

import io
import struct
from dataclasses import dataclass

import numpy as np

from ..runtime import (InvalidValueError, NpuError, RUNTIME, address, as_int, constants as C, resolve as
                       locate_any)
from . import constants as F, memory
from ._pillow import image_module
from .channel import ChannelDesc
from .descs import PicDesc
from .layout import LAYOUTS, Planes, align_up, format_name, write
from .task import DvppTask, enqueue
from .geometry import FormatError
from .vpc import _stream_and_channel

MIN_SIZE, MAX_SIZE = 32, 8192
OUTPUT_FORMATS = {F.PIXEL_FORMAT_YUV_SEMIPLANAR_420, F.PIXEL_FORMAT_YVU_SEMIPLANAR_420,
                  F.PIXEL_FORMAT_YVU_SEMIPLANAR_422, F.PIXEL_FORMAT_YVU_SEMIPLANAR_444,
                  F.PIXEL_FORMAT_YVU_SEMIPLANAR_440, F.PIXEL_FORMAT_UNKNOWN}
# source subsampling -> (acldvppJpegFormat, the format PIXEL_FORMAT_UNKNOWN decodes to)
_NATIVE = {"420": (F.ACL_JPEG_CSS_420, F.PIXEL_FORMAT_YVU_SEMIPLANAR_420),
           "422": (F.ACL_JPEG_CSS_422, F.PIXEL_FORMAT_YVU_SEMIPLANAR_422),
           "444": (F.ACL_JPEG_CSS_444, F.PIXEL_FORMAT_YVU_SEMIPLANAR_444),
           "440": (F.ACL_JPEG_CSS_440, F.PIXEL_FORMAT_YVU_SEMIPLANAR_440),
           "gray": (F.ACL_JPEG_CSS_GRAY, F.PIXEL_FORMAT_YUV_400)}
_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}
_SEQUENTIAL_HUFFMAN = {0xC0, 0xC1}
_CODING = {0xC2: "progressive", 0xC3: "lossless", 0xC5: "differential sequential", 0xC6: "differential progressive",
           0xC7: "differential lossless", 0xC9: "arithmetic-coded", 0xCA: "progressive arithmetic-coded",
           0xCB: "lossless arithmetic-coded", 0xCD: "differential arithmetic-coded",
           0xCE: "differential progressive arithmetic-coded", 0xCF: "differential lossless arithmetic-coded"}


class UnsupportedJpegError(NpuError):
    """A JPEG the decoder does not handle (ACL_ERROR_UNSUPPORTED_JPEG)."""

    code = C.ACL_ERROR_UNSUPPORTED_JPEG


class HeaderError(NpuError):
    """A JPEG/PNG header that cannot be parsed (ACL_ERROR_FAILURE, as libjpeg's error exit)."""

    code = C.ACL_ERROR_FAILURE


@dataclass(frozen=True)
class JpegInfo:
    width: int          # after the EXIF orientation swap
    height: int
    components: int
    subsampling: str    # "420", "422", "444", "440", "gray", or "" (none JPEGD decodes)
    sof: int            # the start-of-frame marker (0xC0 baseline, 0xC2 progressive, ...)
    precision: int
    orientation: int
    colour: str         # "ycbcr", "gray", "rgb" or "cmyk"

    @property
    def jpeg_format(self) -> int:
        return _NATIVE[self.subsampling][0] if self.subsampling else F.ACL_JPEG_CSS_UNKNOWN


def parse(data: bytes) -> JpegInfo:
    """The header facts of a JPEG file (up to its first scan)."""
    n = len(data)
    if n < 4 or data[0] != 0xFF or data[1] != 0xD8:
        raise HeaderError("not a JPEG file: it does not start with the SOI marker FF D8")
    i, orientation, adobe, frame = 2, 1, None, None
    while i < n:
        if data[i] != 0xFF:
            raise HeaderError(f"corrupt JPEG header: expected a marker at byte {i}")
        while i < n and data[i] == 0xFF:
            i += 1
        if i >= n:
            break
        marker = data[i]
        i += 1
        if marker == 0x01 or 0xD0 <= marker <= 0xD8:
            continue
        if marker == 0xD9 or i + 2 > n:
            break
        length = (data[i] << 8) | data[i + 1]
        if length < 2 or i + length > n:
            raise HeaderError(f"corrupt JPEG header: segment FF{marker:02X} at byte {i - 2} runs past the data")
        seg = data[i + 2:i + length]
        i += length
        if marker == 0xE1 and seg[:6] == b"Exif\0\0":
            orientation = _exif_orientation(seg[6:]) or orientation
        elif marker == 0xEE and seg[:5] == b"Adobe" and len(seg) >= 12:
            adobe = seg[11]
        elif marker in _SOF:
            if len(seg) < 6 or len(seg) < 6 + 3 * seg[5]:
                raise HeaderError("corrupt JPEG header: truncated start-of-frame segment")
            comps = [(seg[6 + 3 * k], seg[7 + 3 * k] >> 4, seg[7 + 3 * k] & 15) for k in range(seg[5])]
            frame = (marker, seg[0], (seg[1] << 8) | seg[2], (seg[3] << 8) | seg[4], comps)
        elif marker == 0xDA:
            break
    if frame is None:
        raise HeaderError("corrupt JPEG header: no start-of-frame segment before the first scan")
    sof, precision, height, width, comps = frame
    if height == 0 or width == 0 or not comps:
        raise HeaderError(f"corrupt JPEG header: {width} x {height} with {len(comps)} components")
    colour = _colour(comps, adobe)
    if orientation in (5, 6, 7, 8):
        width, height = height, width
    return JpegInfo(width, height, len(comps), _subsampling(comps) if colour in ("ycbcr", "gray") else "",
                    sof, precision, orientation, colour)


def _colour(comps, adobe) -> str:
    """The colour space libjpeg assumes for these components."""
    if len(comps) == 1:
        return "gray"
    if len(comps) == 3:
        ids = bytes(c[0] for c in comps)
        return "rgb" if adobe == 0 or ids == b"RGB" else "ycbcr"
    return "cmyk"


def _subsampling(comps) -> str:
    if len(comps) == 1:
        return "gray" if comps[0][1] == comps[0][2] else ""
    (_, yh, yv), (_, uh, uv), (_, vh, vv) = comps[:3]
    if (uh, uv) != (vh, vv):
        return ""
    if yh == 2 * uh:
        return "420" if yv == 2 * uv else "422" if yv == uv else ""
    if yh == uh:
        return "444" if yv == uv else "440" if yv == 2 * uv else ""
    return ""


def _exif_orientation(tiff: bytes) -> int:
    """The Orientation tag (0x0112) of the first IFD of an EXIF TIFF block; 0 if absent."""
    if len(tiff) < 8:
        return 0
    endian = {b"II*\0": "<", b"MM\0*": ">"}.get(tiff[:4])
    if endian is None:
        return 0
    pos = struct.unpack(endian + "I", tiff[4:8])[0]
    if pos + 2 > len(tiff):
        return 0
    count = struct.unpack(endian + "H", tiff[pos:pos + 2])[0]
    pos += 2
    if pos + 12 * count > len(tiff):
        return 0
    for k in range(count):
        tag, typ, num = struct.unpack(endian + "HHI", tiff[pos + 12 * k:pos + 12 * k + 8])
        if tag == 0x0112 and typ == 3 and num == 1:
            return struct.unpack(endian + "H", tiff[pos + 12 * k + 8:pos + 12 * k + 10])[0]
    return 0


# ---------------------------------------------------------------- host-side helpers
def host_bytes(data, size, what: str = "JPEG") -> bytes:
    """`size` bytes of host memory at `data` (the *_get_image_info / predict helpers read
    the host copy of the file)."""
    data, size = as_int(data, f"the {what} data address"), as_int(size, f"the {what} data size")
    if data == 0:
        raise InvalidValueError(f"the {what} data address is null")
    if size <= 0:
        raise InvalidValueError(f"the {what} data size must be positive, got {size}")
    span = locate_any(RUNTIME, data, size, f"{what} data")
    if span.device is not None:
        raise InvalidValueError(f"the {what} data address 0x{data:x} is device memory; this helper reads the copy of "
                                "the file in host memory (e.g. acl.util.numpy_to_ptr of the bytes read from disk)")
    return bytes(address.host_view(data, size))


def image_info(data, size) -> JpegInfo:
    """acldvppJpegGetImageInfo(V2): the header of a JPEG in host memory."""
    return parse(host_bytes(data, size))


def predict_dec_size(data, size, fmt: int) -> int:
    """The output buffer bytes JPEGD needs for `fmt`."""
    if fmt not in OUTPUT_FORMATS:
        raise _format_error(fmt)
    info = parse(host_bytes(data, size))
    _check_size(info)
    target = _target_format(info, fmt)
    return LAYOUTS[target].size(align_up(info.width, 128), align_up(info.height, 16))


def _format_error(fmt: int):
    names = ", ".join(format_name(f) for f in sorted(OUTPUT_FORMATS))
    return FormatError(f"JPEGD cannot output {format_name(fmt)}; it outputs {names}")


def _check_size(info: JpegInfo) -> None:
    if not (MIN_SIZE <= info.width <= MAX_SIZE and MIN_SIZE <= info.height <= MAX_SIZE):
        raise InvalidValueError(f"the JPEG is {info.width} x {info.height}; JPEGD decodes {MIN_SIZE} to {MAX_SIZE} "
                                "pixels in each direction")


def _target_format(info: JpegInfo, fmt: int) -> int:
    """The format the decoder writes for a requested output format (100027 if it cannot)."""
    if fmt in (F.PIXEL_FORMAT_YUV_SEMIPLANAR_420, F.PIXEL_FORMAT_YVU_SEMIPLANAR_420):
        return fmt
    if not info.subsampling:
        raise FormatError(f"the JPEG's {info.colour} components have a subsampling JPEGD cannot keep; "
                          "decode it to YUV_SEMIPLANAR_420 or YVU_SEMIPLANAR_420")
    native = _NATIVE[info.subsampling][1]
    if fmt == F.PIXEL_FORMAT_UNKNOWN or fmt == native:
        return native
    raise FormatError(f"a {info.subsampling} JPEG decodes to YUV/YVU 4:2:0 or to its own subsampling "
                      f"({format_name(native)}), not to {format_name(fmt)}")


# ---------------------------------------------------------------- decoding
def _open(data: bytes, mode: str, scale: int = 1):
    """The JPEG as libjpeg decodes it in `mode` ("L": the luma plane only; "YCbCr": no
    colour conversion), at full size or at 1/`scale` (libjpeg's DCT scaling; None if it
    would not give exactly that), with the EXIF orientation applied."""
    im = image_module().open(io.BytesIO(data))
    w, h = im.size
    im.draft(mode, (w // scale, h // scale))
    if im.mode != mode:
        raise UnsupportedJpegError(f"the JPEG decodes to {im.mode}, not {mode}")
    if im.size != (-(-w // scale), -(-h // scale)):
        if scale == 1:
            raise UnsupportedJpegError(f"libjpeg would decode this {w} x {h} JPEG at {im.size}")
        return None
    if im.getexif().get(0x0112, 1) != 1:
        from PIL import ImageOps
        im = ImageOps.exif_transpose(im)
    return im


def _native_420(data: bytes) -> Planes | None:
    """A 4:2:0 JPEG as 4:2:0 planes without resampling: the luma plane decoded at full
    size, and the chroma planes decoded at half size, which for 4:2:0 is their own
    resolution (libjpeg then runs their 8x8 IDCT unscaled and skips upsampling), so U and
    V are the coded chroma samples themselves, as a hardware decoder writes them. The two
    decodes run side by side on the simulated NPU's core threads (libjpeg releases the GIL)."""
    planes: list = [None, None]

    def decode_one(i: int) -> None:
        im = _open(data, "L") if i == 0 else _open(data, "YCbCr", 2)
        planes[i] = None if im is None else np.asarray(im)  # asarray runs the decode
    RUNTIME.driver.cores.run(2, decode_one)
    luma, chroma = planes
    if chroma is None:
        return None
    h, w = luma.shape
    w, h = w - w % 2, h - h % 2  # 4:2:0 output aligns odd sizes down
    c = chroma[:h // 2, :w // 2]
    return Planes("yuv", [luma[:h, :w], c[..., 1], c[..., 2]], (2, 2))


def decode_planes(data: bytes, info: JpegInfo, target: int) -> Planes:
    """The decoded picture as planes in the target format's subsampling."""
    layout = LAYOUTS.get(target)
    sub = layout.sub if layout is not None else None
    if info.subsampling == "420" and sub == (2, 2):
        planes = _native_420(data)
        if planes is not None:
            return planes
    mode = "L" if info.subsampling == "gray" else "YCbCr"
    im = _open(data, mode)
    w, h = im.size
    if sub is not None:  # 4:2:x output needs even dimensions: align down
        w, h = w - w % sub[0], h - h % sub[1]
        if (w, h) != im.size:
            im = im.crop((0, 0, w, h))
    if mode == "L":
        y = np.asarray(im)
        if sub is None:
            return Planes("yuv", [y])
        grey = np.full((h // sub[1], w // sub[0]), 128, np.uint8)
        return Planes("yuv", [y, grey, grey], sub)
    full = np.asarray(im)
    y = full[..., 0]
    if sub == (1, 1):
        return Planes("yuv", [y, full[..., 1], full[..., 2]], sub)
    small = np.asarray(im.reduce(sub))  # box average of each sub[0] x sub[1] block
    return Planes("yuv", [y, small[..., 1], small[..., 2]], sub)


# The JPEGD of the Atlas inference (Ascend310P3) and A2 (Ascend910B) products picks its output
# strides itself: ALIGN_UP(width, 64) x ALIGN_UP(height, 16), written back into the description
# (the JPEGD constraints table of the pyACL guide: 128-aligned width stride on Atlas 200/300/500
# inference and Atlas training products, 64-aligned on the others). The official C++ samples read
# the stride back after decoding ("128-byte alignment on 310, 64-byte alignment on 310P"), and
# acllite's Python jpegd sets a 128-aligned stride in the description but sizes the buffer for,
# and reads the picture at, the 64-aligned one on Ascend310P3.
HARDWARE_STRIDE_SOCS = {"Ascend310P3", "Ascend910B3"}


def decode(channel: ChannelDesc, data, size, out: PicDesc, stream=None) -> int:
    """Queue the decoding of the `size`-byte JPEG at `data` (DVPP memory) into `out`."""
    s = _stream_and_channel(channel, stream, F.DVPP_CHNMODE_JPEGD)
    size = as_int(size, "the JPEG size")
    if size <= 0:
        raise InvalidValueError(f"the JPEG size must be positive, got {size}")
    if out.format not in OUTPUT_FORMATS:
        raise _format_error(out.format)
    image_module()
    src = memory.locate(data, size, "JPEG data", s.device)
    return _queue(s, "dvpp_jpeg_decode", src, size, out, _jpeg_work)


def _queue(stream, kind: str, src, size: int, out: PicDesc, work_fn) -> int:
    """Locate the output buffer as described now and queue `work_fn(task, bytes, snapshot)`."""
    if out.size <= 0:
        raise InvalidValueError("the output picture's size (its buffer bytes) is 0; set it with "
                                "dvpp_set_pic_desc_size")
    dst = memory.locate(out.data, out.size, "output picture data", stream.device)
    snap = (out.format, out.size, out.width_stride, out.height_stride)

    def work(task: DvppTask) -> None:
        encoded = bytes(task.view(src.addr, size, src))
        work_fn(task, encoded, out, dst, snap)
    touched = [(src.addr, size, "r"), (dst.addr, out.size, "w")]
    return enqueue(stream, DvppTask(kind, f"{size} B", work, [out], touched), [src, dst])


def _jpeg_work(task, encoded: bytes, out: PicDesc, dst, snap) -> None:
    fmt, capacity, want_ws, want_hs = snap
    info = parse(encoded)
    if info.sof not in _SEQUENTIAL_HUFFMAN or info.precision != 8:
        coding = _CODING.get(info.sof, f"{info.precision}-bit")
        raise UnsupportedJpegError(f"JPEGD decodes baseline Huffman JPEGs only; this one is {coding}")
    if info.colour not in ("ycbcr", "gray") or not info.subsampling:
        raise UnsupportedJpegError(f"JPEGD decodes YCbCr and grey JPEGs with 4:2:0, 4:2:2, 4:4:4, 4:4:0 or 4:0:0 "
                                   f"sampling; this one is {info.colour} with {info.components} components")
    _check_size(info)
    target = _target_format(info, fmt)
    pic = decode_planes(encoded, info, target)
    if task.stream.device.spec.name in HARDWARE_STRIDE_SOCS:
        store(task, pic, target, out, dst, capacity, 0, 0, 64)  # its own strides, whatever the desc asked
        return
    store(task, pic, target, out, dst, capacity, want_ws, want_hs, 128)


def store(task, pic: Planes, target: int, out: PicDesc, dst, capacity: int, want_ws: int, want_hs: int,
          align: int, bpp: int = 1) -> None:
    """Write a decoded picture at the decoder's strides and report its geometry in `out`."""
    w, h = pic.width, pic.height
    layout = LAYOUTS[target]
    ws = want_ws if want_ws >= layout.min_width_stride(w) and want_ws % 16 == 0 else align_up(w, align) * bpp
    hs = want_hs if want_hs >= h and want_hs % 2 == 0 else align_up(h, 16)
    need = layout.size(ws, hs)
    if need > capacity:
        raise InvalidValueError(f"the decoded {w} x {h} picture needs {need} bytes ({layout.name}, stride {ws} x "
                                f"{hs}) but the output buffer is {capacity} bytes (predict the size first)")
    write(layout, task.view(dst.addr, need, dst), ws, hs, 0, 0, pic)
    out.width, out.height, out.width_stride, out.height_stride = w, h, ws, hs
    if out.format == F.PIXEL_FORMAT_UNKNOWN:
        out.format = target
