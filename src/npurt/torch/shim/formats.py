"""Storage formats (aclFormat): torch_npu lets a tensor's device memory use the cube unit's
layouts (FRACTAL_NZ, NC1HWC0, ...). They change speed on an NPU, never values, so here the
data keeps torch's layout and a cast only records the format a script asked for.

As torch_npu: the internal (padded) formats are used only with
`torch.npu.config.allow_internal_format = True`; by default (False, torch_npu's default since
its npu_sys_ctrl sets ALLOW_INTERNAL_FORMAT to "disable") a cast to one, or
`empty_with_format` in one, gives the tensor the format's base format instead (FRACTAL_NZ ->
ND, NC1HWC0 / FRACTAL_Z -> NCHW, NDC1HWC0 / FRACTAL_Z_3D / NDHWC -> NCDHW:
torch_npu/csrc/framework/FormatHelper.cpp's table)."""
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
# an internal format -> its base format (FormatHelper.cpp; the formats not in its table are kept)
BASE_FORMAT = {Format.NC1HWC0: Format.NCHW, Format.FRACTAL_Z: Format.NCHW, Format.FRACTAL_NZ: Format.ND,
               Format.NDC1HWC0: Format.NCDHW, Format.FRACTAL_Z_3D: Format.NCDHW, Format.NDHWC: Format.NCDHW}


def _allowed(fmt: int) -> int:
    """`fmt`, or its base format while internal formats are not allowed."""
    if not torch.npu.config.allow_internal_format:
        return int(BASE_FORMAT.get(fmt, fmt))
    return fmt


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
    fmt = _allowed(_format_of(acl_format))
    if fmt == get_npu_format(input):
        return input
    out = input.view_as(input)
    out._npu_format = fmt
    return out


def npu_format_cast_(input: torch.Tensor, acl_format) -> torch.Tensor:
    """In place: `acl_format` an aclFormat number, or a tensor whose format to take."""
    _check_npu(input, "npu_format_cast_")
    fmt = get_npu_format(acl_format) if isinstance(acl_format, torch.Tensor) else _format_of(acl_format)
    input._npu_format = _allowed(fmt)
    return input


def empty_with_format(size, dtype=None, layout=None, device=None, pin_memory=None, acl_format=2,
                      base_addr_aligned_kb=None) -> torch.Tensor:
    """torch_npu.empty_with_format: an uninitialized npu tensor in storage format `acl_format`."""
    out = torch.empty(size, dtype=dtype, layout=layout, device=device if device is not None else "npu",
                      pin_memory=bool(pin_memory))
    return npu_format_cast_(out, acl_format)


def get_storage_size(input: torch.Tensor) -> int:
    """torch_npu.get_storage_size: the elements of the tensor's storage (its layout is ND here,
    with no padding: the storage's bytes over the element size)."""
    _check_npu(input, "get_storage_size")
    return input.untyped_storage().nbytes() // input.element_size()


def _check_npu(t, what: str) -> None:
    if not isinstance(t, torch.Tensor) or t.device.type != "npu":
        raise RuntimeError(f"{what} expects an npu tensor, got "
                           f"{t.device if isinstance(t, torch.Tensor) else type(t).__name__}")
