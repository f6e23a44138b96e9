"""npurt.torch: real PyTorch tensors on device "npu", backed by npurt's simulated NPU.

    import torch
    import npurt.torch                       # registers the "npu" device (once)

    x = torch.randn(64, 64, device="npu")    # a PrivateUse1 tensor in npurt's memory pool
    s = torch.npu.Stream()
    with torch.npu.stream(s):
        y = torch.relu(x @ x)                # aten ops queued as npurt tasks on s
    print(y.sum().item())

`npurt run --torch-npu script.py` also makes `import torch_npu` resolve to npurt's shim
(npurt.torch.shim), so unmodified torch_npu scripts run. Importing npurt never imports torch,
and installing npurt changes nothing about `import torch`: only importing this package does.
Needs torch >= 2.9 (the CPU build: `pip install torch --index-url https://download.pytorch.org/whl/cpu`). docs/torch.md says what works and how.
"""
from __future__ import annotations

import importlib
import inspect
import sys
import threading


def _import_quietly(name: str) -> None:
    try:
        importlib.import_module(name)
    except Exception:  # noqa: BLE001, S110 - the op that needs it will say so itself
        pass


# sympy takes about a second to import and torch's type promotion imports it at the first
# elementwise op on npu (through the meta kernels): import it while torch itself loads.
if "sympy" not in sys.modules:
    threading.Thread(target=_import_quietly, args=("sympy",), name="npurt-torch-warm-up", daemon=True).start()

try:
    import torch
    if getattr(torch, "__file__", None) is None:
        # a directory named torch on sys.path (e.g. a project's tests/torch) imported as a
        # namespace package: that is not PyTorch
        raise ImportError(f"'torch' resolves to a directory, not PyTorch: {list(torch.__path__)}")
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("npurt.torch needs PyTorch >= 2.9, its CPU build is enough: pip install torch --index-url "
                      f"https://download.pytorch.org/whl/cpu [{exc}]") from exc

from . import (accelerator, alloc_conf, amp, aten, autocast, backends, comm, mem_pools, npu,  # noqa: E402,F401
               patches, pinned, sharing)  # after the check that torch is PyTorch
from .fallback import fallback  # noqa: E402
from .fastpath import kernels_for_all  # noqa: E402

if torch.distributed.is_available():  # builds without distributed support lack ProcessGroup
    from . import distributed  # noqa: E402
else:  # pragma: no cover
    distributed = None

MIN_TORCH = (2, 9)
_LIBS: list = []          # the torch.library objects: registrations live as long as they do
_registered = False


def _version(v: str) -> tuple[int, int]:
    parts = v.split("+")[0].split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (ValueError, IndexError):
        return (0, 0)


def register() -> None:
    """Make "npu" a real torch device backed by npurt. Idempotent; `import npurt.torch` calls it.

    Refuses (RuntimeError) when torch is older than 2.9, or when another backend already owns
    PrivateUse1 (the real torch_npu, for instance)."""
    global _registered
    if _registered:
        return
    if _version(torch.__version__) < MIN_TORCH:
        raise RuntimeError(f"npurt.torch needs torch >= {MIN_TORCH[0]}.{MIN_TORCH[1]} (Python backends for "
                           f"PrivateUse1 arrived then); this is torch {torch.__version__}")
    owner = torch._C._get_privateuse1_backend_name()
    if owner != "privateuseone" or hasattr(torch, "npu"):
        who = "torch_npu" if "torch_npu" in sys.modules and not getattr(
            sys.modules["torch_npu"], "__npurt_shim__", False) else f"the '{owner}' backend"
        raise RuntimeError(f"cannot register npurt as torch's 'npu' device: {who} already owns torch's "
                           "PrivateUse1 backend in this process. Use one or the other (the real torch_npu "
                           "needs CANN and an NPU; npurt simulates one)")

    class _Hooks(torch._C._acc.PrivateUse1Hooks):
        def is_available(self) -> bool:
            return True

        def has_primary_context(self, dev_id) -> bool:
            return True

        def is_built(self) -> bool:
            return True

    class _Guard(torch._C._acc.DeviceGuard):
        def type_(self):
            return torch._C._autograd.DeviceType.PrivateUse1

    npu.amp = amp
    npu.get_amp_supported_dtype = lambda: [torch.float16, torch.bfloat16]
    torch.utils.rename_privateuse1_backend("npu")
    torch._register_device_module("npu", npu)   # before any npu tensor exists (lazy init needs it)
    sys.modules["torch.npu.amp"] = amp
    torch.utils.generate_methods_for_privateuse1_backend(for_tensor=True, for_module=True,
                                                        for_packed_sequence=True, for_storage=True)
    hooks, guard = _Hooks(), _Guard()
    torch._C._acc.register_python_privateuseone_hook(hooks)
    torch._C._acc.register_python_privateuseone_device_guard(guard)

    impl = torch.library.Library("aten", "IMPL")
    every = torch.library.Library("_", "IMPL")
    explicit = aten.npu_kernels()
    for name, fn in {**kernels_for_all(set(explicit)), **explicit}.items():
        impl.impl(name, fn, "PrivateUse1")
    for name, fn in aten.autograd_kernels().items():
        impl.impl(name, fn, "AutogradPrivateUse1")
    for name, fn in aten.cpu_kernels().items():
        impl.impl(name, fn, "CPU", allow_override=True) if _takes_override() else impl.impl(name, fn, "CPU")
    every.fallback(fallback, "PrivateUse1")
    autocast.register(impl, every)
    _LIBS.extend([impl, every, hooks, guard])
    patches.apply()
    accelerator.install()
    pinned.install()      # pin_memory=True factories
    torch.backends.npu = backends  # torch_npu's backend switches, also on torch.npu
    sys.modules["torch.npu.aclnn"] = backends.aclnn
    # PYTORCH_NPU_ALLOC_CONF is read on the allocator's first use (alloc_conf.load_environment)
    comm.install()
    if distributed is not None:
        distributed.register()
    _registered = True


def _takes_override() -> bool:
    return "allow_override" in inspect.signature(torch.library.Library.impl).parameters


register()
