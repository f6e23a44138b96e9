"""acl.media descriptions and configs: every getter and setter, their defaults and null
behaviour, and argument parsing as the real extension does it (TypeError "... args parse
failed[!]", uint32 values that wrap, int-only handles)."""
from __future__ import annotations

import numpy as np
import pytest

import npurt.acl as acl

m = acl.media
OK, INVALID = 0, 100000
PIC_FIELDS = ["data", "size", "format", "width", "height", "width_stride", "height_stride", "ret_code"]


@pytest.fixture(autouse=True)
def _runtime(fresh_runtime):
    yield


# ---------------------------------------------------------------- picture descriptions
def test_a_new_picture_description_has_every_field_zero():
    desc = m.dvpp_create_pic_desc()
    assert desc != 0
    assert [getattr(m, f"dvpp_get_pic_desc_{f}")(desc) for f in PIC_FIELDS] == [0] * len(PIC_FIELDS)


@pytest.mark.parametrize("field,value", [("data", 0x1_0000_0000_1000), ("size", 4096), ("format", 2),
                                         ("width", 1920), ("height", 1080), ("width_stride", 1920),
                                         ("height_stride", 1088), ("ret_code", 7)])
def test_picture_setter_and_getter_round_trip(field, value):
    desc = m.dvpp_create_pic_desc()
    assert getattr(m, f"dvpp_set_pic_desc_{field}")(desc, value) == OK
    assert getattr(m, f"dvpp_get_pic_desc_{field}")(desc) == value


def test_uint32_fields_wrap_as_the_real_parser_does():
    desc = m.dvpp_create_pic_desc()
    assert m.dvpp_set_pic_desc_width(desc, (1 << 32) + 5) == OK
    assert m.dvpp_get_pic_desc_width(desc) == 5
    assert m.dvpp_set_pic_desc_height(desc, -1) == OK
    assert m.dvpp_get_pic_desc_height(desc) == 0xFFFFFFFF


def test_the_format_is_a_signed_int_and_out_of_range_is_a_type_error():
    desc = m.dvpp_create_pic_desc()
    assert m.dvpp_set_pic_desc_format(desc, -1) == OK and m.dvpp_get_pic_desc_format(desc) == -1
    with pytest.raises(TypeError, match=r"^acl.media.dvpp_set_pic_desc_format args parse failed!$"):
        m.dvpp_set_pic_desc_format(desc, 1 << 31)


@pytest.mark.parametrize("field", PIC_FIELDS)
def test_setters_on_a_null_description_return_invalid_param(field):
    assert getattr(m, f"dvpp_set_pic_desc_{field}")(0, 1) == INVALID


@pytest.mark.parametrize("field", PIC_FIELDS)
def test_getters_on_a_null_description_return_zero(field):
    acl.rt.get_last_error(0)
    assert getattr(m, f"dvpp_get_pic_desc_{field}")(0) == 0
    assert acl.rt.get_last_error(0) == OK


def test_setting_null_picture_data_is_invalid_param():
    assert m.dvpp_set_pic_desc_data(m.dvpp_create_pic_desc(), 0) == INVALID


def test_a_destroyed_description_is_refused_and_its_getters_return_zero():
    desc = m.dvpp_create_pic_desc()
    assert m.dvpp_destroy_pic_desc(desc) == OK
    assert m.dvpp_set_pic_desc_width(desc, 10) == INVALID
    assert "stale" in acl.get_recent_err_msg()
    assert m.dvpp_get_pic_desc_width(desc) == 0
    assert acl.rt.get_last_error(0) == INVALID


def test_destroying_null_descriptions_and_configs_succeeds():
    for fn in (m.dvpp_destroy_pic_desc, m.dvpp_destroy_channel_desc, m.dvpp_destroy_batch_pic_desc,
               m.dvpp_destroy_roi_config, m.dvpp_destroy_resize_config, m.dvpp_destroy_border_config,
               m.dvpp_destroy_jpege_config, m.dvpp_destroy_stream_desc):
        assert fn(0) == OK


def test_a_handle_of_another_kind_is_refused_with_its_kind_named():
    roi = m.dvpp_create_roi_config(0, 15, 0, 15)
    assert m.dvpp_set_pic_desc_width(roi, 10) == INVALID
    assert "dvpp roi config handle" in acl.get_recent_err_msg()


# ---------------------------------------------------------------- argument parsing
def test_a_float_where_an_int_is_parsed_is_a_type_error_with_the_real_message():
    desc = m.dvpp_create_pic_desc()
    with pytest.raises(TypeError, match=r"^acl.media.dvpp_set_pic_desc_width args parse failed!$"):
        m.dvpp_set_pic_desc_width(desc, 1.5)


def test_wrong_arity_is_a_type_error():
    with pytest.raises(TypeError, match="args parse failed"):
        m.dvpp_set_pic_desc_width(m.dvpp_create_pic_desc())
    with pytest.raises(TypeError, match="args parse failed"):
        m.dvpp_get_pic_desc_width()


def test_handles_must_be_python_ints_while_uint32_values_take_numpy_ints():
    desc = m.dvpp_create_pic_desc()
    with pytest.raises(TypeError):
        m.dvpp_set_pic_desc_width(np.uint64(desc), 10)
    assert m.dvpp_set_pic_desc_width(desc, np.int32(10)) == OK


def test_parse_failure_messages_follow_each_wrapper():
    with pytest.raises(TypeError, match=r"^acl.media.dvpp_jpeg_decode_async args parse failed$"):
        m.dvpp_jpeg_decode_async(None, 0, 0, 0, 0)
    with pytest.raises(TypeError, match=r"^acl.media.dvpp_get_border_config_Top args parse failed!$"):
        m.dvpp_get_border_config_top("x")
    with pytest.raises(TypeError, match=r"^acl.media.dvpp_vpc_crop_resize_async args parse failed$"):
        m.dvpp_vpc_crop_resize_async(1, 2, 3)


def test_creators_ignore_their_arguments_as_the_real_wrappers_do():
    assert m.dvpp_create_pic_desc(1, 2, 3) != 0
    assert m.dvpp_create_resize_config("x") != 0


# ---------------------------------------------------------------- batch descriptions
def test_batch_sizes_are_1_to_256():
    assert m.dvpp_create_batch_pic_desc(0) == 0
    assert m.dvpp_create_batch_pic_desc(257) == 0
    assert m.dvpp_create_batch_pic_desc(256) != 0


def test_get_pic_desc_gives_the_batchs_own_descriptions():
    batch = m.dvpp_create_batch_pic_desc(3)
    first = m.dvpp_get_pic_desc(batch, 0)
    assert first != 0 and m.dvpp_get_pic_desc(batch, 0) == first
    assert m.dvpp_set_pic_desc_width(first, 64) == OK
    assert m.dvpp_get_pic_desc_width(m.dvpp_get_pic_desc(batch, 0)) == 64
    assert m.dvpp_get_pic_desc(batch, 3) == 0
    assert m.dvpp_get_pic_desc(0, 0) == 0


def test_a_batchs_picture_is_destroyed_with_the_batch_only():
    batch = m.dvpp_create_batch_pic_desc(2)
    pic = m.dvpp_get_pic_desc(batch, 1)
    assert m.dvpp_destroy_pic_desc(pic) == INVALID
    assert m.dvpp_destroy_batch_pic_desc(batch) == OK
    assert m.dvpp_set_pic_desc_width(pic, 1) == INVALID


# ---------------------------------------------------------------- configs
def test_roi_config_setters():
    roi = m.dvpp_create_roi_config(0, 15, 2, 17)
    assert m.dvpp_set_roi_config(roi, 4, 19, 6, 21) == OK
    for side, value in (("left", 8), ("right", 23), ("top", 10), ("bottom", 25)):
        assert getattr(m, f"dvpp_set_roi_config_{side}")(roi, value) == OK
    assert m.dvpp_set_roi_config_left(0, 1) == INVALID


def test_resize_config_interpolation_defaults_to_0():
    cfg = m.dvpp_create_resize_config()
    assert m.dvpp_get_resize_config_interpolation(cfg) == 0
    assert m.dvpp_set_resize_config_interpolation(cfg, 3) == OK
    assert m.dvpp_get_resize_config_interpolation(cfg) == 3
    assert m.dvpp_get_resize_config_interpolation(0) == 0


def test_border_config_fields():
    cfg = m.dvpp_create_border_config()
    assert [m.dvpp_get_border_config_value(cfg, i) for i in range(4)] == [0.0] * 4
    assert m.dvpp_set_border_config_value(cfg, 2, 12.5) == OK
    assert m.dvpp_get_border_config_value(cfg, 2) == 12.5
    assert m.dvpp_set_border_config_value(cfg, 4, 1.0) == INVALID
    assert m.dvpp_get_border_config_value(cfg, 4) == -1.0
    assert m.dvpp_get_border_config_value(0, 0) == -1.0
    assert m.dvpp_set_border_config_border_type(cfg, 3) == OK and m.dvpp_get_border_config_border_type(cfg) == 3
    for side in ("top", "bottom", "left", "right"):
        assert getattr(m, f"dvpp_set_border_config_{side}")(cfg, 65535) == OK
        assert getattr(m, f"dvpp_get_border_config_{side}")(cfg) == 65535
        assert getattr(m, f"dvpp_set_border_config_{side}")(cfg, 65536) == INVALID
        assert getattr(m, f"dvpp_get_border_config_{side}")(0) == 0


def test_border_value_accepts_ints_as_doubles():
    cfg = m.dvpp_create_border_config()
    assert m.dvpp_set_border_config_value(cfg, 0, 7) == OK
    assert m.dvpp_get_border_config_value(cfg, 0) == 7.0
    with pytest.raises(TypeError):
        m.dvpp_set_border_config_value(cfg, 0, "7")


def test_jpege_config_level():
    cfg = m.dvpp_create_jpege_config()
    assert m.dvpp_get_jpege_config_level(cfg) == 0
    assert m.dvpp_set_jpege_config_level(cfg, 100) == OK and m.dvpp_get_jpege_config_level(cfg) == 100
    assert m.dvpp_set_jpege_config_level(0, 1) == INVALID


# ---------------------------------------------------------------- stream descriptions
def test_stream_description_fields():
    sd = m.dvpp_create_stream_desc()
    for field, value in (("data", 0x1000), ("size", 99), ("format", 3), ("timestamp", (1 << 40) + 1),
                         ("ret_code", 5)):
        assert getattr(m, f"dvpp_set_stream_desc_{field}")(sd, value) == OK
        assert getattr(m, f"dvpp_get_stream_desc_{field}")(sd) == value
    assert m.dvpp_set_stream_desc_eos(sd, 7) == OK and m.dvpp_get_stream_desc_eos(sd) == 1
    assert m.dvpp_set_stream_desc_data(sd, 0) == INVALID
    assert m.dvpp_get_stream_desc_size(0) == 0
    assert m.dvpp_destroy_stream_desc(sd) == OK


def test_every_media_function_is_listed():
    names = [n for n in dir(m) if n.startswith(("dvpp_", "vdec_", "venc_"))]
    assert sorted(names) == m.FUNCTIONS
    assert len(m.FUNCTIONS) >= 160
