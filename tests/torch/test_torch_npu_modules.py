"""The torch_npu module shells real code imports (torch_npu.utils, torch_npu.npu.utils,
torch_npu._C, torch_npu._inductor), torch_npu in child processes of `npurt run --torch-npu`,
and out-of-memory as torch raises it."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

import npurt
import npurt.torch.shim as torch_npu
from npurt.apps.runner import install_torch_npu_alias

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "src")


def test_the_submodules_resolve_under_their_torch_npu_names():
    saved = {k: v for k, v in sys.modules.items() if k.startswith("torch_npu") or k == "torch.npu.utils"}
    try:
        install_torch_npu_alias()
        import torch_npu.npu.utils as npu_utils
        from torch_npu.utils.collect_env import get_cann_version
        import torch_npu._C as C
        import torch_npu._inductor  # noqa: F401
        assert npu_utils is torch.npu.utils and callable(get_cann_version) and C is torch_npu._C
    finally:
        for k in [k for k in sys.modules if k.startswith("torch_npu")]:
            del sys.modules[k]
        sys.modules.update(saved)


def test_cann_versions_are_the_release_npurt_models_compared_as_torch_npu_compares():
    assert torch_npu.utils.collect_env.get_cann_version() == "not known"  # no CANN install info on disk
    assert torch_npu.utils.get_cann_version(module="CANN") == "9.1.0"  # torch_npu.utils's is npu.utils's
    assert torch.npu.utils.get_cann_version("RUNTIME") == "9.1.0"
    assert torch.npu.utils.get_cann_version("OPP") == ""             # a package npurt does not model
    gte = torch.npu.utils._is_gte_cann_version
    assert gte("8.2.RC1") and gte("8.5.0") and gte("9.1.0") and gte("9.1.0.beta1")
    assert not gte("9.1.1") and not gte("9.9.0") and not gte("10.0.0")
    assert not gte("8.5.0", module="OPP")                          # no version: never >=
    with pytest.raises(RuntimeError, match="DRIVER"):
        gte("8.2.RC1", module="DRIVER")
    with pytest.raises(RuntimeError, match="less than"):
        gte("8.0.RC3")


def test_cann_version_numbering_follows_torch_npu():
    from npurt.torch import cann_version as cv
    assert cv._compare("8.3.RC1", "8.2.RC2") == 1 and cv._compare("8.2.RC2", "8.2.RC1.alpha002") == 1
    assert cv._compare("8.2.0", "8.2.RC1") == 1 and cv._compare("8.5.0", "8.5.0.alpha1") == 1
    assert cv._compare("9.0.0-beta.2", "9.0.0") == 0 and cv._compare("9.0.0", "9.0.0.beta2") == 1
    assert cv._compare("", "8.5.0") == -1


def test_private_bindings_answer_from_torch_npu():
    assert torch_npu._C._npu_getDeviceCount() == torch.npu.device_count()
    assert torch_npu._C._npu_getLocalDevice() == torch.npu.current_device()
    s = torch.npu.Stream()
    with torch.npu.stream(s):
        assert torch_npu._C._npu_getCurrentRawStream(torch.npu.current_device()) == s.native_handle


def test_npu_utils_helpers():
    u = torch.npu.utils
    assert u.get_soc_version() == u.soc_version(torch.npu.get_device_name(0))
    assert u.soc_version("Ascend910B3") == 223 and u.soc_version("Ascend950") == 260
    assert u.soc_version("no such chip") == -1
    assert isinstance(torch.npu.stream(None), u.StreamContext)
    assert u._get_device_index("npu:0") == 0 and u._get_device_index(3) == 3
    with pytest.raises(ValueError, match="Expected a npu device"):
        u._get_device_index("cpu")
    assert u._get_device_index("cpu", allow_cpu=True) == -1


def test_out_of_memory_is_torchs_error_and_npurts():
    with pytest.raises(torch.OutOfMemoryError, match="NPU out of memory") as info:
        torch.empty(1 << 50, dtype=torch.uint8, device="npu")
    assert isinstance(info.value, torch.npu.OutOfMemoryError)
    assert isinstance(info.value, npurt.OutOfMemoryError) and info.value.code == 207001
    assert torch.ones(4, device="npu").sum().item() == 4.0   # the device stays usable


def test_child_processes_of_a_torch_npu_run_import_the_shim(tmp_path):
    script = tmp_path / "children.py"
    script.write_text(
        "import multiprocessing as mp, subprocess, sys\n"
        "import torch_npu\n"
        "def work(q):\n"
        "    import torch, torch_npu\n"
        "    q.put((torch_npu.__npurt_shim__, torch.ones(2, device='npu').sum().item()))\n"
        "if __name__ == '__main__':\n"
        "    out = subprocess.run([sys.executable, '-c', 'import torch_npu; print(torch_npu.__npurt_shim__)'],\n"
        "                         capture_output=True, text=True)\n"
        "    print('child', out.stdout.strip())\n"
        "    ctx = mp.get_context('spawn'); q = ctx.Queue()\n"
        "    p = ctx.Process(target=work, args=(q,)); p.start(); print('spawn', q.get(timeout=300)); p.join()\n")
    env = dict(os.environ, PYTHONPATH=SRC)
    proc = subprocess.run([sys.executable, "-m", "npurt", "run", "--torch-npu", str(script)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "child True" in proc.stdout and "spawn (True, 2.0)" in proc.stdout, proc.stdout


def test_device_properties_have_torch_npus_fields():
    p = torch.npu.get_device_properties(0)
    spec = npurt.get_device_properties(0)
    assert p.name == torch.npu.get_device_name(0) and p.total_memory == spec.total_memory
    assert (p.cube_core_num, p.vector_core_num) == (spec.multi_processor_count, spec.vector_core_count)
    assert p.multi_processor_count == p.vector_core_num and p.L2_cache_size == spec.l2_cache_size
    assert p.major is None and p.minor is None and p.warp_size is None   # unset there too
    assert str(p.uuid).count("-") == 4 and p.uuid == torch.npu.get_device_properties(0).uuid
    assert repr(p).startswith(f"_NPUDeviceProperties(name='{p.name}', total_memory=")
