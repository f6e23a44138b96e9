"""Storage formats (aclFormat): torch_npu lets a tensor's device memory use the cube unit's
layouts (FRACTAL_NZ, NC1HWC0, ...). They change speed on an NPU, never values, so here the
data keeps torch's layout and a cast only records the format a script asked for."""
from __future__ import annotations

import enum

import torch

from ...ge import constants as G


class Format(enum.IntEnum):
    """torch_npu.Format: the aclFormat numbers."""

    UNDEFINED = G.ACL_FORMAT_UNDEFINED
    NCHW = G.ACL_FORMAT_NCHW
    NHWC = G.ACL_FORMAT_NHWC
    ND = G.ACL_FORMAT_ND
    NC1HWC0 = G.ACL_FORMAT_NC1HWC0
    FRACTAL_Z = G.ACL_FORMAT_FRACTAL_Z
    NC1HWC0_C04 = G.ACL_FORMAT_NC1HWC0_C04
    HWCN = G.ACL_FORMAT_HWCN
    NDHWC = G.ACL_FORMAT_NDHWC
    FRACTAL_NZ = G.ACL_FORMAT_FRACTAL_NZ
    NCDHW = G.ACL_FORMAT_NCDHW
    NDC1HWC0 = G.ACL_FORMAT_NDC1HWC0
    FRACTAL_Z_3D = 33
    NC = G.ACL_FORMAT_NC
    NCL = G.ACL_FORMAT_NCL


_KNOWN = {int(f) for f in Format}


def _format_of(acl_format) -> int:
    fmt = int(acl_format)
    if fmt not in _KNOWN:
        raise RuntimeError(f"npu_format_cast: unknown aclFormat {acl_format!r} (see torch_npu.Format)")
    return fmt


def get_npu_format(input: torch.Tensor) -> int:
    """The storage format recorded for `input` (ACL_FORMAT_ND, 2, unless cast)."""
    _check_npu(input, "get_npu_format")
    return getattr(input, "_npu_format", int(Format.ND))


def npu_format_cast(input: torch.Tensor, acl_format, customize_dtype=None) -> torch.Tensor:
    """A tensor with the same values in storage format `acl_format` (an alias here)."""
    _check_npu(input, "npu_format_cast")
    fmt = _format_of(acl_format)
    if fmt == get_npu_format(input):
        return input
    out = input.view_as(input)
    out._npu_format = fmt
    return out


def npu_format_cast_(input: torch.Tensor, acl_format) -> torch.Tensor:
    """In place: `acl_format` an aclFormat number, or a tensor whose format to take."""
    _check_npu(input, "npu_format_cast_")
    fmt = get_npu_format(acl_format) if isinstance(acl_format, torch.Tensor) else _format_of(acl_format)
    input._npu_format = fmt
    return input


def _check_npu(t, what: str) -> None:
    if not isinstance(t, torch.Tensor) or t.device.type != "npu":
        raise RuntimeError(f"{what} expects an npu tensor, got "
                           f"{t.device if isinstance(t, torch.Tensor) else type(t).__name__}")
