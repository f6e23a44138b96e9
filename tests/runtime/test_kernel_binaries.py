"""Kernel binaries: Python files of @kernel functions loaded, looked up, launched, unloaded."""
from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest

from npurt.runtime import constants as C
from npurt.runtime.binary import (binary_get_function, binary_load, binary_load_from_data,
                                  binary_load_from_file, binary_unload, create_binary,
                                  destroy_binary, get_function_name, register_cpu_func)
from npurt.runtime.errors import InvalidHandleError, InvalidValueError, NpuError
from npurt.runtime.kernel import function_of, launch, launch_kernel_with_host_args

VADD_FILE = Path(__file__).resolve().parents[2] / "examples" / "kernels" / "vadd.py"
H2D, D2H = C.ACL_MEMCPY_HOST_TO_DEVICE, C.ACL_MEMCPY_DEVICE_TO_HOST

SMALL_BINARY = b'''
import numpy as np
from npurt.runtime.kernel import GM, kernel

@kernel
def negate(ctx, x: GM, n: np.int32):
    v = ctx.gm(x, np.float32, n)
    np.negative(v, out=v)
'''


def roundtrip(rt, arr):
    ptr = rt.malloc(arr.nbytes)
    rt.memcpy(ptr, arr.nbytes, arr.ctypes.data, arr.nbytes, H2D)
    return ptr


def fetch(rt, ptr, n):
    out = np.empty(n, np.float32)
    rt.memcpy(out.ctypes.data, out.nbytes, ptr, out.nbytes, D2H)
    return out


def test_example_binary_loads_and_vadd_runs(rt):
    rng = np.random.default_rng()
    n = 3000
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    x, y, z = roundtrip(rt, a), roundtrip(rt, b), rt.malloc(4 * n)
    binary = binary_load_from_file(str(VADD_FILE), [])
    func = binary_get_function(binary.handle, "vadd")
    assert func.handle and function_of(func.handle) is func
    data = func.pack(x, y, z, n)
    launch_kernel_with_host_args(func.handle, 4, None, [], data, len(data))
    rt.synchronize_stream(None)
    assert np.array_equal(fetch(rt, z, n), a + b)
    binary_unload(binary.handle)


def test_binary_lists_every_kernel_of_the_file(rt):
    binary = binary_load_from_file(VADD_FILE)
    assert set(binary.kernels) == {"vadd", "scale"}
    assert get_function_name(binary_get_function(binary, "scale"), 64) == "scale"


def test_loading_twice_gives_independent_binaries(rt):
    first = binary_load_from_file(VADD_FILE)
    second = binary_load_from_file(VADD_FILE)
    assert first.handle != second.handle
    assert binary_get_function(first, "vadd") is not binary_get_function(second, "vadd")


def test_binary_load_from_data_bytes_and_host_address(rt):
    rng = np.random.default_rng()
    v = rng.standard_normal(100).astype(np.float32)
    x = roundtrip(rt, v)
    binary = binary_load_from_data(SMALL_BINARY, len(SMALL_BINARY), [])
    launch(binary_get_function(binary, "negate"), 1, (x, 100))
    raw = ctypes.create_string_buffer(SMALL_BINARY, len(SMALL_BINARY))
    again = binary_load_from_data(ctypes.addressof(raw), len(SMALL_BINARY), [])
    launch(binary_get_function(again, "negate"), 1, (x, 100))
    launch(binary_get_function(again, "negate"), 1, (x, 100))
    rt.synchronize_stream(None)
    assert np.array_equal(fetch(rt, x, 100), -v)


def test_create_binary_then_binary_load(rt):
    data = create_binary(SMALL_BINARY, len(SMALL_BINARY))
    binary = binary_load(data.handle)
    assert "negate" in binary.kernels
    destroy_binary(data.handle)
    with pytest.raises(InvalidHandleError):
        binary_load(data.handle)


def test_unknown_kernel_name_is_kernel_not_found(rt):
    binary = binary_load_from_file(VADD_FILE)
    with pytest.raises(NpuError) as info:
        binary_get_function(binary, "vsub")
    assert info.value.code == C.ACL_ERROR_KERNEL_NOT_FOUND
    assert "vadd" in info.value.message  # lists what exists


def test_missing_file_is_invalid_file(rt, tmp_path):
    with pytest.raises(NpuError) as info:
        binary_load_from_file(str(tmp_path / "nope.py"))
    assert info.value.code == C.ACL_ERROR_INVALID_FILE


@pytest.mark.parametrize("content", [
    b"\x7fELF\x02\x01\x01\x00" + bytes(range(200)),           # a real device object file
    b"this is not python at all (",                           # syntax error
    b"import numpy as np\nx = 1\n",                           # python, but no kernels
    b"raise RuntimeError('broken binary')\n",                 # fails while loading
    bytes([0xff, 0xfe, 0x00, 0x80]) * 10,                     # not UTF-8
])
def test_file_that_is_not_a_kernel_binary_is_parse_file(rt, tmp_path, content):
    path = tmp_path / "kernel.o"
    path.write_bytes(content)
    with pytest.raises(NpuError) as info:
        binary_load_from_file(str(path))
    assert info.value.code == C.ACL_ERROR_PARSE_FILE


def test_unloaded_binary_and_its_functions_are_stale(rt):
    binary = binary_load_from_file(VADD_FILE)
    func = binary_get_function(binary, "vadd")
    handle = func.handle
    binary_unload(binary)
    with pytest.raises(InvalidHandleError):
        binary_get_function(binary, "vadd")
    with pytest.raises(InvalidHandleError):
        function_of(handle)
    with pytest.raises(InvalidHandleError):
        binary_unload(binary)


def test_get_function_name_needs_room_for_the_name(rt):
    func = binary_get_function(binary_load_from_file(VADD_FILE), "vadd")
    assert get_function_name(func.handle, 5) == "vadd"
    with pytest.raises(InvalidValueError):
        get_function_name(func.handle, 4)


def test_bad_load_options_are_invalid_param(rt):
    with pytest.raises(InvalidValueError):
        binary_load_from_file(VADD_FILE, [{"type": 42, "value": 0}])


def test_register_cpu_func_is_not_supported(rt):
    binary = binary_load_from_file(VADD_FILE)
    with pytest.raises(NpuError) as info:
        register_cpu_func(binary, "f", "vadd")
    assert info.value.code == C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT
