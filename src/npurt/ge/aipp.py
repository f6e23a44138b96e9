"""AIPP (AI pre-processing): the image stage ATC puts in front of a model input.

`parse_config(text)` reads an `--insert_op_conf` file (protobuf text of domi.InsertNewOps:
`aipp_op { key : value ... }` blocks, `#` comments). `AippConfig` holds one block with ATC's
defaults (aipp_op.cc: the CSC matrix defaults of YUV420SP are the BT.601 narrow matrix with
rows 0 and 2 swapped, so the default output order is B, G, R). `run(config, images, ...)` is
the stage itself, in the hardware's order: channel swap -> crop -> colour-space conversion
-> mean/min/variance normalisation (to float16) -> padding:

    CSC, YUV -> RGB:  out_k = (sum_j m_kj * (in_j - input_bias_j)) >> 8      (clipped to 0..255)
    CSC, RGB -> YUV:  out_k = ((sum_j m_kj * in_j) >> 8) + output_bias_k      (clipped to 0..255)
    normalisation:    out_c = (in_c - mean_chn_c - min_chn_c) * var_reci_chn_c (float16)

Input formats: YUV420SP_U8 (NV12; NV21 with rbuv_swap_switch), YUV400_U8, RGB888_U8,
XRGB8888_U8 (X first; last with ax_swap_switch). Chroma of YUV420SP is upsampled by
repetition (each 2x2 block of pixels shares one U, V pair).

Dynamic AIPP: `DynamicParams` is the aclmdlAIPP parameter set; `pack()` writes it as GE's
kAippDynamicPara (64 bytes) followed by one kAippDynamicBatchPara (96 bytes) per image
(dynamic_aipp.h), the blob the model reads from its `ascend_dynamic_aipp_data` input when it
runs; `unpack()` reads it back.
"""
from __future__ import annotations

import re
import struct

import numpy as np

from ..runtime import InvalidValueError, NpuError, constants as C
from . import constants as G

FORMATS = {"YUV420SP_U8": G.ACL_YUV420SP_U8, "XRGB8888_U8": G.ACL_XRGB8888_U8, "RGB888_U8": G.ACL_RGB888_U8,
           "YUV400_U8": G.ACL_YUV400_U8, "NC1HWC0DI_FP16": G.ACL_NC1HWC0DI_FP16,
           "NC1HWC0DI_S8": G.ACL_NC1HWC0DI_S8, "ARGB8888_U8": G.ACL_ARGB8888_U8, "YUYV_U8": G.ACL_YUYV_U8,
           "YUV422SP_U8": G.ACL_YUV422SP_U8, "AYUV444_U8": G.ACL_AYUV444_U8, "RAW10": G.ACL_RAW10,
           "RAW12": G.ACL_RAW12, "RAW16": G.ACL_RAW16, "RAW24": G.ACL_RAW24}
SUPPORTED = {G.ACL_YUV420SP_U8, G.ACL_YUV400_U8, G.ACL_RGB888_U8, G.ACL_XRGB8888_U8}
# bytes per pixel of the source image (YUV420SP: a full Y plane and a half UV plane)
FACTOR = {G.ACL_YUV420SP_U8: 1.5, G.ACL_YUV400_U8: 1, G.ACL_RGB888_U8: 3, G.ACL_XRGB8888_U8: 4}

_YUV2BGR = (298, 516, 0, 298, -100, -208, 298, 0, 409)    # ATC's default for YUV inputs
_RGB2YUV = (66, 129, 25, -38, -74, 112, 112, -94, -18)     # and for RGB inputs
MATRIX_KEYS = [f"matrix_r{r}c{c}" for r in range(3) for c in range(3)]

DEFAULTS = {
    "aipp_mode": None, "related_input_rank": 0, "related_input_name": "", "max_src_image_size": 0,
    "support_rotation": False, "input_format": 0, "src_image_size_w": 0, "src_image_size_h": 0,
    "crop": False, "load_start_pos_w": 0, "load_start_pos_h": 0, "crop_size_w": 0, "crop_size_h": 0,
    "resize": False, "resize_output_w": 0, "resize_output_h": 0, "padding": False,
    "left_padding_size": 0, "right_padding_size": 0, "top_padding_size": 0, "bottom_padding_size": 0,
    "padding_value": 0.0, "csc_switch": False, "rbuv_swap_switch": False, "ax_swap_switch": False,
    "single_line_mode": False, "cpadding_value": 0, "rotation_angle": 0.0, "raw_rgbir_to_f16_n": 8,
    **{k: None for k in MATRIX_KEYS},
    "output_bias_0": None, "output_bias_1": None, "output_bias_2": None,
    "input_bias_0": None, "input_bias_1": None, "input_bias_2": None,
    "mean_chn_0": 0, "mean_chn_1": 0, "mean_chn_2": 0, "mean_chn_3": 0,
    "min_chn_0": 0.0, "min_chn_1": 0.0, "min_chn_2": 0.0, "min_chn_3": 0.0,
    "var_reci_chn_0": 1.0, "var_reci_chn_1": 1.0, "var_reci_chn_2": 1.0, "var_reci_chn_3": 1.0,
}
REPEATED = {"input_edge_idx"}


class AippConfigError(ValueError):
    """An --insert_op_conf that ATC refuses."""


# ---------------------------------------------------------------- the config file
def _value(raw: str, key: str):
    raw = raw.strip()
    if raw.startswith('"') and raw.endswith('"'):
        return raw[1:-1]
    low = raw.lower()
    if low in ("true", "false"):
        return low == "true"
    if key == "aipp_mode":
        if low not in ("static", "dynamic"):
            raise AippConfigError(f"aipp_mode must be static or dynamic, got {raw!r}")
        return low
    if key == "input_format":
        if raw not in FORMATS:
            raise AippConfigError(f"input_format {raw!r} is not an AIPP input format ({', '.join(FORMATS)})")
        return FORMATS[raw]
    try:
        return int(raw, 0)
    except ValueError:
        pass
    try:
        return float(raw)
    except ValueError:
        raise AippConfigError(f"{key}: cannot read the value {raw!r}") from None


_WORD = re.compile(r"\w+")


def parse_config(text: str) -> list[dict]:
    """The aipp_op blocks of an AIPP config file, each a dict over DEFAULTS."""
    lines = [line.split("#", 1)[0] for line in text.splitlines()]
    body = "\n".join(lines)
    blocks = []
    pos = 0
    # plain scanning, linear in the text: a regex search for `\s*(\w+)\s*\{` retried at every
    # offset was quadratic in a run of blanks (16 KB of spaces: 14 s; issue 29)
    while True:
        brace = body.find("{", pos)
        if brace < 0:
            if body[pos:].strip():
                raise AippConfigError(f"unexpected text in the AIPP config: {body[pos:].strip()[:60]!r}")
            break
        head = body[pos:brace].split()
        if not head or not _WORD.fullmatch(head[-1]):
            raise AippConfigError(f"unexpected text in the AIPP config: {body[pos:brace + 1].strip()[:60]!r}")
        if len(head) > 1:
            raise AippConfigError(f"unexpected text in the AIPP config: {' '.join(head[:-1])[:60]!r}")
        if head[-1] != "aipp_op":
            raise AippConfigError(f"unknown block {head[-1]!r}: an AIPP config holds aipp_op {{ ... }} blocks")
        end = body.find("}", brace + 1)
        if end < 0:
            raise AippConfigError("an aipp_op block is not closed with '}'")
        block = dict(DEFAULTS)
        seen = set()
        for item in re.split(r"[\n;]", body[brace + 1:end]):
            if not item.strip():
                continue
            if ":" not in item:
                raise AippConfigError(f"expected 'key : value' in the AIPP config, got {item.strip()!r}")
            key, raw = (s.strip() for s in item.split(":", 1))
            if key not in DEFAULTS and key not in REPEATED:
                raise AippConfigError(f"unknown AIPP parameter {key!r}")
            value = _value(raw, key)
            if key in REPEATED:
                block.setdefault(key, []).append(value)
                continue
            if key in seen:
                raise AippConfigError(f"the parameter {key} cannot be configured repeatedly")
            seen.add(key)
            block[key] = value
        blocks.append(block)
        pos = end + 1
    if not blocks:
        raise AippConfigError("the AIPP config has no aipp_op block")
    return blocks


def finish_static(cfg: dict, model_h: int, model_w: int, model_c: int) -> dict:
    """Validate a static block against the model input it feeds (N, C, H, W known) and fill
    what ATC derives: default matrices, the source size, the crop size. Returns cfg."""
    fmt = cfg["input_format"]
    if not fmt:
        raise AippConfigError("input_format must be set in a static AIPP config")
    if fmt not in SUPPORTED:
        raise AippConfigError(f"input_format {_name(fmt)} is not supported by npurt's AIPP (supported: "
                              "YUV420SP_U8, YUV400_U8, RGB888_U8, XRGB8888_U8)")
    if cfg["resize"]:
        raise AippConfigError("resize is a reserved AIPP parameter and cannot be switched on")
    if not cfg["crop"]:
        cfg.update(load_start_pos_w=0, load_start_pos_h=0, crop_size_w=0, crop_size_h=0)
    if not cfg["padding"]:
        cfg.update(left_padding_size=0, right_padding_size=0, top_padding_size=0, bottom_padding_size=0)
    for k in ("left_padding_size", "right_padding_size", "top_padding_size", "bottom_padding_size"):
        if not 0 <= cfg[k] <= 32:
            raise AippConfigError(f"{k} must be in [0, 32], got {cfg[k]}")
    pad_h = cfg["top_padding_size"] + cfg["bottom_padding_size"]
    pad_w = cfg["left_padding_size"] + cfg["right_padding_size"]
    if not cfg["src_image_size_w"] or not cfg["src_image_size_h"]:
        if cfg["crop"] or cfg["padding"]:
            raise AippConfigError("src_image_size_w and src_image_size_h must be set when crop or padding is on")
        cfg["src_image_size_w"] = cfg["src_image_size_w"] or model_w
        cfg["src_image_size_h"] = cfg["src_image_size_h"] or model_h
    sw, sh = cfg["src_image_size_w"], cfg["src_image_size_h"]
    if not (2 <= sw <= 4096 and 1 <= sh <= 4096):
        raise AippConfigError(f"src_image_size must be w in [2, 4096], h in [1, 4096], got {sw} x {sh}")
    if fmt == G.ACL_YUV420SP_U8 and (sw % 2 or sh % 2):
        raise AippConfigError(f"a YUV420SP_U8 source needs an even width and height, got {sw} x {sh}")
    if cfg["crop"]:
        cfg["crop_size_w"] = cfg["crop_size_w"] or model_w - pad_w
        cfg["crop_size_h"] = cfg["crop_size_h"] or model_h - pad_h
        x, y, cw, ch = cfg["load_start_pos_w"], cfg["load_start_pos_h"], cfg["crop_size_w"], cfg["crop_size_h"]
        if not (0 <= x <= 4095 and 0 <= y <= 4095 and 1 <= cw <= 4096 and 1 <= ch <= 4096):
            raise AippConfigError(f"crop start must be in [0, 4095] and size in [1, 4096], got ({x}, {y}) {cw} x {ch}")
        if x + cw > sw or y + ch > sh:
            raise AippConfigError(f"the crop ({x}, {y}) {cw} x {ch} runs past the {sw} x {sh} source image")
        if fmt == G.ACL_YUV420SP_U8 and (x % 2 or y % 2):
            raise AippConfigError(f"a YUV420SP_U8 crop must start at even coordinates, got ({x}, {y})")
        out_w, out_h = cw, ch
    else:
        out_w, out_h = sw, sh
    if out_h + pad_h != model_h or out_w + pad_w != model_w:
        raise AippConfigError(f"the AIPP output ({out_h + pad_h} x {out_w + pad_w} after crop and padding) must "
                              f"equal the model input's H x W ({model_h} x {model_w})")
    channels = output_channels(cfg)
    if channels != model_c:
        raise AippConfigError(f"the AIPP produces {channels} channel(s) but the model input has C = {model_c}")
    if cfg["csc_switch"]:
        defaults = _YUV2BGR if fmt in (G.ACL_YUV420SP_U8, G.ACL_YUV400_U8) else _RGB2YUV
        for key, d in zip(MATRIX_KEYS, defaults):
            if cfg[key] is None:
                cfg[key] = d
    for key in MATRIX_KEYS:
        v = cfg[key] if cfg[key] is not None else 0
        if not -32677 <= v <= 32676:
            raise AippConfigError(f"{key} must be in [-32677, 32676], got {v}")
        cfg[key] = v
    for i, d in enumerate((16, 128, 128)):
        for side in ("input_bias", "output_bias"):
            key = f"{side}_{i}"
            if cfg[key] is None:
                cfg[key] = d
            if not 0 <= cfg[key] <= 255:
                raise AippConfigError(f"{key} must be in [0, 255], got {cfg[key]}")
    for c in range(4):
        if not 0 <= cfg[f"mean_chn_{c}"] <= 255:
            raise AippConfigError(f"mean_chn_{c} must be in [0, 255], got {cfg[f'mean_chn_{c}']}")
        if not 0 <= cfg[f"min_chn_{c}"] <= 255:
            raise AippConfigError(f"min_chn_{c} must be in [0, 255], got {cfg[f'min_chn_{c}']}")
        if not -65504 <= cfg[f"var_reci_chn_{c}"] <= 65504:
            raise AippConfigError(f"var_reci_chn_{c} must be in [-65504, 65504], got {cfg[f'var_reci_chn_{c}']}")
    return cfg


def _name(fmt: int) -> str:
    return next((k for k, v in FORMATS.items() if v == fmt), str(fmt))


def output_channels(cfg: dict) -> int:
    fmt = cfg["input_format"]
    if fmt == G.ACL_YUV400_U8 and not cfg["csc_switch"]:
        return 1
    return 3


def image_bytes(fmt: int, h: int, w: int) -> int:
    return int(h * w * FACTOR[fmt])


def image_dims(fmt: int, n: int, h: int, w: int) -> list[int]:
    """What get_input_dims_v2 reports for an image input of this format (NHWC, uint8)."""
    if fmt == G.ACL_YUV420SP_U8:
        return [n, h * 3 // 2, w, 1]
    if fmt == G.ACL_YUV400_U8:
        return [n, h, w, 1]
    return [n, h, w, 3 if fmt == G.ACL_RGB888_U8 else 4]


# ---------------------------------------------------------------- the stage
def _to_channels(img: np.ndarray, fmt: int, h: int, w: int, rbuv: bool, ax: bool) -> np.ndarray:
    """One source image (flat uint8) -> [H, W, C] uint8, channel swaps applied."""
    if fmt == G.ACL_YUV420SP_U8:
        y = img[:h * w].reshape(h, w)
        uv = img[h * w:h * w * 3 // 2].reshape(h // 2, w // 2, 2)
        if rbuv:
            uv = uv[..., ::-1]
        uv = uv.repeat(2, axis=0).repeat(2, axis=1)
        return np.concatenate([y[..., None], uv], axis=2)
    if fmt == G.ACL_YUV400_U8:
        return img[:h * w].reshape(h, w, 1)
    if fmt == G.ACL_RGB888_U8:
        rgb = img[:h * w * 3].reshape(h, w, 3)
        return rgb[..., ::-1] if rbuv else rgb
    px = img[:h * w * 4].reshape(h, w, 4)
    rgb = px[..., :3] if ax else px[..., 1:]
    return rgb[..., ::-1] if rbuv else rgb


def csc(pixels: np.ndarray, cfg: dict, yuv_source: bool) -> np.ndarray:
    """Colour-space conversion of [..., 3] uint8 with the config's matrix (integer, >> 8)."""
    m = np.array([cfg[k] for k in MATRIX_KEYS], np.int32).reshape(3, 3)
    x = pixels.astype(np.int32)
    if yuv_source:
        x = x - np.array([cfg["input_bias_0"], cfg["input_bias_1"], cfg["input_bias_2"]], np.int32)
        out = np.right_shift(x @ m.T, 8)
    else:
        out = np.right_shift(x @ m.T, 8) + np.array([cfg["output_bias_0"], cfg["output_bias_1"],
                                                      cfg["output_bias_2"]], np.int32)
    return np.clip(out, 0, 255).astype(np.uint8)


def _f16(v) -> np.float32:
    return np.float32(np.float16(v))


def run_one(img: np.ndarray, cfg: dict, batch: dict | None = None) -> np.ndarray:
    """AIPP of one flat uint8 source image: [C, H, W]-ordered float16 planes as [H, W, C]."""
    b = cfg if batch is None else batch
    fmt, sw, sh = cfg["input_format"], cfg["src_image_size_w"], cfg["src_image_size_h"]
    x = _to_channels(img, fmt, sh, sw, cfg["rbuv_swap_switch"], cfg["ax_swap_switch"])
    if b["crop"]:
        x0, y0 = b["load_start_pos_w"], b["load_start_pos_h"]
        x = x[y0:y0 + b["crop_size_h"], x0:x0 + b["crop_size_w"]]
    if cfg["csc_switch"]:
        if x.shape[-1] == 1:  # YUV400: chroma is neutral
            x = np.concatenate([x, np.full(x.shape[:-1] + (2,), cfg["input_bias_1"], np.uint8)], axis=2)
        x = csc(x, cfg, fmt in (G.ACL_YUV420SP_U8, G.ACL_YUV400_U8))
    c = x.shape[-1]
    mean = np.array([b[f"mean_chn_{i}"] for i in range(c)], np.float32)
    mn = np.array([_f16(b[f"min_chn_{i}"]) for i in range(c)], np.float32)
    var = np.array([_f16(b[f"var_reci_chn_{i}"]) for i in range(c)], np.float32)
    out = ((x.astype(np.float32) - mean - mn) * var).astype(np.float16)
    if b["padding"]:
        t, bt, le, r = (b["top_padding_size"], b["bottom_padding_size"], b["left_padding_size"],
                        b["right_padding_size"])
        out = np.pad(out, ((t, bt), (le, r), (0, 0)), constant_values=np.float16(cfg.get("padding_value", 0)))
    return out


def run(cfg: dict, images: np.ndarray, n: int, out: np.ndarray, nchw: bool, batches: list | None = None) -> None:
    """AIPP over `n` images in `images` (flat uint8) into `out` ([N, C, H, W] or [N, H, W, C])."""
    per = image_bytes(cfg["input_format"], cfg["src_image_size_h"], cfg["src_image_size_w"])
    for i in range(n):
        y = run_one(images[i * per:(i + 1) * per], cfg, batches[i] if batches else None)
        if nchw:
            out[i] = y.transpose(2, 0, 1)
        else:
            out[i] = y


def info(cfg: dict) -> dict:
    """The aclAippInfo fields of a config (camelCase, as get_first_aipp_info reports them)."""
    d = {"inputFormat": cfg["input_format"], "srcImageSizeW": cfg["src_image_size_w"],
         "srcImageSizeH": cfg["src_image_size_h"], "cropSwitch": int(cfg["crop"]),
         "loadStartPosW": cfg["load_start_pos_w"], "loadStartPosH": cfg["load_start_pos_h"],
         "cropSizeW": cfg["crop_size_w"], "cropSizeH": cfg["crop_size_h"], "resizeSwitch": int(cfg["resize"]),
         "resizeOutputW": cfg["resize_output_w"], "resizeOutputH": cfg["resize_output_h"],
         "paddingSwitch": int(cfg["padding"]), "leftPaddingSize": cfg["left_padding_size"],
         "rightPaddingSize": cfg["right_padding_size"], "topPaddingSize": cfg["top_padding_size"],
         "bottomPaddingSize": cfg["bottom_padding_size"], "cscSwitch": int(cfg["csc_switch"]),
         "rbuvSwapSwitch": int(cfg["rbuv_swap_switch"]), "axSwapSwitch": int(cfg["ax_swap_switch"]),
         "singleLineMode": int(cfg["single_line_mode"])}
    for r in range(3):
        for c in range(3):
            d[f"matrixR{r}C{c}"] = cfg[f"matrix_r{r}c{c}"] or 0
    for i in range(3):
        d[f"outputBias{i}"] = cfg[f"output_bias_{i}"] or 0
        d[f"inputBias{i}"] = cfg[f"input_bias_{i}"] or 0
    for i in range(4):
        d[f"meanChn{i}"] = cfg[f"mean_chn_{i}"]
        d[f"minChn{i}"] = float(_f16(cfg[f"min_chn_{i}"]))
        d[f"varReciChn{i}"] = float(_f16(cfg[f"var_reci_chn_{i}"]))
    return d


# ---------------------------------------------------------------- dynamic AIPP parameters
_HEAD = struct.Struct("<Bbbbb3xii9h6x6B2x16x")      # kAippDynamicPara without its first batch entry
_BATCH = struct.Struct("<bbbb4x" + "i" * 12 + "4h" + "8H" + "16x")  # kAippDynamicBatchPara
assert _HEAD.size == 64 and _BATCH.size == 96
HEAD_SIZE, BATCH_SIZE = _HEAD.size, _BATCH.size


def data_size(batch: int) -> int:
    """get_aipp_data_size: sizeof(kAippDynamicPara) - one batch entry + batch * one batch entry."""
    return HEAD_SIZE + batch * BATCH_SIZE


def _batch_defaults() -> dict:
    return {"crop": False, "load_start_pos_w": 0, "load_start_pos_h": 0, "crop_size_w": 0, "crop_size_h": 0,
            "scf": False, "padding": False, "top_padding_size": 0, "bottom_padding_size": 0,
            "left_padding_size": 0, "right_padding_size": 0, "mean_chn_0": 0, "mean_chn_1": 0,
            "mean_chn_2": 0, "mean_chn_3": 0, "min_chn_0": 0.0, "min_chn_1": 0.0, "min_chn_2": 0.0,
            "min_chn_3": 0.0, "var_reci_chn_0": 1.0, "var_reci_chn_1": 1.0, "var_reci_chn_2": 1.0,
            "var_reci_chn_3": 1.0}


class DynamicParams:
    """aclmdlAIPP: dynamic AIPP parameters for `batch_size` images (create_aipp)."""

    __slots__ = ("batch_size", "cfg", "batches", "handle")

    def __init__(self, batch_size: int):
        if batch_size <= 0:
            raise InvalidValueError(f"create_aipp: batch_size must be positive, got {batch_size}")
        self.batch_size = batch_size
        self.cfg = {"input_format": 0, "csc_switch": False, "rbuv_swap_switch": False, "ax_swap_switch": False,
                    "src_image_size_w": 0, "src_image_size_h": 0, "single_line_mode": False, "resize": False,
                    "resize_output_w": 0, "resize_output_h": 0, **{k: 0 for k in MATRIX_KEYS},
                    "output_bias_0": 0, "output_bias_1": 0, "output_bias_2": 0, "input_bias_0": 0,
                    "input_bias_1": 0, "input_bias_2": 0, "padding_value": 0.0}
        self.batches = [_batch_defaults() for _ in range(batch_size)]
        self.handle = 0

    def batch(self, index: int) -> dict:
        if not 0 <= index < self.batch_size:
            raise InvalidValueError(f"batch_index {index} must be in [0, {self.batch_size}) (the batch size "
                                    "given to create_aipp)")
        return self.batches[index]

    def pack(self) -> bytes:
        c = self.cfg
        head = _HEAD.pack(c["input_format"], int(c["csc_switch"]), int(c["rbuv_swap_switch"]),
                          int(c["ax_swap_switch"]), self.batch_size, c["src_image_size_w"], c["src_image_size_h"],
                          *[c[k] for k in MATRIX_KEYS], c["output_bias_0"], c["output_bias_1"], c["output_bias_2"],
                          c["input_bias_0"], c["input_bias_1"], c["input_bias_2"])
        parts = [head]
        for b in self.batches:
            f16 = [int(np.array(b[k], np.float16).view(np.uint16)) for k in
                   ("min_chn_0", "min_chn_1", "min_chn_2", "min_chn_3",
                    "var_reci_chn_0", "var_reci_chn_1", "var_reci_chn_2", "var_reci_chn_3")]
            parts.append(_BATCH.pack(int(b["crop"]), int(b["scf"]), int(b["padding"]), 0,
                                     b["load_start_pos_w"], b["load_start_pos_h"], b["crop_size_w"], b["crop_size_h"],
                                     0, 0, 0, 0, b["top_padding_size"], b["bottom_padding_size"],
                                     b["left_padding_size"], b["right_padding_size"],
                                     b["mean_chn_0"], b["mean_chn_1"], b["mean_chn_2"], b["mean_chn_3"], *f16))
        return b"".join(parts)


def unpack(blob: bytes) -> tuple[dict, list[dict]]:
    """(config, per-image parameters) of a dynamic AIPP blob."""
    if len(blob) < HEAD_SIZE + BATCH_SIZE:
        raise InvalidValueError(f"the dynamic AIPP data is {len(blob)} bytes; it needs at least "
                                f"{HEAD_SIZE + BATCH_SIZE} (set it with acl.mdl.set_input_aipp)")
    h = _HEAD.unpack_from(blob, 0)
    cfg = {"input_format": h[0], "csc_switch": bool(h[1]), "rbuv_swap_switch": bool(h[2]),
           "ax_swap_switch": bool(h[3]), "src_image_size_w": h[5], "src_image_size_h": h[6],
           **dict(zip(MATRIX_KEYS, h[7:16])), "output_bias_0": h[16], "output_bias_1": h[17],
           "output_bias_2": h[18], "input_bias_0": h[19], "input_bias_1": h[20], "input_bias_2": h[21],
           "padding_value": 0.0, "resize": False}
    count = h[4]
    if count <= 0:
        raise NpuError("the dynamic AIPP parameters hold no image (batch 0): set them with acl.mdl.set_input_aipp "
                       "before executing", C.ACL_ERROR_GE_AIPP_BATCH_EMPTY)
    if len(blob) < HEAD_SIZE + count * BATCH_SIZE:
        raise InvalidValueError(f"the dynamic AIPP data announces {count} image(s) but holds "
                                f"{(len(blob) - HEAD_SIZE) // BATCH_SIZE}: set it with acl.mdl.set_input_aipp")
    batches = []
    for i in range(count):
        v = _BATCH.unpack_from(blob, HEAD_SIZE + i * BATCH_SIZE)
        f16 = np.array(v[20:28], np.uint16).view(np.float16).astype(np.float32)
        batches.append({"crop": bool(v[0]), "scf": bool(v[1]), "padding": bool(v[2]), "load_start_pos_w": v[4],
                        "load_start_pos_h": v[5], "crop_size_w": v[6], "crop_size_h": v[7],
                        "top_padding_size": v[12], "bottom_padding_size": v[13], "left_padding_size": v[14],
                        "right_padding_size": v[15], "mean_chn_0": v[16], "mean_chn_1": v[17],
                        "mean_chn_2": v[18], "mean_chn_3": v[19],
                        **{f"min_chn_{j}": float(f16[j]) for j in range(4)},
                        **{f"var_reci_chn_{j}": float(f16[4 + j]) for j in range(4)}})
    return cfg, batches


def _range(name: str, value, lo, hi) -> None:
    if not lo <= value <= hi:
        raise InvalidValueError(f"{name} must be in [{lo}, {hi}], got {value}")


def _switch(name: str, value) -> int:
    _range(name, value, 0, 1)
    return value


# setters of aclmdlAIPP with the checks of GE's acl_aipp_om2.cpp
def set_input_format(p: DynamicParams, fmt: int) -> None:
    if fmt not in FORMATS.values():
        raise InvalidValueError(f"input_format {fmt} is not an aclAippInputFormat (1 YUV420SP_U8 ... 14 RAW24)")
    p.cfg["input_format"] = fmt


def set_csc(p: DynamicParams, switch, matrix, out_bias, in_bias) -> None:
    p.cfg["csc_switch"] = bool(_switch("csc_switch", switch))
    if not switch:
        return
    for key, v in zip(MATRIX_KEYS, matrix):
        _range(key, v, -32677, 32676)
        p.cfg[key] = v
    for i in range(3):
        p.cfg[f"output_bias_{i}"], p.cfg[f"input_bias_{i}"] = out_bias[i], in_bias[i]


def set_swap(p: DynamicParams, key: str, switch) -> None:
    p.cfg[key] = bool(_switch(key, switch))


def set_src_size(p: DynamicParams, w, h) -> None:
    _range("src_image_size_w", w, 2, 4096)
    _range("src_image_size_h", h, 1, 4096)
    p.cfg["src_image_size_w"], p.cfg["src_image_size_h"] = w, h


def set_crop(p: DynamicParams, switch, x, y, w, h, batch_index) -> None:
    b = p.batch(batch_index)
    b["crop"] = bool(_switch("crop_switch", switch))
    if switch:
        _range("load_start_pos_w", x, 0, 4095)
        _range("load_start_pos_h", y, 0, 4095)
        _range("crop_size_w", w, 1, 4096)
        _range("crop_size_h", h, 1, 4096)
        b.update(load_start_pos_w=x, load_start_pos_h=y, crop_size_w=w, crop_size_h=h)


def set_padding(p: DynamicParams, switch, top, bottom, left, right, batch_index) -> None:
    b = p.batch(batch_index)
    b["padding"] = bool(_switch("padding_switch", switch))
    if switch:
        for name, v in (("top", top), ("bottom", bottom), ("left", left), ("right", right)):
            _range(f"{name}_padding_size", v, 0, 32)
        b.update(top_padding_size=top, bottom_padding_size=bottom, left_padding_size=left,
                 right_padding_size=right)


def set_channels(p: DynamicParams, kind: str, values, batch_index) -> None:
    """kind: "mean_chn" [0, 255] ints, "min_chn" [0, 255] floats, "var_reci_chn" [-65504, 65504] floats."""
    b = p.batch(batch_index)
    lo, hi = (-65504, 65504) if kind == "var_reci_chn" else (0, 255)
    for i, v in enumerate(values):
        _range(f"{kind}_{i}", v, lo, hi)
        b[f"{kind}_{i}"] = v


def check_against(p: DynamicParams, model_batch: int, channels: int, mh: int, mw: int, max_size: int) -> None:
    """What aclmdlSetInputAIPP checks before writing the blob (aipp_param_check.cpp)."""
    c = p.cfg
    if p.batch_size != model_batch:
        raise InvalidValueError(f"the AIPP parameters are for {p.batch_size} image(s); the model input takes "
                                f"{model_batch} (create_aipp(batch_size) must equal the model's batch)")
    if c["input_format"] not in SUPPORTED:
        raise InvalidValueError("set the AIPP input format first (set_aipp_input_format: YUV420SP_U8, XRGB8888_U8, "
                                "RGB888_U8 or YUV400_U8)")
    sw, sh = c["src_image_size_w"], c["src_image_size_h"]
    if not sw or not sh:
        raise InvalidValueError("set the source image size first (set_aipp_src_image_size)")
    if c["input_format"] == G.ACL_YUV420SP_U8 and (sw % 2 or sh % 2):
        raise InvalidValueError(f"a YUV420SP_U8 source needs an even width and height, got {sw} x {sh}")
    if p.batch_size * image_bytes(c["input_format"], sh, sw) > max_size:
        raise InvalidValueError(f"{p.batch_size} image(s) of {sw} x {sh} are more than the model's "
                                f"max_src_image_size ({max_size} bytes)")
    out_c = 1 if c["input_format"] == G.ACL_YUV400_U8 and not c["csc_switch"] else 3
    if out_c != channels:
        raise InvalidValueError(f"the AIPP produces {out_c} channel(s); the model input has {channels}")
    for i, b in enumerate(p.batches):
        if b["crop"]:
            if b["load_start_pos_w"] + b["crop_size_w"] > sw or b["load_start_pos_h"] + b["crop_size_h"] > sh:
                raise InvalidValueError(f"batch {i}: the crop runs past the {sw} x {sh} source image")
            if c["input_format"] == G.ACL_YUV420SP_U8 and (b["load_start_pos_w"] % 2 or b["load_start_pos_h"] % 2):
                raise InvalidValueError(f"batch {i}: a YUV420SP_U8 crop must start at even coordinates")
        h = (b["crop_size_h"] if b["crop"] else sh) + (b["top_padding_size"] + b["bottom_padding_size"]
                                                       if b["padding"] else 0)
        w = (b["crop_size_w"] if b["crop"] else sw) + (b["left_padding_size"] + b["right_padding_size"]
                                                       if b["padding"] else 0)
        if (h, w) != (mh, mw):
            raise InvalidValueError(f"batch {i}: the AIPP output would be {h} x {w}; the model input is {mh} x {mw}")
