"""Native kernels: Ascend C sources built by npurt's host toolchain (ascendc.cmake,
kernel_operator.h) run as ordinary kernel tasks on the simulated AI cores.

The kernels of tests/native_kernels/kernels.cpp are built once per session with
ascendc_fatbin_library (a shared object with a kernel table), loaded with
binary_load_from_file and launched through the runtime's kernel path; results are checked
against numpy.
"""
from __future__ import annotations

import _ctypes
import ctypes
import os
import shutil
import subprocess
import threading
import time

import numpy as np
import pytest

from npurt.runtime import constants as C
from npurt.runtime import memops
from npurt.runtime.kernel import GM, kernel

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/
TOOLCHAIN = os.path.join(HERE, os.pardir, "src", "npurt", "capi", "ascendc")

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("g++") is None,
                                reason="the host Ascend C toolchain needs cmake and g++ (not found on PATH)")


@pytest.fixture(scope="module")
def kernel_binary(tmp_path_factory):
    build = tmp_path_factory.mktemp("native_kernels")
    subprocess.run(["cmake", "-S", os.path.join(HERE, "native_kernels"), "-B", str(build),
                    f"-DASCENDC_CMAKE_DIR={os.path.abspath(TOOLCHAIN)}", "-DSOC_VERSION=Ascend910B3"],
                   check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(build), "-j2"], check=True, capture_output=True)
    path = build / "fatbin" / "test_kernels" / "test_kernels.o"
    assert path.is_file()
    return str(path)


@pytest.fixture
def binary(rt, kernel_binary):
    return rt.binary_load_from_file(kernel_binary)


def to_device(rt, a: np.ndarray) -> int:
    p = rt.malloc(max(a.nbytes, 1))
    rt.memcpy(p, a.nbytes, a.ctypes.data, a.nbytes, C.ACL_MEMCPY_HOST_TO_DEVICE)
    return p


def from_device(rt, p: int, like: np.ndarray) -> np.ndarray:
    out = np.empty_like(like)
    rt.memcpy(out.ctypes.data, out.nbytes, p, out.nbytes, C.ACL_MEMCPY_DEVICE_TO_HOST)
    return out


def launch_sync(rt, func, blocks, args):
    s = rt.create_stream()
    rt.launch(func, blocks, args, s)
    rt.synchronize_stream(s)
    rt.destroy_stream(s)


def test_a_kernel_binary_lists_its_kernels_with_their_parameter_kinds(binary):
    k = binary.kernels
    assert {"ew_half", "ew_float", "ew_int32", "block_ids", "scalars", "cast_to_half", "hello", "trapping"} <= set(k)
    assert k["ew_half"].kinds == "PPPIIif"
    assert k["cast_to_half"].kinds == "RPI"  # a pointer to const is only read
    assert k["scalars"].kinds == "PbHqefd?Q"
    assert k["ew_float"].args_size == 7 * 8


BINARY_OPS = [(0, np.add), (1, np.subtract), (2, np.multiply), (4, np.maximum), (5, np.minimum)]


@pytest.mark.parametrize("kernel,dtype", [("ew_half", np.float16), ("ew_float", np.float32), ("ew_int32", np.int32)])
@pytest.mark.parametrize("op,ref", BINARY_OPS)
def test_vector_binary_ops_through_the_unified_buffer_equal_numpy(rt, binary, kernel, dtype, op, ref):
    n, tile, blocks = 4 * 256, 64, 4
    rng = np.random.default_rng(op)
    x = (rng.uniform(-50, 50, n)).astype(dtype)
    y = (rng.uniform(-50, 50, n)).astype(dtype)
    px, py, pz = to_device(rt, x), to_device(rt, y), to_device(rt, np.zeros_like(x))
    launch_sync(rt, rt.binary_get_function(binary, kernel), blocks, (px, py, pz, n, tile, op, 0.0))
    z = from_device(rt, pz, x)
    expected = ref(x.astype(np.float32), y.astype(np.float32)).astype(dtype) if dtype == np.float16 else ref(x, y)
    np.testing.assert_array_equal(z, expected)


@pytest.mark.parametrize("kernel,dtype,rtol", [("ew_half", np.float16, 1e-3), ("ew_float", np.float32, 1e-6)])
def test_vector_float_ops_equal_numpy_within_dtype_tolerance(rt, binary, kernel, dtype, rtol):
    n, tile = 512, 128
    rng = np.random.default_rng(1)
    x = rng.uniform(-4, 4, n).astype(dtype)
    y = rng.uniform(0.5, 4, n).astype(dtype)
    f = rt.binary_get_function(binary, kernel)
    px, py = to_device(rt, x), to_device(rt, y)
    x32, y32 = x.astype(np.float32), y.astype(np.float32)
    cases = {3: x32 / y32, 6: x32 + np.float32(1.5), 7: x32 * np.float32(-2.0), 8: np.maximum(x32, 0),
             9: np.abs(x32), 10: np.exp(x32), 11: np.float32(1.5) + x32 * 2}
    for op, expected in cases.items():
        pz = to_device(rt, np.zeros_like(x))
        launch_sync(rt, f, 2, (px, py, pz, n, tile, op, 1.5 if op != 7 else -2.0))
        np.testing.assert_allclose(from_device(rt, pz, x).astype(np.float32), expected.astype(dtype).astype(np.float32),
                                   rtol=rtol, atol=rtol, err_msg=f"op {op}")


def _run_ew(rt, binary, kernel, x, y, op, scalar=0.0, tile=128, blocks=2):
    px, py, pz = to_device(rt, x), to_device(rt, y), to_device(rt, np.zeros_like(x))
    launch_sync(rt, rt.binary_get_function(binary, kernel), blocks, (px, py, pz, x.size, tile, op, scalar))
    return from_device(rt, pz, x)


@pytest.mark.parametrize("kernel,dtype,rtol", [("ew_half", np.float16, 1e-3), ("ew_float", np.float32, 1e-6)])
def test_more_float_vector_ops_equal_numpy(rt, binary, kernel, dtype, rtol):
    x = np.random.default_rng(2).uniform(0.25, 8, 512).astype(dtype)
    x32 = x.astype(np.float32)
    cases = {12: np.log(x32), 13: np.sqrt(x32), 14: 1 / np.sqrt(x32), 15: 1 / x32, 16: np.maximum(x32, 2.5),
             17: np.minimum(x32, 2.5), 19: x32}
    for op, expected in cases.items():
        got = _run_ew(rt, binary, kernel, x, x, op, 2.5)
        np.testing.assert_allclose(got.astype(np.float32), expected.astype(dtype).astype(np.float32), rtol=rtol,
                                   atol=rtol, err_msg=f"op {op}")
    neg = (x - dtype(4)).astype(dtype)
    got = _run_ew(rt, binary, kernel, neg, neg, 18, 0.1)  # LeakyRelu
    n32 = neg.astype(np.float32)
    np.testing.assert_allclose(got.astype(np.float32), np.where(n32 >= 0, n32, n32 * np.float32(0.1)).astype(dtype),
                               rtol=rtol, atol=rtol)


def test_reductions_of_a_tile_put_their_result_first(rt, binary):
    tile = 128
    x = np.random.default_rng(3).uniform(-10, 10, tile).astype(np.float32)
    for op, ref in ((20, np.max), (21, np.min), (22, np.sum)):
        got = _run_ew(rt, binary, "ew_float", x, x, op, tile=tile, blocks=1)
        np.testing.assert_allclose(got[0], ref(x), rtol=1e-5, err_msg=f"op {op}")


def test_integer_vector_ops_equal_numpy(rt, binary):
    rng = np.random.default_rng(4)
    x = rng.integers(-1000, 1000, 256).astype(np.int32)
    y = rng.integers(-1000, 1000, 256).astype(np.int32)
    cases = {6: x + 7, 7: x * 7, 8: np.maximum(x, 0), 9: np.abs(x), 16: np.maximum(x, 7), 17: np.minimum(x, 7),
             30: x & y, 31: x | y, 32: ~x}
    for op, expected in cases.items():
        np.testing.assert_array_equal(_run_ew(rt, binary, "ew_int32", x, y, op, 7.0), expected, err_msg=f"op {op}")


def test_data_copy_params_move_strided_32_byte_blocks(rt, binary):
    x = np.arange(8 * 64, dtype=np.uint8)
    px, pz = to_device(rt, x), to_device(rt, np.zeros(3 * 64, np.uint8))
    launch_sync(rt, rt.binary_get_function(binary, "strided_blocks"), 1, (px, pz, 3, 2, 1))  # 64 bytes, skip 32
    expected = np.concatenate([x[i * 96:i * 96 + 64] for i in range(3)])
    np.testing.assert_array_equal(from_device(rt, pz, np.zeros(3 * 64, np.uint8)), expected)


def test_every_block_sees_its_index_and_the_block_count(rt, binary):
    blocks = 8
    out = to_device(rt, np.full(2 * blocks, -1, np.int64))
    launch_sync(rt, rt.binary_get_function(binary, "block_ids"), blocks, (out,))
    got = from_device(rt, out, np.zeros(2 * blocks, np.int64)).reshape(blocks, 2)
    np.testing.assert_array_equal(got[:, 0], np.arange(blocks))
    assert (got[:, 1] == blocks).all()


def test_scalar_arguments_of_every_kind_arrive_with_their_values(rt, binary):
    out = to_device(rt, np.zeros(8))
    values = (out, -7, 65000, -(1 << 40), 0.5, 3.25, -1e300, True, (1 << 63) + 5)
    launch_sync(rt, rt.binary_get_function(binary, "scalars"), 1, values)
    got = from_device(rt, out, np.zeros(8))
    np.testing.assert_array_equal(got[:7], [-7, 65000, -(1 << 40), 0.5, 3.25, -1e300, 1.0])
    assert got[7] == float((1 << 63) + 5)


def test_cast_and_reduce_kernels_equal_numpy(rt, binary):
    x = np.linspace(-3, 3, 100, dtype=np.float32)
    px, py = to_device(rt, x), to_device(rt, np.zeros(100, np.float16))
    launch_sync(rt, rt.binary_get_function(binary, "cast_to_half"), 1, (px, py, 100))
    np.testing.assert_array_equal(from_device(rt, py, np.zeros(100, np.float16)), x.astype(np.float16))
    po = to_device(rt, np.zeros(1, np.float32))
    launch_sync(rt, rt.binary_get_function(binary, "reduce_sum"), 1, (px, po, 100))
    np.testing.assert_allclose(from_device(rt, po, np.zeros(1, np.float32))[0], x.sum(), atol=1e-4)


def test_kernel_printf_reaches_the_process_stdout(rt, binary, capfd):
    launch_sync(rt, rt.binary_get_function(binary, "hello"), 2, (42,))
    ctypes.CDLL(None).fflush(None)
    out = capfd.readouterr().out
    assert "hello from block 0: 42" in out and "hello from block 1: 42" in out


def test_a_trap_fails_the_launch_with_the_vector_core_exception_on_a2(rt, binary):
    x = to_device(rt, np.zeros(1, np.int32))
    s = rt.create_stream()
    rt.launch(rt.binary_get_function(binary, "trapping"), 1, (x,), s)
    with pytest.raises(rt.NpuError) as info:
        rt.synchronize_stream(s)
    assert info.value.code == C.ACL_ERROR_RT_VECTOR_CORE_EXCEPTION == 507035
    assert "trapped" in str(info.value)
    # the runtime stays usable: a later launch on a new stream runs
    out = to_device(rt, np.zeros(2, np.int64))
    launch_sync(rt, rt.binary_get_function(binary, "block_ids"), 1, (out,))
    assert from_device(rt, out, np.zeros(2, np.int64)).tolist() == [0, 1]


def test_a_trap_reports_the_ai_core_exception_on_a_soc_without_vector_cores(fresh_runtime, kernel_binary,
                                                                            monkeypatch):
    monkeypatch.setenv("NPURT_SOC", "Ascend910A")  # AI cores only
    rt = fresh_runtime
    rt.init()
    rt.set_device(0)
    if rt.get_soc_name() != "Ascend910A":
        pytest.skip("this build does not select the SoC from NPURT_SOC")
    b = rt.binary_load_from_file(kernel_binary)
    x = to_device(rt, np.zeros(1, np.int32))
    s = rt.create_stream()
    rt.launch(rt.binary_get_function(b, "trapping"), 1, (x,), s)
    with pytest.raises(rt.NpuError) as info:
        rt.synchronize_stream(s)
    assert info.value.code == C.ACL_ERROR_RT_AICORE_EXCEPTION


def test_unified_buffer_overflow_traps(rt, binary):
    s = rt.create_stream()
    rt.launch(rt.binary_get_function(binary, "ub_overflow"), 1, (), s)
    with pytest.raises(rt.NpuError) as info:
        rt.synchronize_stream(s)
    assert info.value.code == 507035


def test_pointer_arguments_are_checked_at_enqueue_and_freed_memory_is_refused(rt, binary):
    f = rt.binary_get_function(binary, "block_ids")
    p = rt.malloc(64)
    rt.free(p)
    with pytest.raises(rt.NpuError) as info:
        rt.launch(f, 1, (p,), None)
    assert info.value.code == C.ACL_ERROR_INVALID_PARAM
    host = np.zeros(4, np.int64)
    with pytest.raises(rt.NpuError):
        rt.launch(f, 1, (host.ctypes.data,), None)


def test_a_native_launch_reports_rw_accesses_of_its_pointer_arguments_to_observers(rt, binary):
    seen = []

    def observe(event, **info):
        if event == "mem_access":
            seen.append((info["addr"], info["nbytes"], info["mode"]))

    x = to_device(rt, np.arange(100, dtype=np.float32))
    y = to_device(rt, np.zeros(100, np.float16))
    rt.HOOKS.add(observe)
    try:
        launch_sync(rt, rt.binary_get_function(binary, "cast_to_half"), 1, (x, y, 100))
    finally:
        rt.HOOKS.remove(observe)
    modes = {addr: mode for addr, _, mode in seen}
    assert modes[x] == "r" and modes[y] == "rw"
    assert all(n >= 200 for addr, n, _ in seen if addr == y)


def test_binary_load_from_data_of_a_native_binary(rt, kernel_binary):
    data = open(kernel_binary, "rb").read()
    b = rt.binary_load_from_data(data, len(data))
    out = to_device(rt, np.zeros(2, np.int64))
    launch_sync(rt, rt.binary_get_function(b, "block_ids"), 1, (out,))
    assert from_device(rt, out, np.zeros(2, np.int64)).tolist() == [0, 1]
    rt.binary_unload(b)


def test_an_elf_without_a_kernel_table_is_not_a_kernel_binary(rt):
    with pytest.raises(rt.NpuError) as info:
        rt.binary_load_from_file(_ctypes.__file__)  # a shared object, not a kernel binary
    assert info.value.code == C.ACL_ERROR_PARSE_FILE
    assert "kernel table" in str(info.value)


def test_blocks_run_in_parallel_with_the_gil_released(rt, binary):
    if rt.RUNTIME.driver.cores.threads < 2:
        pytest.skip("one host core: the core pool runs one block at a time")
    blocks = 2
    out = to_device(rt, np.zeros(1 + blocks, np.int64))
    launch_sync(rt, rt.binary_get_function(binary, "rendezvous"), blocks, (out, 1 << 34))  # a bound (seconds), not a wait
    assert from_device(rt, out, np.zeros(1 + blocks, np.int64)).tolist() == [blocks] + [1] * blocks


def test_the_profiler_sees_a_native_kernel_as_a_kernel_task(rt, binary, tmp_path):
    import npurt.profiler

    out = to_device(rt, np.zeros(2, np.int64))
    with npurt.profiler.profile(tmp_path) as prof:
        launch_sync(rt, rt.binary_get_function(binary, "block_ids"), 1, (out,))
    summary = (tmp_path / "op_summary.csv").read_text()
    assert "block_ids" in summary
    assert "block_ids" in prof.report()


def test_the_sanitizer_reports_a_race_on_a_native_kernels_buffer(rt, binary):
    """A native kernel writes a buffer on one stream while a copy on another stream reads it,
    with no event between them: its pointer arguments count as reads and writes."""
    import npurt.sanitizer

    n = 1 << 12
    x = to_device(rt, np.arange(n, dtype=np.float32))
    y = to_device(rt, np.zeros(n, np.float16))
    host = np.zeros(n, np.float16)
    s1, s2 = rt.create_stream(), rt.create_stream()
    san = npurt.sanitizer.enable(["race"], echo=False)
    try:
        rt.launch(rt.binary_get_function(binary, "cast_to_half"), 1, (x, y, n), s1)
        rt.memcpy_async(host.ctypes.data, host.nbytes, y, host.nbytes, C.ACL_MEMCPY_DEVICE_TO_HOST, s2)
        rt.synchronize_stream(s1)
        rt.synchronize_stream(s2)
    finally:
        san.disable()
    assert [r.tool for r in san.reports] == ["racecheck"], [str(r) for r in san.reports]


def test_the_pythonic_launch_takes_a_native_kernel_and_device_arrays(rt, binary):
    import npurt

    x = npurt.asarray(np.arange(512, dtype=np.float32))
    y = npurt.asarray(np.full(512, 2, np.float32))
    z = npurt.empty(512, np.float32)
    npurt.launch(rt.binary_get_function(binary, "ew_float"), 2, x, y, z, 512, 128, 2, 0.0)  # op 2: Mul
    np.testing.assert_array_equal(npurt.asnumpy(z), np.arange(512) * 2)


# a synchronous copy waits (bounded) for the runnable writers of its source (memops.await_writers):
# a native kernel writes through its pointers, except its pointers to const
@kernel
def _slow(ctx, other: GM):  # keeps the launch behind it in flight
    time.sleep(0.05)


_RELEASE = threading.Event()


@kernel
def _held(ctx, other: GM):  # runs until the test releases it
    _RELEASE.wait(120)


def test_a_synchronous_copy_waits_for_a_native_kernel_writing_its_source(rt, binary):
    x = np.linspace(-3, 3, 100).astype(np.float32)
    px, py, other = to_device(rt, x), rt.malloc(200), rt.malloc(64)
    s = rt.create_stream()
    rt.launch(_slow, 1, (other,), s)
    rt.launch(rt.binary_get_function(binary, "cast_to_half"), 1, (px, py, 100), s)
    out = np.empty(100, np.float16)
    rt.memcpy(out.ctypes.data, 200, py, 200, C.ACL_MEMCPY_DEVICE_TO_HOST)  # no synchronize first
    assert np.array_equal(out, x.astype(np.float16))
    rt.synchronize_stream(s)


def test_a_synchronous_copy_does_not_wait_for_a_native_kernel_reading_its_source_through_const(
        rt, binary, monkeypatch):
    monkeypatch.setattr(memops, "WRITER_STALL_S", 3600.0)  # a wrong wait would hang
    monkeypatch.setattr(memops, "WRITER_CAP_S", 3600.0)
    px, py = to_device(rt, np.ones(100, np.float32)), rt.malloc(200)
    other, dst = rt.malloc(64), rt.malloc(400)
    s, ctx, done = rt.create_stream(), rt.get_context(), []
    _RELEASE.clear()
    rt.launch(_held, 1, (other,), s)
    rt.launch(rt.binary_get_function(binary, "cast_to_half"), 1, (px, py, 100), s)  # x is `const float *`

    def copy():
        rt.set_context(ctx)
        rt.memcpy(dst, 400, px, 400, C.ACL_MEMCPY_DEVICE_TO_DEVICE)
        done.append(True)

    t = threading.Thread(target=copy, daemon=True)
    t.start()
    t.join(60)
    _RELEASE.set()
    rt.synchronize_stream(s)
    assert done == [True]
