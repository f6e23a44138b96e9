"""Scaling one plane to another size, with the interpolations of acldvppResizeConfig.

| interpolation | source coordinate of output pixel d (scale = in / out) | weights |
| --- | --- | --- |
| 0 default, 1 bilinear (OpenCV) | (d + 0.5) * scale - 0.5, clamped at 0 | bilinear |
| 2 nearest (OpenCV) | floor(d * scale) | nearest |
| 3 bilinear (TensorFlow, no half-pixel centres) | d * scale | bilinear |
| 4 nearest (TensorFlow) | floor(d * scale) | nearest |

Bilinear weights are 11-bit fixed point, as OpenCV's: w = floor(fraction * 2048 + 0.5), and
a pixel is (sum of the four w_y * w_x * p + 2^21) >> 22, exact integer arithmetic. The
hardware's own "default" algorithm (0) is not public; npurt uses the OpenCV-style bilinear
for it (docs/compatibility.md).
"""
from __future__ import annotations

import numpy as np

BILINEAR_HALF_PIXEL = (0, 1)
NEAREST = (2, 4)


ONE = 2048  # fixed-point 1.0 of the bilinear weights
_ROUND, _SHIFT = 1 << 21, 22


def _axis(n_in: int, n_out: int, half_pixel: bool):
    """(i0, i1, weight of i1 in 1/2048) for each output index along one axis."""
    scale = n_in / n_out
    d = np.arange(n_out, dtype=np.float64)
    s = (d + 0.5) * scale - 0.5 if half_pixel else d * scale
    np.clip(s, 0, n_in - 1, out=s)
    i0 = np.floor(s).astype(np.intp)
    i1 = np.minimum(i0 + 1, n_in - 1)
    return i0, i1, np.floor((s - i0) * ONE + 0.5).astype(np.int32)


def resize(plane: np.ndarray, out_h: int, out_w: int, interpolation: int = 0) -> np.ndarray:
    """`plane` (2-D uint8) scaled to out_h x out_w."""
    in_h, in_w = plane.shape
    if (in_h, in_w) == (out_h, out_w):
        return plane
    if interpolation in NEAREST:
        ys = np.minimum((np.arange(out_h) * in_h) // out_h, in_h - 1)
        xs = np.minimum((np.arange(out_w) * in_w) // out_w, in_w - 1)
        return plane[ys[:, None], xs]
    half = interpolation in BILINEAR_HALF_PIXEL
    y0, y1, wy = _axis(in_h, out_h, half)
    x0, x1, wx = _axis(in_w, out_w, half)
    wx0 = ONE - wx
    out = np.empty((out_h, out_w), np.uint8)
    step = max(1, (1 << 17) // max(out_w, in_w))  # rows per chunk: keep temporaries cache-sized
    for r in range(0, out_h, step):
        sl = slice(r, r + step)
        b = wy[sl, None]
        rows = plane[y0[sl]].astype(np.int32) * (ONE - b)   # vertical pass at input width
        rows += plane[y1[sl]].astype(np.int32) * b           # (at most 255 * 2048)
        v = rows[:, x0] * wx0                                # horizontal pass: < 2^31
        v += rows[:, x1] * wx
        v += _ROUND
        v >>= _SHIFT
        out[sl] = v
    return out
