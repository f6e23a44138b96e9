"""The legacy typed constructors `torch.npu.FloatTensor`, `HalfTensor`, `LongTensor`, ... (as
torch.cuda's and torch_npu's): `torch.npu.FloatTensor(2, 3)` or `(torch.Size)` makes an
uninitialized float32 tensor on the current npu, `torch.npu.FloatTensor([1, 2])` one from data;
`isinstance(t, torch.npu.FloatTensor)` is true for float32 npu tensors. (`t.type(
"torch.npu.HalfTensor")` is torch's own and works with the "npu" backend name.)

The legacy typed storages `torch.npu.FloatStorage`, `IntStorage`, ... are torch's
`_LegacyStorage` classes of module "torch.npu", as torch.cuda's are: `torch.npu.FloatStorage(n)`
is a float32 TypedStorage of n elements on npu, and `isinstance(s, torch.npu.FloatStorage)`
checks a TypedStorage's device and dtype.
"""
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

STORAGE_DTYPES = {"ByteStorage": torch.uint8, "DoubleStorage": torch.float64, "FloatStorage": torch.float32,
                  "HalfStorage": torch.float16, "LongStorage": torch.int64, "IntStorage": torch.int32,
                  "ShortStorage": torch.int16, "CharStorage": torch.int8, "BoolStorage": torch.bool,
                  "BFloat16Storage": torch.bfloat16, "ComplexDoubleStorage": torch.cdouble,
                  "ComplexFloatStorage": torch.cfloat}


class _NpuLegacyStorage(torch.storage._LegacyStorage):
    @classmethod
    def from_buffer(cls, *args, **kwargs):
        raise RuntimeError("from_buffer: Not available for NPU storage")

    @classmethod
    def _new_with_weak_ptr(cls, *args, **kwargs):
        raise RuntimeError("_new_with_weak_ptr: Not available for NPU storage")

    @classmethod
    def _new_shared_filename(cls, manager, obj, size, *, device=None, dtype=None):
        raise RuntimeError("_new_shared_filename: Not available for NPU storage")


_NpuLegacyStorage.__module__ = "torch.npu"


def _storage(name: str, dtype: torch.dtype) -> type:
    prop = torch._utils.classproperty(lambda cls, d=dtype: d)
    return type(_NpuLegacyStorage)(name, (_NpuLegacyStorage,), {"dtype": prop, "_dtype": prop,
                                                                "__module__": "torch.npu"})


STORAGES = {name: _storage(name, dtype) for name, dtype in STORAGE_DTYPES.items()}
