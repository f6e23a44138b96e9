"""npurt.array: DeviceArray, an n-dimensional array in device memory, and the functions that
make one: core.py (the array: layout, views, indexing, copies), creation.py (empty, zeros,
to_device, ...), pinned.py (page-locked host buffers).

`npurt.array` the attribute is the function `array()` (as `torch.tensor`); this package is
what `from npurt.array import DeviceArray` imports.
"""
from .core import DeviceArray, as_dtype, broadcast_to  # noqa: F401
from .creation import (array, asarray, asnumpy, empty, empty_like, from_dlpack, full, full_like, ones,  # noqa: F401
                       ones_like, tensor, to_device, zeros, zeros_like)
from .pinned import empty_pinned, is_pinned  # noqa: F401
