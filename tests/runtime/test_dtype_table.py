"""One dtype table (npurt.runtime.dtypes): aclDataType <-> numpy, sizes, names, bfloat16.

The graph engine, the kernels and reduce_async use this table; the old spellings
(`npurt.ge.dtypes.to_numpy`, `npurt.runtime.kernel.resolve_dtype`) are the same functions.
"""
import numpy as np
import pytest

from npurt.runtime import InvalidValueError, constants as C, dtypes


def test_every_acl_type_with_a_host_form_round_trips_and_has_its_itemsize():
    codes = [c for c in dtypes.NAMES if c not in (C.ACL_DT_UNDEFINED, C.ACL_STRING, C.ACL_INT4, C.ACL_UINT1,
                                                  C.ACL_BF16)]
    for code in codes:
        dt = dtypes.to_numpy(code)
        assert dtypes.from_numpy(dt) == code
        assert dtypes.type_size(code) == dt.itemsize


def test_sizes_follow_acl_data_type_size():
    assert dtypes.type_size(C.ACL_FLOAT16) == 2 and dtypes.type_size(C.ACL_INT4) == 1
    assert dtypes.type_size(C.ACL_STRING) == 0
    assert dtypes.type_size(12345) == 8  # the C switch's default branch


def test_unknown_types_are_refused_by_name():
    with pytest.raises(InvalidValueError, match="ACL_INT4"):
        dtypes.to_numpy(C.ACL_INT4)
    with pytest.raises(InvalidValueError, match="no aclDataType"):
        dtypes.from_numpy(np.dtype("U3"))
    with pytest.raises(InvalidValueError, match="not a data type"):
        dtypes.resolve(object())


def test_bfloat16_by_name_and_by_code():
    pytest.importorskip("ml_dtypes")
    bf = dtypes.resolve("bfloat16")
    assert bf.name == "bfloat16" and dtypes.resolve("bf16") is bf
    assert dtypes.to_numpy(C.ACL_BF16) == bf and dtypes.from_numpy(bf) == C.ACL_BF16


def test_the_old_spellings_are_the_table():
    from npurt.ge import dtypes as ge_dtypes
    from npurt.runtime import kernel
    assert ge_dtypes.to_numpy is dtypes.to_numpy and ge_dtypes.type_size is dtypes.type_size
    assert kernel.resolve_dtype is dtypes.resolve
