"""The first op on npu costs what any op costs: torch's meta kernels (which npurt asks for
output shapes) no longer import torch._dynamo on their first call, and sympy (torch's type
promotion needs it) is imported in the background while torch loads."""
from __future__ import annotations

import subprocess
import sys

FIRST_OP = """
import sys, time
import torch
import torch_npu  # noqa: F401
x = torch.ones(4, device="npu")
y = (x + 1).sum().item()
z = x * x
z = x * x  # the hot path's first call of a signature (it looks for torch's binding of mul.out)
print(y, "torch._dynamo" in sys.modules)
"""

COMPILE_AFTER = """
import torch
import torch_npu  # noqa: F401
x = torch.arange(4.0, device="npu")
assert (x * 2).tolist() == [0.0, 2.0, 4.0, 6.0]
import torch._dynamo  # from here on torch's own disable wraps the meta kernels again
f = torch.compile(lambda t: t * 3 + 1, backend="eager")
print(f(x).tolist(), (x * 2 + 1).dtype)
"""


def _npurt_run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "npurt", "run", "--torch-npu", "-c", code], capture_output=True,
                          text=True, timeout=300)


def test_the_first_op_on_npu_does_not_import_dynamo():
    proc = _npurt_run(FIRST_OP)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["8.0", "False"]


def test_torch_compile_still_works_after_the_first_ops():
    proc = _npurt_run(COMPILE_AFTER)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[1.0, 4.0, 7.0, 10.0] torch.float32"


def test_every_disable_dynamo_wrapper_of_the_meta_kernels_is_deferred():
    from npurt.torch import patches
    assert patches.defer_dynamo_disable() == 0     # done once when npurt.torch was imported
    import torch._refs
    add = torch._refs.add           # the ref behind aten::add's meta kernel: two wrappers deep
    fns = []
    while add is not None:
        if getattr(add, "__code__", None) is patches._DISABLE_DYNAMO_CODE:
            fns.append(dict(zip(add.__code__.co_freevars, (c.cell_contents for c in add.__closure__)))["fn"])
        add = getattr(add, "__wrapped__", None)
    assert fns and all(getattr(fn, "__dynamo_disable", None) is not None for fn in fns)
