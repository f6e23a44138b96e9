"""Fixtures of the C interface's tests: one CANN-like prefix per session and a way to build
and run a C program against it.

The prefix is built once per test session (`npurt cann-home --prefix`, a few seconds);
tests that need a C compiler or a shared libpython skip with the reason when there is none.
A C program runs in its own process, with only set_env.sh's environment and the variables a
test adds (`env -i` in spirit: HOME and PATH are kept so the compiler is found).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
C_DIR = os.path.join(HERE, "c")


def _why_no_capi() -> str | None:
    if shutil.which("gcc") is None or shutil.which("g++") is None:
        return "no C/C++ compiler (gcc, g++) on PATH: the C interface's tests build C programs"
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        return "this Python has no shared libpython (Py_ENABLE_SHARED=0): libacl_rt.so cannot embed it"
    try:
        import cffi  # noqa: F401
    except ImportError:
        return "cffi is not installed (pip install 'npurt[capi]'): libacl_rt.so is built with it"
    return None


@pytest.fixture(scope="session")
def cann_home(tmp_path_factory):
    why = _why_no_capi()
    if why:
        pytest.skip(why)
    from npurt.capi.home import cann_home as make
    return make(str(tmp_path_factory.mktemp("cann-home") / "prefix"))


class Program:
    def __init__(self, prefix: str, exe: str):
        self.prefix, self.exe = prefix, exe

    def env(self, extra: dict | None = None) -> dict:
        env = {"HOME": os.environ.get("HOME", "/tmp"), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
               "LD_LIBRARY_PATH": os.path.join(self.prefix, "lib64"), "ASCEND_HOME_PATH": self.prefix,
               "NPURT_NO_FAULT_HANDLER": "0"}
        env.update(extra or {})
        return env

    def run(self, *args: str, extra_env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run([self.exe, *args], capture_output=True, text=True, env=self.env(extra_env),
                              timeout=timeout)


@pytest.fixture(scope="session")
def build_c(cann_home, tmp_path_factory):
    """build_c("name.c") -> Program: tests/capi/c/name.c compiled and linked against the prefix."""
    out_dir = tmp_path_factory.mktemp("c-programs")
    built: dict[str, Program] = {}

    def build(source: str, libs: tuple[str, ...] = ("ascendcl",)) -> Program:  # noqa: B006
        if source in built:
            return built[source]
        exe = str(out_dir / os.path.splitext(source)[0])
        cc = "g++" if source.endswith(".cpp") else "gcc"
        cmd = [cc, "-O1", "-Wall", "-Werror", "-Wno-deprecated-declarations", "-I", os.path.join(cann_home, "include"),
               os.path.join(C_DIR, source), "-o", exe, "-L", os.path.join(cann_home, "lib64"),
               *[f"-l{lib}" for lib in libs], "-lpthread", "-rdynamic"]
        res = subprocess.run(cmd, capture_output=True, text=True)
        assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stderr}"
        built[source] = Program(cann_home, exe)
        return built[source]

    return build
