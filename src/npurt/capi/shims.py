"""The C side of libacl_rt.so, generated from the spec: one shim per C function.

Every function the spec declares is defined and exported (so every program links). A shim
checks that npurt's Python side has started (pitfall 1 of shared/design/c-interface.md: a cffi
function whose Python side failed would return 0, ACL_SUCCESS) and calls its Python entry
point `npurt_py_<name>` with the *wire* form of each argument (`Spec.wire`): addresses and
handles as `uintptr_t`, outputs of handles as `uintptr_t *`, integers as themselves, a struct
passed by value as its address, a variadic format already formatted. Which Python function
answers (an implementation or the generic "not supported" stub) is decided when Python
starts (`npurt.capi.entry`), so the library does not change when an implementation is added.

`python_api(spec)` is the cffi `embedding_api` (the entry points' prototypes);
`c_source(spec)` is the shim file, with the start-up code in `runtime_c.py`'s text.
"""
from __future__ import annotations

import hashlib

from .spec import Spec

NOT_READY = 500000  # ACL_ERROR_INTERNAL_ERROR: npurt's Python side could not start


def _wire_params(spec: Spec, fn: dict) -> list[tuple[str, str, str]]:
    """(wire type, name, C expression passing the argument) per parameter."""
    out = []
    params = fn["params"]
    for i, p in enumerate(params):
        if p["decl"] == "...":
            continue
        name = p["name"] or f"arg{i}"
        ctype = spec.param_type(p)
        wire = spec.wire(ctype)
        kind = spec.kind(ctype)
        if kind == "struct":
            expr = f"(uintptr_t)&{name}"
        elif i + 1 < len(params) and params[i + 1]["decl"] == "..." and name == "fmt":
            expr = "(uintptr_t)npurt_formatted"
        elif wire == "uintptr_t":
            expr = f"(uintptr_t){name}"
        elif wire.endswith("*"):
            expr = f"({wire}){name}"
        else:
            expr = f"({wire}){name}"
        out.append((wire, name, expr))
    return out


def _ret_wire(spec: Spec, fn: dict) -> str:
    return spec.wire(fn["ret"])


def interface_digest(spec: Spec) -> str:
    """A digest of every entry point's wire signature: the library and the Python side that
    binds it must agree on it (an old library with a newer npurt would otherwise leave
    functions unbound, which cffi answers with 0, ACL_SUCCESS)."""
    return hashlib.sha256(python_api(spec).encode()).hexdigest()[:24]


def python_api(spec: Spec) -> str:
    lines = ["int npurt_py_ready(void);", "void npurt_py_flush(void);",
             "int npurt_py_describe_fault(uintptr_t addr, int exact, char *out, size_t size);"]
    for name, fn in sorted(spec.functions.items()):
        params = ", ".join(f"{w} {n}" for w, n, _ in _wire_params(spec, fn)) or "void"
        lines.append(f"{_ret_wire(spec, fn)} npurt_py_{name}({params});")
    return "\n".join(lines) + "\n"


def _failure_value(spec: Spec, fn: dict) -> str:
    ret = fn["ret"]
    if ret == "aclError":
        return f"(aclError){NOT_READY}"
    if spec.kind(ret) == "ptr":
        return "NULL"
    return f"({ret})0"


def c_source(spec: Spec, includes: list[str], runtime_c: str) -> str:
    out = ["#include <stdarg.h>", "#include <stdio.h>", "#include <stdint.h>"]
    out += [f'#include "{h}"' for h in includes]
    out.append(python_api(spec))  # prototypes: cffi defines these after this source
    out.append(runtime_c)
    out.append(f'const char *npurt_interface_digest(void) {{ return "{interface_digest(spec)}"; }}\n')
    for name, fn in sorted(spec.functions.items()):
        params = ", ".join(p["decl"] for p in fn["params"]) or "void"
        ret = fn["ret"]
        wires = _wire_params(spec, fn)
        call = f"npurt_py_{name}({', '.join(e for _, _, e in wires)})"
        body = [f"    if (__builtin_expect(npurt_state != 1, 0) && !npurt_ensure_started()) {{",
                f"        return{'' if ret == 'void' else ' ' + _failure_value(spec, fn)};", "    }"]
        if name == "aclGetRecentErrMsg":
            body = ["    if (npurt_state != 1 && !npurt_ensure_started()) {", "        return npurt_start_error;",
                    "    }"]
        if fn["params"] and fn["params"][-1]["decl"] == "...":
            fmt = wires[-1][1]
            body += ["    char npurt_formatted[4096];", "    va_list npurt_ap;", f"    va_start(npurt_ap, {fmt});",
                     f"    vsnprintf(npurt_formatted, sizeof npurt_formatted, {fmt}, npurt_ap);",
                     "    va_end(npurt_ap);"]
        if ret == "void":
            body.append(f"    {call};")
        elif spec.kind(ret) == "ptr":
            body.append(f"    return ({ret})(uintptr_t){call};")
        else:
            body.append(f"    return ({ret}){call};")
        sep = "" if ret.endswith("*") else " "
        out.append(f"NPURT_EXPORT {ret}{sep}{name}({params})\n{{\n" + "\n".join(body) + "\n}\n")
    return "\n".join(out)
