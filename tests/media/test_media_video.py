"""VDEC and VENC (video codecs) are not simulated: every acl.media.vdec_* / venc_* function
parses its arguments like the real wrapper and returns ACL_ERROR_RT_FEATURE_NOT_SUPPORT
(207000) in its real shape; callbacks are kept by the Python layer as the wrapper does."""
from __future__ import annotations

import pytest

import npurt.acl as acl
from npurt.acl import _media_video

m = acl.media
NOT_SUPPORTED = 207000


@pytest.fixture(autouse=True)
def _runtime(fresh_runtime):
    acl.init()
    yield


def _args(fmt):
    return [(lambda x: x) if c == "O" else 2 if c == "i" else 1 for c in fmt or ""]


@pytest.mark.parametrize("name", [n for n in _media_video.FUNCTIONS if not n.endswith("_callback")])
def test_video_function_returns_feature_not_support_in_its_shape(name):
    fmt, shape, value = {**_media_video._VDEC, **_media_video._VENC}[name]
    fn = getattr(m, name)
    if name.endswith(("send_frame", "send_skipped_frame")):
        m.vdec_set_channel_desc_callback(1, lambda *a: None)
        m.venc_set_channel_desc_callback(1, lambda *a: None)
    result = fn(*_args(fmt))
    if shape == "ret":
        assert result == NOT_SUPPORTED
    elif shape == "value":
        assert result == value
    elif shape == "first":
        assert result == (1, NOT_SUPPORTED)
    else:
        assert result == (*value, NOT_SUPPORTED)
    assert acl.rt.get_last_error(0) == NOT_SUPPORTED
    assert "VDEC/VENC" in acl.get_recent_err_msg()


def test_video_functions_parse_arguments_like_the_real_wrapper():
    with pytest.raises(TypeError, match=r"^acl.media.vdec_destroy_channe args parse failed!$"):
        m.vdec_destroy_channel("x")
    with pytest.raises(TypeError, match=r"^acl.media.vdec_get_channel_desc_param args parse failed$"):
        m.vdec_get_channel_desc_param(1)


def test_a_vdec_callback_is_kept_and_given_back():
    def callback(stream_desc, pic_desc, user_data):
        pass
    assert m.vdec_set_channel_desc_callback(5, callback) == NOT_SUPPORTED
    assert m.vdec_get_channel_desc_callback(5) is callback
    with pytest.raises(TypeError, match="parameter must be callable"):
        m.vdec_set_channel_desc_callback(5, 3)


def test_without_a_callback_getting_it_or_sending_a_frame_raises_runtime_error():
    with pytest.raises(RuntimeError, match="did not set callback, failed"):
        m.vdec_get_channel_desc_callback(99)
    with pytest.raises(RuntimeError, match="did not set callback, failed"):
        m.vdec_send_frame(99, 1, 2, 3, None)
    with pytest.raises(RuntimeError, match="did not set callback, failed"):
        m.venc_send_frame(99, 1, 0, 3, None)


def test_venc_callback_parameter_is_answered_by_the_wrapper():
    def callback(pic_desc, stream_desc, user_data):
        pass
    assert m.venc_set_channel_desc_param(7, 1, callback) == NOT_SUPPORTED
    assert m.venc_get_channel_desc_param(7, 1) == (callback, 0)
    assert m.venc_get_channel_desc_param(7, 2) == (0, NOT_SUPPORTED)
