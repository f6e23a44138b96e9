"""The alignment and size rules DVPP pictures and regions must follow, checked at the call.

On the real NPU most of these are checked by the DVPP hardware, which reports a failure
when the stream is synchronized; npurt checks them when the operation is called, so a bad
picture is ACL_ERROR_INVALID_PARAM (100000) at the call that made it (a format outside an
operation's list is ACL_ERROR_FORMAT_NOT_MATCH, 100027), never a corrupted image.

| item | rule |
| --- | --- |
| width stride | >= width * bytes per pixel aligned up to 16, a multiple of 16, in [32, 16384] bytes |
| height stride | >= height, even, in [6, 4096] (input pictures: up to 8192) |
| input size | width in [10, 8192], height in [6, 8192] |
| output size | width in [10, 4096], height in [6, 4096]; even for YUV 4:2:0 output |
| subsampled formats | output: width (4:2:x) and height (4:2:0, 4:4:0) multiples of the chroma factors; an input of odd size is processed aligned down to them |
| buffer | the description's size >= the layout's bytes for its strides; the data is a live dvpp_malloc range |
| ROI | left/top even, right/bottom odd, inside the picture, at least 10 x 6 |
| scale | output / crop in [1/32, 16] on each axis |
"""
from __future__ import annotations

from ..runtime import InvalidValueError, constants as C
from . import memory
from .descs import PicDesc, RoiConfig
from .layout import LAYOUTS, Layout, format_name
from .task import Picture

MIN_WIDTH, MIN_HEIGHT = 10, 6
MAX_IN_WIDTH = MAX_IN_HEIGHT = 8192
MAX_OUT_WIDTH = MAX_OUT_HEIGHT = 4096
MIN_WIDTH_STRIDE, MAX_WIDTH_STRIDE = 32, 16384
MIN_HEIGHT_STRIDE, MAX_HEIGHT_STRIDE, MAX_IN_HEIGHT_STRIDE = 6, 4096, 8192
MIN_SCALE, MAX_SCALE = 1 / 32, 16


class FormatError(InvalidValueError):
    """A pixel format the operation does not accept (ACL_ERROR_FORMAT_NOT_MATCH)."""

    code = C.ACL_ERROR_FORMAT_NOT_MATCH


def check_format(fmt: int, allowed, role: str) -> Layout:
    if fmt not in allowed:
        names = ", ".join(format_name(f) for f in sorted(allowed))
        raise FormatError(f"the {role} format is {format_name(fmt)}; this operation accepts {names}")
    return LAYOUTS[fmt]


def picture(desc: PicDesc, role: str, allowed, device, *, output: bool, even: bool = False,
            align_down: bool = True) -> Picture:
    """Check a description against the rules above and locate its memory. An input of odd
    size for its subsampling is processed aligned down (`align_down`; operations whose output
    size follows the input's refuse it instead)."""
    layout = check_format(desc.format, allowed, role)
    w, h, ws, hs = desc.width, desc.height, desc.width_stride, desc.height_stride
    max_w, max_h = (MAX_OUT_WIDTH, MAX_OUT_HEIGHT) if output else (MAX_IN_WIDTH, MAX_IN_HEIGHT)
    if not (MIN_WIDTH <= w <= max_w and MIN_HEIGHT <= h <= max_h):
        raise InvalidValueError(f"the {role} picture is {w} x {h}; DVPP needs a width in [{MIN_WIDTH}, {max_w}] "
                                f"and a height in [{MIN_HEIGHT}, {max_h}]")
    sx, sy = layout.sub or (1, 1)
    if even:
        sx, sy = max(sx, 2), max(sy, 2)
    if (w % sx or h % sy) and (output or not align_down):
        raise InvalidValueError(f"the {role} picture is {w} x {h}; {layout.name} needs the width to be a multiple "
                                f"of {sx} and the height of {sy}")
    check_strides(layout, w, h, ws, hs, role, MAX_HEIGHT_STRIDE if output else MAX_IN_HEIGHT_STRIDE)
    if not output:
        # An input of odd size is taken, aligned down to its chroma grid: acllite (and the
        # official samples with their 1024 x 683 test picture) give VPC the JPEG's own size,
        # odd height and all, after JPEGD wrote the picture aligned down to even.
        w, h = w - w % sx, h - h % sy
    return locate(desc, layout, w, h, ws, hs, role, device)


def check_strides(layout: Layout, w: int, h: int, ws: int, hs: int, role: str,
                  max_hs: int = MAX_HEIGHT_STRIDE) -> None:
    need = layout.min_width_stride(w)
    if ws < need or ws % 16 or not MIN_WIDTH_STRIDE <= ws <= MAX_WIDTH_STRIDE:
        raise InvalidValueError(
            f"the {role} width stride is {ws}; {layout.name} {w} pixels wide needs a multiple of 16 of at least "
            f"{need} (ALIGN_UP(width * {layout.bpp}, 16)), within [{MIN_WIDTH_STRIDE}, {MAX_WIDTH_STRIDE}]")
    if hs < h or hs % 2 or not MIN_HEIGHT_STRIDE <= hs <= max_hs:
        raise InvalidValueError(f"the {role} height stride is {hs}; it must be even, at least the height ({h}) and "
                                f"within [{MIN_HEIGHT_STRIDE}, {max_hs}]")


def locate(desc: PicDesc, layout: Layout, w: int, h: int, ws: int, hs: int, role: str, device) -> Picture:
    """The picture's memory: its description's size must hold the layout and the data must
    be a live DVPP range that holds it."""
    nbytes = layout.size(ws, hs)
    if desc.size < nbytes:
        raise InvalidValueError(f"the {role} picture needs {nbytes} bytes ({layout.name}, stride {ws} x {hs}) "
                                f"but its description's size is {desc.size}")
    span = memory.locate(desc.data, nbytes, f"{role} picture data", device)
    return Picture(desc, layout, w, h, ws, hs, span, nbytes)


def check_roi(roi: RoiConfig, pic_w: int, pic_h: int, role: str) -> None:
    if roi.left % 2 or roi.top % 2 or roi.right % 2 == 0 or roi.bottom % 2 == 0:
        raise InvalidValueError(f"the {role} area {_roi(roi)} breaks the ROI rule: left and top must be even, "
                                "right and bottom odd")
    if roi.right <= roi.left or roi.bottom <= roi.top:
        raise InvalidValueError(f"the {role} area {_roi(roi)} is empty: right must exceed left, bottom exceed top")
    if roi.right >= pic_w or roi.bottom >= pic_h:
        raise InvalidValueError(f"the {role} area {_roi(roi)} reaches outside its {pic_w} x {pic_h} picture")
    if roi.width < MIN_WIDTH or roi.height < MIN_HEIGHT:
        raise InvalidValueError(f"the {role} area {_roi(roi)} is {roi.width} x {roi.height}; DVPP needs at least "
                                f"{MIN_WIDTH} x {MIN_HEIGHT}")


def check_scale(in_w: int, in_h: int, out_w: int, out_h: int, role: str = "output") -> None:
    for axis, a, b in (("width", in_w, out_w), ("height", in_h, out_h)):
        if not MIN_SCALE <= b / a <= MAX_SCALE:
            raise InvalidValueError(f"scaling the {axis} from {a} to {b} ({role}) is outside DVPP's range: the "
                                    "scale factor must be in [1/32, 16]")


def _roi(roi: RoiConfig) -> str:
    return f"(left {roi.left}, right {roi.right}, top {roi.top}, bottom {roi.bottom})"
