"""The layout rules of device arrays: dtypes, shapes, C strides, byte spans, axis permutations.

Pure arithmetic on shapes and strides (in bytes, as numpy's), checked once per distinct layout
and cached (`layout_of`). Device memory is little-endian and holds numbers: dtypes are numpy's
numeric ones and bfloat16 (the runtime's dtype table, `npurt.runtime.dtypes`).
"""
from __future__ import annotations

import math
import numbers
import operator

import numpy as np

from ..exceptions import InvalidValueError
from ..runtime import dtypes


def as_dtype(dtype) -> np.dtype:
    """np.dtype of `dtype`; "bfloat16" (and ml_dtypes.bfloat16) need the ml_dtypes package."""
    if type(dtype) is np.dtype and dtype.kind in "biuf" and dtype.isnative:
        return dtype  # the common case
    if isinstance(dtype, str) and dtype.lower() == "bfloat16":
        return dtypes.bfloat16()
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise InvalidValueError(f"{dtype!r} is not a dtype ({exc})") from None
    if dt.hasobject or dt.kind in "OSUMm" or dt.type is np.void or dt.names or dt.subdtype:  # ml_dtypes are "V"
        raise InvalidValueError(f"device arrays hold numbers; dtype {dt} is not supported")
    if not dt.isnative:  # device memory is little-endian: kernels view it in native order
        dt = dt.newbyteorder("=")
    return dt


def ints(values, what: str) -> list[int]:
    """A sequence of ints (numpy ints included), or an InvalidValueError naming `what`."""
    try:
        return [operator.index(v) for v in values]
    except TypeError:
        raise InvalidValueError(f"{what} must be ints, got {values!r}") from None


def shape_of(shape) -> tuple[int, ...]:
    if type(shape) is tuple and all(type(n) is int and n >= 0 for n in shape):
        return shape  # the common case
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    shape = tuple(ints(shape, "shape entries"))
    if any(n < 0 for n in shape):
        raise InvalidValueError(f"negative dimension in shape {shape}")
    return shape


# (shape argument, dtype argument) -> (shape, dtype, nbytes, strides): the checks and
# arithmetic of a new array, done once per distinct layout (an array made per step of a
# loop costs a dict look-up). Keys are exact ints or tuples of exact ints (a float that
# equals an int would hash alike, so other shapes take the checked path every time).
LAYOUTS: dict = {}
LAYOUTS_MAX = 4096


def layout_of(shape, dtype) -> tuple:
    if type(shape) is int or (type(shape) is tuple and all(type(n) is int for n in shape)):
        try:
            return LAYOUTS[shape, dtype]
        except (KeyError, TypeError):  # new, or an unhashable dtype argument
            pass
    shp, dt = shape_of(shape), as_dtype(dtype)
    layout = (shp, dt, math.prod(shp) * dt.itemsize, c_strides(shp, dt.itemsize))
    if type(shape) is int or type(shape) is tuple:
        if len(LAYOUTS) >= LAYOUTS_MAX:
            LAYOUTS.clear()
        try:
            LAYOUTS[shape if type(shape) is int else shp, dtype] = layout
        except TypeError:
            pass
    return layout


def c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def normalize_axes(axes, ndim: int) -> list[int]:
    if axes is None or axes == ():
        return list(range(ndim))[::-1]
    axes = ints(axes, "axes")
    axes = [a + ndim if a < 0 else a for a in axes]
    if sorted(axes) != list(range(ndim)):
        raise InvalidValueError(f"axes {tuple(axes)} are not a permutation of the {ndim} axes")
    return axes


def permuted_contiguous(x):
    """(base_shape, axes) if x is a permutation of a C-contiguous block starting at x.ptr
    (so transpose(base, axes) rebuilds it contiguously); else None."""
    if any(st < 0 for st in x.strides):
        return None
    order = sorted(range(x.ndim), key=lambda a: (-x.strides[a], a))
    expect = x.itemsize
    for a in reversed(order):
        if x.shape[a] != 1 and x.strides[a] != expect:
            return None
        expect *= x.shape[a]
    base_shape = tuple(x.shape[a] for a in order)
    axes = tuple(order.index(i) for i in range(x.ndim))
    return base_shape, axes


def byte_span(shape, strides, itemsize) -> tuple[int, int]:
    """(lowest, highest + itemsize) byte offsets a strided array touches, relative to its start."""
    lo = hi = 0
    for n, st in zip(shape, strides):
        if n > 1:
            if st < 0:
                lo += st * (n - 1)
            else:
                hi += st * (n - 1)
    return lo, hi + itemsize
