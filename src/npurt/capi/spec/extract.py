"""Extract the facts of the runtime's public C headers into npurt's C-interface spec.

Run by a developer, not at run time:

    python -m npurt.capi.spec.extract /path/to/hicann-runtime > src/npurt/capi/spec/acl.json

It reads `include/external/acl/**/*.h` of a hicann/runtime checkout, runs the C preprocessor
on each header (in C mode, with `FUNC_VISIBILITY` unset, so visibility macros vanish) keeping
macro definitions (`-dD`), and records, per header and in header order: the headers it
includes, object-like macros with their values, `static const` constants, typedefs, enums
(members and value expressions), structs and unions (member declarations) and functions
(return type, parameter declarations and names, deprecation message). Comments and prose are
not kept: the spec holds facts only, and npurt's headers are generated from it
(`npurt.capi.build.headers`).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile

HEADER_ROOT = "include/external"
_MACRO_SKIP = re.compile(r"^(INC_|__INC_|ACL_FUNC_VISIBILITY|GE_FUNC_VISIBILITY|MSVP_PROF_API|ACL_DUMP_API|"
                         r"ACL_DEPRECATED)")
_IDENT = re.compile(r"[A-Za-z_]\w*")


def _norm(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\s*\*\s*", " *", text)          # `void* p` / `void *p` -> `void *p`
    text = re.sub(r"\*\s+(?=\*)", "*", text)        # `* *` -> `**`
    text = re.sub(r"\s*([(),\[\]])\s*", r"\1", text)
    text = text.replace(",", ", ")
    text = re.sub(r"\*\s+(?=[),])", "*", text)
    text = re.sub(r"\b(const|struct|union|enum)\(", r"\1 (", text)
    return text.replace(" )", ")")


def _split_top(text: str, sep: str) -> list[str]:
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        if ch == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [s for s in (p.strip() for p in out) if s]


def _param(decl: str) -> dict:
    decl = _norm(decl)
    m = re.search(r"\(\s*\*\s*(?:const\s+)?([A-Za-z_]\w*)\s*\)", decl)   # function pointer parameter
    if m:
        return {"decl": decl, "name": m.group(1)}
    m = re.match(r"^(.*?)([A-Za-z_]\w*)\s*((?:\[[^\]]*\])*)$", decl)
    if decl in ("void",) or not m or not m.group(1).strip():
        return {"decl": decl, "name": None}
    return {"decl": decl, "name": m.group(2), "type": _norm(m.group(1) + m.group(3))}


def _attrs(text: str) -> tuple[str, str | None]:
    deprecated = None
    m = re.search(r'__attribute__\s*\(\(\s*deprecated\s*(?:\(\s*((?:"[^"]*"\s*)+)\))?\s*\)\)', text)
    if m:
        deprecated = "".join(re.findall(r'"([^"]*)"', m.group(1) or '""'))
    text = re.sub(r"__attribute__\s*\(\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)\)", " ", text)
    return text, deprecated


def _aggregate(kind: str, body: str) -> list:
    if kind == "enum":
        members = []
        for item in _split_top(body, ","):
            name, _, value = item.partition("=")
            members.append([name.strip(), _norm(value) if value.strip() else None])
        return members
    return [_norm(m) for m in _split_top(body, ";")]


def _declaration(text: str) -> dict | None:
    text, deprecated = _attrs(text)
    text = _norm(text.replace("extern ", " ") if text.startswith("extern ") else text)
    if not text:
        return None
    m = re.match(r"^(typedef )?(struct|union|enum)\s*([A-Za-z_]\w*)?\s*\{(.*)\}\s*([^{}]*)$", text, re.S)
    if m:
        body_start = text.index("{")
        body_end = text.rindex("}")
        return {"kind": m.group(2), "typedef": bool(m.group(1)), "tag": m.group(3),
                "members": _aggregate(m.group(2), text[body_start + 1:body_end]),
                "names": [n.strip() for n in _split_top(text[body_end + 1:], ",")]}
    if text.startswith("typedef "):
        return {"kind": "typedef", "decl": text[len("typedef "):]}
    m = re.match(r"^static const (.+?) ([A-Za-z_]\w*) = (.+)$", text)
    if m:
        return {"kind": "const", "type": m.group(1), "name": m.group(2), "value": m.group(3)}
    m = re.match(r"^(.+?)\b([A-Za-z_]\w*)\((.*)\)$", text, re.S)
    if m:
        params = [_param(p) for p in _split_top(m.group(3), ",")]
        if len(params) == 1 and params[0]["decl"] == "void":
            params = []
        fn = {"kind": "function", "name": m.group(2), "ret": _norm(m.group(1)), "params": params}
        if deprecated is not None:
            fn["deprecated"] = deprecated
        return fn
    if re.match(r"^(struct|union|enum) [A-Za-z_]\w*$", text):
        return {"kind": "forward", "decl": text}
    raise ValueError(f"unrecognised declaration: {text!r}")


def extract_header(root: str, rel: str) -> dict:
    path = os.path.join(root, HEADER_ROOT, rel)
    with open(path, encoding="utf-8") as f:
        source = f.read()
    includes = re.findall(r'^\s*#\s*include\s*[<"]([^">]+)[">]', source, re.M)
    with tempfile.TemporaryDirectory() as fake:
        for std in ("stdint.h", "stddef.h", "stdbool.h", "stdio.h", "stdlib.h"):
            open(os.path.join(fake, std), "w").close()
        base = os.path.join(root, HEADER_ROOT)
        out = subprocess.run(["gcc", "-E", "-dD", "-nostdinc", "-I", fake, "-I", base, "-I", os.path.join(base, "acl"),
                              "-x", "c", path],
                             capture_output=True, text=True, check=True).stdout
    items, current, chunk = [], None, []
    for line in out.splitlines():
        m = re.match(r'^# \d+ "([^"]+)"', line)
        if m:
            current = os.path.realpath(m.group(1))
            continue
        if current != os.path.realpath(path):
            continue
        if line.startswith("#define "):
            m = re.match(r"#define ([A-Za-z_]\w*)(\([^)]*\))?\s*(.*)$", line)
            if m and not m.group(2) and not _MACRO_SKIP.match(m.group(1)):
                items.append({"kind": "macro", "name": m.group(1), "value": m.group(3).strip()})
            continue
        if line.startswith("#"):
            continue
        chunk.append(line)
    text = "\n".join(chunk)
    for part in _split_top(text, ";"):
        decl = _declaration(part)
        if decl is not None:
            items.append(decl)
    _cplusplus_facts(source, items)
    return {"includes": includes, "items": items}


def _cplusplus_facts(source: str, items: list) -> None:
    """What the C-mode preprocessor hides: a struct's C++ constructor (dim3's
    `constexpr dim3(uint32_t vx = 1, ...)`) and the `#ifndef` guard around it."""
    for item in items:
        if item["kind"] != "struct" or not item.get("tag"):
            continue
        tag = re.escape(item["tag"])
        m = re.search(r"constexpr\s+" + tag + r"\s*\(([^)]*)\)\s*:\s*([^{]*)\{", source)
        if m:
            item["cxx_constructor"] = {"params": _norm(m.group(1)), "init": _norm(m.group(2))}
        m = re.search(r"#ifndef\s+(\w+)\s*\n\s*typedef\s+struct\s+" + tag + r"\b", source)
        if m:
            item["unless_defined"] = m.group(1)


def extract(root: str) -> dict:
    base = os.path.join(root, HEADER_ROOT)
    headers = {}
    for dirpath, _, files in os.walk(os.path.join(base, "acl")):
        for name in sorted(files):
            if name.endswith(".h"):
                rel = os.path.relpath(os.path.join(dirpath, name), base)
                headers[rel] = extract_header(root, rel)
    commit = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    return {"source": "hicann/runtime include/external/acl", "commit": commit or None,
            "headers": dict(sorted(headers.items()))}


if __name__ == "__main__":
    json.dump(extract(sys.argv[1]), sys.stdout, indent=1)
    sys.stdout.write("\n")
