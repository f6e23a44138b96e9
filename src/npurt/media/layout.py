"""How each DVPP pixel format lays out a picture in memory, and reading/writing one.

A picture is `width` x `height` visible pixels in a buffer of `height_stride` rows of
`width_stride` bytes (semi-planar formats: the luma plane, then the chroma plane of the
same pitch). Columns beyond the width and rows beyond the height are padding that no
operation writes. Inside the engine a picture is a `Planes`: 2-D uint8 arrays, either
Y, U, V (chroma subsampled by `sub` = (x, y) factors; none for YUV 4:0:0) or R, G, B
(and A for the 32-bit formats).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import constants as F


@dataclass(frozen=True)
class Layout:
    """One pixel format's memory layout.

    kind: "sp" (Y plane + interleaved chroma plane), "y" (Y only), "yuyv" (packed 4:2:2),
    "yuv3" (packed 4:4:4), "rgb" (packed 3 or 4 bytes), "sp10" (10-bit semi-planar 4:2:0,
    one little-endian 16-bit word per sample)."""

    format: int
    name: str
    kind: str
    sub: tuple[int, int] | None = None  # chroma subsampling of YUV formats
    vu: bool = False                    # V before U in the chroma plane
    order: str = ""                     # byte order of packed formats, e.g. "YUYV", "BGRA"
    bpp: int = 1                        # bytes per pixel of a row (width-stride unit)

    @property
    def space(self) -> str:
        return "rgb" if self.kind == "rgb" else "yuv"

    def min_width_stride(self, width: int) -> int:
        """The smallest width stride DVPP accepts: width * bytes per pixel, aligned to 16."""
        return align_up(width * self.bpp, 16)

    def size(self, width_stride: int, height_stride: int) -> int:
        """Bytes a picture of these strides occupies."""
        plane = width_stride * height_stride
        if self.kind in ("sp", "sp10"):
            sx, sy = self.sub
            return plane + 2 * plane // (sx * sy)
        return plane


def align_up(n: int, a: int) -> int:
    return (n + a - 1) // a * a


_SP = [(F.PIXEL_FORMAT_YUV_SEMIPLANAR_420, "YUV_SEMIPLANAR_420", (2, 2), False),
       (F.PIXEL_FORMAT_YVU_SEMIPLANAR_420, "YVU_SEMIPLANAR_420", (2, 2), True),
       (F.PIXEL_FORMAT_YUV_SEMIPLANAR_422, "YUV_SEMIPLANAR_422", (2, 1), False),
       (F.PIXEL_FORMAT_YVU_SEMIPLANAR_422, "YVU_SEMIPLANAR_422", (2, 1), True),
       (F.PIXEL_FORMAT_YUV_SEMIPLANAR_444, "YUV_SEMIPLANAR_444", (1, 1), False),
       (F.PIXEL_FORMAT_YVU_SEMIPLANAR_444, "YVU_SEMIPLANAR_444", (1, 1), True),
       (F.PIXEL_FORMAT_YUV_SEMIPLANAR_440, "YUV_SEMIPLANAR_440", (1, 2), False),
       (F.PIXEL_FORMAT_YVU_SEMIPLANAR_440, "YVU_SEMIPLANAR_440", (1, 2), True)]
LAYOUTS: dict[int, Layout] = {f: Layout(f, n, "sp", sub, vu) for f, n, sub, vu in _SP}
LAYOUTS.update({
    F.PIXEL_FORMAT_YUV_400: Layout(F.PIXEL_FORMAT_YUV_400, "YUV_400", "y"),
    F.PIXEL_FORMAT_YUYV_PACKED_422: Layout(F.PIXEL_FORMAT_YUYV_PACKED_422, "YUYV_PACKED_422", "yuyv", (2, 1),
                                           order="YUYV", bpp=2),
    F.PIXEL_FORMAT_UYVY_PACKED_422: Layout(F.PIXEL_FORMAT_UYVY_PACKED_422, "UYVY_PACKED_422", "yuyv", (2, 1),
                                           order="UYVY", bpp=2),
    F.PIXEL_FORMAT_YVYU_PACKED_422: Layout(F.PIXEL_FORMAT_YVYU_PACKED_422, "YVYU_PACKED_422", "yuyv", (2, 1),
                                           order="YVYU", bpp=2),
    F.PIXEL_FORMAT_VYUY_PACKED_422: Layout(F.PIXEL_FORMAT_VYUY_PACKED_422, "VYUY_PACKED_422", "yuyv", (2, 1),
                                           order="VYUY", bpp=2),
    F.PIXEL_FORMAT_YUV_PACKED_444: Layout(F.PIXEL_FORMAT_YUV_PACKED_444, "YUV_PACKED_444", "yuv3", (1, 1),
                                          order="YUV", bpp=3),
    F.PIXEL_FORMAT_RGB_888: Layout(F.PIXEL_FORMAT_RGB_888, "RGB_888", "rgb", order="RGB", bpp=3),
    F.PIXEL_FORMAT_BGR_888: Layout(F.PIXEL_FORMAT_BGR_888, "BGR_888", "rgb", order="BGR", bpp=3),
    F.PIXEL_FORMAT_ARGB_8888: Layout(F.PIXEL_FORMAT_ARGB_8888, "ARGB_8888", "rgb", order="ARGB", bpp=4),
    F.PIXEL_FORMAT_ABGR_8888: Layout(F.PIXEL_FORMAT_ABGR_8888, "ABGR_8888", "rgb", order="ABGR", bpp=4),
    F.PIXEL_FORMAT_RGBA_8888: Layout(F.PIXEL_FORMAT_RGBA_8888, "RGBA_8888", "rgb", order="RGBA", bpp=4),
    F.PIXEL_FORMAT_BGRA_8888: Layout(F.PIXEL_FORMAT_BGRA_8888, "BGRA_8888", "rgb", order="BGRA", bpp=4),
    F.PIXEL_FORMAT_YUV_SEMI_PLANNER_420_10BIT: Layout(F.PIXEL_FORMAT_YUV_SEMI_PLANNER_420_10BIT,
                                                      "YUV_SEMI_PLANNER_420_10BIT", "sp10", (2, 2), bpp=2),
    F.PIXEL_FORMAT_YVU_SEMI_PLANNER_420_10BIT: Layout(F.PIXEL_FORMAT_YVU_SEMI_PLANNER_420_10BIT,
                                                      "YVU_SEMI_PLANNER_420_10BIT", "sp10", (2, 2), True, bpp=2),
})

_NAMES = {v: k[len("PIXEL_FORMAT_"):] for k, v in vars(F).items() if k.startswith("PIXEL_FORMAT_")}


def format_name(fmt: int) -> str:
    """'YUV_SEMIPLANAR_420 (1)' for a known acldvppPixelFormat, else the number."""
    name = _NAMES.get(fmt)
    return f"PIXEL_FORMAT_{name} ({fmt})" if name else f"pixel format {fmt}"


# ---------------------------------------------------------------- the picture in the engine
class Planes:
    """A picture as 2-D uint8 planes: space "yuv" (Y, U, V; U and V subsampled by `sub`,
    absent for 4:0:0) or "rgb" (R, G, B and optionally A)."""

    __slots__ = ("space", "planes", "sub")

    def __init__(self, space: str, planes: list, sub: tuple[int, int] | None = None):
        self.space, self.planes, self.sub = space, planes, sub

    @property
    def height(self) -> int:
        return self.planes[0].shape[0]

    @property
    def width(self) -> int:
        return self.planes[0].shape[1]


def grid(buf: np.ndarray, width_stride: int, rows: int, offset: int = 0) -> np.ndarray:
    """`rows` x `width_stride` uint8 view of `buf` starting at byte `offset`."""
    return buf[offset:offset + width_stride * rows].reshape(rows, width_stride)


def read(layout: Layout, buf: np.ndarray, ws: int, hs: int, x: int, y: int, w: int, h: int) -> Planes:
    """The w x h region at (x, y) of a picture in `buf` (views where the layout allows).
    For subsampled formats x, y, w, h are multiples of the subsampling factors."""
    kind = layout.kind
    if kind == "y":
        return Planes("yuv", [grid(buf, ws, hs)[y:y + h, x:x + w]], None)
    if kind == "sp":
        sx, sy = layout.sub
        luma = grid(buf, ws, hs)[y:y + h, x:x + w]
        chroma = grid(buf, ws * 2 // sx, hs // sy, ws * hs)[y // sy:(y + h) // sy, x // sx * 2:(x + w) // sx * 2]
        a, b = chroma[:, 0::2], chroma[:, 1::2]
        return Planes("yuv", [luma, b, a] if layout.vu else [luma, a, b], layout.sub)
    if kind == "sp10":
        words = buf[:layout.size(ws, hs)].view("<u2")
        luma = (words[:ws * hs // 2].reshape(hs, ws // 2)[y:y + h, x:x + w] >> 2).astype(np.uint8)
        chroma = words[ws * hs // 2:].reshape(hs // 2, ws // 2)[y // 2:(y + h) // 2, x:x + w]
        a, b = (chroma[:, 0::2] >> 2).astype(np.uint8), (chroma[:, 1::2] >> 2).astype(np.uint8)
        return Planes("yuv", [luma, b, a] if layout.vu else [luma, a, b], (2, 2))
    rows = grid(buf, ws, hs)[y:y + h]
    if kind == "yuyv":
        px = rows[:, x * 2:(x + w) * 2].reshape(h, w // 2, 4)
        o = layout.order
        luma = np.empty((h, w), np.uint8)
        luma[:, 0::2] = px[:, :, o.index("Y")]
        luma[:, 1::2] = px[:, :, o.index("Y", o.index("Y") + 1)]
        return Planes("yuv", [luma, px[:, :, o.index("U")], px[:, :, o.index("V")]], (2, 1))
    n = layout.bpp
    px = rows[:, x * n:(x + w) * n].reshape(h, w, n)
    if kind == "yuv3":
        return Planes("yuv", [px[:, :, 0], px[:, :, 1], px[:, :, 2]], (1, 1))
    o = layout.order
    planes = [px[:, :, o.index(c)] for c in "RGB"]
    if "A" in o:
        planes.append(px[:, :, o.index("A")])
    return Planes("rgb", planes)


def write(layout: Layout, buf: np.ndarray, ws: int, hs: int, x: int, y: int, pic: Planes) -> None:
    """Write `pic` (already in the layout's space and subsampling) at (x, y)."""
    kind = layout.kind
    h, w = pic.height, pic.width
    if kind in ("y", "sp", "sp10"):
        if kind == "sp10":
            words = buf[:layout.size(ws, hs)].view("<u2")
            words[:ws * hs // 2].reshape(hs, ws // 2)[y:y + h, x:x + w] = pic.planes[0].astype(np.uint16) << 2
        else:
            grid(buf, ws, hs)[y:y + h, x:x + w] = pic.planes[0]
        if kind == "y":
            return
        sx, sy = layout.sub
        u, v = pic.planes[1], pic.planes[2]
        first, second = (v, u) if layout.vu else (u, v)
        if kind == "sp10":
            chroma = words[ws * hs // 2:].reshape(hs // 2, ws // 2)[y // 2:(y + h) // 2, x:x + w]
            chroma[:, 0::2] = first.astype(np.uint16) << 2
            chroma[:, 1::2] = second.astype(np.uint16) << 2
            return
        chroma = grid(buf, ws * 2 // sx, hs // sy, ws * hs)[y // sy:(y + h) // sy, x // sx * 2:(x + w) // sx * 2]
        pair = chroma.reshape(chroma.shape[0], -1, 2)
        pair[:, :, 0] = first
        pair[:, :, 1] = second
        return
    rows = grid(buf, ws, hs)[y:y + h]
    if kind == "yuyv":
        px = rows[:, x * 2:(x + w) * 2].reshape(h, w // 2, 4)
        o = layout.order
        first_y = o.index("Y")
        px[:, :, first_y] = pic.planes[0][:, 0::2]
        px[:, :, o.index("Y", first_y + 1)] = pic.planes[0][:, 1::2]
        px[:, :, o.index("U")] = pic.planes[1]
        px[:, :, o.index("V")] = pic.planes[2]
        return
    n = layout.bpp
    px = rows[:, x * n:(x + w) * n].reshape(h, w, n)
    if kind == "yuv3":
        for i in range(3):
            px[:, :, i] = pic.planes[i]
        return
    o = layout.order
    for i, c in enumerate("RGB"):
        px[:, :, o.index(c)] = pic.planes[i]
    if "A" in o:
        px[:, :, o.index("A")] = pic.planes[3] if len(pic.planes) > 3 else 255
