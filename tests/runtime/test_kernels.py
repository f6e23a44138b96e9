"""The kernel model: definition, argument packing, launch, blocks, memory checks, failures."""
from __future__ import annotations

import ctypes
import threading
import time

import numpy as np
import pytest

from npurt.runtime import constants as C
from npurt.runtime.errors import InvalidValueError, NpuError, TaskError
from npurt.runtime import launch_kernel_with_config
from npurt.runtime.kernel import GM, KernelFunction, kernel, launch, launch_kernel, launch_kernel_with_host_args
from npurt.runtime.kernel_args import (kernel_args_append, kernel_args_append_place_holder,
                                       kernel_args_finalize, kernel_args_get_mem_size,
                                       kernel_args_get_place_holder_buffer, kernel_args_init,
                                       kernel_args_para_update)
from npurt.runtime.observers import HOOKS

H2D, D2H = C.ACL_MEMCPY_HOST_TO_DEVICE, C.ACL_MEMCPY_DEVICE_TO_HOST


@kernel
def vadd(ctx, x: GM, y: GM, z: GM, n: np.int32):
    lo, hi = ctx.block_range(n)
    np.add(ctx.gm(x, np.float32, n)[lo:hi], ctx.gm(y, np.float32, n)[lo:hi], out=ctx.gm(z, np.float32, n)[lo:hi])


@kernel
def record_blocks(ctx, out: GM, n: np.int32):
    """out[block_idx] = block_num * 1000 + block_idx."""
    ctx.gm(out, np.int32, n)[ctx.block_idx] = ctx.block_num * 1000 + ctx.block_idx


@kernel
def fail_in_block(ctx, bad: np.int32):
    if ctx.block_idx == bad:
        raise ValueError("boom from the kernel")


@kernel
def read_n(ctx, x: GM, n: np.int64):
    ctx.gm(x, np.float32, n).sum()


@kernel
def copy_scaled(ctx, src: GM, dst: GM, n: np.int32, alpha: np.float32):
    np.multiply(ctx.gm(src, np.float32, n), alpha, out=ctx.gm(dst, np.float32, n))


def to_device(rt, arr: np.ndarray) -> int:
    ptr = rt.malloc(max(arr.nbytes, 1))
    if arr.nbytes:
        rt.memcpy(ptr, arr.nbytes, arr.ctypes.data, arr.nbytes, H2D)
    return ptr


def from_device(rt, ptr: int, shape, dtype) -> np.ndarray:
    out = np.empty(shape, dtype)
    rt.memcpy(out.ctypes.data, out.nbytes, ptr, out.nbytes, D2H)
    return out


@pytest.fixture
def vecs(rt):
    rng = np.random.default_rng()
    n = int(rng.integers(1000, 5000))
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    return n, a, b, to_device(rt, a), to_device(rt, b), rt.malloc(4 * n)


# ---------------------------------------------------------------- definition and packing
def test_kernel_decorator_records_params_and_args_size():
    assert isinstance(vadd, KernelFunction)
    assert vadd.name == "vadd"
    assert [n for n, _ in vadd.params] == ["x", "y", "z", "n"]
    assert vadd.params[0][1] is GM and vadd.params[3][1] is np.int32
    assert vadd.args_size == 32


def test_pack_gives_one_little_endian_8_byte_slot_per_param():
    data = vadd.pack(0x1000000000000, 2, 3, -5)
    assert len(data) == 32
    assert int.from_bytes(data[0:8], "little") == 0x1000000000000
    assert int.from_bytes(data[24:28], "little", signed=True) == -5
    assert data[28:32] == b"\0\0\0\0"
    assert vadd.unpack(data) == (0x1000000000000, 2, 3, -5)


def test_float_param_packs_as_float32_in_low_bytes():
    data = copy_scaled.pack(1, 2, 3, 1.5)
    assert np.frombuffer(data[24:28], np.float32)[0] == 1.5


def test_kernel_with_unannotated_param_is_rejected():
    with pytest.raises(TypeError, match="annotated GM or a numpy scalar"):
        @kernel
        def bad(ctx, x):
            pass


def test_kernel_with_more_than_128_params_is_rejected():
    src = "def k(ctx, " + ", ".join(f"p{i}: np.int32" for i in range(129)) + "): pass"
    scope = {"np": np}
    exec(src, scope)
    with pytest.raises(TypeError, match="at most 128"):
        kernel(scope["k"])


def test_calling_a_kernel_directly_is_a_clear_error():
    with pytest.raises(TypeError, match="runs on the device"):
        vadd(None, 1, 2, 3, 4)


# ---------------------------------------------------------------- launch and blocks
def test_launch_runs_vadd(rt, vecs):
    n, a, b, x, y, z = vecs
    launch(vadd, 1, (x, y, z, n))
    rt.synchronize_stream(None)
    assert np.array_equal(from_device(rt, z, n, np.float32), a + b)


def test_multi_block_launch_equals_single_block(rt, vecs):
    n, a, b, x, y, z = vecs
    z2 = rt.malloc(4 * n)
    launch(vadd, 1, (x, y, z, n))
    launch(vadd, 7, (x, y, z2, n))
    rt.synchronize_stream(None)
    assert np.array_equal(from_device(rt, z, n, np.float32), from_device(rt, z2, n, np.float32))


def test_every_block_runs_once_with_its_index_and_the_block_count(rt):
    nb = 13
    out = to_device(rt, np.full(nb, -1, np.int32))
    launch(record_blocks, nb, (out, nb))
    rt.synchronize_stream(None)
    assert list(from_device(rt, out, nb, np.int32)) == [nb * 1000 + i for i in range(nb)]


def test_blocks_run_in_parallel_on_host_threads(rt):
    seen = set()
    lock = threading.Lock()

    @kernel
    def who(ctx):
        with lock:
            seen.add(threading.get_ident())
        time.sleep(0.02)

    launch(who, 4, ())
    rt.synchronize_stream(None)
    assert len(seen) >= min(2, rt.RUNTIME.driver.cores.threads)


def test_next_task_starts_after_every_block_finished(rt):
    n = 4
    out = to_device(rt, np.zeros(n, np.int32))

    @kernel
    def slow_write(ctx, o: GM):
        time.sleep(0.01 * (ctx.block_idx + 1))
        ctx.gm(o, np.int32, n)[ctx.block_idx] = 1

    @kernel
    def check_all(ctx, o: GM, flag: GM):
        ctx.gm(flag, np.int32, 1)[0] = int(ctx.gm(o, np.int32, n).sum())

    flag = to_device(rt, np.zeros(1, np.int32))
    launch(slow_write, n, (out,))
    launch(check_all, 1, (out, flag))
    rt.synchronize_stream(None)
    assert from_device(rt, flag, 1, np.int32)[0] == n


def test_launch_returns_the_task_sequence_number(rt, vecs):
    n, a, b, x, y, z = vecs
    s = rt.create_stream()
    assert launch(vadd, 2, (x, y, z, n), s) == 1
    assert launch(vadd, 2, (x, y, z, n), s) == 2
    rt.synchronize_stream(s)
    rt.destroy_stream(s)


def test_launch_kernel_reads_packed_args_from_device_memory(rt, vecs):
    n, a, b, x, y, z = vecs
    packed = np.frombuffer(vadd.pack(x, y, z, n), np.uint8).copy()
    args = to_device(rt, packed)
    launch_kernel(vadd, 3, args, 32, None)
    rt.synchronize_stream(None)
    assert np.array_equal(from_device(rt, z, n, np.float32), a + b)


def test_launch_kernel_args_written_earlier_on_the_stream_are_used(rt, vecs):
    n, a, b, x, y, z = vecs
    args = rt.malloc(32)
    host = rt.malloc_host(32)
    ctypes.memmove(host, vadd.pack(x, y, z, n), 32)
    rt.memcpy_async(args, 32, host, 32, H2D, None)
    launch_kernel(vadd, 2, args, 32, None)
    rt.synchronize_stream(None)
    assert np.array_equal(from_device(rt, z, n, np.float32), a + b)
    rt.free_host(host)


def test_launch_with_host_args_bytes(rt, vecs):
    n, a, b, x, y, z = vecs
    data = vadd.pack(x, y, z, n)
    launch_kernel_with_host_args(vadd, 2, None, [], data, len(data))
    rt.synchronize_stream(None)
    assert np.array_equal(from_device(rt, z, n, np.float32), a + b)


def test_host_args_placeholder_copies_data_to_device_and_patches_the_slot(rt):
    rng = np.random.default_rng()
    n = 64
    src = rng.standard_normal(n).astype(np.float32)
    dst = rt.malloc(4 * n)
    head = copy_scaled.pack(0, dst, n, 2.0)
    buf = head + src.tobytes()
    launch_kernel_with_host_args(copy_scaled, 1, None, [], buf, len(buf),
                                 [{"addrOffset": 0, "dataOffset": 32}], 1)
    rt.synchronize_stream(None)
    assert np.array_equal(from_device(rt, dst, n, np.float32), src * np.float32(2.0))


def test_kernel_args_builder_with_placeholder(rt):
    rng = np.random.default_rng()
    n = 50
    src = rng.standard_normal(n).astype(np.float32)
    dst = rt.malloc(4 * n)
    args = kernel_args_init(copy_scaled)
    holder = kernel_args_append_place_holder(args)
    kernel_args_append(args, np.uint64(dst).tobytes(), 8)
    kernel_args_append(args, np.int32(n).tobytes(), 4)
    alpha = kernel_args_append(args, np.float32(3.0).tobytes(), 4)
    addr = kernel_args_get_place_holder_buffer(args, holder, src.nbytes)
    ctypes.memmove(addr, src.tobytes(), src.nbytes)
    kernel_args_finalize(args)
    launch_kernel_with_config(copy_scaled, 1, None, [], args)
    rt.synchronize_stream(None)
    assert np.array_equal(from_device(rt, dst, n, np.float32), src * np.float32(3.0))
    kernel_args_para_update(args, alpha, np.float32(-1.0).tobytes(), 4)
    with pytest.raises(InvalidValueError, match="not finalized"):
        launch_kernel_with_config(copy_scaled, 1, None, [], args)
    kernel_args_finalize(args)
    launch_kernel_with_config(copy_scaled, 1, None, [], args)
    rt.synchronize_stream(None)
    assert np.array_equal(from_device(rt, dst, n, np.float32), -src)


def test_kernel_args_finalize_with_missing_params_names_them(rt):
    args = kernel_args_init(vadd)
    kernel_args_append(args, np.uint64(0).tobytes(), 8)
    with pytest.raises(InvalidValueError, match="missing: y, z, n"):
        kernel_args_finalize(args)


def test_kernel_args_get_mem_size_pads_each_param_to_8_bytes(rt):
    assert kernel_args_get_mem_size(vadd, 28) == 32
    assert kernel_args_get_mem_size(vadd, 40) == 40


def test_blockdim_offset_shifts_block_idx(rt):
    out = to_device(rt, np.full(6, -1, np.int32))
    launch(record_blocks, 3, (out, 6), cfg=[{"id": C.ACL_RT_LAUNCH_KERNEL_ATTR_BLOCKDIM_OFFSET, "value": 3}])
    rt.synchronize_stream(None)
    assert list(from_device(rt, out, 6, np.int32)) == [-1, -1, -1, 3003, 3004, 3005]


def test_kernel_running_past_its_timeout_fails_with_aicore_timeout(rt):
    @kernel
    def sleepy(ctx):
        time.sleep(0.01)

    launch(sleepy, 1, (), cfg=[{"id": C.ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US, "value": 100}])
    with pytest.raises(TaskError) as info:
        rt.synchronize_stream(None)
    assert info.value.code == C.ACL_ERROR_RT_AICORE_TIMEOUT
    assert "sleepy" in info.value.message


@pytest.mark.parametrize("cfg", [
    [{"id": C.ACL_RT_LAUNCH_KERNEL_ATTR_ENGINE_TYPE, "value": 2}],
    [{"id": C.ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE, "value": 3}],
    [{"id": C.ACL_RT_LAUNCH_KERNEL_ATTR_DYN_UBUF_SIZE, "value": 1 << 30}],
    [{"id": 99, "value": 0}],
    [{"id": C.ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT, "value": -1}],
    "not a list",
])
def test_bad_launch_config_is_invalid_param(rt, cfg):
    with pytest.raises(InvalidValueError):
        launch(fail_in_block, 1, (-1,), cfg=cfg)


def test_schem_mode_1_with_more_blocks_than_ai_cores_is_invalid(rt):
    cores = rt.current_device().spec.aicore_num
    with pytest.raises(InvalidValueError, match="SCHEM_MODE 1"):
        launch(fail_in_block, cores + 1, (-1,), cfg=[{"id": C.ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE, "value": 1}])


# ---------------------------------------------------------------- bad input at enqueue
def test_wrong_args_size_is_invalid_param(rt, vecs):
    n, a, b, x, y, z = vecs
    args = to_device(rt, np.frombuffer(vadd.pack(x, y, z, n), np.uint8).copy())
    with pytest.raises(InvalidValueError, match="takes 32 bytes"):
        launch_kernel(vadd, 1, args, 24, None)
    with pytest.raises(InvalidValueError, match="takes 32 bytes"):
        launch_kernel_with_host_args(vadd, 1, None, [], b"\0" * 40, 40)


def test_args_not_matching_the_signature_are_invalid_param(rt, vecs):
    n, a, b, x, y, z = vecs
    with pytest.raises(InvalidValueError, match="takes 4 arguments"):
        launch(vadd, 1, (x, y, z))
    with pytest.raises(InvalidValueError, match="argument 'n' must be a int32"):
        launch(vadd, 1, (x, y, z, 2**40))
    with pytest.raises(InvalidValueError, match="argument 'n'"):
        launch(vadd, 1, (x, y, z, 1.5))
    with pytest.raises(InvalidValueError, match="argument 'x' must be a device address"):
        launch(vadd, 1, (-8, y, z, n))


@pytest.mark.parametrize("blocks", [0, -1, 65536, 1.0])
def test_num_blocks_outside_the_device_limit_is_invalid_param(rt, blocks):
    with pytest.raises(InvalidValueError, match="num_blocks"):
        launch(fail_in_block, blocks, (-1,))


def test_gm_argument_that_was_freed_is_invalid_param(rt, vecs):
    n, a, b, x, y, z = vecs
    rt.free(x)
    with pytest.raises(InvalidValueError, match="not a live device address"):
        launch(vadd, 1, (x, y, z, n))


def test_gm_argument_that_is_a_host_address_is_invalid_param(rt, vecs):
    n, a, b, x, y, z = vecs
    with pytest.raises(InvalidValueError, match="host address"):
        launch(vadd, 1, (a.ctypes.data, y, z, n))


def test_gm_argument_of_another_device_without_peer_access_is_invalid_param(rt, vecs):
    n, a, b, x, y, z = vecs
    rt.set_device(1)
    other = rt.malloc(4 * n)
    rt.set_device(0)
    with pytest.raises(InvalidValueError, match="device 1"):
        launch(vadd, 1, (x, y, other, n))


def test_launching_a_plain_function_is_invalid_device_function(rt):
    with pytest.raises(NpuError) as info:
        launch(lambda ctx: None, 1, ())
    assert info.value.code == C.ACL_ERROR_RT_INVALID_DEVICE_FUNCTION


def test_launch_extents_check_buffer_size_at_enqueue(rt, vecs):
    n, a, b, x, y, z = vecs
    with pytest.raises(InvalidValueError, match="run past the end"):  # 64 bytes: more than the padding
        launch(vadd, 1, (x, y, z, n + 16), extents=(4 * n + 64,) * 3)


# ---------------------------------------------------------------- failures while running
def test_out_of_bounds_read_fails_the_task_with_aicore_exception(rt, vecs):
    n, a, b, x, y, z = vecs
    launch(read_n, 1, (x, n + 16))  # 64 bytes past: beyond ACL's padding of the allocation
    with pytest.raises(TaskError) as info:
        rt.synchronize_stream(None)
    assert info.value.code == C.ACL_ERROR_RT_AICORE_EXCEPTION
    assert "past the end of its allocation" in info.value.message


def test_stream_and_device_stay_usable_after_a_kernel_failure(rt, vecs):
    n, a, b, x, y, z = vecs
    launch(read_n, 2, (x, n * 2))
    with pytest.raises(TaskError):
        rt.synchronize_stream(None)
    launch(vadd, 2, (x, y, z, n))
    rt.synchronize_stream(None)
    assert np.array_equal(from_device(rt, z, n, np.float32), a + b)


def test_kernel_exception_names_kernel_and_block(rt):
    launch(fail_in_block, 6, (4,))
    with pytest.raises(TaskError) as info:
        rt.synchronize_stream(None)
    msg = info.value.message
    assert info.value.code == C.ACL_ERROR_RT_AICORE_EXCEPTION
    assert "'fail_in_block'" in msg and "block 4 of 6" in msg and "boom from the kernel" in msg


def test_reading_memory_freed_before_the_launch_was_enqueued_fails(rt, vecs):
    n, a, b, x, y, z = vecs

    @kernel
    def read_raw(ctx, p: np.uint64, count: np.int32):
        ctx.gm(p, np.float32, count).sum()

    rt.free(x)
    launch(read_raw, 1, (x, n))
    with pytest.raises(TaskError, match="freed"):
        rt.synchronize_stream(None)


def test_stop_on_failure_drops_the_rest_of_the_stream(rt, vecs):
    n, a, b, x, y, z = vecs
    s, other = rt.create_stream(), rt.create_stream()
    gate = rt.create_event(C.ACL_EVENT_SYNC)
    rt.set_stream_failure_mode(s, C.ACL_STOP_ON_FAILURE)
    rt.memset(z, 4 * n, 0, 4 * n)
    rt.stream_wait_event(s, gate)     # hold s so both launches are queued before either runs
    launch(fail_in_block, 1, (0,), s)
    launch(vadd, 1, (x, y, z, n), s)  # queued behind the failure: dropped
    rt.record_event(gate, other)
    with pytest.raises(TaskError) as info:
        rt.synchronize_stream(s)
    assert "fail_in_block" in info.value.message
    assert not from_device(rt, z, n, np.float32).any()
    rt.destroy_stream(s, force=True)
    rt.destroy_stream(other)


def test_free_while_a_kernel_is_queued_is_not_reused_before_it_ran(rt, vecs):
    n, a, b, x, y, z = vecs
    s = rt.create_stream()
    gate = rt.create_event(C.ACL_EVENT_SYNC)
    blocker = rt.create_stream()
    rt.stream_wait_event(s, gate)           # hold s until the gate is recorded
    launch(vadd, 2, (x, y, z, n), s)
    rt.free(x)                              # stream-ordered: x stays reserved for the kernel
    again = [rt.malloc(4 * n) for _ in range(4)]
    for p in again:
        assert p != x
        rt.memset(p, 4 * n, 0, 4 * n)
    rt.record_event(gate, blocker)
    rt.synchronize_stream(s)
    assert np.array_equal(from_device(rt, z, n, np.float32), a + b)
    rt.destroy_stream(s)
    rt.destroy_stream(blocker)


def test_gm_reports_accesses_to_observers(rt, vecs):
    n, a, b, x, y, z = vecs
    seen = []

    def observer(name, **fields):
        if name == "mem_access":
            seen.append((fields["addr"], fields["nbytes"]))

    HOOKS.add(observer)
    try:
        launch(vadd, 1, (x, y, z, n))
        rt.synchronize_stream(None)
    finally:
        HOOKS.remove(observer)
    assert sorted(seen) == sorted([(x, 4 * n), (y, 4 * n), (z, 4 * n)])


def test_kernel_reaches_registered_host_memory_through_its_alias(rt):
    import mmap
    rng = np.random.default_rng()
    mm = mmap.mmap(-1, 4096)
    host = np.frombuffer(mm, np.float32)
    host[:] = rng.standard_normal(host.size)
    expected = host * np.float32(2.0)
    alias = rt.host_register(host.ctypes.data, 4096)
    dst = rt.malloc(4096)
    launch(copy_scaled, 1, (alias, dst, 1024, 2.0))
    rt.synchronize_stream(None)
    assert np.array_equal(from_device(rt, dst, 1024, np.float32), expected)
    rt.host_unregister(host.ctypes.data)
    del host
    mm.close()


def test_kernel_args_built_in_user_memory(rt, vecs):
    from npurt.runtime.kernel_args import (kernel_args_get_handle_mem_size,
                                           kernel_args_init_by_user_mem)
    n, a, b, x, y, z = vecs
    size = kernel_args_get_mem_size(vadd, 28)
    handle_mem = ctypes.create_string_buffer(kernel_args_get_handle_mem_size(vadd))
    args_mem = ctypes.create_string_buffer(size)
    handle = ctypes.addressof(handle_mem)
    kernel_args_init_by_user_mem(vadd, handle, ctypes.addressof(args_mem), size)
    for value in (np.uint64(x), np.uint64(y), np.uint64(z), np.int32(n)):
        kernel_args_append(handle, value.tobytes(), value.nbytes)
    kernel_args_finalize(handle)
    assert args_mem.raw[:32] == vadd.pack(x, y, z, n)  # the packed block lives in user memory
    launch_kernel_with_config(vadd, 2, None, [], handle)
    rt.synchronize_stream(None)
    assert np.array_equal(from_device(rt, z, n, np.float32), a + b)


def test_kernel_and_gm_are_exported_by_npurt():
    import npurt
    assert npurt.GM is GM

    @npurt.kernel
    def k(ctx, x: GM):
        pass
    assert isinstance(k, KernelFunction)     # what the runtime's launches and binaries take
    assert callable(k[1])                    # and it launches from Python: k[blocks](...)
    with pytest.raises(TypeError, match="needs @npurt.kernel"):
        kernel(k.fn)[1]                      # the runtime's own decorator makes no Python launcher
