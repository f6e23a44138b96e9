"""npurt.Model: an .om model (converted by `npurt atc`) for the Pythonic API.

    m = npurt.Model("resnet.om")              # loaded on the current device
    y = m(x)                                  # x: a DeviceArray (or numpy, copied in); y: DeviceArray
    y1, y2 = m(a, b, stream=s)                # queued on s; several outputs come as a tuple

The same graph engine as acl.mdl runs it: an execution is a task on the stream (the current
stream by default), reading the input arrays and writing freshly allocated output arrays in
device memory. Dynamic batch / image size / dims models choose the gear from the input
shapes; dynamic-shape models take the inputs' shapes. A model whose output dims depend on
the data (a dynamic-shape output) makes the call wait for the result. Extra inputs GE adds
(`ascend_mbatch_shape_data`) are handled here; `m.inputs` lists what the caller gives.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from . import devices as _devices
from . import streams as _streams
from .array import DeviceArray, to_device
from .exceptions import InvalidValueError
from .ge import api as GE
from .ge import model as M
from .ge.dataset import Dataset
from .ge.dtypes import to_numpy
from .ge.modeldef import ROLE_AIPP_DATA, ROLE_DATA, ROLE_MBATCH
from .ge.tensor import DataBuffer, TensorDesc


@dataclass(frozen=True)
class TensorInfo:
    """One model input or output: name, shape (-1 where a gear or the data decides), numpy
    dtype, aclFormat."""

    name: str
    shape: tuple
    dtype: np.dtype
    format: int


class Model:
    """A model loaded on the current device; `close()` (or the end of a `with` block, or
    garbage collection) unloads it."""

    def __init__(self, path: str | os.PathLike | bytes):
        _devices.thread_context()  # the current device, initialized on first use
        data = bytes(path) if isinstance(path, (bytes, bytearray)) else GE.read_model(path)
        self._closed = True
        self.id = GE.load(data)
        self._model = M.model_of(self.id)
        self._closed = False
        mdef = self._model.mdef
        self._data = [i for i, io in enumerate(mdef.inputs) if io.role == ROLE_DATA]
        self._mbatch: DeviceArray | None = None
        if any(io.role == ROLE_MBATCH for io in mdef.inputs):
            size = next(io.size for io in mdef.inputs if io.role == ROLE_MBATCH)
            self._mbatch = DeviceArray((size,), "uint8", self._model.device.id)
        if any(io.role == ROLE_AIPP_DATA for io in mdef.inputs):
            raise InvalidValueError("models with dynamic AIPP take their AIPP parameters per execution through "
                                    "acl.mdl.set_input_aipp; npurt.Model runs models without dynamic AIPP")

    # ------------------------------------------------------------ description
    @property
    def inputs(self) -> list[TensorInfo]:
        mdef = self._model.mdef
        return [self._info(mdef.inputs[i], v2=True) for i in self._data]

    @property
    def outputs(self) -> list[TensorInfo]:
        return [self._info(io) for io in self._model.mdef.outputs]

    @property
    def gears(self) -> list[list[int]]:
        """The dynamic gears ([] for a static model)."""
        return [list(g) for g in self._model.mdef.gears]

    @property
    def device(self) -> int:
        return self._model.device.id

    @staticmethod
    def _info(io, v2: bool = False) -> TensorInfo:
        dims = io.image_dims() if v2 else io.dims
        return TensorInfo(io.name, tuple(dims), to_numpy(io.dtype), io.format)

    def __repr__(self) -> str:
        return f"<npurt.Model {self._model.mdef.name!r} id {self.id} on device {self.device}>"

    # ------------------------------------------------------------ execution
    def __call__(self, *arrays, stream=None):
        model = self._model
        if self._closed or model.session is None:
            raise InvalidValueError(f"model {self.id} is closed (or its device was reset)")
        mdef = model.mdef
        if len(arrays) != len(self._data):
            names = ", ".join(mdef.inputs[i].name for i in self._data)
            raise InvalidValueError(f"the model takes {len(self._data)} input(s) ({names}), got {len(arrays)}")
        s = stream.runtime_stream if isinstance(stream, _streams.Stream) else _streams.runtime_stream_for(self.device)
        if stream is not None and not isinstance(stream, _streams.Stream):
            raise InvalidValueError(f"stream must be an npurt.Stream or None, got {type(stream).__name__}")
        keep = []
        arrays = [self._device_array(a, stream, keep) for a in arrays]
        ins, outs = Dataset(), Dataset()
        for index, io in enumerate(mdef.inputs):
            if io.role == ROLE_MBATCH:
                ins.add(DataBuffer(self._mbatch.ptr, self._mbatch.nbytes))
                continue
            a = arrays[self._data.index(index)]
            ins.add(DataBuffer(a.ptr, a.nbytes))
            if not io.gear_dims and io.aipp is None and any(d < 0 for d in io.dims):
                ins.descs[-1] = TensorDesc(io.dtype, a.shape, io.format)
            self._check(io, a, index)
        gear = self._select(ins, arrays)
        results = []
        collect = []
        for io in mdef.outputs:
            shape = io.shape_at(gear)
            if all(d >= 0 for d in shape):
                out = DeviceArray(tuple(shape), to_numpy(io.dtype), self.device)
                outs.add(DataBuffer(out.ptr, out.nbytes))
                results.append(out)
            else:
                outs.add(DataBuffer(0, 0))
                results.append(None)
                collect.append(len(results) - 1)
        seq = model.enqueue(ins, outs, s, collect=bool(collect))
        for a in arrays:  # the inputs stay alive until the execution ran
            keep.append(a)
        if keep:
            s.on_retired(seq, lambda k=keep: k.clear())
        if collect:
            s.synchronize(seq)
            for k in collect:
                results[k] = to_device(outs.results[k], device=self.device)
        return results[0] if len(results) == 1 else tuple(results)

    def _device_array(self, a, stream, keep) -> DeviceArray:
        if isinstance(a, DeviceArray):
            if a.device != self.device:
                raise InvalidValueError(f"an input is on device {a.device}; the model is on device {self.device}")
            if not a.is_contiguous():
                a = a.contiguous()
            return a
        if isinstance(a, np.ndarray):  # uploaded on the execution's stream: ordered before it
            return to_device(np.ascontiguousarray(a), stream=stream, device=self.device)
        raise InvalidValueError(f"model inputs are DeviceArrays (or numpy arrays), got {type(a).__name__}")

    def _check(self, io, a: DeviceArray, index: int) -> None:
        want = to_numpy(io.dtype)
        if a.dtype != want:
            raise InvalidValueError(f"input {io.name!r} is {want}, got an array of {a.dtype}")
        if io.aipp is not None:
            return
        dims = io.dims
        if dims != [-2] and (len(dims) != a.ndim or any(d >= 0 and d != n for d, n in zip(dims, a.shape))):
            raise InvalidValueError(f"input {io.name!r} has dims {dims}, got an array of shape {a.shape}")

    def _select(self, ins: Dataset, arrays) -> int | None:
        mdef = self._model.mdef
        if not mdef.dynamic:
            return None
        for gear, _ in enumerate(mdef.gears):
            if all(tuple(mdef.inputs[i].gear_dims[gear]) == arrays[k].shape if mdef.inputs[i].gear_dims
                   else True for k, i in enumerate(self._data)):
                kind = mdef.dynamic["kind"]
                ins.gear = (kind, tuple(mdef.gears[gear]))
                return gear
        shapes = ", ".join(str(a.shape) for a in arrays)
        raise InvalidValueError(f"input shapes {shapes} match none of the model's {mdef.dynamic['kind']} gears "
                                f"{mdef.gears}")

    # ------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Unload the model (queued executions finish first)."""
        if getattr(self, "_closed", True):
            return
        self._closed = True
        if self._model.session is not None:
            try:
                GE.unload(self.id)
            except Exception:  # noqa: BLE001 - unloaded already (device reset, finalize)
                pass

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

