"""Colour-space conversion (CSC) and chroma subsampling, vectorised with numpy.

The six matrices of acldvppCscMatrix: BT.601, BT.709 and BT.2020, each "wide" (full range,
Y and chroma in 0..255, as JPEG/JFIF) or "narrow" (limited range: Y in 16..235, chroma in
16..240). A channel's ACL_DVPP_CSC_MATRIX_UINT32 parameter picks one; the default is
BT.601 wide, the matrix JPEG pictures are coded with. Results are rounded to nearest and
clipped to 0..255.
"""
from __future__ import annotations

import numpy as np

from .layout import Planes

# (Kr, Kb) of each standard; the row of a matrix id is (standard, narrow)
_K = {0: (0.299, 0.114), 1: (0.2126, 0.0722), 2: (0.2627, 0.0593)}
MATRICES = {0: (0, False), 1: (0, True), 2: (1, False), 3: (1, True), 4: (2, False), 5: (2, True)}


def _rgb_to_yuv_matrix(csc: int) -> tuple[np.ndarray, np.ndarray]:
    std, narrow = MATRICES[csc]
    kr, kb = _K[std]
    kg = 1.0 - kr - kb
    m = np.array([[kr, kg, kb],
                  [-kr / (2 * (1 - kb)), -kg / (2 * (1 - kb)), 0.5],
                  [0.5, -kg / (2 * (1 - kr)), -kb / (2 * (1 - kr))]])
    offset = np.array([0.0, 128.0, 128.0])
    if narrow:
        m = m * np.array([[219 / 255], [224 / 255], [224 / 255]])
        offset = np.array([16.0, 128.0, 128.0])
    return m.astype(np.float32), offset.astype(np.float32)


_FORWARD = {c: _rgb_to_yuv_matrix(c) for c in MATRICES}
_INVERSE = {c: (np.linalg.inv(m).astype(np.float32), o) for c, (m, o) in _FORWARD.items()}


def _apply(planes: list, m: np.ndarray, pre: np.ndarray, post: np.ndarray) -> list:
    """[out_i] = clip(round(M @ (in - pre) + post)), computed in row chunks (cache-sized)."""
    h, w = planes[0].shape
    out = [np.empty((h, w), np.uint8) for _ in range(3)]
    step = max(1, (1 << 18) // max(w, 1))
    for r in range(0, h, step):
        x = np.stack([p[r:r + step] for p in planes], axis=-1).astype(np.float32)
        if pre.any():
            x -= pre
        y = x @ m.T
        y += post + 0.5
        np.clip(y, 0, 255, out=y)
        y = y.astype(np.uint8)
        for i in range(3):
            out[i][r:r + step] = y[..., i]
    return out


def rgb_to_yuv(r, g, b, csc: int = 0) -> list:
    """Full-resolution Y, U, V planes of R, G, B planes."""
    m, offset = _FORWARD[csc]
    return _apply([r, g, b], m, np.zeros(3, np.float32), offset)


def yuv_to_rgb(y, u, v, csc: int = 0) -> list:
    """R, G, B planes of full-resolution Y, U, V planes."""
    m, offset = _INVERSE[csc]
    return _apply([y, u, v], m, offset, np.zeros(3, np.float32))


def _halve(plane: np.ndarray, fx: int, fy: int) -> np.ndarray:
    """Average fx x fy blocks (factors 1 or 2), rounding half up."""
    h, w = plane.shape[0] // fy, plane.shape[1] // fx
    s = plane[:h * fy, :w * fx].reshape(h, fy, w, fx).astype(np.uint16).sum(axis=(1, 3))
    n = fx * fy
    return ((s + n // 2) // n).astype(np.uint8)


def resubsample(plane: np.ndarray, src: tuple[int, int], dst: tuple[int, int]) -> np.ndarray:
    """A chroma plane at subsampling `src` as one at `dst` (factors 1 or 2 per axis):
    block averages going down, sample repetition going up."""
    (sx, sy), (dx, dy) = src, dst
    if dx > sx or dy > sy:
        plane = _halve(plane, max(dx // sx, 1), max(dy // sy, 1))
    if dx < sx or dy < sy:
        plane = np.repeat(np.repeat(plane, max(sx // dx, 1), axis=1), max(sy // dy, 1), axis=0)
    return plane


def convert(pic: Planes, space: str, sub: tuple[int, int] | None, csc: int = 0) -> Planes:
    """`pic` in colour space `space` ("yuv" with chroma subsampling `sub`, None for 4:0:0;
    or "rgb"), converting colours with matrix `csc`."""
    h, w = pic.height, pic.width
    if pic.space == "yuv" and len(pic.planes) == 1:  # 4:0:0: neutral chroma
        if space == "rgb":
            return Planes("rgb", [pic.planes[0]] * 3)
        if sub is None:
            return pic
        grey = np.full((h // sub[1], w // sub[0]), 128, np.uint8)
        return Planes("yuv", [pic.planes[0], grey, grey], sub)
    if space == "rgb":
        if pic.space == "rgb":
            return pic
        full = [resubsample(p, pic.sub, (1, 1)) for p in pic.planes[1:3]]
        return Planes("rgb", yuv_to_rgb(pic.planes[0], *full, csc))
    if pic.space == "rgb":
        y, u, v = rgb_to_yuv(*pic.planes[:3], csc)
        chroma_sub = (1, 1)
    else:
        y, u, v = pic.planes
        chroma_sub = pic.sub
    if sub is None:
        return Planes("yuv", [y])
    return Planes("yuv", [y, resubsample(u, chroma_sub, sub), resubsample(v, chroma_sub, sub)], sub)
