"""One task per elementwise op (npurt.array.fused): `a + b`, `a * 2`, `x - row` queue a single
ElementwiseTask with the kernel route's bits; what that does not hold for (float16, bfloat16,
scalars an integer dtype cannot hold, strided operands) takes the kernel route."""
from __future__ import annotations

import numpy as np
import pytest

import npurt
from gates import Gate
from npurt.array.fused import ElementwiseTask
from npurt.runtime import HOOKS


@pytest.fixture(autouse=True)
def _fresh(fresh_runtime):
    yield


@pytest.fixture
def queued():
    """The tasks enqueued while the test runs."""
    tasks = []

    def observer(name, **fields):
        if name == "task_enqueued":
            tasks.append(fields["task"])
    HOOKS.add(observer)
    yield tasks
    HOOKS.remove(observer)


def _ints(shape, dtype, lo=-50, hi=50):
    return np.random.default_rng(7).integers(lo, hi, shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int8, np.int64, np.uint8])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "maximum", "minimum"])
def test_a_binary_op_is_one_task_with_numpy_s_result(op, dtype, queued):
    x = _ints((5, 7), dtype, 0 if dtype == np.uint8 else -50)
    y = _ints((5, 7), dtype, 0 if dtype == np.uint8 else -50)
    a, b = npurt.to_device(x), npurt.to_device(y)
    del queued[:]
    got = getattr(npurt.ops, op)(a, b)
    assert [type(t) for t in queued] == [ElementwiseTask]
    ufunc = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.maximum, "minimum": np.minimum}[op]
    want = ufunc(x, y)
    assert got.dtype == want.dtype and np.array_equal(got.to_host(), want)


def test_scalars_and_broadcasting_need_no_temporaries(queued):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    row = np.array([0.5, -1, 2, 3], np.float32)
    a, r = npurt.to_device(x), npurt.to_device(row)
    del queued[:]
    cases = [(lambda: a + 2, x + np.float32(2)), (lambda: 0.1 * a, np.float32(0.1) * x),
             (lambda: a - r, x - row), (lambda: r / a[1:], row / x[1:]), (lambda: 2 - a, np.float32(2) - x)]
    for make, want in cases:
        before = len(queued)
        got = make()
        assert len(queued) - before == 1 and type(queued[-1]) is ElementwiseTask
        assert np.array_equal(got.to_host(), want)


def test_what_the_fused_task_cannot_match_takes_the_kernel_route(queued):
    h = npurt.to_device(np.ones(8, np.float16))          # float16: computed in float32, rounded once
    i = npurt.to_device(np.arange(8, dtype=np.int8))
    s = npurt.to_device(np.arange(16, dtype=np.float32))[::2]  # strided
    del queued[:]
    np.testing.assert_array_equal((h + h).to_host(), np.full(8, 2, np.float16))
    np.testing.assert_array_equal((s * s).to_host(), np.arange(0, 16, 2, dtype=np.float32) ** 2)
    i + 1000  # a scalar int8 cannot hold: whatever the fill makes of it, not the fused route
    assert not any(type(t) is ElementwiseTask for t in queued)


def test_int_division_is_refused_as_before():
    i = npurt.to_device(np.arange(1, 5, dtype=np.int32))
    with pytest.raises(npurt.InvalidValueError, match="div"):
        i / i


def test_the_task_tells_tools_what_it_reads_and_writes():
    a, b = npurt.to_device(np.ones(16, np.float32)), npurt.to_device(np.ones(4, np.float32))
    gate_stream = npurt.Stream()
    gate = Gate(gate_stream)
    with npurt.stream(gate_stream):
        c = a.reshape(4, 4) * b
        task = gate_stream.runtime_stream.queue[-1]
    assert type(task) is ElementwiseTask and task.kind == "kernel" and task.details()["name"] == "mul"
    assert task.accesses() == ((a.ptr, 64, "r"), (b.ptr, 16, "r"), (c.ptr, 64, "w"))
    gate.record(npurt.Stream())
    gate_stream.synchronize()
    np.testing.assert_array_equal(c.to_host(), np.ones((4, 4), np.float32))


def test_inputs_dropped_while_the_task_waits_are_not_reused_before_it_ran():
    s = npurt.Stream()
    gate = Gate(s)
    with npurt.stream(s):
        a, b = npurt.full(256, 3.0, stream=s), npurt.full(256, 4.0, stream=s)
        c = a + b
        del a, b  # freed stream-ordered: their blocks wait for the add
        others = [npurt.full(256, 9.0, stream=npurt.Stream()) for _ in range(8)]
    gate.record(npurt.Stream())
    s.synchronize()
    np.testing.assert_array_equal(c.to_host(), np.full(256, 7.0, np.float32))
    assert all((o.to_host() == 9).all() for o in others)
