"""JPEGE: the encode-size prediction and JPEG encoding of a YUV picture into DVPP memory.

Input: YUV/YVU 4:2:0 semi-planar or one of the packed 4:2:2 formats, 32..8192 pixels a
side. Width stride: a multiple of 16 >= the width (packed 4:2:2: exactly ALIGN_UP(width
* 2, 16)); height stride: the height, or a larger multiple of 16 (ACL's rules). The
prediction is the picture's bytes + 640 (headers) + 128, rounded up to 2 MiB, as ACL
computes it. The encoder (Pillow's libjpeg) keeps the input's chroma subsampling (4:2:0
or 4:2:2) and codes with quality = the config's level (level 0 encodes like 100). The
output size is read from the uint32 at `size_ptr` (host memory) when the call is made
and the real JPEG size is written there when the task has run.
"""
from __future__ import annotations

import io
import struct

import numpy as np

from ..runtime import InvalidValueError, RUNTIME, address, as_int, resolve as locate_any
from . import colour, constants as F, geometry, memory
from ._pillow import image_module
from .channel import ChannelDesc
from .descs import JpegeConfig, PicDesc
from .layout import align_up, read
from .task import DvppTask, enqueue
from .vpc import _stream_and_channel

MIN_SIZE, MAX_SIZE = 32, 8192
INPUT_FORMATS = {F.PIXEL_FORMAT_YUV_SEMIPLANAR_420, F.PIXEL_FORMAT_YVU_SEMIPLANAR_420,
                 F.PIXEL_FORMAT_YUYV_PACKED_422, F.PIXEL_FORMAT_UYVY_PACKED_422,
                 F.PIXEL_FORMAT_YVYU_PACKED_422, F.PIXEL_FORMAT_VYUY_PACKED_422}
HEADER_BYTES, START_ALIGN, SIZE_ALIGN = 640, 128, 2 * 1024 * 1024
MAX_LEVEL = 100


def _check_input(desc: PicDesc):
    w, h, ws, hs = desc.width, desc.height, desc.width_stride, desc.height_stride
    if not (MIN_SIZE <= w <= MAX_SIZE and MIN_SIZE <= h <= MAX_SIZE):
        raise InvalidValueError(f"the input picture is {w} x {h}; JPEGE encodes {MIN_SIZE} to {MAX_SIZE} pixels "
                                "in each direction")
    layout = geometry.check_format(desc.format, INPUT_FORMATS, "input")
    if layout.kind == "yuyv":
        if ws != align_up(w * 2, 16):
            raise InvalidValueError(f"the input width stride is {ws}; packed 4:2:2 needs exactly "
                                    f"ALIGN_UP(width * 2, 16) = {align_up(w * 2, 16)}")
    elif ws < w or ws % 16:
        raise InvalidValueError(f"the input width stride is {ws}; it must be a multiple of 16 of at least the "
                                f"width ({w})")
    if not (hs == h or (hs > h and hs % 16 == 0)):
        raise InvalidValueError(f"the input height stride is {hs}; it must equal the height ({h}) or be a larger "
                                "multiple of 16")
    return layout


def predict_enc_size(desc: PicDesc, cfg: JpegeConfig) -> int:
    """An upper bound of the JPEG's bytes, to size the output buffer."""
    if cfg is None:
        raise InvalidValueError("the JPEGE config is null")
    layout = _check_input(desc)
    n = layout.size(desc.width_stride, desc.height_stride) + HEADER_BYTES + START_ALIGN
    return align_up(n, SIZE_ALIGN)


def quality(level: int) -> int:
    return MAX_LEVEL if level == 0 else level


def encode_planes(pic, sub: tuple[int, int], level: int) -> bytes:
    """JPEG bytes of YUV planes (chroma at `sub`), keeping that subsampling."""
    Image = image_module()
    y = pic.planes[0]
    u, v = (colour.resubsample(p, sub, (1, 1)) for p in pic.planes[1:3])
    im = Image.fromarray(np.stack([y, u, v], axis=-1), "YCbCr")
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=quality(level), subsampling="4:2:0" if sub == (2, 2) else "4:2:2")
    return buf.getvalue()


def encode(channel: ChannelDesc, desc: PicDesc, data, size_ptr, cfg: JpegeConfig, stream=None) -> int:
    """Queue the encoding of `desc` into the DVPP buffer `data`."""
    s = _stream_and_channel(channel, stream, F.DVPP_CHNMODE_JPEGE)
    if cfg is None:
        raise InvalidValueError("the JPEGE config is null")
    size_ptr = as_int(size_ptr, "the output size pointer")
    if size_ptr == 0:
        raise InvalidValueError("the output size pointer is null")
    size_span = locate_any(RUNTIME, size_ptr, 4, "output size")
    if size_span.device is not None:
        raise InvalidValueError(f"the output size pointer 0x{size_ptr:x} is device memory; pass the address of a "
                                "uint32 in host memory (e.g. acl.util.numpy_to_ptr of a 1-element array)")
    capacity = struct.unpack("<I", bytes(address.host_view(size_ptr, 4)))[0]
    if capacity == 0:
        raise InvalidValueError("the output buffer size read from the size pointer is 0; store the buffer's bytes "
                                "there (dvpp_jpeg_predict_enc_size gives them)")
    layout = _check_input(desc)
    if cfg.level > MAX_LEVEL:
        raise InvalidValueError(f"the JPEGE level is {cfg.level}; it must be in [0, {MAX_LEVEL}]")
    sx, sy = layout.sub
    if desc.width % sx or desc.height % sy:
        raise InvalidValueError(f"the input picture is {desc.width} x {desc.height}; {layout.name} needs the width "
                                f"to be a multiple of {sx} and the height of {sy}")
    src = geometry.locate(desc, layout, desc.width, desc.height, desc.width_stride, desc.height_stride, "input",
                          s.device)
    dst = memory.locate(data, capacity, "JPEG output data", s.device)
    level = cfg.level

    def work(task: DvppTask) -> None:
        pic = read(src.layout, src.view(task), src.ws, src.hs, 0, 0, src.width, src.height)
        encoded = encode_planes(pic, layout.sub, level)
        if len(encoded) > capacity:
            raise InvalidValueError(f"the JPEG is {len(encoded)} bytes but the output buffer holds {capacity}")
        task.view(dst.addr, len(encoded), dst)[:] = np.frombuffer(encoded, np.uint8)
        address.host_view(size_ptr, 4)[:] = np.frombuffer(struct.pack("<I", len(encoded)), np.uint8)
    touched = [src.access("r"), (dst.addr, capacity, "w"), (size_ptr, 4, "w")]
    return enqueue(s, DvppTask("dvpp_jpeg_encode", f"{desc.width} x {desc.height}", work, [desc], touched),
                   [src.span, dst, size_span])

