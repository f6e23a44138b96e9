"""acl.media: DVPP memory, channels, picture/batch/stream descriptions and configs.

Handles are ints from npurt.media.descs' tables; 0 is the null handle. As in ACL, a
setter given a null (or destroyed) description returns ACL_ERROR_INVALID_PARAM, a getter
returns its default (0; -1.0 for a border value) and records the failure, a creator
returns 0 on failure. Values parsed as uint32 wrap, as the real extension's parser does.
"""
from __future__ import annotations

from ..media import channel as _channel, descs as D, memory
from ..runtime import InvalidValueError
from ._args import CONVERTERS, Api, ArgTypeError

_API = Api("acl.media", bang=True)


def media(fmt, shape="ret", fail_value=None, bang=True, name=None, parse_name=None):
    """Decorator: an acl.media function (pyACL parsing and return shape, see _args.Api);
    `name` names an implementation made in a loop, `parse_name` is the name the real
    wrapper's parse-failure message uses where it differs."""
    def decorate(impl):
        if name:
            impl.__name__ = impl.__qualname__ = name
        return _API.fn(fmt, shape, fail_value, bang, parse_name)(impl)
    return decorate


def parse(fmt: str, args: tuple, message: str) -> list:
    """`args` converted by a PyArg_ParseTuple format, for the functions written by hand."""
    if len(args) != len(fmt):
        raise TypeError(message)
    return [CONVERTERS[c](v, message) for c, v in zip(fmt, args)]


def pic_of(h) -> D.PicDesc:
    return D.lookup(D.pics, h, "the picture description")


def channel_of(h) -> _channel.ChannelDesc:
    return D.lookup(D.channels, h, "the channel description")


def _get(table, h, what, attr, default=0):
    """A getter's value: the default for a null handle (ACL's getters accept null)."""
    if h == 0:
        return default
    return getattr(D.lookup(table, h, what), attr)


# ---------------------------------------------------------------- memory
@media("k", "one", 0)
def dvpp_malloc(size):
    """DVPP memory of `size` bytes (rounded up to 32, plus 32): (dev_ptr, ret)."""
    return memory.malloc(size)


@media("kiO", "one", 0)
def dvpp_malloc_with_cfg(size, policy, cfg):
    """dvpp_malloc with a policy and an aclrtMallocConfig dict ({} for none)."""
    if not isinstance(cfg, dict):
        raise ArgTypeError("pyCfg is not dict!")
    return memory.malloc_with_cfg(size, policy, cfg or None)


@media("k")
def dvpp_free(dev_ptr):
    """Free DVPP memory."""
    memory.free(dev_ptr)


# ---------------------------------------------------------------- channels
@media(None, "value", 0)
def dvpp_create_channel_desc():
    """A new channel description (handle; 0 on failure)."""
    return D.channels.add(_channel.ChannelDesc())


@media("k")
def dvpp_destroy_channel_desc(channel_desc):
    """Destroy a channel description (null is accepted). An open channel is closed with it."""
    if channel_desc == 0:
        return
    channel_of(channel_desc).device = None
    D.channels.remove(channel_desc)


@media("k")
def dvpp_create_channel(channel_desc):
    """Open the channel on the current context's device."""
    channel_of(channel_desc).create()


@media("k")
def dvpp_destroy_channel(channel_desc):
    channel_of(channel_desc).destroy()


@media("k", "value", 0)
def dvpp_get_channel_desc_channel_id(channel_desc):
    return _get(D.channels, channel_desc, "the channel description", "channel_id")


@media("kI")
def dvpp_set_channel_desc_mode(channel_desc, mode):
    """Restrict the channel to DVPP_CHNMODE_VPC (1) | _JPEGD (2) | _JPEGE (4) | _PNGD (8)."""
    channel_of(channel_desc).set_mode(mode)


@media("kik", "echo")
def dvpp_set_channel_desc_param(channel_desc, param_type, value):
    """(channel_desc, ret): set a channel parameter. Only ACL_DVPP_CSC_MATRIX_UINT32 (0)
    carries its value: the real wrapper passes every other parameter type with length 0,
    which the C function refuses. The channel handle comes back even on failure."""
    channel_of(channel_desc).set_param(param_type, 4 if param_type == 0 else 0, value)


@media("ki", "many", (0, 0))
def dvpp_get_channel_desc_param(channel_desc, param_type):
    """(bytes written, value, ret) of a channel parameter."""
    length = 4 if param_type == 0 else 0
    return channel_of(channel_desc).get_param(param_type, length)


# ---------------------------------------------------------------- picture descriptions
@media(None, "value", 0)
def dvpp_create_pic_desc():
    """A new picture description, every field 0 (format 0 = PIXEL_FORMAT_YUV_400)."""
    return D.pics.add(D.PicDesc())


@media("k")
def dvpp_destroy_pic_desc(pic_desc):
    """Destroy a picture description (not its data; null is accepted)."""
    if pic_desc == 0:
        return
    if pic_of(pic_desc).batch is not None:
        raise InvalidValueError("this picture description belongs to a batch description; destroy the batch")
    D.pics.remove(pic_desc)


def _pic_setter(field: str, fmt: str = "kI"):
    @media(fmt, name=f"dvpp_set_pic_desc_{field}")
    def setter(pic_desc, value):
        desc = pic_of(pic_desc)
        if field == "data" and value == 0:
            raise InvalidValueError("the picture data address is null")
        setattr(desc, field, value)
    setter.__doc__ = f"Set the picture description's {field.replace('_', ' ')}."
    return setter


def _pic_getter(field: str):
    @media("k", "value", 0, name=f"dvpp_get_pic_desc_{field}")
    def getter(pic_desc):
        return _get(D.pics, pic_desc, "the picture description", field)
    getter.__doc__ = f"The picture description's {field.replace('_', ' ')} (0 for a null description)."
    return getter


_PIC_FIELDS = {"data": "kk", "size": "kI", "format": "ki", "width": "kI", "height": "kI", "width_stride": "kI",
               "height_stride": "kI", "ret_code": "kI"}
for _field, _fmt in _PIC_FIELDS.items():
    globals()[f"dvpp_set_pic_desc_{_field}"] = _pic_setter(_field, _fmt)
    globals()[f"dvpp_get_pic_desc_{_field}"] = _pic_getter(_field)


# ---------------------------------------------------------------- batch descriptions
@media("I", "value", 0)
def dvpp_create_batch_pic_desc(batch_size):
    """A batch of `batch_size` (1..256) picture descriptions; 0 on failure."""
    return D.batches.add(D.BatchPicDesc(batch_size))


@media("k")
def dvpp_destroy_batch_pic_desc(batch_pic_desc):
    if batch_pic_desc == 0:
        return
    batch = D.lookup(D.batches, batch_pic_desc, "the batch picture description")
    for h in batch.handles:
        if h:
            D.pics.remove(h)
    D.batches.remove(batch_pic_desc)


@media("kI", "value", 0)
def dvpp_get_pic_desc(batch_pic_desc, index):
    """The picture description `index` of a batch (owned by the batch); 0 on failure."""
    batch = D.lookup(D.batches, batch_pic_desc, "the batch picture description")
    if index >= len(batch.pics):
        raise InvalidValueError(f"index {index} is out of the batch's {len(batch.pics)} pictures")
    if not batch.handles:
        batch.handles = [0] * len(batch.pics)
    if not batch.handles[index]:
        batch.handles[index] = D.pics.add(batch.pics[index])
    return batch.handles[index]


# ---------------------------------------------------------------- stream descriptions (VDEC / VENC data)
@media(None, "value", 0)
def dvpp_create_stream_desc():
    return D.stream_descs.add(D.StreamDesc())


@media("k")
def dvpp_destroy_stream_desc(stream_desc):
    if stream_desc:
        D.stream_descs.remove(stream_desc)


def _stream_setter(field: str, fmt: str):
    @media(fmt, name=f"dvpp_set_stream_desc_{field}")
    def setter(stream_desc, value):
        desc = D.lookup(D.stream_descs, stream_desc, "the stream description")
        if field == "data" and value == 0:
            raise InvalidValueError("the stream data address is null")
        setattr(desc, field, int(value != 0) if field == "eos" else value)
    return setter


def _stream_getter(field: str):
    @media("k", "value", 0, name=f"dvpp_get_stream_desc_{field}")
    def getter(stream_desc):
        return _get(D.stream_descs, stream_desc, "the stream description", field)
    return getter


for _field, _fmt in {"data": "kk", "size": "kI", "format": "ki", "timestamp": "kK", "ret_code": "kI",
                     "eos": "kB"}.items():
    globals()[f"dvpp_set_stream_desc_{_field}"] = _stream_setter(_field, _fmt)
    globals()[f"dvpp_get_stream_desc_{_field}"] = _stream_getter(_field)


# ---------------------------------------------------------------- ROI configs
def _uint16(**values) -> None:
    for name, v in values.items():
        if v > D.ROI_MAX:
            raise InvalidValueError(f"{name} = {v} is larger than {D.ROI_MAX} (ROI offsets are uint16)")


@media("IIII", "value", 0)
def dvpp_create_roi_config(left, right, top, bottom):
    """An ROI (inclusive pixel rectangle); 0 if an offset exceeds 65535."""
    _uint16(left=left, right=right, top=top, bottom=bottom)
    return D.rois.add(D.RoiConfig(left, right, top, bottom))


@media("k")
def dvpp_destroy_roi_config(roi_config):
    if roi_config:
        D.rois.remove(roi_config)


@media("kIIII")
def dvpp_set_roi_config(roi_config, left, right, top, bottom):
    roi = D.lookup(D.rois, roi_config, "the ROI config")
    _uint16(left=left, right=right, top=top, bottom=bottom)
    roi.left, roi.right, roi.top, roi.bottom = left, right, top, bottom


def _roi_setter(field: str):
    @media("kI", name=f"dvpp_set_roi_config_{field}")
    def setter(roi_config, value):
        roi = D.lookup(D.rois, roi_config, "the ROI config")
        _uint16(**{field: value})
        setattr(roi, field, value)
    return setter


for _field in ("left", "right", "top", "bottom"):
    globals()[f"dvpp_set_roi_config_{_field}"] = _roi_setter(_field)


# ---------------------------------------------------------------- resize configs
@media(None, "value", 0)
def dvpp_create_resize_config():
    return D.resizes.add(D.ResizeConfig())


@media("k")
def dvpp_destroy_resize_config(resize_config):
    if resize_config:
        D.resizes.remove(resize_config)


@media("kI")
def dvpp_set_resize_config_interpolation(resize_config, interpolation):
    """0 default, 1 bilinear (OpenCV), 2 nearest (OpenCV), 3 bilinear (TF), 4 nearest (TF)."""
    cfg = D.lookup(D.resizes, resize_config, "the resize config")
    if interpolation > 4:
        raise InvalidValueError(f"interpolation {interpolation} is not supported; use 0..4")
    cfg.interpolation = interpolation


@media("k", "value", 0)
def dvpp_get_resize_config_interpolation(resize_config):
    return _get(D.resizes, resize_config, "the resize config", "interpolation")


# ---------------------------------------------------------------- border configs
@media(None, "value", 0)
def dvpp_create_border_config():
    return D.borders.add(D.BorderConfig())


@media("k")
def dvpp_destroy_border_config(border_config):
    if border_config:
        D.borders.remove(border_config)


def _border(h) -> D.BorderConfig:
    return D.lookup(D.borders, h, "the border config")


@media("kId")
def dvpp_set_border_config_value(border_config, index, value):
    """The constant-border value of component `index` (0..3)."""
    cfg = _border(border_config)
    if index >= D.BORDER_COMPONENTS:
        raise InvalidValueError(f"index {index} is out of the border's {D.BORDER_COMPONENTS} components")
    cfg.value[index] = value


@media("kI", "value", -1.0)
def dvpp_get_border_config_value(border_config, index):
    if border_config == 0:
        return -1.0
    cfg = _border(border_config)
    if index >= D.BORDER_COMPONENTS:
        raise InvalidValueError(f"index {index} is out of the border's {D.BORDER_COMPONENTS} components")
    return cfg.value[index]


@media("ki")
def dvpp_set_border_config_border_type(border_config, border_type):
    _border(border_config).border_type = border_type


@media("k", "value", 0)
def dvpp_get_border_config_border_type(border_config):
    return _get(D.borders, border_config, "the border config", "border_type")


def _border_setter(field: str):
    # the real wrapper's parse-failure message spells "Top" with a capital T
    @media("kI", name=f"dvpp_set_border_config_{field}",
           parse_name="dvpp_set_border_config_Top" if field == "top" else None)
    def setter(border_config, value):
        cfg = _border(border_config)
        if value > D.ROI_MAX:
            raise InvalidValueError(f"the {field} border {value} is larger than {D.ROI_MAX}")
        setattr(cfg, field, value)
    return setter


def _border_getter(field: str):
    @media("k", "value", 0, name=f"dvpp_get_border_config_{field}",
           parse_name="dvpp_get_border_config_Top" if field == "top" else None)
    def getter(border_config):
        return _get(D.borders, border_config, "the border config", field)
    return getter


for _field in ("top", "bottom", "left", "right"):
    globals()[f"dvpp_set_border_config_{_field}"] = _border_setter(_field)
    globals()[f"dvpp_get_border_config_{_field}"] = _border_getter(_field)


# ---------------------------------------------------------------- JPEGE configs
@media(None, "value", 0, bang=False)
def dvpp_create_jpege_config():
    return D.jpeges.add(D.JpegeConfig())


@media("k", bang=False)
def dvpp_destroy_jpege_config(jpege_config):
    if jpege_config:
        D.jpeges.remove(jpege_config)


@media("kI", bang=False)
def dvpp_set_jpege_config_level(jpege_config, level):
    """The encoding level, quality 0..100 (0 encodes like 100); checked when encoding."""
    D.lookup(D.jpeges, jpege_config, "the JPEGE config").level = level


@media("k", "value", 0)
def dvpp_get_jpege_config_level(jpege_config):
    return _get(D.jpeges, jpege_config, "the JPEGE config", "level")


__all__ = sorted(n for n in globals() if n.startswith("dvpp_"))
