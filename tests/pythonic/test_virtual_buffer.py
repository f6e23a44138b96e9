"""npurt.VirtualBuffer (issue 26): device memory that grows in place over the runtime's VMM,
and sleeps (offloaded to the host, its device memory freed) and wakes at the same address."""
from __future__ import annotations

import numpy as np
import pytest

import npurt
from npurt.runtime import constants as C
from npurt.runtime.errors import InvalidValueError

MiB = 1 << 20


def test_a_virtual_buffer_sleeps_and_wakes_at_the_same_address_like_vllm(rt):
    """vLLM's sleep mode: weights offloaded to the host, their device memory unmapped and
    freed, then mapped again at the same addresses with the weights restored."""
    weights = {"wq": np.random.default_rng(0).standard_normal((512, 512)).astype(np.float32),
               "wk": np.random.default_rng(1).standard_normal((1024, 256)).astype(np.float32)}
    buf = npurt.VirtualBuffer(64 * MiB)
    offsets, offset = {}, 0
    for name, w in weights.items():
        offsets[name] = offset
        offset += w.nbytes
    buf.resize(offset)
    arrays = {n: buf.array(w.shape, w.dtype, offsets[n]) for n, w in weights.items()}
    for n, w in weights.items():
        arrays[n].copy_from_host(w)
    x = npurt.to_device(np.ones((4, 512), np.float32))
    before = (x @ arrays["wq"]).to_host()
    addresses = {n: a.ptr for n, a in arrays.items()}
    free_awake = rt.get_mem_info(C.ACL_HBM_MEM)[0]

    buf.sleep()
    assert buf.asleep and buf.size == 0
    assert rt.get_mem_info(C.ACL_HBM_MEM)[0] == free_awake + offset + (-offset % buf.granularity)
    with pytest.raises(InvalidValueError, match="no physical memory is mapped"):
        arrays["wq"].to_host()                 # asleep: the weights are not on the device

    buf.wake()
    assert {n: a.ptr for n, a in arrays.items()} == addresses
    for n, w in weights.items():
        assert np.array_equal(arrays[n].to_host(), w)
    assert np.array_equal((x @ arrays["wq"]).to_host(), before)
    buf.resize(offset + 8 * MiB)               # grows in place
    assert arrays["wk"].ptr == addresses["wk"] and np.array_equal(arrays["wk"].to_host(), weights["wk"])
    buf.close()


def test_a_virtual_buffer_refuses_what_it_cannot_do(rt):
    buf = npurt.VirtualBuffer(4 * MiB)
    with pytest.raises(InvalidValueError):
        buf.resize(8 * MiB)
    with pytest.raises(InvalidValueError):
        buf.array((2 * MiB,), "float32")        # 8 MiB of floats: past the capacity
    buf.sleep()
    with pytest.raises(InvalidValueError, match="asleep"):
        buf.resize(2 * MiB)
    buf.close()
    with pytest.raises(InvalidValueError, match="closed"):
        buf.wake()
