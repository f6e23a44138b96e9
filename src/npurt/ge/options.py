"""ATC's option strings, parsed and checked: --input_shape, the dynamic batch / image size /
dims gears, --output_type, --out_nodes, --soc_version and --output, as ATC spells and refuses
them. Conversion itself is converter.py; the command line, atc.py.
"""
from __future__ import annotations

import os
import re

from ..driver.soc import SOCS
from .dtypes import OUTPUT_TYPES

MAX_GEARS = 100


class ConversionError(ValueError):
    """ATC refused the model or an option; the message says why and what to change."""


def parse_input_shape(text: str | None) -> dict[str, tuple[list[int], list | None]]:
    """--input_shape "a:1,3,224,224;b:-1,10" (ranges "1~10", scalar "c:") -> {name: (dims, ranges)}."""
    out: dict = {}
    if not text:
        return out
    for part in text.split(";"):
        part = part.strip()
        if not part:
            continue
        name, sep, dims_text = part.rpartition(":")
        if not sep or not name:
            raise ConversionError(f"--input_shape entry {part!r} must be name:d1,d2,... (e.g. \"input:1,3,224,224\")")
        dims, ranges, ranged = [], [], False
        for d in filter(None, (x.strip() for x in dims_text.split(","))):
            if "~" in d:
                lo, hi = d.split("~", 1)
                try:
                    lo, hi = int(lo), int(hi)
                except ValueError:
                    raise ConversionError(f"--input_shape: {d!r} is not a range lo~hi") from None
                dims.append(-1)
                ranges.append([lo, hi])
                ranged = True
                continue
            try:
                v = int(d)
            except ValueError:
                raise ConversionError(f"--input_shape: dim {d!r} of {name!r} is not an integer") from None
            if v < -1 and not (v == -2 and len(dims_text.split(",")) == 1):
                raise ConversionError(f"--input_shape: dim {v} of {name!r} must be >= -1 (-2 alone: unknown rank)")
            dims.append(v)
            ranges.append([v, v] if v >= 0 else [1, -1])
        if name in out:
            raise ConversionError(f"--input_shape names {name!r} twice")
        out[name] = (dims, ranges if ranged else None)
    return out


def _int_list(text: str, flag: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConversionError(f"{flag} {text!r} must be comma-separated integers") from None


def parse_gears(batch: str | None, image: str | None, dims: str | None) -> tuple[str, list[list[int]]] | None:
    given = [(k, v) for k, v in (("batch", batch), ("hw", image), ("dims", dims)) if v]
    if not given:
        return None
    if len(given) > 1:
        raise ConversionError("--dynamic_batch_size, --dynamic_image_size and --dynamic_dims are mutually exclusive")
    kind, text = given[0]
    flag = {"batch": "--dynamic_batch_size", "hw": "--dynamic_image_size", "dims": "--dynamic_dims"}[kind]
    if kind == "batch":
        gears = [[v] for v in _int_list(text, flag)]
    else:
        gears = [_int_list(g, flag) for g in text.split(";") if g.strip()]
        if kind == "hw" and any(len(g) != 2 for g in gears):
            raise ConversionError(f"{flag} gears are h,w pairs separated by ';' (e.g. \"224,224;448,448\")")
    if not 2 <= len(gears) <= MAX_GEARS:
        raise ConversionError(f"{flag} needs 2 to {MAX_GEARS} gears, got {len(gears)}")
    if any(v <= 0 for g in gears for v in g):
        raise ConversionError(f"{flag}: every gear value must be positive")
    if len({tuple(g) for g in gears}) != len(gears):
        raise ConversionError(f"{flag} lists a gear twice")
    if kind == "dims" and len({len(g) for g in gears}) != 1:
        raise ConversionError(f"{flag}: every gear must give the same number of values")
    return kind, gears


def parse_output_type(text: str | None, out_nodes: list | None) -> tuple[int | None, dict]:
    """(type for every output, {(node, index): type}) from --output_type."""
    if not text:
        return None, {}
    if ":" not in text:
        if text.upper() not in OUTPUT_TYPES:
            raise ConversionError(f"--output_type {text!r} is not one of {', '.join(OUTPUT_TYPES)}")
        return OUTPUT_TYPES[text.upper()], {}
    per = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        bits = part.split(":")
        if len(bits) != 3 or bits[2].upper() not in OUTPUT_TYPES or not bits[1].isdigit():
            raise ConversionError(f"--output_type entry {part!r} must be node:index:TYPE (TYPE one of "
                                  f"{', '.join(OUTPUT_TYPES)})")
        per[(bits[0], int(bits[1]))] = OUTPUT_TYPES[bits[2].upper()]
    if out_nodes is None:
        raise ConversionError("--output_type with node:index:TYPE entries needs --out_nodes naming those outputs")
    return None, per


def parse_out_nodes(text: str | None) -> list[tuple[str, int]] | None:
    if not text:
        return None
    out = []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        name, sep, idx = part.rpartition(":")
        if not sep or not idx.isdigit():
            raise ConversionError(f"--out_nodes entry {part!r} must be node:index")
        out.append((name, int(idx)))
    return out


def check_soc(soc: str | None) -> str:
    if not soc:
        raise ConversionError("--soc_version is required (the SoC the model is built for, e.g. "
                              f"--soc_version={next(iter(SOCS))}; npurt simulates {', '.join(SOCS)})")
    for name in SOCS:
        if name.lower() == soc.lower():
            return name
    raise ConversionError(f"--soc_version={soc}: npurt simulates {', '.join(SOCS)} (choose the one your "
                          "application runs on, and run with NPURT_SOC set to it)")


def output_path(output: str | None) -> str:
    if not output:
        raise ConversionError("--output is required (the .om path; .om is appended when missing)")
    base = os.path.basename(output)
    if not base or not re.fullmatch(r"[A-Za-z0-9_.\-]+", base):
        raise ConversionError(f"--output {output!r}: the file name may hold letters, digits, '_', '-' and '.' only")
    return output if output.endswith(".om") else output + ".om"
