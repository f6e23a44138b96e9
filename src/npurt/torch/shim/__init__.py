"""A `torch_npu` for npurt: what `import torch_npu` gives a script under `npurt run --torch-npu`.

Importing it registers npurt's "npu" device (npurt.torch) and provides the torch_npu-only
names scripts use most:

* `torch_npu.npu` (= `torch.npu`), `torch_npu.npu.amp`, `torch_npu.optim`, `torch_npu.profiler`;
* storage formats (`npu_format_cast`, `npu_format_cast_`, `get_npu_format`, `Format`): layout
  hints for the real NPU's cube unit; here the data stays as it is and only the format
  number is remembered;
* reference implementations of the common fused ops (`npu_rms_norm`, `npu_add_rms_norm`,
  `npu_fusion_attention`, `npu_rotary_mul`, `npu_swiglu`, `npu_scaled_masked_softmax`,
  `npu_fast_gelu`, ...), written with torch ops on npu tensors, so they run as npurt tasks
  and autograd differentiates them. Each follows the formula in torch_npu's documentation.

It is never installed as `torch_npu`: a real torch_npu stays importable elsewhere.
"""
from __future__ import annotations

import torch

import npurt.torch  # noqa: F401 - registers the npu device

from . import _C, _inductor, npu_utils, optim, profiler, utils  # noqa: F401
from .formats import (Format, empty_with_format, get_npu_format, get_storage_size, npu_format_cast,  # noqa: F401
                      npu_format_cast_)
from .ops import (npu_add_rms_norm, npu_bmmV2, npu_broadcast, npu_confusion_transpose,  # noqa: F401
                  npu_dtype_cast, npu_fast_gelu, npu_fusion_attention, npu_gelu, npu_layer_norm_eval,
                  npu_linear, npu_prompt_flash_attention, npu_rms_norm, npu_rotary_mul, npu_scaled_masked_softmax,
                  npu_silu, npu_silu_, npu_swiglu, npu_transpose, fast_gelu)

from ..graph_debug import print_npugraph_tensor, save_npugraph_tensor  # noqa: F401,E402 - torch_npu.*

__npurt_shim__ = True
__version__ = f"{torch.__version__.split('+')[0]}.post0+npurt"
npu = torch.npu
torch.npu.utils = npu_utils  # torch_npu.npu is a package there; its .utils is reached as an attribute too

_OPS = [name for name in list(globals()) if name.startswith("npu_") or name == "fast_gelu"]
# torch_npu also exposes its ops as torch.npu_* and as tensor methods (x.npu_format_cast(29))
for _name in _OPS:
    if not hasattr(torch, _name):
        setattr(torch, _name, globals()[_name])
for _name in ("npu_format_cast", "npu_format_cast_", "npu_dtype_cast", "npu_confusion_transpose",
              "npu_transpose", "npu_broadcast", "npu_silu", "npu_silu_"):
    if not hasattr(torch.Tensor, _name):
        setattr(torch.Tensor, _name, globals()[_name])
