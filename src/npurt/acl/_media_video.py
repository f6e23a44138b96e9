"""acl.media: video decode (VDEC) and encode (VENC). The simulated DVPP has no video codec:
every function parses its arguments as the real wrapper does and returns
ACL_ERROR_RT_FEATURE_NOT_SUPPORT (207000) in its real shape (a creator returns handle 0,
a getter 0, a parameter getter its zero outputs). As in the real wrapper, a callback given
to *_set_channel_desc_callback is kept by the Python layer, so *_get_channel_desc_callback
returns it, and both raise RuntimeError("did not set callback, failed") without one.
"""
from __future__ import annotations

from ..runtime import FeatureNotSupportedError, constants as C
from ._media_descs import parse
from ._wrap import fail

_WHY = ("video decoding and encoding (VDEC/VENC) are not simulated; decode JPEG/PNG pictures with "
        "dvpp_jpeg_decode_async / dvpp_png_decode_async")
_CALLBACKS: dict[str, dict[int, object]] = {"vdec": {}, "venc": {}}
CODE = C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT
_VENC_CALLBACK_PTR = 1


def _stub(name: str, fmt: str | None, shape: str, value=0, bang: bool = True, parse_name: str | None = None):
    where = f"acl.media.{name}"
    message = f"acl.media.{parse_name or name} args parse failed{'!' if bang else ''}"
    group = name[:4]

    def fn(*args):
        values = parse(fmt, args, message) if fmt is not None else ()
        if name.endswith("_set_channel_desc_callback"):
            if not callable(values[1]):
                raise TypeError("parameter must be callable")
            _CALLBACKS[group][values[0]] = values[1]
        elif name.endswith("_get_channel_desc_callback"):
            if values[0] not in _CALLBACKS[group]:
                raise RuntimeError("did not set callback, failed")
            return _CALLBACKS[group][values[0]]
        elif name.endswith(("_send_frame", "_send_skipped_frame")) and values[0] not in _CALLBACKS[group]:
            raise RuntimeError("did not set callback, failed")
        elif name == "venc_set_channel_desc_param" and values[1] == _VENC_CALLBACK_PTR and callable(values[2]):
            _CALLBACKS[group][values[0]] = values[2]
        elif name == "venc_get_channel_desc_param" and values[1] == _VENC_CALLBACK_PTR:
            if values[0] not in _CALLBACKS[group]:
                raise RuntimeError("did not set callback, failed")
            return _CALLBACKS[group][values[0]], 0  # the real wrapper answers this one itself
        code = fail(FeatureNotSupportedError(_WHY), where)
        if shape == "ret":
            return code
        if shape == "value":
            return value
        if shape == "first":  # (first argument, ret), as the *_set_channel_desc_param wrappers return
            return values[0], code
        return (*value, code)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Not supported by npurt: returns ACL_ERROR_RT_FEATURE_NOT_SUPPORT (207000). {_WHY}."
    fn.not_supported = True
    return fn


# name -> (format, shape, failure value)
_VDEC = {
    "vdec_create_channel": ("k", "ret", None), "vdec_destroy_channel": ("k", "ret", None),
    "vdec_create_channel_desc": (None, "value", 0), "vdec_destroy_channel_desc": ("k", "ret", None),
    "vdec_set_channel_desc_channel_id": ("kI", "ret", None), "vdec_set_channel_desc_thread_id": ("kK", "ret", None),
    "vdec_set_channel_desc_callback": ("kO", "ret", None), "vdec_set_channel_desc_entype": ("ki", "ret", None),
    "vdec_set_channel_desc_out_pic_format": ("ki", "ret", None),
    "vdec_set_channel_desc_out_pic_width": ("kI", "ret", None),
    "vdec_set_channel_desc_out_pic_height": ("kI", "ret", None),
    "vdec_set_channel_desc_ref_frame_num": ("kI", "ret", None),
    "vdec_get_channel_desc_channel_id": ("k", "value", 0), "vdec_get_channel_desc_thread_id": ("k", "value", 0),
    "vdec_get_channel_desc_callback": ("k", "value", None), "vdec_get_channel_desc_entype": ("k", "value", 0),
    "vdec_get_channel_desc_out_pic_format": ("k", "value", 0),
    "vdec_get_channel_desc_out_pic_width": ("k", "value", 0),
    "vdec_get_channel_desc_out_pic_height": ("k", "value", 0),
    "vdec_get_channel_desc_ref_frame_num": ("k", "value", 0),
    "vdec_send_frame": ("kkkkO", "ret", None), "vdec_send_skipped_frame": ("kkkO", "ret", None),
    "vdec_create_frame_config": (None, "value", 0), "vdec_destroy_frame_config": ("k", "ret", None),
    "vdec_get_channel_desc_out_mode": ("k", "value", 0), "vdec_set_channel_desc_out_mode": ("kI", "ret", None),
    "vdec_get_channel_desc_bit_depth": ("k", "value", 0), "vdec_set_channel_desc_bit_depth": ("kI", "ret", None),
    "vdec_set_channel_desc_param": ("kik", "first", None), "vdec_get_channel_desc_param": ("ki", "many", (0, 0)),
}
_VENC = {
    "venc_create_channel": ("k", "ret", None), "venc_destroy_channel": ("k", "ret", None),
    "venc_send_frame": ("kkkkO", "ret", None), "venc_create_channel_desc": (None, "value", 0),
    "venc_destroy_channel_desc": ("k", "ret", None), "venc_set_channel_desc_thread_id": ("kK", "ret", None),
    "venc_set_channel_desc_callback": ("kO", "ret", None), "venc_set_channel_desc_entype": ("ki", "ret", None),
    "venc_set_channel_desc_pic_format": ("ki", "ret", None), "venc_set_channel_desc_pic_width": ("kI", "ret", None),
    "venc_set_channel_desc_pic_height": ("kI", "ret", None),
    "venc_set_channel_desc_key_frame_interval": ("kI", "ret", None),
    "venc_get_channel_desc_channel_id": ("k", "value", 0), "venc_get_channel_desc_thread_id": ("k", "value", 0),
    "venc_get_channel_desc_callback": ("k", "value", None), "venc_get_channel_desc_entype": ("k", "value", 0),
    "venc_get_channel_desc_pic_format": ("k", "value", 0), "venc_get_channel_desc_pic_width": ("k", "value", 0),
    "venc_get_channel_desc_pic_height": ("k", "value", 0),
    "venc_get_channel_desc_key_frame_interval": ("k", "value", 0),
    "venc_create_frame_config": (None, "value", 0), "venc_destroy_frame_config": ("k", "ret", None),
    "venc_set_frame_config_force_i_frame": ("kB", "ret", None), "venc_set_frame_config_eos": ("kB", "ret", None),
    "venc_get_frame_config_force_i_frame": ("k", "value", 0), "venc_get_frame_config_eos": ("k", "value", 0),
    "venc_get_channel_desc_buf_addr": ("k", "value", 0), "venc_set_channel_desc_buf_addr": ("kk", "ret", None),
    "venc_get_channel_desc_buf_size": ("k", "value", 0), "venc_set_channel_desc_buf_size": ("kI", "ret", None),
    "venc_get_channel_desc_max_bit_rate": ("k", "value", 0),
    "venc_set_channel_desc_max_bit_rate": ("kI", "ret", None),
    "venc_get_channel_desc_rc_mode": ("k", "value", 0), "venc_set_channel_desc_rc_mode": ("kI", "ret", None),
    "venc_get_channel_desc_src_rate": ("k", "value", 0), "venc_set_channel_desc_src_rate": ("kI", "ret", None),
    "venc_get_channel_desc_param": ("ki", "many", (0,)), "venc_set_channel_desc_param": ("kiO", "ret", None),
}
# parse-failure messages of the real wrapper that do not follow the pattern
_PARSE_NAMES = {"vdec_destroy_channel": "vdec_destroy_channe"}
_NO_BANG = {"vdec_set_channel_desc_param", "vdec_get_channel_desc_param"}

for _name, (_fmt, _shape, _value) in {**_VDEC, **_VENC}.items():
    globals()[_name] = _stub(_name, _fmt, _shape, _value, _name not in _NO_BANG, _PARSE_NAMES.get(_name))

FUNCTIONS = sorted({**_VDEC, **_VENC})
__all__ = FUNCTIONS
