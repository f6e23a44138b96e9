"""For scripts/torch_npu_tests.py only: the tests' own subprocesses (multiprocessing spawn
children re-import the test module, `python -c`) get torch_npu's harness stood in as the
pytest process has it (scripts/torch_npu_harness.py), on their first `import
torch_npu.testing` and not before (a child that never imports it pays nothing)."""
import importlib.abc
import importlib.util
import sys


class _HarnessOnFirstUse(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name != "torch_npu.testing":
            return None
        sys.meta_path.remove(self)
        import torch_npu_harness  # noqa: F401  (puts the checkout's torch_npu.testing in sys.modules)
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        return sys.modules[spec.name]  # the harness's package module

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _HarnessOnFirstUse())
