"""Launching your own @kernel from Python on DeviceArrays and scalars: `vadd[blocks](...)`,
`vadd[blocks, stream](...)`, `npurt.launch(...)`, and errors that point at them."""
from __future__ import annotations

import numpy as np
import pytest

import npurt
from npurt import GM, kernel


@kernel
def vadd(ctx, x: GM, y: GM, z: GM, n: np.int32):
    lo, hi = ctx.block_range(n)
    xs, ys, zs = (ctx.gm(p, np.float32, n)[lo:hi] for p in (x, y, z))
    np.add(xs, ys, out=zs)


@kernel
def axpy(ctx, a: np.float32, x: GM, y: GM, n: np.int64):
    lo, hi = ctx.block_range(n)
    y_ = ctx.gm(y, np.float32, n)[lo:hi]
    y_ += a * ctx.gm(x, np.float32, n, "r")[lo:hi]


def _inputs(n=1000):
    x, y = np.random.rand(n).astype(np.float32), np.random.rand(n).astype(np.float32)
    return x, y, npurt.to_device(x), npurt.to_device(y)


def test_subscripted_kernel_runs_on_the_current_stream(fresh_runtime):
    x, y, dx, dy = _inputs()
    dz = npurt.empty(1000)
    vadd[7](dx, dy, dz, 1000)
    assert np.array_equal(dz.cpu(), x + y)


def test_subscripted_kernel_with_a_stream_runs_there(fresh_runtime):
    x, y, dx, dy = _inputs()
    s = npurt.Stream()
    s.wait_stream(npurt.current_stream())       # the inputs were copied on the current stream
    dz = npurt.empty(1000)
    vadd[4, s](dx, dy, dz, 1000)
    s.synchronize()
    assert np.array_equal(dz.cpu(s), x + y)


def test_npurt_launch_takes_scalars_of_every_kind(fresh_runtime):
    x, y, dx, dy = _inputs()
    npurt.launch(axpy, 3, 2.0, dx, dy, np.int64(1000))
    npurt.launch(axpy, 3, np.float32(0.5), dx, dy, 1000)
    assert np.allclose(dy.cpu(), y + 2.5 * x, rtol=1e-6)


def test_a_launch_follows_npurt_stream_blocks(fresh_runtime):
    x, y, dx, dy = _inputs()
    s = npurt.Stream()
    s.wait_stream(npurt.current_stream())
    with npurt.stream(s):
        dz = npurt.empty(1000)
        vadd[2](dx, dy, dz, 1000)
        assert s.query() in (True, False)
    s.synchronize()
    assert np.array_equal(dz.get(), x + y)


def test_a_launch_goes_to_the_device_of_its_arrays(fresh_runtime):
    a = npurt.ones(8, device=1)
    b = npurt.full((8,), 2.0, device=1)
    c = npurt.empty(8, device=1)
    vadd[2](a, b, c, 8)                          # current device is 0; the arrays are on 1
    assert c.cpu().tolist() == [3.0] * 8


def test_calling_a_kernel_points_at_the_python_launch_not_the_launch_command():
    with pytest.raises(TypeError) as info:
        vadd(1, 2, 3, 4)
    msg = str(info.value)
    assert "vadd[blocks](args...)" in msg and "npurt.launch(vadd, blocks, args...)" in msg
    assert "not the `npurt launch` command" in msg


@pytest.mark.parametrize("args, why", [
    ((np.ones(4, np.float32), "y", "z", 4), "host \\(numpy\\) array"),
    (("x", "y", "z"), "takes 4 arguments"),
    (("x", "y", "z", "four"), "argument 'n' is a scalar \\(int32\\)"),
    (("xs", "y", "z", 2), "non-contiguous view"),
    (("x", "y", "z", 2.5), "argument 'n' must be a int32 value"),
])
def test_bad_launch_arguments_are_refused_naming_the_argument(fresh_runtime, args, why):
    arrays = {"x": npurt.ones(4), "y": npurt.ones(4), "z": npurt.empty(4)}
    arrays["xs"] = arrays["x"][::2]
    real = tuple(arrays.get(a, a) if isinstance(a, str) and a in arrays else a for a in args)
    with pytest.raises(npurt.InvalidValueError, match=why):
        vadd[1](*real)
    vadd[1](arrays["x"], arrays["y"], arrays["z"], 4)         # the runtime is still usable
    assert arrays["z"].cpu().tolist() == [2.0] * 4


@pytest.mark.parametrize("config", [0, (1, 2, 3), (1, "stream")])
def test_a_bad_launch_configuration_is_refused(fresh_runtime, config):
    x = npurt.ones(4)
    with pytest.raises(npurt.InvalidValueError):
        vadd[config](x, x, x, 4)


def test_a_kernel_that_overruns_its_array_fails_at_the_next_synchronize(fresh_runtime):
    x = npurt.ones(4)
    vadd[1](x, x, x, 1024)                 # far past the 4 elements (and ACL's 32-byte slack)
    with pytest.raises(npurt.TaskError, match="runs past the end of its allocation"):
        npurt.synchronize()
