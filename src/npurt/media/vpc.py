"""VPC, DVPP's vision pre-processing core: resize, crop, paste, colour conversion, borders,
pyramid down-sampling, and the batch forms, as tasks of a stream.

Every operation is checked when it is called (geometry.py: formats, sizes, strides, ROIs,
scale factors, DVPP memory) and runs as one `DvppTask`. A crop reads the ROI of the input,
converts it to the output's colour space if needed (channel CSC matrix), scales each plane
to the output size with the resize config's interpolation (resample.py), and writes it to
the output picture (or into its paste ROI, leaving the rest of the output as it was).
Planes scale at their own resolution: the chroma of a YUV 4:2:0 input is scaled from
(w/2, h/2) to (out_w/2, out_h/2).

The operation set is V100's (Atlas 300I-class: resize, crop, crop-and-paste and their batch
forms, NV12/NV21 output) plus V200's (convert colour, pyramid down, make border, batch
crop-resize-make-border); see docs/compatibility.md.
"""
from __future__ import annotations

import numpy as np

from ..runtime import FeatureNotSupportedError, InvalidValueError, stream_of
from . import colour, constants as F, geometry, resample
from .channel import ChannelDesc
from .descs import BatchPicDesc, BorderConfig, PicDesc, ResizeConfig, RoiConfig
from .layout import Layout, Planes, read, write
from .task import DvppTask, Picture, enqueue

_YUV_SP = {F.PIXEL_FORMAT_YUV_SEMIPLANAR_420, F.PIXEL_FORMAT_YVU_SEMIPLANAR_420, F.PIXEL_FORMAT_YUV_SEMIPLANAR_422,
           F.PIXEL_FORMAT_YVU_SEMIPLANAR_422, F.PIXEL_FORMAT_YUV_SEMIPLANAR_444, F.PIXEL_FORMAT_YVU_SEMIPLANAR_444}
_PACKED = {F.PIXEL_FORMAT_YUYV_PACKED_422, F.PIXEL_FORMAT_UYVY_PACKED_422, F.PIXEL_FORMAT_YVYU_PACKED_422,
           F.PIXEL_FORMAT_VYUY_PACKED_422, F.PIXEL_FORMAT_YUV_PACKED_444}
_RGB = {F.PIXEL_FORMAT_RGB_888, F.PIXEL_FORMAT_BGR_888, F.PIXEL_FORMAT_ARGB_8888, F.PIXEL_FORMAT_ABGR_8888,
        F.PIXEL_FORMAT_RGBA_8888, F.PIXEL_FORMAT_BGRA_8888}
_SP440 = {F.PIXEL_FORMAT_YUV_SEMIPLANAR_440, F.PIXEL_FORMAT_YVU_SEMIPLANAR_440}
NV = {F.PIXEL_FORMAT_YUV_SEMIPLANAR_420, F.PIXEL_FORMAT_YVU_SEMIPLANAR_420}

INPUT_FORMATS = {F.PIXEL_FORMAT_YUV_400, *_YUV_SP, *_PACKED, *_RGB, *_SP440,
                 F.PIXEL_FORMAT_YUV_SEMI_PLANNER_420_10BIT, F.PIXEL_FORMAT_YVU_SEMI_PLANNER_420_10BIT}
OUTPUT_FORMATS = NV
CONVERT_OUTPUT_FORMATS = {F.PIXEL_FORMAT_YUV_400, *NV, F.PIXEL_FORMAT_YUV_SEMIPLANAR_422,
                          F.PIXEL_FORMAT_YVU_SEMIPLANAR_422, F.PIXEL_FORMAT_YUV_PACKED_444, *_RGB}
BORDER_INPUT_FORMATS = {F.PIXEL_FORMAT_YUV_400, *_YUV_SP, *_PACKED, *_RGB, *_SP440}
BORDER_OUTPUT_FORMATS = CONVERT_OUTPUT_FORMATS
PYR_DOWN_FORMATS = {F.PIXEL_FORMAT_YUV_400}
MAX_INTERPOLATION = 4
BATCH_ROI_MAX = 256
_NUMPY_PAD = {F.BORDER_REPLICATE: "edge", F.BORDER_REFLECT: "symmetric", F.BORDER_REFLECT_101: "reflect"}


# ---------------------------------------------------------------- the pixel work
def render(src: Planes, out: Layout, w: int, h: int, interpolation: int, csc: int) -> Planes:
    """`src` scaled to w x h in the colour space and chroma subsampling of `out`."""
    if out.space == "rgb":
        src = colour.convert(src, "rgb", None, csc)
        return Planes("rgb", [resample.resize(p, h, w, interpolation) for p in src.planes])
    if src.space == "rgb":
        src = colour.convert(src, "yuv", (1, 1), csc)
    y = resample.resize(src.planes[0], h, w, interpolation)
    if out.sub is None:
        return Planes("yuv", [y])
    cw, ch = w // out.sub[0], h // out.sub[1]
    if len(src.planes) == 1:
        grey = np.full((ch, cw), 128, np.uint8)
        return Planes("yuv", [y, grey, grey], out.sub)
    u, v = (resample.resize(p, ch, cw, interpolation) for p in src.planes[1:3])
    return Planes("yuv", [y, u, v], out.sub)


def pad(pic: Planes, out: Layout, border: BorderConfig) -> Planes:
    """`pic` with the border of `border` around it (sizes in pixels of the full picture)."""
    sx, sy = pic.sub or (1, 1)
    if pic.space == "rgb":
        order = out.order
        values = [border.value[order.index(c)] if c in order else 255.0 for c in "RGBA"]
    else:
        values = border.value[:3]
    planes = []
    for i, p in enumerate(pic.planes):
        fx, fy = (1, 1) if i == 0 or pic.space == "rgb" else (sx, sy)
        widths = ((border.top // fy, border.bottom // fy), (border.left // fx, border.right // fx))
        if border.border_type == F.BORDER_CONSTANT:
            value = int(min(max(round(values[i]), 0), 255))
            planes.append(np.pad(p, widths, mode="constant", constant_values=value))
        else:
            planes.append(np.pad(p, widths, mode=_NUMPY_PAD[border.border_type]))
    return Planes(pic.space, planes, pic.sub)


def pyr_down_plane(plane: np.ndarray) -> np.ndarray:
    """Gaussian pyramid step: the 5x5 kernel [1 4 6 4 1]^2 / 256 (border reflect-101), then
    every other row and column (output ceil(w/2) x ceil(h/2))."""
    k = np.array([1, 4, 6, 4, 1], np.uint32)
    p = np.pad(plane.astype(np.uint32), 2, mode="reflect")
    h, w = plane.shape
    rows = sum(k[i] * p[i:i + h:2] for i in range(5))             # vertical taps at even rows
    cols = sum(k[i] * rows[:, i:i + w:2] for i in range(5))       # horizontal taps at even columns
    return ((cols + 128) >> 8).astype(np.uint8)


class Job:
    """One crop -> scale -> (border) -> paste of a VPC operation."""

    __slots__ = ("src", "crop", "dst", "area", "interpolation", "csc", "border")

    def __init__(self, src: Picture, crop: tuple, dst: Picture, area: tuple, interpolation: int, csc: int,
                 border: BorderConfig | None = None):
        self.src, self.crop, self.dst, self.area = src, crop, dst, area
        self.interpolation, self.csc, self.border = interpolation, csc, border

    def run(self, task: DvppTask) -> None:
        s, d = self.src, self.dst
        x, y, w, h = self.crop
        pic = read(s.layout, s.view(task), s.ws, s.hs, x, y, w, h)
        ax, ay, aw, ah = self.area
        b = self.border
        if b is None:
            out = render(pic, d.layout, aw, ah, self.interpolation, self.csc)
        else:
            inner = render(pic, d.layout, aw - b.left - b.right, ah - b.top - b.bottom, self.interpolation, self.csc)
            out = pad(inner, d.layout, b)
        write(d.layout, d.view(task), d.ws, d.hs, ax, ay, out)


# ---------------------------------------------------------------- checks shared by the operations
def _stream_and_channel(channel: ChannelDesc, stream, block: int = F.DVPP_CHNMODE_VPC):
    s = stream_of(stream)
    channel.require(block, s)
    return s


def _interpolation(cfg: ResizeConfig | None) -> int:
    if cfg is None:
        return 0
    if cfg.interpolation > MAX_INTERPOLATION:
        raise FeatureNotSupportedError(f"interpolation {cfg.interpolation} is not supported (0..4)")
    return cfg.interpolation


def _crop(src: Picture, roi: RoiConfig | None, role: str = "crop") -> tuple:
    if roi is None:
        return 0, 0, src.width, src.height
    geometry.check_roi(roi, src.width, src.height, role)
    return roi.left, roi.top, roi.width, roi.height


def _paste(dst: Picture, roi: RoiConfig | None) -> tuple:
    if roi is None:
        return 0, 0, dst.width, dst.height
    geometry.check_roi(roi, dst.width, dst.height, "paste")
    return roi.left, roi.top, roi.width, roi.height


def _submit(stream, kind: str, jobs: list[Job], outputs: list[PicDesc]) -> int:
    def work(task: DvppTask) -> None:
        for job in jobs:
            job.run(task)
    spans = [p.span for job in jobs for p in (job.src, job.dst)]
    touched = [a for job in jobs for a in (job.src.access("r"), job.dst.access("w"))]
    what = f"{len(jobs)} picture{'s' if len(jobs) > 1 else ''}"
    return enqueue(stream, DvppTask(kind, what, work, outputs, touched), spans)


def _single(kind: str, channel: ChannelDesc, src: PicDesc, dst: PicDesc, crop: RoiConfig | None,
            paste: RoiConfig | None, cfg: ResizeConfig | None, stream, cfg_required: bool = False) -> int:
    s = _stream_and_channel(channel, stream)
    geometry.check_format(src.format, INPUT_FORMATS, "input")
    geometry.check_format(dst.format, OUTPUT_FORMATS, "output")
    if cfg_required:
        _need(cfg, "resize config")
    interpolation = _interpolation(cfg)
    src_pic = geometry.picture(src, "input", INPUT_FORMATS, s.device, output=False)
    dst_pic = geometry.picture(dst, "output", OUTPUT_FORMATS, s.device, output=True)
    area_in = _crop(src_pic, crop)
    area_out = _paste(dst_pic, paste)
    geometry.check_scale(area_in[2], area_in[3], area_out[2], area_out[3])
    job = Job(src_pic, area_in, dst_pic, area_out, interpolation, channel.csc_matrix)
    return _submit(s, kind, [job], [dst])


# ---------------------------------------------------------------- single-picture operations
def resize(channel: ChannelDesc, src: PicDesc, dst: PicDesc, cfg: ResizeConfig, stream=None) -> int:
    """Scale the whole input picture to the output picture's size."""
    return _single("dvpp_vpc_resize", channel, src, dst, None, None, cfg, stream, True)


def crop(channel: ChannelDesc, src: PicDesc, dst: PicDesc, crop_area: RoiConfig, stream=None) -> int:
    """Crop `crop_area` and scale it to the output picture's size."""
    return _single("dvpp_vpc_crop", channel, src, dst, _need(crop_area, "crop area"), None, None, stream)


def crop_resize(channel, src, dst, crop_area, cfg, stream=None) -> int:
    """crop with an explicit interpolation."""
    return _single("dvpp_vpc_crop_resize", channel, src, dst, _need(crop_area, "crop area"), None, cfg, stream,
                   True)


def crop_and_paste(channel, src, dst, crop_area, paste_area, stream=None) -> int:
    """Crop `crop_area`, scale it to `paste_area`'s size and write it there; the rest of
    the output picture keeps its content."""
    return _single("dvpp_vpc_crop_and_paste", channel, src, dst, _need(crop_area, "crop area"),
                   _need(paste_area, "paste area"), None, stream)


def crop_resize_paste(channel, src, dst, crop_area, paste_area, cfg, stream=None) -> int:
    """crop_and_paste with an explicit interpolation."""
    return _single("dvpp_vpc_crop_resize_paste", channel, src, dst, _need(crop_area, "crop area"),
                   _need(paste_area, "paste area"), cfg, stream, True)


def convert_color(channel: ChannelDesc, src: PicDesc, dst: PicDesc, stream=None) -> int:
    """Convert the input picture to the output's pixel format (same size; chroma is
    averaged down or repeated up, colours use the channel's CSC matrix). The output's width,
    height and strides may be 0: they are then taken from the input (strides the smallest
    the output format allows) and written back into the output description."""
    s = _stream_and_channel(channel, stream)
    geometry.check_format(src.format, INPUT_FORMATS, "input")
    out_layout = geometry.check_format(dst.format, CONVERT_OUTPUT_FORMATS, "output")
    if 0 in (src.width, src.height, src.width_stride, src.height_stride):
        raise InvalidValueError(f"the input picture's width, height and strides must be set, got {src.width} x "
                                f"{src.height}, stride {src.width_stride} x {src.height_stride}")
    if dst.width not in (0, src.width) or dst.height not in (0, src.height):
        raise InvalidValueError(f"convert colour keeps the size: the output is {dst.width} x {dst.height}, the input "
                                f"{src.width} x {src.height} (set the output's width and height to 0 or to the input's)")
    src_pic = geometry.picture(src, "input", INPUT_FORMATS, s.device, output=False, align_down=False)
    w, h = src.width, src.height
    ws = dst.width_stride or out_layout.min_width_stride(w)
    hs = dst.height_stride or h + h % 2
    sx, sy = out_layout.sub or (1, 1)
    if w % sx or h % sy:
        raise InvalidValueError(f"a {w} x {h} picture cannot be converted to {out_layout.name}, which needs the "
                                f"width to be a multiple of {sx} and the height of {sy}")
    geometry.check_strides(out_layout, w, h, ws, hs, "output")
    dst_pic = geometry.locate(dst, out_layout, w, h, ws, hs, "output", s.device)
    csc = channel.csc_matrix

    def work(task: DvppTask) -> None:
        pic = read(src_pic.layout, src_pic.view(task), src_pic.ws, src_pic.hs, 0, 0, w, h)
        write(out_layout, dst_pic.view(task), ws, hs, 0, 0, colour.convert(pic, out_layout.space, out_layout.sub, csc))
        dst.width, dst.height, dst.width_stride, dst.height_stride = w, h, ws, hs
    return enqueue(s, DvppTask("dvpp_vpc_convert_color", "1 picture", work, [dst],
                               [src_pic.access("r"), dst_pic.access("w")]), [src_pic.span, dst_pic.span])


def pyr_down(channel: ChannelDesc, src: PicDesc, dst: PicDesc, reserve=None, stream=None) -> int:
    """Gaussian pyramid down-sampling of a YUV 4:0:0 picture to ceil(w/2) x ceil(h/2)."""
    if reserve not in (None, 0):
        raise InvalidValueError("pyr_down: reserve must be null (0)")
    s = _stream_and_channel(channel, stream)
    geometry.check_format(src.format, PYR_DOWN_FORMATS, "input")
    geometry.check_format(dst.format, PYR_DOWN_FORMATS, "output")
    src_pic = geometry.picture(src, "input", PYR_DOWN_FORMATS, s.device, output=False)
    want = ((src.width + 1) // 2, (src.height + 1) // 2)
    if (dst.width, dst.height) != want:
        raise InvalidValueError(f"pyr_down of a {src.width} x {src.height} picture gives {want[0]} x {want[1]}; "
                                f"the output description says {dst.width} x {dst.height}")
    dst_pic = geometry.picture(dst, "output", PYR_DOWN_FORMATS, s.device, output=True)

    def work(task: DvppTask) -> None:
        plane = read(src_pic.layout, src_pic.view(task), src_pic.ws, src_pic.hs, 0, 0, src.width, src.height)
        out = Planes("yuv", [pyr_down_plane(plane.planes[0])])
        write(dst_pic.layout, dst_pic.view(task), dst_pic.ws, dst_pic.hs, 0, 0, out)
    return enqueue(s, DvppTask("dvpp_vpc_pyr_down", "1 picture", work, [dst],
                               [src_pic.access("r"), dst_pic.access("w")]), [src_pic.span, dst_pic.span])


def make_border(channel: ChannelDesc, src: PicDesc, dst: PicDesc, border: BorderConfig, stream=None) -> int:
    """Copy the input into the output with a border around it: the output is
    (left + width + right) x (top + height + bottom)."""
    s = _stream_and_channel(channel, stream)
    border = _need(border, "border config")
    geometry.check_format(src.format, BORDER_INPUT_FORMATS, "input")
    out_layout = geometry.check_format(dst.format, BORDER_OUTPUT_FORMATS, "output")
    _check_border(border, out_layout)
    src_pic = geometry.picture(src, "input", BORDER_INPUT_FORMATS, s.device, output=False, align_down=False)
    want = (src.width + border.left + border.right, src.height + border.top + border.bottom)
    if (dst.width, dst.height) != want:
        raise InvalidValueError(f"make border of a {src.width} x {src.height} picture with borders (top {border.top}, "
                                f"bottom {border.bottom}, left {border.left}, right {border.right}) gives "
                                f"{want[0]} x {want[1]}; the output description says {dst.width} x {dst.height}")
    dst_pic = geometry.picture(dst, "output", BORDER_OUTPUT_FORMATS, s.device, output=True)
    job = Job(src_pic, (0, 0, src.width, src.height), dst_pic, (0, 0, dst.width, dst.height), 0,
              channel.csc_matrix, _copy_border(border))
    return _submit(s, "dvpp_vpc_make_border", [job], [dst])


def _check_border(border: BorderConfig, out: Layout) -> None:
    if border.border_type not in (F.BORDER_CONSTANT, *_NUMPY_PAD):
        raise InvalidValueError(f"border type {border.border_type} is not an acldvppBorderType (0..3)")
    sx, sy = out.sub or (1, 1)
    if border.left % sx or border.right % sx or border.top % sy or border.bottom % sy:
        raise InvalidValueError(f"{out.name} needs left/right borders that are multiples of {sx} and top/bottom "
                                f"borders multiples of {sy}; got top {border.top}, bottom {border.bottom}, left "
                                f"{border.left}, right {border.right}")


def _copy_border(border: BorderConfig) -> BorderConfig:
    snap = BorderConfig()
    snap.value = list(border.value)
    snap.border_type, snap.top, snap.bottom = border.border_type, border.top, border.bottom
    snap.left, snap.right = border.left, border.right
    return snap


def _need(obj, what: str):
    if obj is None:
        raise InvalidValueError(f"the {what} is null")
    return obj


# ---------------------------------------------------------------- batch operations
def _batch(kind: str, channel: ChannelDesc, src: BatchPicDesc, roi_nums: list[int], dst: BatchPicDesc,
           crops: list, pastes: list | None, cfg: ResizeConfig | None, borders: list | None, stream) -> int:
    s = _stream_and_channel(channel, stream)
    size = len(roi_nums)
    if size == 0 or size > len(src.pics):
        raise InvalidValueError(f"roi_nums has {size} entries; it needs one per source picture used, at least 1 "
                                f"and at most the source batch size ({len(src.pics)})")
    interpolation = _interpolation(cfg)
    for i, pic in enumerate(src.pics):
        geometry.check_format(pic.format, INPUT_FORMATS, f"input picture {i}")
    out_formats = OUTPUT_FORMATS if borders is None else BORDER_OUTPUT_FORMATS
    for i, pic in enumerate(dst.pics):
        geometry.check_format(pic.format, out_formats, f"output picture {i}")
    for i, n in enumerate(roi_nums):
        if not 1 <= n <= 0xFFFF:
            raise InvalidValueError(f"roi_nums[{i}] is {n}; each source picture needs 1 to 65535 areas")
    total = sum(roi_nums)
    if total > BATCH_ROI_MAX:
        raise InvalidValueError(f"the batch asks for {total} areas; DVPP takes 1 to {BATCH_ROI_MAX} per call")
    if len(crops) < total:
        raise InvalidValueError(f"roi_nums add up to {total} areas but {len(crops)} crop areas were given")
    for name, lst in (("paste areas", pastes), ("border configs", borders)):
        if lst is not None and len(lst) < total:
            raise InvalidValueError(f"roi_nums add up to {total} areas but {len(lst)} {name} were given")
    if len(dst.pics) < total:
        raise InvalidValueError(f"roi_nums add up to {total} areas but the output batch holds {len(dst.pics)} pictures")
    jobs, outputs, k = [], [], 0
    for i, n in enumerate(roi_nums):
        src_pic = geometry.picture(src.pics[i], f"input picture {i}", INPUT_FORMATS, s.device, output=False)
        for _ in range(n):
            crop_roi = _need(crops[k], f"crop area {k}")
            dst_desc = dst.pics[k]
            dst_pic = geometry.picture(dst_desc, f"output picture {k}", out_formats, s.device, output=True)
            area_in = _crop(src_pic, crop_roi, f"crop area {k}")
            border = None
            if pastes is not None:
                area_out = _paste(dst_pic, _need(pastes[k], f"paste area {k}"))
            else:
                area_out = (0, 0, dst_pic.width, dst_pic.height)
            inner_w, inner_h = area_out[2], area_out[3]
            if borders is not None:
                border = _copy_border(_need(borders[k], f"border config {k}"))
                _check_border(border, dst_pic.layout)
                inner_w -= border.left + border.right
                inner_h -= border.top + border.bottom
                if inner_w < geometry.MIN_WIDTH or inner_h < geometry.MIN_HEIGHT:
                    raise InvalidValueError(f"the borders of area {k} leave {inner_w} x {inner_h} of its "
                                            f"{area_out[2]} x {area_out[3]} output for the picture; DVPP needs at "
                                            f"least {geometry.MIN_WIDTH} x {geometry.MIN_HEIGHT}")
            geometry.check_scale(area_in[2], area_in[3], inner_w, inner_h, f"area {k}")
            jobs.append(Job(src_pic, area_in, dst_pic, area_out, interpolation, channel.csc_matrix, border))
            outputs.append(dst_desc)
            k += 1
    return _submit(s, kind, jobs, outputs)


def batch_crop(channel, src, roi_nums, dst, crops, stream=None) -> int:
    return _batch("dvpp_vpc_batch_crop", channel, src, roi_nums, dst, crops, None, None, None, stream)


def batch_crop_resize(channel, src, roi_nums, dst, crops, cfg, stream=None) -> int:
    return _batch("dvpp_vpc_batch_crop_resize", channel, src, roi_nums, dst, crops, None,
                  _need(cfg, "resize config"), None, stream)


def batch_crop_and_paste(channel, src, roi_nums, dst, crops, pastes, stream=None) -> int:
    return _batch("dvpp_vpc_batch_crop_and_paste", channel, src, roi_nums, dst, crops, pastes, None, None, stream)


def batch_crop_resize_paste(channel, src, roi_nums, dst, crops, pastes, cfg, stream=None) -> int:
    return _batch("dvpp_vpc_batch_crop_resize_paste", channel, src, roi_nums, dst, crops, pastes,
                  _need(cfg, "resize config"), None, stream)


def batch_crop_resize_make_border(channel, src, roi_nums, dst, crops, borders, cfg, stream=None) -> int:
    """Each crop is scaled to its output picture's size less the borders of its border
    config, placed at (left, top) and surrounded by the border."""
    return _batch("dvpp_vpc_batch_crop_resize_make_border", channel, src, roi_nums, dst, crops, None,
                  _need(cfg, "resize config"), borders, stream)
