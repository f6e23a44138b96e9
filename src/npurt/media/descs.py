"""Picture and stream descriptions and the configs of DVPP operations.

These are plain host-side records, as in ACL (which keeps a host copy and sends a snapshot
to the device with every operation): an operation reads a description when it is called,
so changing one afterwards does not change queued work; the task writes the result fields
(`ret_code`, and the real geometry of a decoded picture) back when it has run. The facade
hands them out as int handles from the tables below.
"""
from __future__ import annotations

from ..runtime import HandleTable, InvalidValueError, handle_table

BATCH_MAX_SIZE = 256  # pictures in one batch description
ROI_MAX = 0xFFFF      # ROI and border offsets are uint16 in the device structures
BORDER_COMPONENTS = 4


class PicDesc:
    """acldvppPicDesc: where a picture is and how it is laid out. All fields start at 0
    (format 0 is PIXEL_FORMAT_YUV_400)."""

    __slots__ = ("data", "size", "format", "width", "height", "width_stride", "height_stride", "ret_code",
                 "batch")

    def __init__(self, batch=None):
        self.data = self.size = self.format = self.width = self.height = 0
        self.width_stride = self.height_stride = self.ret_code = 0
        self.batch = batch  # the BatchPicDesc that owns it, if any

    def __repr__(self) -> str:
        return (f"<PicDesc format {self.format} {self.width}x{self.height} stride {self.width_stride}x"
                f"{self.height_stride} data 0x{self.data:x} size {self.size}>")


class BatchPicDesc:
    """acldvppBatchPicDesc: `batch_size` picture descriptions owned by the batch."""

    __slots__ = ("pics", "handles")

    def __init__(self, batch_size: int):
        if not 1 <= batch_size <= BATCH_MAX_SIZE:
            raise InvalidValueError(f"batch size must be in [1, {BATCH_MAX_SIZE}], got {batch_size}")
        self.pics = [PicDesc(self) for _ in range(batch_size)]
        self.handles: list[int] = []  # facade handles of the pictures, made on first get_pic_desc


class StreamDesc:
    """acldvppStreamDesc: a coded video stream buffer (VDEC input / VENC output)."""

    __slots__ = ("data", "size", "format", "timestamp", "ret_code", "eos")

    def __init__(self):
        self.data = self.size = self.format = self.timestamp = self.ret_code = self.eos = 0


class RoiConfig:
    """acldvppRoiConfig: an inclusive pixel rectangle (left/top even, right/bottom odd)."""

    __slots__ = ("left", "right", "top", "bottom")

    def __init__(self, left: int = 0, right: int = 0, top: int = 0, bottom: int = 0):
        self.left, self.right, self.top, self.bottom = left, right, top, bottom

    @property
    def width(self) -> int:
        return self.right - self.left + 1

    @property
    def height(self) -> int:
        return self.bottom - self.top + 1

    def __repr__(self) -> str:
        return f"<RoiConfig left {self.left} right {self.right} top {self.top} bottom {self.bottom}>"


class ResizeConfig:
    """acldvppResizeConfig: the interpolation (0 = the default algorithm)."""

    __slots__ = ("interpolation",)

    def __init__(self):
        self.interpolation = 0


class BorderConfig:
    """acldvppBorderConfig: border type, sizes (uint16) and the 4 constant-border values."""

    __slots__ = ("value", "border_type", "top", "bottom", "left", "right")

    def __init__(self):
        self.value = [0.0] * BORDER_COMPONENTS
        self.border_type = self.top = self.bottom = self.left = self.right = 0


class JpegeConfig:
    """acldvppJpegeConfig: the encoding level (quality 0..100; 0 encodes like 100)."""

    __slots__ = ("level",)

    def __init__(self):
        self.level = 0


# ---------------------------------------------------------------- handles
channels = handle_table("dvpp channel desc")
pics = handle_table("dvpp pic desc")
batches = handle_table("dvpp batch pic desc")
rois = handle_table("dvpp roi config")
resizes = handle_table("dvpp resize config")
borders = handle_table("dvpp border config")
jpeges = handle_table("dvpp jpege config")
stream_descs = handle_table("dvpp stream desc")


def lookup(table: HandleTable, handle, what: str):
    """The object behind a handle; ACL_ERROR_INVALID_PARAM (as ACL returns for a null
    description) naming what is wrong otherwise."""
    obj = table.lookup(handle)
    if obj is not None:
        return obj
    if handle == 0:
        raise InvalidValueError(f"{what} is null")
    raise InvalidValueError(f"{what}: {table._error(handle).message}")
