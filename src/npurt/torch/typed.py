"""The legacy typed constructors `torch.npu.FloatTensor`, `HalfTensor`, `LongTensor`, ... (as
torch.cuda's and torch_npu's): `torch.npu.FloatTensor(2, 3)` or `(torch.Size)` makes an
uninitialized float32 tensor on the current npu, `torch.npu.FloatTensor([1, 2])` one from data;
`isinstance(t, torch.npu.FloatTensor)` is true for float32 npu tensors. (`t.type(
"torch.npu.HalfTensor")` is torch's own and works with the "npu" backend name.)"""
from __future__ import annotations

import torch

DTYPES = {"DoubleTensor": torch.float64, "FloatTensor": torch.float32, "HalfTensor": torch.float16,
          "BFloat16Tensor": torch.bfloat16, "LongTensor": torch.int64, "IntTensor": torch.int32,
          "ShortTensor": torch.int16, "CharTensor": torch.int8, "ByteTensor": torch.uint8,
          "BoolTensor": torch.bool}


class _TypedTensorMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, torch.Tensor) and obj.device.type == "npu" and obj.dtype == cls.dtype \
            and obj.layout == torch.strided


class _TypedTensor(metaclass=_TypedTensorMeta):
    dtype: torch.dtype = torch.float32

    def __new__(cls, *args, device=None):
        dev = torch.device("npu", torch.npu.current_device()) if device is None else torch.device(device)
        if not args:
            return torch.empty(0, dtype=cls.dtype, device=dev)
        if len(args) == 1 and isinstance(args[0], torch.Size) or all(type(a) is int for a in args):
            shape = args[0] if isinstance(args[0], torch.Size) else args
            return torch.empty(shape, dtype=cls.dtype, device=dev)
        if len(args) == 1:
            return torch.as_tensor(args[0], dtype=cls.dtype).to(dev)
        raise TypeError(f"torch.npu.{cls.__name__}(): takes sizes (ints or a torch.Size) or one sequence of data")


def _make(name: str, dtype: torch.dtype) -> type:
    return _TypedTensorMeta(name, (_TypedTensor,), {"dtype": dtype, "__module__": "torch.npu"})


TYPED = {name: _make(name, dtype) for name, dtype in DTYPES.items()}
