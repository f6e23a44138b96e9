"""The `.om` file: the real 256-byte ModelFileHeader, then npurt's own payload.

Header (little-endian, GE's framework_types_internal.h): magic 0x444F4D49 ("IMOD"), headsize
256, version, checksum[64], length (bytes after the header), is_encrypt, is_checksum,
modeltype, genmode, name[32], ops, userdefineinfo[32], om_ir_version, model_num,
platform_version[20], platform_type, 3 padding bytes, model_length (u64),
need_check_os_cpu_info, is_unknow_model, reserved[62].

Payload: b"NPURTOM1", a u32 length, a JSON object (what ATC fixes at conversion: inputs,
outputs, gears, AIPP, SoC; see ge/model_def.py), then the ONNX graph bytes. The checksum
field holds the payload's SHA-256. A file with the right magic whose payload is not npurt's
is a model converted by CANN's ATC for real hardware: it is refused with a message that
says to convert the source model with `npurt atc`.

Errors (GE's codes, as the loaders return them): a missing/unreadable file 145002
(ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID); shorter than the header, wrong magic, length field
inconsistent, checksum mismatch 145006 (ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID); a payload
that is not npurt's or cannot be parsed 145000 (ACL_ERROR_GE_PARAM_INVALID).
"""
from __future__ import annotations

import hashlib
import json
import os
import struct

from ..runtime import NpuError, constants as C

MAGIC = 0x444F4D49
HEAD_SIZE = 256
VERSION = 0x00000002          # model file format version written here
OM_IR_VERSION = 9
PAYLOAD_MAGIC = b"NPURTOM1"
USER_INFO = b"npurt"
MODEL_TYPE_IR = 0
GEN_OFFLINE = 0

_HEADER = struct.Struct("<III64sIBBBB32sI32sII20sB3xQBB62s")
assert _HEADER.size == HEAD_SIZE
_LEN = struct.Struct("<I")

FIX_CONVERT = ("convert the source model with npurt's converter, e.g. `npurt atc --model=net.onnx --framework=5 "
               "--output=net --soc_version=<SoC>` (npurt runs models converted by `npurt atc`; an .om built by "
               "CANN's ATC holds code for a real Ascend NPU)")


class ModelFormatError(NpuError):
    """The bytes are not a loadable npurt model."""

    code = C.ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID


def pack(meta: dict, graph: bytes, name: str, soc: str, dynamic: bool) -> bytes:
    """An .om image: header + payload."""
    body = json.dumps(meta, separators=(",", ":"), sort_keys=True).encode()
    payload = PAYLOAD_MAGIC + _LEN.pack(len(body)) + body + graph
    digest = hashlib.sha256(payload).digest()
    header = _HEADER.pack(
        MAGIC, HEAD_SIZE, VERSION, digest, len(payload), 0, 1, MODEL_TYPE_IR, GEN_OFFLINE,
        name.encode()[:31], int(meta.get("ops", 0)), USER_INFO, OM_IR_VERSION, 1, soc.encode()[:19], 0,
        len(payload), 0, 1 if dynamic else 0, b"")
    return header + payload


def header_fields(data) -> dict:
    """The header of an .om image as a dict (raises ModelFormatError if there is none)."""
    if len(data) < HEAD_SIZE:
        raise ModelFormatError(f"the model is {len(data)} bytes, shorter than the {HEAD_SIZE}-byte .om header: "
                               "not an .om file")
    (magic, headsize, version, checksum, length, is_encrypt, is_checksum, modeltype, genmode, name, ops,
     userinfo, ir_version, model_num, platform, platform_type, model_length, check_os, unknown,
     _reserved) = _HEADER.unpack_from(data, 0)
    return {"magic": magic, "headsize": headsize, "version": version, "checksum": checksum, "length": length,
            "is_encrypt": is_encrypt, "is_checksum": is_checksum, "modeltype": modeltype, "genmode": genmode,
            "name": name.rstrip(b"\0").decode(errors="replace"), "ops": ops,
            "userdefineinfo": userinfo.rstrip(b"\0"), "om_ir_version": ir_version, "model_num": model_num,
            "platform_version": platform.rstrip(b"\0").decode(errors="replace"), "platform_type": platform_type,
            "model_length": model_length, "need_check_os_cpu_info": check_os, "is_unknow_model": unknown}


def unpack(data) -> tuple[dict, bytes, dict]:
    """(meta, graph bytes, header) of an .om image, validated."""
    data = memoryview(data).cast("B") if not isinstance(data, (bytes, bytearray)) else data
    h = header_fields(data)
    if h["magic"] != MAGIC:
        raise ModelFormatError(f"wrong magic 0x{h['magic']:08x} (an .om file starts with 0x{MAGIC:08x}, "
                               "\"IMOD\"): not an .om model file")
    if h["headsize"] != HEAD_SIZE or h["length"] != len(data) - HEAD_SIZE:
        raise ModelFormatError(f"the header's length field ({h['length']} bytes) does not match the "
                               f"{len(data) - HEAD_SIZE} bytes after the header: the file is truncated or corrupt")
    payload = bytes(data[HEAD_SIZE:])
    if not payload.startswith(PAYLOAD_MAGIC):
        if h["is_encrypt"]:
            why = "an encrypted model"
        else:
            why = f"a model built by CANN's ATC for {h['platform_version'] or 'an Ascend SoC'}"
        raise NpuError(f"this .om is {why}, not one converted by npurt: {FIX_CONVERT}", C.ACL_ERROR_GE_PARAM_INVALID)
    if h["is_checksum"] and hashlib.sha256(payload).digest() != h["checksum"][:32]:
        raise ModelFormatError("the model's checksum does not match its contents: the file is corrupt "
                               "(convert it again)")
    (size,) = _LEN.unpack_from(payload, len(PAYLOAD_MAGIC))
    start = len(PAYLOAD_MAGIC) + _LEN.size
    try:
        meta = json.loads(payload[start:start + size])
    except ValueError as exc:
        raise NpuError(f"the model description in this .om cannot be parsed ({exc}): convert the model again",
                       C.ACL_ERROR_GE_PARAM_INVALID) from None
    if not isinstance(meta, dict) or "kind" not in meta:
        raise NpuError("the model description in this .om is incomplete: convert the model again",
                       C.ACL_ERROR_GE_PARAM_INVALID)
    return meta, payload[start + size:], h


def read_file(path) -> bytes:
    """The bytes of a model file; 145002 when the path is not a readable file."""
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise NpuError(f"model path {path!r} is invalid", C.ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID)
    path = os.fspath(path)
    if not os.path.isfile(path):
        what = "is a directory" if os.path.isdir(path) else "does not exist"
        raise NpuError(f"model file {path!r} {what}", C.ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID)
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise NpuError(f"model file {path!r} cannot be read: {exc.strerror}",
                       C.ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID) from None
