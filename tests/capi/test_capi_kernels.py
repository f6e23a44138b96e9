"""Kernels and aclnn from C: projects built with CMake against the prefix (the prefix's
ascendc.cmake for Ascend C sources), run with only the prefix's environment.

- tests/capi/kernels: <<<>>> launches, stream-ordered free, kernel binaries
  (aclrtBinaryLoadFromFile, aclrtLaunchKernel with device args, aclrtLaunchKernelWithHostArgs
  with placeholders, the kernel-args API with a timeout config), a trap (507035 at the
  synchronize, the exception callback), a Python kernel file loaded from C;
- examples/c/custom_kernel and examples/c/aclnn, the documented examples;
- tests/capi/c/aclnn_errors.c: aclnn's status codes for bad input and a short workspace.
"""
from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, os.pardir, os.pardir))

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not on PATH: the C projects "
                                "of these tests are built with it, as Ascend C projects are")


def _env(prefix: str) -> dict:
    return {"HOME": os.environ.get("HOME", "/tmp"), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LD_LIBRARY_PATH": os.path.join(prefix, "lib64"), "ASCEND_HOME_PATH": prefix,
            "ASCEND_INSTALL_PATH": prefix, "SOC_VERSION": "Ascend910B3",
            "ASCENDC_CMAKE_DIR": os.path.join(prefix, "tikcpp", "ascendc_kernel_cmake")}


def cmake_build(prefix: str, source: str, build: str) -> None:
    env = _env(prefix)
    for cmd in (["cmake", "-S", source, "-B", build, f"-DASCEND_CANN_PACKAGE_PATH={prefix}"],
                ["cmake", "--build", build, "-j2"]):
        res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
        assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"


def run(prefix: str, exe: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([exe, *args], capture_output=True, text=True, env=_env(prefix), timeout=180)


def test_kernels_binaries_and_launches_from_c(cann_home, tmp_path):
    cmake_build(cann_home, os.path.join(HERE, "kernels"), str(tmp_path))
    res = run(cann_home, str(tmp_path / "kernel_checks"), os.path.join(HERE, "kernels", "pyadd.py"))
    assert res.returncode == 0 and "kernel_checks: ok" in res.stdout, res.stdout + res.stderr
    out = res.stdout
    assert "freed pointer refused: npurtLaunchNativeKernel: kernel 'iadd'" in out and "use after free" in out
    assert "aclrtLaunchKernelV2 (device args, config): ok" in out
    assert "aclrtLaunchKernelWithArgsArray (handle): ok" in out
    assert "aclrtLaunchKernelWithArgsArray (kernel address): ok" in out
    assert "timeout: 507014" in out
    assert "trap: 507035, exception callback: 507035" in out
    assert "exception info: kernel trap_if, 16 bytes of arguments, binary callback called" in out
    assert "a Python kernel file from C: ok" in out
    assert "1 under a device limit of 1, 1 under a stream limit of 1" in out
    assert "a synchronous D2D copy of a kernel's output in flight: ok" in out
    assert "a captured kernel task with new host args (aclmdlRITaskSetParams): ok" in out
    assert "task ids: memset" in out  # aclrtGetThreadLastTaskId names a <<<>>> launch's task


def test_the_custom_kernel_example(cann_home, tmp_path):
    cmake_build(cann_home, os.path.join(ROOT, "examples", "c", "custom_kernel"), str(tmp_path))
    res = run(cann_home, str(tmp_path / "custom_kernel"))
    assert res.returncode == 0 and "custom_kernel: ok" in res.stdout, res.stdout + res.stderr
    assert "<<<>>> launch: 8192 values correct" in res.stdout
    assert "kernel binary launch: 8192 values correct" in res.stdout


def test_the_aclnn_example(cann_home, tmp_path):
    cmake_build(cann_home, os.path.join(ROOT, "examples", "c", "aclnn"), str(tmp_path))
    res = run(cann_home, str(tmp_path / "aclnn_ops"))
    assert res.returncode == 0 and "aclnn: ok" in res.stdout, res.stdout + res.stderr
    assert "aclnnAdd with a broadcast bias asks for 512 workspace bytes" in res.stdout


def test_aclnn_bad_input_from_c(build_c):
    res = build_c("aclnn_errors.c", libs=("acl_rt", "opapi", "nnopbase")).run()
    assert res.returncode == 0 and "aclnn_errors: ok" in res.stdout, res.stdout + res.stderr
    assert "null other: 161001 aclnnAddGetWorkspaceSize: other is NULL" in res.stdout
    assert "small workspace: 161002 aclnnAdd: workspaceSize 511 is smaller than the 512 bytes" in res.stdout


@pytest.mark.parametrize("mode", ["callback", "files"])
def test_aclnn_ops_are_tasks_with_ids_and_their_tensors_reach_the_data_dump(build_c, tmp_path, mode):
    config = tmp_path / "acl.json"
    dump_dir = tmp_path / "dump"
    config.write_text('{"dump": {"dump_path": "%s", "dump_list": [], "dump_op_switch": "on"}}' % dump_dir)
    res = build_c("aclnn_dump.c", libs=("acl_rt", "opapi", "nnopbase")).run(str(config), mode)
    assert res.returncode == 0 and "aclnn_dump: ok" in res.stdout, res.stdout + res.stderr
    assert "task ids: copy" in res.stdout
    if mode == "callback":
        assert "callback: 3 chunks, 2 inputs, 1 outputs, output bytes correct" in res.stdout
        assert not dump_dir.exists()  # the callback takes the data instead of files
    else:
        files = sorted(p.name for p in dump_dir.rglob("*.bin"))
        assert len(files) == 3 and all(f.startswith("Add.") for f in files), files
        out = next(dump_dir.rglob("Add.*.output.0.bin"))
        assert np.array_equal(np.fromfile(out, np.float32), [11, 22, 33, 44])


# a checkout of hicann/runtime (a work tree or a git directory) for the runtime's own samples
RUNTIME_REPO = os.environ.get("NPURT_TEST_RUNTIME_REPO", "/work/hicann-runtime")
D2D_SYNC_SAMPLE = "example/1_basic_features/memory/5_d2d_sync_memory_copy"


def export_sample(sample: str, into: str) -> str | None:
    """Copy example/ (a sample uses the shared kernel_func/ and common/) out of RUNTIME_REPO
    into `into`; the sample's directory, or None."""
    if os.path.isdir(os.path.join(RUNTIME_REPO, sample)):
        shutil.copytree(os.path.join(RUNTIME_REPO, "example"), os.path.join(into, "example"))
        return os.path.join(into, sample)
    if shutil.which("git") is None or not os.path.isdir(RUNTIME_REPO):
        return None
    archive = subprocess.run(["git", f"--git-dir={RUNTIME_REPO}", "archive", "HEAD", "example"],
                             capture_output=True, timeout=120)
    if archive.returncode != 0:
        return None
    subprocess.run(["tar", "-x", "-C", into], input=archive.stdout, check=True, timeout=120)
    return os.path.join(into, sample)


def test_the_runtime_s_d2d_sync_memory_copy_sample_passes_every_run(cann_home, tmp_path):
    # its synchronous D2D aclrtMemcpy reads what the kernel it just launched writes: the copy
    # waits (bounded) for that runnable writer, as the hardware's timing gives (docs/c-api.md)
    where = export_sample(D2D_SYNC_SAMPLE, str(tmp_path))
    if where is None:
        pytest.skip(f"no hicann/runtime checkout with {D2D_SYNC_SAMPLE} at {RUNTIME_REPO} "
                    "(set NPURT_TEST_RUNTIME_REPO to one)")
    res = subprocess.run(["bash", "run.sh"], cwd=where, capture_output=True, text=True, env=_env(cann_home),
                         timeout=600)
    assert "[SUCCESS] Memory copy successfully" in res.stdout, res.stdout[-3000:] + res.stderr[-3000:]
    for _ in range(4):  # built once; the program again, as a user reruns it
        again = run(cann_home, os.path.join(where, "build", "main"))
        assert again.returncode == 0 and "Destination data: 123" in again.stdout, again.stdout + again.stderr
