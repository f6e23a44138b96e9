"""PNGD: PNG header information, the decode-size prediction, and decoding into DVPP memory.

The header helpers follow ACL's V100 image processor: the file must be longer than 29
bytes and start with the PNG signature (else ACL_ERROR_INVALID_PARAM); width and height
are the big-endian words at bytes 16..23, the bit depth byte 24, the colour type byte 25
(0 grey -> 1 component, 4 grey+alpha -> 2, 2 RGB -> 3, 6 RGBA -> 4; palette and other
types are ACL_ERROR_FORMAT_NOT_MATCH). The prediction aligns the width to 128 and the
height to 16 and counts 3 (RGB_888) or 4 (RGBA_8888, UNKNOWN) samples of the bit depth
per pixel, at most 4096 x 4096 x 4 x 2 bytes, for pictures of 32..4096 pixels a side.

Decoding writes RGB_888, or for PIXEL_FORMAT_UNKNOWN the source's own layout (RGBA_8888
when the PNG has alpha, RGB_888 otherwise; the description's format is updated), with
a width stride of ALIGN_UP(width, 128) pixels and a height stride of ALIGN_UP(height, 16)
unless the description's strides hold the picture. 16-bit samples are reduced to 8 bits.

What is decoded is checked, not only the header PNGD reads: Pillow's own idea of the picture
(it takes the last IHDR chunk, so a file with a second one declaring a bigger picture is a
decompression bomb: a 236 KB file declared 64 x 64 decoded at 9000 x 9000) must be the size
and colour type of the first IHDR, within PNGD's limits and Pillow's decompression-bomb limit,
before a pixel is decoded; else the decode fails with ACL_ERROR_INVALID_PARAM (100000), as
for a header out of PNGD's range.
"""
from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

import numpy as np

from ..runtime import InvalidValueError, as_int
from . import constants as F, memory
from ._pillow import image_module
from .channel import ChannelDesc
from .descs import PicDesc
from .geometry import FormatError
from .jpegd import _queue, host_bytes, store
from .layout import Planes, format_name
from .vpc import _stream_and_channel

MIN_SIZE, MAX_SIZE = 32, 4096
MAX_OUTPUT = 4096 * 4096 * 4 * 2
SIGNATURE = b"\x89PNG\r\n\x1a\n"
PREDICT_FORMATS = {F.PIXEL_FORMAT_RGB_888, F.PIXEL_FORMAT_RGBA_8888, F.PIXEL_FORMAT_UNKNOWN}
OUTPUT_FORMATS = {F.PIXEL_FORMAT_RGB_888, F.PIXEL_FORMAT_UNKNOWN}
_COMPONENTS = {0: 1, 4: 2, 2: 3, 6: 4}


@dataclass(frozen=True)
class PngInfo:
    width: int
    height: int
    bit_depth: int
    colour_type: int

    @property
    def components(self) -> int:
        if self.colour_type not in _COMPONENTS:
            raise FormatError(f"PNG colour type {self.colour_type} (palette or unknown) is not supported; PNGD "
                              "takes grey (0), RGB (2), grey+alpha (4) and RGBA (6)")
        return _COMPONENTS[self.colour_type]


def parse(data: bytes) -> PngInfo:
    if len(data) <= 29:
        raise InvalidValueError(f"a PNG file is longer than 29 bytes; this one is {len(data)}")
    if data[:8] != SIGNATURE:
        raise InvalidValueError("not a PNG file: it does not start with the PNG signature 89 50 4E 47 0D 0A 1A 0A")
    return PngInfo(int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big"), data[24], data[25])


def image_info(data, size) -> PngInfo:
    info = parse(host_bytes(data, size, "PNG"))
    info.components  # noqa: B018 - raises for palette PNGs
    return info


def predict_dec_size(data, size, fmt: int) -> int:
    if fmt not in PREDICT_FORMATS:
        names = ", ".join(format_name(f) for f in sorted(PREDICT_FORMATS))
        raise FormatError(f"PNGD size prediction takes {names}, not {format_name(fmt)}")
    info = parse(host_bytes(data, size, "PNG"))
    _check_size(info)
    w, h = (info.width + 127) & ~127, (info.height + 15) & ~15
    samples = 3 if fmt == F.PIXEL_FORMAT_RGB_888 else 4
    n = ((w * info.bit_depth * samples + 7) >> 3) * h
    if not 0 < n <= MAX_OUTPUT:
        raise InvalidValueError(f"the PNGD output would be {n} bytes; at most {MAX_OUTPUT}")
    return n


def _check_size(info: PngInfo) -> None:
    if not (MIN_SIZE <= info.width <= MAX_SIZE and MIN_SIZE <= info.height <= MAX_SIZE):
        raise InvalidValueError(f"the PNG is {info.width} x {info.height}; PNGD decodes {MIN_SIZE} to {MAX_SIZE} "
                                "pixels in each direction")


def decode(channel: ChannelDesc, data, size, out: PicDesc, stream=None) -> int:
    """Queue the decoding of the `size`-byte PNG at `data` (DVPP memory) into `out`."""
    s = _stream_and_channel(channel, stream, F.DVPP_CHNMODE_PNGD)
    size = as_int(size, "the PNG size")
    if size <= 0:
        raise InvalidValueError(f"the PNG size must be positive, got {size}")
    if out.format not in OUTPUT_FORMATS:
        names = ", ".join(format_name(f) for f in sorted(OUTPUT_FORMATS))
        raise FormatError(f"PNGD outputs {names}, not {format_name(out.format)}")
    image_module()
    src = memory.locate(data, size, "PNG data", s.device)
    return _queue(s, "dvpp_png_decode", src, size, out, _png_work)


_MODES = {0: ("L", "I", "I;16", "I;16B", "1"), 2: ("RGB",), 4: ("LA",), 6: ("RGBA",)}


def _open_checked(encoded: bytes, info: PngInfo):
    """The PNG opened by Pillow (nothing decoded yet), refused unless Pillow would decode the
    picture the header declares (see the module docstring)."""
    Image = image_module()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            im = Image.open(io.BytesIO(encoded))
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise InvalidValueError(f"the PNG would decode past Pillow's decompression-bomb limit: {exc}") from None
    if im.size != (info.width, info.height) or im.mode not in _MODES[info.colour_type]:
        raise InvalidValueError(
            f"the PNG's header declares a {info.width} x {info.height} picture (colour type {info.colour_type}) "
            f"but it would decode as {im.size[0]} x {im.size[1]} {im.mode} (another IHDR chunk later in the "
            "file): refused, the picture would not be the one declared")
    return im


def _png_work(task, encoded: bytes, out: PicDesc, dst, snap) -> None:
    fmt, capacity, want_ws, want_hs = snap
    info = parse(encoded)
    info.components  # noqa: B018 - palette PNGs fail here
    _check_size(info)
    im = _open_checked(encoded, info)
    Image = image_module()
    alpha = info.colour_type in (4, 6)
    target = F.PIXEL_FORMAT_RGBA_8888 if fmt == F.PIXEL_FORMAT_UNKNOWN and alpha else F.PIXEL_FORMAT_RGB_888
    if im.mode.startswith("I"):  # 16-bit grey: keep the high byte, as for 16-bit colour PNGs
        im = Image.fromarray((np.asarray(im).astype(np.uint32) >> 8).astype(np.uint8), "L")
    rgb = np.asarray(im.convert("RGBA" if target == F.PIXEL_FORMAT_RGBA_8888 else "RGB"))
    pic = Planes("rgb", [rgb[..., i] for i in range(rgb.shape[-1])])
    bpp = 4 if target == F.PIXEL_FORMAT_RGBA_8888 else 3
    store(task, pic, target, out, dst, capacity, want_ws, want_hs, 128, bpp)
