"""The C interface's spec, headers and library: faithful by construction.

The spec (npurt/capi/spec/acl.json) holds the facts of hicann/runtime's public headers; these
tests hold npurt to it: its constants equal npurt's, every function it declares is exported by
libacl_rt.so, the generated headers compile as C and C++, and the C face implements what the
Python face (acl.rt) implements.
"""
from __future__ import annotations

import ctypes
import fnmatch
import os
import re
import subprocess

import pytest

from npurt.acl import constants as acl_constants, rt as acl_rt
from npurt.capi.entry import bindings
from npurt.capi.spec import eval_c_int, load

HEADERS = ["acl/acl.h", "acl/acl_base.h", "acl/acl_rt.h", "acl/acl_rt_allocator.h", "acl/acl_mdl.h",
           "acl/acl_op.h", "acl/acl_prof.h", "acl/acl_tdt.h", "acl/acl_tdt_queue.h", "acl/acl_dump.h",
           "acl/error_codes/rt_error_codes.h", "acl/error_codes/ge_error_codes.h"]

# C functions the pyACL facade implements and the C face does not yet, with the reason
# (docs/c-api.md lists them); the test fails when one is implemented (remove it here) or a new gap opens
KNOWN_GAPS: set[str] = set()


def _values():
    spec = load()
    values: dict[str, int] = {}
    for body in spec.headers.values():
        for item in body["items"]:
            if item["kind"] == "macro":
                try:
                    values[item["name"]] = eval_c_int(item["value"], values)
                except Exception:  # noqa: BLE001 - string macros
                    pass
            elif item["kind"] == "const":
                values[item["name"]] = eval_c_int(item["value"], values)
            elif item["kind"] == "enum":
                nxt = 0
                for name, value in item["members"]:
                    nxt = eval_c_int(value, values) if value is not None else nxt
                    values[name] = nxt
                    nxt += 1
    return values


def test_the_spec_has_every_public_header_and_hundreds_of_functions():
    spec = load()
    for header in HEADERS:
        assert header in spec.headers, header
    assert len(spec.functions) > 500
    malloc = spec.functions["aclrtMalloc"]
    assert malloc["ret"] == "aclError"
    assert [p["decl"] for p in malloc["params"]] == ["void **devPtr", "size_t size", "aclrtMemMallocPolicy policy"]


def test_constants_equal_npurts_own():
    values = _values()
    shared = [n for n in values if hasattr(acl_constants, n) and isinstance(getattr(acl_constants, n), int)]
    assert len(shared) > 300
    wrong = {n: (values[n], getattr(acl_constants, n)) for n in shared if values[n] != getattr(acl_constants, n)}
    assert wrong == {}, "spec value vs npurt.acl.constants"


def test_every_declared_function_is_exported(cann_home):
    lib = ctypes.CDLL(os.path.join(cann_home, "lib64", "libacl_rt.so"))
    missing = [name for name in load().functions if not hasattr(lib, name)]
    assert missing == []


def test_the_other_library_names_resolve_to_the_same_functions(cann_home):
    for alias in ("libascendcl.so", "libopapi.so", "libnnopbase.so", "libmsprofiler.so", "libascend_dump.so",
                  "libacl_tdt_channel.so", "libacl_tdt_queue.so", "libprofapi.so"):
        path = os.path.join(cann_home, "lib64", alias)
        assert os.path.realpath(path) == os.path.realpath(os.path.join(cann_home, "lib64", "libacl_rt.so"))


@pytest.mark.parametrize("compiler", ["gcc", "g++"])
def test_the_generated_headers_compile_as_c_and_cpp(cann_home, tmp_path, compiler):
    src = tmp_path / ("all.c" if compiler == "gcc" else "all.cpp")
    src.write_text("".join(f'#include "{h}"\n' for h in HEADERS) + "int main(void) { return ACL_SUCCESS; }\n")
    res = subprocess.run([compiler, "-Wall", "-Werror", "-fsyntax-only", "-I", os.path.join(cann_home, "include"),
                          str(src)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def test_prefix_has_the_cann_layout(cann_home):
    for rel in ("include/acl/acl.h", "lib64/libacl_rt.so", "set_env.sh", "bin/setenv.bash",
                "lib64/npurt_python.cfg", "include/securec.h"):
        assert os.path.exists(os.path.join(cann_home, rel)), rel
    text = open(os.path.join(cann_home, "set_env.sh")).read()
    for var in ("ASCEND_HOME_PATH", "ASCEND_INSTALL_PATH", "ASCENDC_CMAKE_DIR", "SOC_VERSION", "LD_LIBRARY_PATH"):
        assert f"export {var}=" in text, var


def test_cann_home_reuses_a_finished_prefix(cann_home):
    from npurt.capi.home import cann_home as make
    lib = os.path.join(cann_home, "lib64", "libacl_rt.so")
    before = os.stat(lib).st_mtime_ns
    assert make(cann_home) == cann_home
    assert os.stat(lib).st_mtime_ns == before


def implemented_and_stubs() -> tuple[list[str], list[str]]:
    b = bindings()
    stubs = sorted(n for n, f in b.items() if getattr(f, "not_supported", False))
    return sorted(set(b) - set(stubs)), stubs


def test_every_function_is_implemented_or_a_recorded_stub():
    implemented, stubs = implemented_and_stubs()
    assert len(implemented) + len(stubs) == len(load().functions)
    assert "aclrtMalloc" in implemented and "aclrtMemcpyAsync" in implemented
    assert "aclmdlRICaptureBegin" in stubs or "aclmdlRICaptureBegin" in implemented


def test_the_c_face_implements_what_the_python_face_implements():
    """Every acl.rt function the facade implements has its C function implemented too (the
    C name is aclrt + the pyACL name without underscores, compared case-insensitively)."""
    b = bindings()
    cnames = {n.lower(): n for n in b}
    gaps = set()
    for name in acl_rt.FUNCTIONS:
        if getattr(getattr(acl_rt, name), "not_supported", False):
            continue
        c = cnames.get("aclrt" + name.replace("_", ""))
        if c is not None and getattr(b[c], "not_supported", False):
            gaps.add(c)
    assert gaps - KNOWN_GAPS == set(), "implemented in acl.rt, a stub in C"
    assert KNOWN_GAPS - gaps == set(), "implemented in C now: remove from KNOWN_GAPS"


def test_a_python_without_a_shared_libpython_is_refused_with_what_to_do(monkeypatch):
    import sysconfig

    from npurt.capi import build
    real = sysconfig.get_config_var
    monkeypatch.setattr(sysconfig, "get_config_var", lambda name: 0 if name == "Py_ENABLE_SHARED" else real(name))
    with pytest.raises(RuntimeError, match="without a shared libpython.*--enable-shared"):
        build.python_ldflags()


def test_runtime_messages_are_rewritten_in_c_terms():
    from npurt.capi.errors import c_terms
    assert c_terms("count (32) is larger than dest_max (16)", ("destMax",)) == "count (32) is larger than destMax (16)"
    assert (c_terms("call set_device(device_id) or set_context(context) first", ())
            == "call aclrtSetDevice(deviceId) or aclrtSetCurrentContext(context) first")
    assert c_terms("see numpy.copyto(out) and not_a_call(x)", ()) == "see numpy.copyto(out) and not_a_call(x)"


def _c_api_doc_section() -> str:
    text = open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "c-api.md")).read()
    start = text.index("## What the C face implements")
    return text[start:text.index("### Behaviour a C program notices", start)]


def test_the_c_api_page_counts_what_the_library_implements():
    implemented, stubs = implemented_and_stubs()
    counts = re.search(r"Of the (\d+) functions.*?(\d+) are implemented and (\d+) are recorded stubs",
                       _c_api_doc_section(), re.S)
    assert counts, "docs/c-api.md: the counts sentence is missing"
    assert tuple(map(int, counts.groups())) == (len(load().functions), len(implemented), len(stubs)), \
        "docs/c-api.md 'What the C face implements': update the counts"


def test_the_c_api_page_lists_exactly_the_stubs():
    """Every name (or `*` pattern) in the stubs paragraph is a stub, and every stub is named."""
    implemented, stubs = implemented_and_stubs()
    section = _c_api_doc_section()
    paragraph = section[section.index("Stubs (207000"):]
    names = set(re.findall(r"\b(?:acl|Msprof)[A-Za-z0-9_*]*[A-Za-z0-9*]", paragraph))
    assert len(names) > 50
    unknown = {n for n in names if not fnmatch.filter(implemented + stubs, n)}
    assert unknown == set(), "docs/c-api.md names functions the headers do not declare"
    named_but_implemented = {n: fnmatch.filter(implemented, n) for n in names if fnmatch.filter(implemented, n)}
    assert named_but_implemented == {}, "implemented now: take them out of docs/c-api.md's stubs"
    unnamed = {s for s in stubs if not any(fnmatch.fnmatchcase(s, n) for n in names)}
    assert unnamed == set(), "stubs docs/c-api.md does not name"


def test_every_stub_reason_names_a_function_that_is_a_stub():
    # a reason left behind once its functions are implemented would not be true of anything
    from npurt.capi.entry import STUB_REASONS
    stubs = [name for name, fn in bindings().items() if getattr(fn, "not_supported", False)]
    for key, reason in STUB_REASONS:
        assert [name for name in stubs if key in name], f"no stub matches {key!r} ({reason})"
