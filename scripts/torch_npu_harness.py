"""pytest plugin for scripts/torch_npu_tests.py: stands in torch_npu's test harness, nothing else.

* `import torch_npu` is npurt's shim (the alias `npurt run --torch-npu` installs);
* `torch_npu.testing` is the checkout's own torch_npu/testing directory (NPURT_TORCH_NPU_CHECKOUT):
  its modules (testcase.py, common_utils.py, common_distributed.py, decorator.py) load from
  there unmodified; its package __init__ is skipped (it pulls torch's op-info database in);
* `torch_npu.utils._path_manager.PathManager`, a file-permission helper common_utils imports,
  is a stand-in with the two methods the harness calls;
* torchvision (test/test_npu.py imports it): the only torchvision wheel these machines have is
  PyPI's CUDA build, whose native library cannot load on the CPU build of torch; its Python
  package then fails at import on the two ops it registers fake kernels for unconditionally
  (`torchvision::nms`, `torchvision::qnms`). When torchvision is importable but its native
  library is not, those two schemas are declared (no kernels: calling them still fails), so
  the Python package and its models (resnet18, which test_npu.py uses) import and run;
* torch_npu's CI list of disabled tests (its package __init__ applies it; NPURT_TORCH_NPU_DISABLED_TESTS
  names the file): the tests it names are skipped with the reason torch_npu_disabled.SKIP_REASON,
  which the counting script tells apart from the files' own skips;
* the order: torch_npu's CI runs each file as `python test_x.py` (ci/access_control_test.py ->
  test/run_test.py), so torch's run_tests and unittest's loader order its tests: TestCase
  classes by name (the loader walks dir(module)), each class's tests by name. pytest would
  run them in source order, and a test that leaves process state behind (sync_debug_mode,
  a device) then meets other tests than on the CI; the unittest tests are put in unittest's
  order (other items keep their places).
"""
import importlib.util
import os
import sys
import types

import pytest

import torch_npu_disabled

from npurt.apps.runner import install_torch_npu_alias

install_torch_npu_alias()
import torch_npu  # noqa: E402  (npurt's shim)



def _declare_torchvision_ops_without_native_library() -> None:
    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return
    import torch
    native = [os.path.join(d, f) for d in spec.submodule_search_locations for f in os.listdir(d)
              if f.startswith("_C") and f.endswith(".so")]
    try:
        for lib in native:
            torch.ops.load_library(lib)
        return
    except OSError:
        pass
    declared = torch.library.Library("torchvision", "DEF")
    declared.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    declared.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    _KEEP.append(declared)


_KEEP: list = []
_declare_torchvision_ops_without_native_library()

_checkout = os.environ.get("NPURT_TORCH_NPU_CHECKOUT", "")
testing = types.ModuleType("torch_npu.testing")
testing.__path__ = [os.path.join(_checkout, "torch_npu", "testing")]
testing.__package__ = "torch_npu.testing"
sys.modules["torch_npu.testing"] = testing
torch_npu.testing = testing

if "torch_npu.utils" not in sys.modules:
    try:
        import torch_npu.utils  # noqa: F401  (npurt's, when it has one)
    except ImportError:
        sys.modules["torch_npu.utils"] = types.ModuleType("torch_npu.utils")
        sys.modules["torch_npu.utils"].__path__ = []


class PathManager:
    """The harness's file helper: checks and creates paths (no permission policy here)."""

    @staticmethod
    def check_directory_path_readable(path):
        if not os.access(path, os.R_OK):
            raise PermissionError(path)

    @staticmethod
    def make_dir_safety(path):
        os.makedirs(path, exist_ok=True)

    def __getattr__(self, name):  # pragma: no cover
        raise AttributeError(name)


_pm = types.ModuleType("torch_npu.utils._path_manager")
_pm.PathManager = PathManager
sys.modules["torch_npu.utils._path_manager"] = _pm


def unittest_order(items) -> None:
    """Put the unittest.TestCase items in unittest's loader order (class name, then test name),
    in the slots they hold; the other items stay where they are."""
    import unittest
    slots = [i for i, item in enumerate(items)
             if isinstance(getattr(item, "cls", None), type) and issubclass(item.cls, unittest.TestCase)]
    ordered = sorted((items[i] for i in slots), key=lambda item: (item.cls.__name__, item.name))
    for i, item in zip(slots, ordered):
        items[i] = item


def pytest_collection_modifyitems(config, items):
    unittest_order(items)
    path = os.environ.get("NPURT_TORCH_NPU_DISABLED_TESTS", "")
    if not path:
        return
    from torch.testing._internal.common_utils import remove_device_and_dtype_suffixes
    table = torch_npu_disabled.load(path)
    mark = pytest.mark.skip(reason=f"{torch_npu_disabled.SKIP_REASON} ({os.path.basename(path)})")
    marked = []
    for item in items:
        cls = getattr(item, "cls", None)
        method = getattr(item, "originalname", None) or item.name
        if cls is not None and torch_npu_disabled.is_disabled(
                table, cls.__name__, method, remove_device_and_dtype_suffixes(method)):
            item.add_marker(mark)
            marked.append(item.nodeid)
    # the counting script reads which skips are these even when the process dies before its report
    listing = os.environ.get("NPURT_TORCH_NPU_DISABLED_OUT", "")
    if listing and marked:
        with open(listing, "a", encoding="utf-8") as f:
            f.write("".join(node + "\n" for node in marked))
