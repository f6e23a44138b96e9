"""Device and stream resource limits: how many cores a kernel launch may use.

A launch's blocks run on at most the limit's simulated cores (`ctx.core_id`, waves of blocks
beyond), the stream's limit before its device's; `block_num` (GetBlockNum) stays the launch's
block count. Values above the device's cores are refused (hicann/runtime api_impl.cc).
"""
from __future__ import annotations

import threading

import numpy as np
import pytest

from npurt.runtime import (RES_CUBE_CORE, RES_VECTOR_CORE, RUNTIME, InvalidValueError, constants as C,
                           get_device_res_limit, get_stream_res_limit, reset_device_res_limit,
                           reset_stream_res_limit, set_device_res_limit, set_stream_res_limit)
from npurt.runtime.kernel import GM, kernel, launch

BLOCKS = 8


@kernel
def where_blocks_run(ctx, out: GM):
    """out[2 * block] = the core running the block, out[2 * block + 1] = block_num."""
    view = ctx.gm(out, np.int32, 2 * ctx.block_num)
    view[2 * ctx.block_idx] = ctx.core_id
    view[2 * ctx.block_idx + 1] = ctx.block_num


def _cores_used(rt, stream=None) -> tuple[set, set]:
    out = rt.malloc(8 * BLOCKS)
    launch(where_blocks_run, BLOCKS, (out,), stream)
    rt.synchronize_stream(stream) if stream is not None else rt.synchronize_device()
    host = np.zeros(2 * BLOCKS, np.int32)
    rt.memcpy(host.ctypes.data, host.nbytes, out, host.nbytes, C.ACL_MEMCPY_DEVICE_TO_HOST)
    rt.free(out)
    return set(host[0::2].tolist()), set(host[1::2].tolist())


def test_a_device_limit_confines_a_launch_to_that_many_cores_and_keeps_block_num(rt):
    all_cores = RUNTIME.driver.cores.lanes(BLOCKS)
    used, block_num = _cores_used(rt)
    assert used == set(range(all_cores)) and block_num == {BLOCKS}
    set_device_res_limit(0, RES_CUBE_CORE, 1)
    assert get_device_res_limit(0, RES_CUBE_CORE) == 1
    used, block_num = _cores_used(rt)
    assert used == {0} and block_num == {BLOCKS}  # every block ran, one at a time on core 0
    reset_device_res_limit(0)
    assert get_device_res_limit(0, RES_CUBE_CORE) == rt.get_device_info(0, C.ACL_DEV_ATTR_CUBE_CORE_NUM)
    assert _cores_used(rt)[0] == set(range(all_cores))


def test_a_stream_limit_comes_before_the_device_limit(rt):
    stream = rt.create_stream()
    set_device_res_limit(0, RES_CUBE_CORE, 2)
    set_stream_res_limit(stream, RES_CUBE_CORE, 1)
    assert get_stream_res_limit(stream, RES_CUBE_CORE) == 1
    assert _cores_used(rt, stream)[0] == {0}
    assert len(_cores_used(rt)[0]) == RUNTIME.driver.cores.lanes(BLOCKS, 2)  # the default stream: the device's
    reset_stream_res_limit(stream)
    assert get_stream_res_limit(stream, RES_CUBE_CORE) == 2  # falls back to the device's
    reset_device_res_limit(0)
    rt.destroy_stream(stream)


def test_a_vector_limit_does_not_confine_a_cube_kernel(rt):
    set_device_res_limit(0, RES_VECTOR_CORE, 1)
    assert _cores_used(rt)[0] == set(range(RUNTIME.driver.cores.lanes(BLOCKS)))
    reset_device_res_limit(0)


@pytest.mark.parametrize("kind,value", [(RES_CUBE_CORE, 0), (RES_CUBE_CORE, 10_000), (7, 1), (RES_CUBE_CORE, 1.5)])
def test_bad_limits_are_refused_and_change_nothing(rt, kind, value):
    with pytest.raises(InvalidValueError):
        set_device_res_limit(0, kind, value)
    assert get_device_res_limit(0, RES_CUBE_CORE) == rt.get_device_info(0, C.ACL_DEV_ATTR_CUBE_CORE_NUM)


def test_blocks_under_a_limit_of_one_never_overlap(rt):
    set_device_res_limit(0, RES_CUBE_CORE, 1)
    lock, state = threading.Lock(), {"now": 0, "most": 0}

    @kernel
    def count_overlap(ctx, unused: np.int32):
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        sum(range(20000))  # hold the core a little, so overlapping blocks would be seen
        with lock:
            state["now"] -= 1

    launch(count_overlap, BLOCKS, (0,))
    rt.synchronize_device()
    reset_device_res_limit(0)
    assert state["most"] == 1
