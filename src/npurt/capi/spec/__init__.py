"""The C interface's spec: facts of the runtime's public headers, as data.

`acl.json` holds, per header of hicann/runtime's `include/external/acl/` (the commit is
recorded in the file), the headers it includes and its items in header order: macros,
`static const` constants, typedefs, enums, structs, unions and functions (return type,
parameter declarations and names). It is produced by `extract.py` and committed; npurt's
headers, the C shims of `libacl_rt.so` and the list of stubs are all generated from it, so a
signature or a constant cannot drift from the runtime's.

Other spec files beside it (`aprof.json`: profiling/aprof_pub.h of hicann/runtime's pkg_inc, read with
`extract.extract_header`; `mstx.json`: the mstx tools extension) are merged in name order;
generated fragments (the aclnn operator headers, npurt-private native entry points) join through
`EXTRA_SPECS`: callables returning a dict in the same format (`{"headers": {path: {"includes":
[...], "items": [...]}}}`); `load()` merges them after `acl.json`.

`Spec` answers the questions the generators ask: every function, a typedef's underlying C
type, and the *wire* form of a C type — how a value of it crosses from the C shim to Python
(`uintptr_t` for addresses and handles, which the measurements in
`shared/design/c-interface.md` show is the cheapest crossing; integer and floating types as
themselves; a pointer to an integer or handle as a typed pointer Python writes through).
"""
from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable

SPEC_DIR = os.path.dirname(os.path.abspath(__file__))

EXTRA_SPECS: list[Callable[[], dict]] = []
"""Providers of further spec fragments (same format as acl.json), merged by `load`."""

_INTS = {"int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "size_t",
         "int", "unsigned int", "unsigned", "long", "unsigned long", "long long", "unsigned long long",
         "char", "signed char", "unsigned char", "short", "unsigned short", "bool", "_Bool", "uintptr_t",
         "intptr_t", "ssize_t"}
_FLOATS = {"float", "double"}


def _strip_const(t: str) -> str:
    t = re.sub(r"\bconst\b", " ", t)
    t = re.sub(r"\bvolatile\b", " ", t)
    return re.sub(r"\s+", " ", t).strip().replace(" *", "*").replace("* ", "*")


class Spec:
    """The merged spec with the lookups the generators need."""

    def __init__(self, data: dict):
        self.data = data
        self.headers: dict = data["headers"]
        self.kinds: dict[str, str] = {}     # type name -> 'int' | 'float' | 'enum' | 'struct' | 'ptr' | 'fn'
        self.aliases: dict[str, str] = {}   # typedef name -> underlying type text
        self.functions: dict[str, dict] = {}
        for header, body in self.headers.items():
            for item in body["items"]:
                self._learn(header, item)

    def _learn(self, header: str, item: dict) -> None:
        kind = item["kind"]
        if kind == "function":
            self.functions[item["name"]] = dict(item, header=header)
        elif kind in ("enum", "struct", "union"):
            k = "enum" if kind == "enum" else "struct"
            for name in item["names"]:
                if name.startswith("*"):
                    self.kinds[name.lstrip("*")] = "ptr"
                elif name:
                    self.kinds[name] = k
            if item.get("tag"):
                self.kinds[f"{kind} {item['tag']}"] = k
                # C++ makes a tag a type name; the headers use `acltdtTensorType` so
                self.kinds.setdefault(item["tag"], k)
        elif kind == "typedef":
            decl = item["decl"]
            m = re.search(r"\(\s*\*\s*(\w+)\s*\)", decl)
            if m:
                self.kinds[m.group(1)] = "fn"
                return
            m = re.match(r"^(.*?)(\w+)$", decl)
            target, name = m.group(1).strip(), m.group(2)
            self.aliases[name] = target
            self.kinds[name] = self.kind(target)

    def kind(self, ctype: str) -> str:
        t = _strip_const(ctype)
        if "*" in t or "[" in t:
            return "ptr"
        if t in _INTS:
            return "int"
        if t in _FLOATS:
            return "float"
        if t == "void":
            return "void"
        if t in self.kinds:
            return self.kinds[t]
        if t.startswith(("struct ", "union ")):
            return "struct"
        if t.startswith("enum "):
            return "enum"
        raise KeyError(f"unknown C type {ctype!r}")

    def resolve(self, ctype: str) -> str:
        """`ctype` with its typedef names replaced until a base type remains (const dropped)."""
        t = _strip_const(ctype)
        stars = len(t) - len(t.rstrip("*"))
        base = t.rstrip("*")
        seen = 0
        while base in self.aliases and seen < 20:
            inner = _strip_const(self.aliases[base])
            stars += len(inner) - len(inner.rstrip("*"))
            base = inner.rstrip("*")
            seen += 1
        return base + "*" * stars

    def wire(self, ctype: str) -> str:
        """The C type a value of `ctype` has on its way to Python (see the module docstring)."""
        kind = self.kind(ctype)
        if kind == "void":
            return "void"
        if kind in ("ptr", "fn", "struct"):
            if kind != "ptr":
                return "uintptr_t"
            r = self.resolve(ctype)
            if r.endswith("**"):
                return "uintptr_t *"
            target = r[:-1]
            if target.endswith("*"):
                return "uintptr_t *"
            if target in self.kinds and self.kinds[target] == "fn":
                return "uintptr_t *"
            tk = self.kind(target) if target not in ("void",) else "void"
            if tk == "int" and target not in ("char", "signed char", "unsigned char", "bool", "_Bool"):
                return target + " *"
            if tk == "enum":
                return "int32_t *"
            if tk == "float":
                return target + " *"
            return "uintptr_t"
        if kind == "enum":
            return "int64_t"
        if kind == "float":
            return "double"
        r = self.resolve(ctype)
        return "int" if r in ("bool", "_Bool", "char") else r

    def param_type(self, param: dict) -> str:
        """A parameter's C type (a function-pointer parameter counts as a pointer)."""
        if "type" in param:
            return param["type"]
        return "void *"


def _merge(into: dict, extra: dict) -> None:
    for header, body in extra.get("headers", {}).items():
        if header in into["headers"]:
            into["headers"][header]["items"].extend(body.get("items", []))
        else:
            into["headers"][header] = {"includes": list(body.get("includes", [])), "items": list(body["items"])}


@functools.lru_cache(maxsize=1)
def load() -> Spec:
    """acl.json merged with every `EXTRA_SPECS` provider."""
    with open(os.path.join(SPEC_DIR, "acl.json"), encoding="utf-8") as f:
        data = json.load(f)
    for name in sorted(os.listdir(SPEC_DIR)):
        if name.endswith(".json") and name != "acl.json":
            with open(os.path.join(SPEC_DIR, name), encoding="utf-8") as f:
                _merge(data, json.load(f))
    for provider in EXTRA_SPECS:
        _merge(data, provider())
    return Spec(data)


def eval_c_int(expr: str, names: dict[str, int] | None = None) -> int:
    """The value of a C integer constant expression from the spec (`0x00000001U`, `(1 << 2)`,
    `ACL_X | ACL_Y`, `-1`)."""
    text = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]+\b", r"\1", expr.strip())
    text = re.sub(r"\(\s*(?:u?int\d+_t|unsigned int|int|unsigned)\s*\)", "", text)
    env = dict(names or {})
    return int(eval(text, {"__builtins__": {}}, env))  # noqa: S307 - spec text, integer expressions only


# spec fragments of the C interface beyond acl.json: native kernel launches, aclnn
from ..aclnn.spec import spec as _aclnn  # noqa: E402
from ..native_spec import spec as _native  # noqa: E402

EXTRA_SPECS.extend((_native, _aclnn))
