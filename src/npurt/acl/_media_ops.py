"""acl.media: the VPC operations and the JPEG/PNG codecs (asynchronous, on a stream).

Each function converts handles and calls npurt.media (vpc, jpegd, pngd, jpege), where the
checks live; the batch functions first check their list arguments as the real wrapper
does (TypeError for a non-list, ValueError for counts outside 1..256 where it checks).
"""
from __future__ import annotations

from ..media import descs as D, jpegd, jpege, pngd, vpc
from ._media_descs import channel_of, media, parse, pic_of
from ._wrap import fail, stream_of

_MAX_CROP = 256


def _opt(table, h, what):
    return None if h == 0 else D.lookup(table, h, what)


def _roi(h, what="crop area"):
    return _opt(D.rois, h, f"the {what}")


def _cfg(h):
    return _opt(D.resizes, h, "the resize config")


def _batch(h, what):
    return D.lookup(D.batches, h, f"the {what} batch picture description")


# ---------------------------------------------------------------- VPC, one picture
@media("kkkkk")
def dvpp_vpc_resize_async(channel_desc, input_pic_desc, output_pic_desc, resize_config, stream):
    """Scale the whole input picture to the output picture's width x height."""
    vpc.resize(channel_of(channel_desc), pic_of(input_pic_desc), pic_of(output_pic_desc), _cfg(resize_config),
               stream_of(stream))


@media("kkkkk")
def dvpp_vpc_crop_async(channel_desc, input_pic_desc, output_pic_desc, crop_area, stream):
    """Crop `crop_area` and scale it to the output picture's size."""
    vpc.crop(channel_of(channel_desc), pic_of(input_pic_desc), pic_of(output_pic_desc), _roi(crop_area),
             stream_of(stream))


@media("kkkkkk", bang=False)
def dvpp_vpc_crop_resize_async(channel_desc, input_pic_desc, output_pic_desc, crop_area, resize_config, stream):
    vpc.crop_resize(channel_of(channel_desc), pic_of(input_pic_desc), pic_of(output_pic_desc), _roi(crop_area),
                    _cfg(resize_config), stream_of(stream))


@media("kkkkkk")
def dvpp_vpc_crop_and_paste_async(channel_desc, input_pic_desc, output_pic_desc, crop_area, paste_area, stream):
    """Crop, scale to the paste area's size and write into the paste area of the output
    (the rest of the output picture keeps its content)."""
    vpc.crop_and_paste(channel_of(channel_desc), pic_of(input_pic_desc), pic_of(output_pic_desc),
                       _roi(crop_area), _roi(paste_area, "paste area"), stream_of(stream))


@media("kkkkkkk", bang=False)
def dvpp_vpc_crop_resize_paste_async(channel_desc, input_pic_desc, output_pic_desc, crop_area, paste_area,
                                     resize_config, stream):
    vpc.crop_resize_paste(channel_of(channel_desc), pic_of(input_pic_desc), pic_of(output_pic_desc),
                          _roi(crop_area), _roi(paste_area, "paste area"), _cfg(resize_config), stream_of(stream))


@media("kkkk")
def dvpp_vpc_convert_color_async(channel_desc, input_pic_desc, output_pic_desc, stream):
    """Convert the picture to the output's pixel format (V200-class operation)."""
    vpc.convert_color(channel_of(channel_desc), pic_of(input_pic_desc), pic_of(output_pic_desc), stream_of(stream))


@media("kkkkk")
def dvpp_vpc_pyr_down_async(channel_desc, input_pic_desc, output_pic_desc, reserve, stream):
    """Gaussian pyramid down-sampling of a YUV 4:0:0 picture; `reserve` must be 0."""
    vpc.pyr_down(channel_of(channel_desc), pic_of(input_pic_desc), pic_of(output_pic_desc), reserve,
                 stream_of(stream))


@media("kkkkk")
def dvpp_vpc_make_border_async(channel_desc, input_pic_desc, output_pic_desc, border_config, stream):
    """Copy the picture into the output with a border (present in pyACL builds with USE_MDL)."""
    vpc.make_border(channel_of(channel_desc), pic_of(input_pic_desc), pic_of(output_pic_desc),
                    _opt(D.borders, border_config, "the border config"), stream_of(stream))


# ---------------------------------------------------------------- VPC, batches
def _check_lists(lists: dict, message: str) -> None:
    if not all(isinstance(v, list) for v in lists.values()):
        raise TypeError(message)


def _ints(values: list) -> list[int]:
    """A list of ints as the real wrapper converts it (TypeError for a non-int element)."""
    if not all(isinstance(v, int) for v in values):
        raise TypeError("the list argument is not list of int")
    return values


def _roi_nums_up_to_256(values: list) -> list[int]:
    """roi_nums as ProcessArray converts them: any entry that is not an int in 0..256
    is a ValueError."""
    for v in values:
        if not isinstance(v, int) or not 0 <= v <= _MAX_CROP:
            raise ValueError("number of crop areas must be between 1 and 256")
    return values


def _count_check(roi_nums: list, crops: list, pastes: list | None = None) -> None:
    if not (0 < len(roi_nums) <= _MAX_CROP and 0 < len(crops) <= _MAX_CROP
            and (pastes is None or len(pastes) == len(crops))):
        raise ValueError("number of crop areas must be between 1 and 256")


def _areas(handles: list, table, what: str) -> list:
    return [None if h == 0 else D.lookup(table, h, f"{what} {i}") for i, h in enumerate(handles)]


def dvpp_vpc_batch_crop_async(*args):
    """(dst_batch, ret): crop roi_nums[i] areas of source picture i into consecutive output pictures."""
    channel, src, roi_nums, dst, crops, stream = parse("kkOkOk", args,
                                                       "acl.media.dvpp_vpc_batch_crop_async args parse failed")
    _check_lists({"r": roi_nums, "c": crops}, "argument 3 or 5 is not list")
    _count_check(roi_nums, crops)
    _roi_nums_up_to_256(roi_nums)
    _ints(crops)
    try:
        vpc.batch_crop(channel_of(channel), _batch(src, "source"), roi_nums, _batch(dst, "output"),
                       _areas(crops, D.rois, "crop area"), stream_of(stream))
        return dst, 0
    except Exception as exc:  # noqa: BLE001
        return dst, fail(exc, "acl.media.dvpp_vpc_batch_crop_async")


def dvpp_vpc_batch_crop_and_paste_async(*args):
    """(dst_batch, ret): batch crop, each crop scaled into its paste area of its output picture."""
    channel, src, roi_nums, dst, crops, pastes, stream = parse(
        "kkOkOOk", args, "acl.media.dvpp_vpc_batch_crop_and_paste_async args parse failed")
    _check_lists({"r": roi_nums, "c": crops, "p": pastes}, "argument 3, 5 or 6 is not list")
    _count_check(roi_nums, crops, pastes)
    _roi_nums_up_to_256(roi_nums)
    _ints(crops)
    _ints(pastes)
    try:
        vpc.batch_crop_and_paste(channel_of(channel), _batch(src, "source"), roi_nums, _batch(dst, "output"),
                                 _areas(crops, D.rois, "crop area"), _areas(pastes, D.rois, "paste area"),
                                 stream_of(stream))
        return dst, 0
    except Exception as exc:  # noqa: BLE001
        return dst, fail(exc, "acl.media.dvpp_vpc_batch_crop_and_paste_async")


def _unsigned(values: list) -> list[int]:
    _ints(values)
    if any(v < 0 for v in values):
        raise ValueError("PyLong_AsUnsignedLong failed")
    return values


def _batch_fn(name: str, fmt: str, not_list: tuple[str, ...], engine, pastes_at=None, borders_at=None):
    """A batch function returning ret only (the wrapper checks list types, not counts)."""
    where = f"acl.media.{name}"

    def fn(*args):
        values = parse(fmt, args, f"{where} args parse failed")
        roi_nums, crops = values[2], values[4]
        if not isinstance(roi_nums, list):
            raise TypeError(not_list[0])
        _unsigned(roi_nums)
        if not isinstance(crops, list):
            raise TypeError(not_list[1])
        _ints(crops)
        extra = values[5] if len(fmt) == 8 else None
        if extra is not None:
            if not isinstance(extra, list):
                raise TypeError(not_list[2])
            _ints(extra)
        try:
            channel, src, dst = channel_of(values[0]), _batch(values[1], "source"), _batch(values[3], "output")
            crop_objs = _areas(crops, D.rois, "crop area")
            cfg, stream = _cfg(values[-2]), stream_of(values[-1])
            if pastes_at:
                engine(channel, src, roi_nums, dst, crop_objs, _areas(extra, D.rois, "paste area"), cfg, stream)
            elif borders_at:
                engine(channel, src, roi_nums, dst, crop_objs, _areas(extra, D.borders, "border config"), cfg, stream)
            else:
                engine(channel, src, roi_nums, dst, crop_objs, cfg, stream)
            return 0
        except Exception as exc:  # noqa: BLE001
            return fail(exc, where)

    fn.__name__ = fn.__qualname__ = name
    return fn


dvpp_vpc_batch_crop_resize_async = _batch_fn(
    "dvpp_vpc_batch_crop_resize_async", "kkOkOkk", ("argument 3 is not list", "argument 5 is not list"),
    vpc.batch_crop_resize)
dvpp_vpc_batch_crop_resize_paste_async = _batch_fn(
    "dvpp_vpc_batch_crop_resize_paste_async", "kkOkOOkk",
    ("argument 3 is not list", "argument 5 is not list", "argument 6 is not list"), vpc.batch_crop_resize_paste,
    pastes_at=True)
dvpp_vpc_batch_crop_resize_make_border_async = _batch_fn(
    "dvpp_vpc_batch_crop_resize_make_border_async", "kkOkOOkk",
    ("the third argument is not list", "the fifth argument is not list", "the sixth argument is not list"),
    vpc.batch_crop_resize_make_border, borders_at=True)
dvpp_vpc_batch_crop_resize_async.__doc__ = "batch crop with an explicit interpolation; returns ret."
dvpp_vpc_batch_crop_resize_paste_async.__doc__ = "batch crop-and-paste with an explicit interpolation."
dvpp_vpc_batch_crop_resize_make_border_async.__doc__ = (
    "Each crop is scaled to its output picture less the borders of its border config and framed by them.")


# ---------------------------------------------------------------- JPEG
@media("kkIkk", bang=False)
def dvpp_jpeg_decode_async(channel_desc, data, size, output_pic_desc, stream):
    """Decode the `size`-byte JPEG at `data` (DVPP memory) into the output picture."""
    jpegd.decode(channel_of(channel_desc), data, size, pic_of(output_pic_desc), stream_of(stream))


@media("kI", "many", (0, 0, 0), bang=False)
def dvpp_jpeg_get_image_info(data, size):
    """(width, height, components, ret) of a JPEG in host memory."""
    info = jpegd.image_info(data, size)
    return info.width, info.height, info.components


@media("kI", "many", (0, 0, 0, 1000), bang=False)
def dvpp_jpeg_get_image_info_v2(data, size):
    """(width, height, components, acldvppJpegFormat, ret) of a JPEG in host memory."""
    info = jpegd.image_info(data, size)
    return info.width, info.height, info.components, info.jpeg_format


@media("kIi", "one", 0, bang=False)
def dvpp_jpeg_predict_dec_size(data, size, output_pixel_format):
    """(bytes the decoded picture needs in `output_pixel_format`, ret)."""
    return jpegd.predict_dec_size(data, size, output_pixel_format)


@media("kkkkkk", bang=False)
def dvpp_jpeg_encode_async(channel_desc, input_pic_desc, data, size_ptr, jpege_config, stream):
    """Encode the picture as JPEG into `data`; `size_ptr` is the address of a uint32 in host
    memory holding the buffer size, replaced by the JPEG's size once the task has run."""
    jpege.encode(channel_of(channel_desc), pic_of(input_pic_desc), data, size_ptr,
                 _opt(D.jpeges, jpege_config, "the JPEGE config"), stream_of(stream))


@media("kk", "one", 0, bang=False)
def dvpp_jpeg_predict_enc_size(input_pic_desc, jpege_config):
    """(an upper bound of the JPEG's bytes, ret)."""
    return jpege.predict_enc_size(pic_of(input_pic_desc), _opt(D.jpeges, jpege_config, "the JPEGE config"))


# ---------------------------------------------------------------- PNG
@media("kkIkk")
def dvpp_png_decode_async(channel_desc, data, size, output_pic_desc, stream):
    """Decode the `size`-byte PNG at `data` (DVPP memory) into the output picture."""
    pngd.decode(channel_of(channel_desc), data, size, pic_of(output_pic_desc), stream_of(stream))


def dvpp_png_get_image_info(*args):
    """(width, height, components, ret) of a PNG in host memory. For a palette PNG the
    width and height are still filled in (ret ACL_ERROR_FORMAT_NOT_MATCH)."""
    data, size = parse("kI", args, "acl.media.dvpp_png_get_image_info args parse failed!")
    width = height = 0
    try:
        info = pngd.parse(jpegd.host_bytes(data, size, "PNG"))
        width, height = info.width, info.height
        return width, height, info.components, 0
    except Exception as exc:  # noqa: BLE001
        return width, height, 0, fail(exc, "acl.media.dvpp_png_get_image_info")


@media("kIi", "one", 0)
def dvpp_png_predict_dec_size(data, size, output_pixel_format):
    """(bytes the decoded picture needs, ret) for RGB_888, RGBA_8888 or UNKNOWN."""
    return pngd.predict_dec_size(data, size, output_pixel_format)


__all__ = sorted(n for n in globals() if n.startswith("dvpp_"))
