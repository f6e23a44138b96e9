"""Building libacl_rt.so: generated headers and shims compiled by cffi in embedding mode.

`build_library(lib_dir, include_dir)` writes `libacl_rt.so` into `lib_dir`: the C shims of
`npurt.capi.shims` (one per function of the spec) plus `c/start.c`, compiled against the
generated headers, with cffi's embedding start code that imports `npurt.capi.entry` the
first time any function is called. The library is written under a temporary name and renamed
into place: a program that has the old file mapped keeps it (overwriting a mapped library
kills such programs with SIGBUS).

`cdef(spec)` is what cffi needs to know of the C types (structs and unions with their
members, enums as ints, handles and function pointers), so the Python side can read and
write the structs a C program passes, through the embedded module's `ffi`.
"""
from __future__ import annotations

import os
import re
import shutil
import sys
import sysconfig
import tempfile

from . import shims
from .spec import Spec, eval_c_int

MODULE = "_npurt_capi"
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))

_EMBEDDING_INIT = """
import sys
from _npurt_capi import ffi, lib


def _npurt_start():
    try:
        config = ffi.string(lib.npurt_config_path()).decode()
        if lib.npurt_owns_python():
            # the paths npurt was built from come first: the program's own Python is not asked
            paths = []
            try:
                with open(config, encoding="utf-8") as f:
                    paths = [line[5:].rstrip("\\n") for line in f if line.startswith("path=")]
            except OSError:
                pass
            import site
            for p in reversed(paths):
                site.addsitedir(p)
                if p in sys.path:
                    sys.path.remove(p)
                sys.path.insert(0, p)
        from npurt.capi import entry
        entry.start(ffi, lib)
    except BaseException:
        import traceback
        text = "npurt: the C interface's Python side failed to start:\\n" + traceback.format_exc()
        lib.npurt_set_start_error(text.encode("utf-8", "replace")[:8000])

        @ffi.def_extern(name="npurt_py_ready")
        def _not_ready():
            return 0


_npurt_start()
"""


def _macro_values(spec: Spec) -> dict[str, int]:
    values: dict[str, int] = {}
    for body in spec.headers.values():
        for item in body["items"]:
            if item["kind"] == "macro":
                try:
                    values[item["name"]] = eval_c_int(item["value"], values)
                except Exception:  # noqa: BLE001 - a non-integer macro (a string, a cast)
                    pass
    return values


def cdef(spec: Spec) -> str:
    """C type declarations for cffi (see the module docstring)."""
    macros = _macro_values(spec)

    def sized(text: str) -> str:
        return re.sub(r"\[([A-Za-z_]\w*)\]", lambda m: f"[{macros.get(m.group(1), m.group(1))}]", text)

    out = []
    for body in spec.headers.values():
        for item in body["items"]:
            kind = item["kind"]
            if kind == "typedef":
                out.append(f"typedef {item['decl']};")
            elif kind == "forward" and not item["decl"].startswith("enum"):
                out.append(f"{item['decl']};")
            elif kind == "enum":
                for name in item["names"] or ([item["tag"]] if item.get("tag") else []):
                    out.append(f"typedef int {name};")
            elif kind in ("struct", "union"):
                head = kind + (f" {item['tag']}" if item.get("tag") else "")
                members = "".join(f" {sized(m)};" for m in item["members"])
                names = [n for n in item["names"] if n]
                if item["typedef"]:
                    out.append(f"typedef {head} {{{members} }} {', '.join(names)};")
                else:
                    out.append(f"{head} {{{members} }};")
                    if item.get("tag"):
                        out.append(f"typedef {head} {item['tag']};")
    text = "\n".join(out)
    text = re.sub(r"\benum (\w+)\b", r"int", text)
    return text + "\n"


def python_ldflags() -> list[str]:
    """Link flags for the shared libpython, with an RPATH so programs find it without
    LD_LIBRARY_PATH; a clear error where Python has no shared library."""
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        raise RuntimeError(
            f"this Python ({sys.executable}) was built without a shared libpython (Py_ENABLE_SHARED=0), which "
            "libacl_rt.so needs to run npurt inside a C program; use a Python built with --enable-shared "
            "(distribution packages, pyenv with PYTHON_CONFIGURE_OPTS=--enable-shared, python.org builds)")
    libdir = sysconfig.get_config_var("LIBDIR")
    ver = sysconfig.get_config_var("LDVERSION") or sysconfig.get_config_var("VERSION")
    return [f"-L{libdir}", f"-Wl,-rpath,{libdir}", f"-lpython{ver}"]


def build_library(lib_dir: str, include_dir: str, spec: Spec, verbose: bool = False) -> str:
    """Compile libacl_rt.so into `lib_dir` (see the module docstring); returns its path."""
    import cffi  # noqa: PLC0415 - an optional third-party extra (npurt[capi])

    with open(os.path.join(PACKAGE_DIR, "c", "start.c"), encoding="utf-8") as f:
        start_c = f.read()
    includes = ["acl/acl.h", "acl/acl_base.h", "acl/acl_rt.h", "acl/acl_rt_allocator.h", "acl/acl_prof.h",
                "acl/acl_dump.h", "acl/acl_tdt.h", "acl/acl_tdt_queue.h", "acl/acl_platform.h",
                "acl/acl_rt_memory_soma.h"]
    includes = [h for h in includes if h in spec.headers] + sorted(
        h for h in spec.headers if h not in includes and h.endswith(".h") and not h.startswith("acl/error_codes"))
    ffibuilder = cffi.FFI()
    ffibuilder.cdef(cdef(spec))
    ffibuilder.cdef("void npurt_set_start_error(const char *message);\n"
                    "const char *npurt_config_path(void);\nint npurt_owns_python(void);\n"
                    "const char *npurt_interface_digest(void);\n")
    ffibuilder.embedding_api(shims.python_api(spec))
    ffibuilder.embedding_init_code(_EMBEDDING_INIT)
    ffibuilder.set_source(MODULE, shims.c_source(spec, includes, start_c),
                          include_dirs=[include_dir],
                          extra_compile_args=["-O1", "-Wno-deprecated-declarations", "-Wno-unused-function"],
                          extra_link_args=python_ldflags() + ["-Wl,-soname,libacl_rt.so", "-lpthread", "-ldl"])
    os.makedirs(lib_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="npurt-capi-build-") as tmp:
        built = ffibuilder.compile(tmpdir=tmp, target="libacl_rt.so", verbose=verbose)
        staged = os.path.join(lib_dir, f".libacl_rt.so.{os.getpid()}.tmp")
        shutil.copyfile(built, staged)
        os.chmod(staged, 0o755)
        final = os.path.join(lib_dir, "libacl_rt.so")
        os.replace(staged, final)
    return final
