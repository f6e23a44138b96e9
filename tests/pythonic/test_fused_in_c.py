"""DeviceArray's operators in C (npurt.array.fused with the accelerator): `a op b` of two arrays
of one shape, dtype and device is the `binary` C entry (operations.binary_same), which makes
the result and its ElementwiseTask and queues it, and the run loop computes add, sub, mul and
div of up to 16 KiB itself. Each case gives numpy's bits, whether the op ran inline, on a
worker, or in Python; what the C loop does not compute (other ops, scalars, broadcasting, big
ops, a replaced run()) calls ElementwiseTask.run. Without the extension everything is the
Python route, with the same results (a fresh interpreter, NPURT_SPEEDUPS=0)."""
from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

import npurt
from gates import Gate
from npurt.array import fused
from npurt.array.fused import ElementwiseTask
from npurt.runtime import accel, is_fast_entry
from npurt.runtime.api import destroy_stream
from tests.isolation import run_isolated

HAVE_C = accel.SPEEDUPS is not None
operations = sys.modules["npurt.array.operations"]
UFUNCS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}
OPERATORS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
             "div": lambda a, b: a / b}


@pytest.fixture(autouse=True)
def _fresh(fresh_runtime):
    yield


def _computed() -> int:
    """ElementwiseTasks the C run loop computed so far, in any thread (0 without the extension)."""
    return accel.SPEEDUPS.elementwise_computed() if HAVE_C else 0


def _edge_values(dtype, n=512) -> tuple[np.ndarray, np.ndarray]:
    """Two operands mixing ordinary values with each dtype's edge cases."""
    rng = np.random.default_rng(11)
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        info = np.finfo(dtype)
        special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, info.max, -info.max, info.tiny,
                            info.smallest_subnormal, -info.smallest_subnormal, 1.0, -1.0, 3.0], dtype)
        x = (rng.standard_normal(n) * 100).astype(dtype)
        y = (rng.standard_normal(n) * 100).astype(dtype)
    else:
        info = np.iinfo(dtype)
        special = np.array([0, 1, -1 if info.min < 0 else 2, info.min, info.max, info.max - 1, info.min + 1], dtype)
        x = rng.integers(info.min, info.max, n, endpoint=True).astype(dtype)
        y = rng.integers(info.min, info.max, n, endpoint=True).astype(dtype)
    k = len(special)
    x[:k * k] = np.repeat(special, k)[:n]  # every pair of edge values, both ways
    y[:k * k] = np.tile(special, k)[:n]
    return x, y


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(f"u{a.dtype.itemsize}")


def test_the_operators_common_case_is_the_c_entry_where_the_extension_is_built():
    assert fused.IN_C == HAVE_C
    assert is_fast_entry(operations.binary_same) == HAVE_C
    assert operations.binary_same.__wrapped__ is operations._binary_same if HAVE_C else True


@pytest.mark.parametrize("op,dtype", [(op, dtype) for op in ("add", "sub", "mul", "div")
                                       for dtype in (np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
                                                     np.uint8)
                                       if op != "div" or np.dtype(dtype).kind == "f"])  # int division is refused
def test_each_op_gives_numpy_s_bits_for_every_edge_value(op, dtype):
    x, y = _edge_values(dtype)  # at most 4 KiB each: within what the C loop computes
    a, b = npurt.to_device(x), npurt.to_device(y)
    npurt.synchronize()
    before = _computed()
    got = OPERATORS[op](a, b)       # an idle stream: run at once, here
    npurt.synchronize()
    with np.errstate(all="ignore"):
        want = UFUNCS[op](x, y)
    out = got.to_host()
    assert out.dtype == want.dtype and out.shape == want.shape
    np.testing.assert_array_equal(_bits(out), _bits(want))
    assert _computed() - before == HAVE_C  # computed in C, not by run()


def test_a_burst_queued_behind_work_runs_on_a_worker_with_the_same_bits():
    x, y = _edge_values(np.float32)
    s = npurt.Stream()
    with npurt.stream(s):
        a, b = npurt.to_device(x), npurt.to_device(y)
        s.synchronize()
        gate = Gate(s)
        results = [(a + b, a - b, a * b, a / b) for _ in range(20)]  # queued: the gate holds s
        before = _computed()
        gate.record(npurt.Stream())
        s.synchronize()
    with np.errstate(all="ignore"):
        want = [np.add(x, y), np.subtract(x, y), np.multiply(x, y), np.divide(x, y)]
    for four in results:
        for got, w in zip(four, want):
            np.testing.assert_array_equal(_bits(got.to_host()), _bits(w))
    assert _computed() - before == (80 if HAVE_C else 0)


def test_an_operand_that_is_also_the_output_and_a_view_at_an_offset():
    """out= an operand (read before written, element by element) and operands that are views
    of one allocation at an offset: still numpy's result."""
    x = np.arange(2048, dtype=np.float32)
    base = npurt.to_device(x)
    lo, hi = base[:1024], base[1024:]
    got = lo + hi
    np.testing.assert_array_equal(got.to_host(), x[:1024] + x[1024:])
    npurt.ops.add(lo, hi, out=lo)  # in place
    np.testing.assert_array_equal(base.to_host()[:1024], x[:1024] + x[1024:])
    np.testing.assert_array_equal(base.to_host()[1024:], x[1024:])


def test_what_the_c_loop_does_not_compute_is_run_in_python_with_numpy_s_result():
    x = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    a, row = npurt.to_device(x), npurt.to_device(x[0])
    big = npurt.to_device(np.ones(4096, np.float32))  # 48 KiB in all: numpy, which releases the GIL
    npurt.synchronize()
    cases = [(lambda: npurt.ops.maximum(a, a * 0), np.maximum(x, 0)), (lambda: npurt.ops.power(a, a), x ** x),
             (lambda: a - row, x - x[0]), (lambda: a * 2, x * np.float32(2)), (lambda: big + big, np.full(4096, 2, np.float32))]
    for make, want in cases:
        before = _computed()
        got = make()
        npurt.synchronize()
        np.testing.assert_array_equal(got.to_host(), want)
        assert _computed() == before, "computed in C"


def test_division_by_zero_gives_inf_and_nan_without_a_warning_in_c_and_in_python():
    """The device gives IEEE 754's answers silently, whichever route computes the op: the
    C loop (4 KiB) or ElementwiseTask.run (48 KiB), in this thread or a worker."""
    small = npurt.to_device(np.array([1.0, -1.0, 0.0, 2.0] * 256, np.float32))
    zeros = npurt.to_device(np.zeros(1024, np.float32))
    big, big_zeros = npurt.to_device(np.ones(4096, np.float32)), npurt.to_device(np.zeros(4096, np.float32))
    npurt.synchronize()
    with warnings.catch_warnings(record=True) as seen:  # the filters are the process's: every thread
        warnings.simplefilter("always")
        q, r = small / zeros, big / big_zeros
        npurt.synchronize()
    assert [str(w.message) for w in seen] == []
    np.testing.assert_array_equal(q.to_host()[:4], [np.inf, -np.inf, np.nan, np.inf])
    assert np.isposinf(r.to_host()).all()


def test_a_replaced_run_is_the_one_called(monkeypatch):
    calls = []
    original = ElementwiseTask.run

    def counted(self):
        calls.append(self.name)
        return original(self)
    monkeypatch.setattr(ElementwiseTask, "run", counted)
    a = npurt.to_device(np.full(64, 3, np.int32))
    before = _computed()
    got = a + a
    npurt.synchronize()
    assert calls == ["add"] and (got.to_host() == 6).all() and _computed() == before


def test_the_current_stream_is_the_one_the_op_goes_to_and_a_destroyed_one_is_forgotten():
    a = npurt.to_device(np.full(256, 2, np.float32))
    s = npurt.Stream()
    gate = Gate(s)
    with npurt.stream(s):
        c = a * a               # queued on s, behind the gate
        assert not s.query()
    gate.record(npurt.Stream())
    s.synchronize()
    assert (c.to_host() == 4).all()
    t = npurt.Stream()
    npurt.set_stream(t)
    destroy_stream(t.runtime_stream)
    d = a + a                   # a destroyed current stream is forgotten: the default stream
    npurt.synchronize()
    assert (d.to_host() == 4).all()
    assert npurt.current_stream().runtime_stream is not t.runtime_stream


def test_arrays_on_another_device_than_the_current_one():
    x = np.arange(100, dtype=np.int64)
    a = npurt.to_device(x, device=1)
    got = a + a
    assert got.device == 1
    np.testing.assert_array_equal(got.to_host(), x + x)


def test_mixed_dtypes_and_shapes_keep_their_errors():
    a = npurt.to_device(np.ones(8, np.float32))
    with pytest.raises(npurt.InvalidValueError, match="dtypes"):
        a + npurt.to_device(np.ones(8, np.float64))
    with pytest.raises(npurt.InvalidValueError, match="broadcast"):
        a + npurt.to_device(np.ones(5, np.float32))
    assert ((a + a).to_host() == 2).all()  # and the next op is fine


_SCRIPT = """
import numpy as np, npurt
from npurt.runtime import accel
x = np.arange(-500, 524, dtype=np.float32) / 7
a, b = npurt.to_device(x), npurt.to_device(x[::-1].copy())
got = [(a + b).to_host(), (a - b).to_host(), (a * b).to_host(), (a / b).to_host()]
want = [x + x[::-1], x - x[::-1], x * x[::-1], x / x[::-1]]
assert all(np.array_equal(g.view(np.uint32), w.view(np.uint32)) for g, w in zip(got, want))
print("OK", accel.SPEEDUPS is not None)
"""


@pytest.mark.parametrize("speedups", ["1", "0"])
def test_the_same_ops_with_and_without_the_extension(speedups):
    code, text = run_isolated(_SCRIPT, env={"NPURT_SPEEDUPS": speedups})
    assert code == 0, text
    if HAVE_C:
        assert ("OK True" in text) == (speedups == "1")
    else:
        assert "OK" in text
