"""`torch_npu.npu._stream_check`: the stream checks of torch_npu's sanitizer, for npu tensors.

As torch_npu has them (torch_npu/npu/_stream_check.py, over torch's CUDA sanitizer,
torch/cuda/_sanitizer.py, whose event handler and stream bookkeeping they reuse):

* `NPUArgumentHandler`: which npu tensors an op reads and writes, from its schema (an argument
  whose alias annotation says it is written is written; a view's, or a factory's inputs, are
  metadata only and not recorded), with each tensor's argument names, its outputs, and the
  start of each tensor's *storage* (what record_stream and the allocator speak of; a view's
  data pointer is not it).
* `NPUSanitizerDispatchMode(event_handler)`: a TorchDispatchMode that parses every op's
  arguments (`args_handler`, a new NPUArgumentHandler per op), runs it, parses its outputs, and
  reports the launch on the current npu stream (`torch.npu.current_stream().npu_stream`) to
  the event handler (with the storages accessed, unless it is torch's own EventHandler,
  which takes none); the handler's synchronization errors are printed and raised as torch's
  `CUDASanitizerErrors`. record_stream passes straight through (it is no kernel launch).
* `NPURecordStreamHandler`: torch's EventHandler (unsynchronized-access detection) plus the
  *missing record_stream* check, deferred to the tensor's deallocation (or
  `flush_record_stream_warnings()`): a tensor used on a stream other than the one it was
  allocated on must have had `record_stream(that stream)`, or its allocation stream must have
  waited for that use since (wait_stream, wait_event, a device synchronize), or its memory can
  be reused under the other stream's feet. Each such use is a `MissingRecordStreamError`,
  printed to stderr and kept in `record_stream_errors`.

npurt reports no allocation / stream / event trace to these handlers by itself (torch_npu's
C++ trace callbacks, `torch_npu._C._activate_npu_trace`); code drives them as torch_npu's
tests do, or calls their `_handle_*` methods.
"""
from __future__ import annotations

import functools
import inspect
import logging
import re
import sys
import textwrap
import traceback
from dataclasses import dataclass, field

import torch
import torch.cuda._sanitizer as csan
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

logger = logging.getLogger(__name__)

# ops that make a tensor from another one's metadata only (new_empty, empty_like, ...)
FACTORY_FUNCTION_REGEX = re.compile("(new_.*|.*_like)")


def _stack() -> traceback.StackSummary:
    """The caller's stack, outermost frame first."""
    stack = traceback.StackSummary.extract(traceback.walk_stack(inspect.currentframe()), lookup_lines=False)
    stack.reverse()
    return stack


@dataclass
class CrossStreamUsage:
    """A use of a tensor on a stream other than its allocation stream (the latest such use)."""
    usage_stream: csan.StreamId
    seq_num: csan.SeqNum
    operator: str
    stack_trace: traceback.StackSummary


@dataclass
class NPUTensorInfo:
    """Where a tensor's memory was allocated, the streams record_stream named for it, and its
    uses on other streams (kept apart from the EventHandler's read / write accesses)."""
    allocation_stream: csan.StreamId | None = None
    allocation_stack_trace: traceback.StackSummary | None = None
    recorded_streams: set = field(default_factory=set)
    cross_stream_usages: dict = field(default_factory=dict)


class MissingRecordStreamError(csan.SynchronizationError):
    """A tensor was used on another stream with neither record_stream nor a wait of its
    allocation stream for that use before its memory could be reused."""

    def __init__(self, data_ptr, allocation_stack_trace, allocation_stream, usage_stream, usage, recorded_streams):
        super().__init__()
        self.data_ptr = data_ptr
        self.allocation_stack_trace = allocation_stack_trace
        self.allocation_stream = allocation_stream
        self.usage_stream = usage_stream
        self.usage = usage
        self.recorded_streams = recorded_streams

    def __repr__(self):
        return (f"MissingRecordStreamError(data_ptr={self.data_ptr}, alloc_stream={self.allocation_stream}, "
                f"usage_stream={self.usage_stream}, operator='{self.usage.operator}')")

    def __str__(self):
        text = textwrap.dedent(f"""\
            ============================
            NPUSanitizer: missing record_stream detected!
            Tensor (data ptr: {self.data_ptr}) allocated on stream {self.allocation_stream}
            was used on stream {self.usage_stream} without record_stream or
            creation_stream.wait_stream(usage_stream).

            The caching allocator may hand this memory out again on the allocation stream
            while the other stream still uses it. Either call tensor.record_stream(stream), or
            make the allocation stream wait for the using stream before the tensor is freed.

            The use on the other stream:
              {self.usage.operator}
            """)
        text += f"With stack trace:\n{''.join(self.usage.stack_trace.format())}\n"
        text += (f"Streams recorded via record_stream: {self.recorded_streams}\n" if self.recorded_streams
                 else "No streams were recorded via record_stream.\n")
        if self.allocation_stack_trace:
            text += f"Tensor was allocated with stack trace:\n{''.join(self.allocation_stack_trace.format())}"
        return text


def _current_npu_stream() -> int:
    return int(torch.npu.current_stream().npu_stream)  # looked up at call time (tests patch it)


class NPURecordStreamHandler(csan.EventHandler):
    """torch's EventHandler with the deferred missing-record_stream check (module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self._npu_tensors: dict = {}  # storage data_ptr -> NPUTensorInfo
        self.record_stream_errors: list[MissingRecordStreamError] = []

    def _handle_memory_allocation(self, data_ptr) -> None:
        super()._handle_memory_allocation(data_ptr)
        try:
            trace = self.tensors_accessed.get_allocation_stack_trace(data_ptr)
        except KeyError:
            trace = None
        try:
            stream = _current_npu_stream()
        except RuntimeError:
            stream = None
        self._npu_tensors[data_ptr] = NPUTensorInfo(allocation_stream=stream, allocation_stack_trace=trace)

    def _handle_memory_deallocation(self, data_ptr) -> None:
        if data_ptr in self._npu_tensors:
            self._report(self._errors_of(data_ptr))
            del self._npu_tensors[data_ptr]
        super()._handle_memory_deallocation(data_ptr)

    def _handle_kernel_launch(self, stream, read_only, read_write, outputs, operator, tensor_aliases,
                              storage_dataptrs_accessed=None):
        errors = super()._handle_kernel_launch(stream, read_only, read_write, outputs, operator, tensor_aliases)
        # record_stream speaks of storages; tensor pointers stand in where the caller gave none
        accessed = storage_dataptrs_accessed if storage_dataptrs_accessed is not None else read_only | read_write
        self._record_cross_stream_usage(stream, accessed, operator)
        return errors

    def _record_cross_stream_usage(self, stream, all_accessed, operator: str) -> None:
        """Note the uses of tensors on `stream` that is not their allocation stream, with the
        launch's sequence number (a later wait must cover it) and its stack (taken once)."""
        stack = None
        for data_ptr in all_accessed:
            info = self._npu_tensors.get(data_ptr)
            if info is None or info.allocation_stream is None or info.allocation_stream == stream:
                continue
            if stack is None:
                stack = _stack()
            usage = info.cross_stream_usages.get(stream)
            if usage is None:
                info.cross_stream_usages[stream] = CrossStreamUsage(stream, self.seq_num, operator, stack)
            else:  # the latest use is the one a wait must come after
                usage.seq_num, usage.operator, usage.stack_trace = self.seq_num, operator, stack

    def _is_creation_stream_synced_to_usage(self, creation_stream, usage_stream, usage_seq_num=0) -> bool:
        """Has the allocation stream waited for the use's launch (not merely inherited the
        using stream's state at its creation, which is sequence number 0)?"""
        try:
            state = self.syncs.current_sync_states.get(creation_stream, {})
        except AttributeError:
            return False
        return state.get(usage_stream, -1) >= usage_seq_num

    def _errors_of(self, data_ptr) -> list[MissingRecordStreamError]:
        info = self._npu_tensors.get(data_ptr)
        if info is None or info.allocation_stream is None:
            return []
        return [MissingRecordStreamError(data_ptr, info.allocation_stack_trace, info.allocation_stream, stream,
                                         usage, set(info.recorded_streams))
                for stream, usage in info.cross_stream_usages.items()
                if stream not in info.recorded_streams
                and not self._is_creation_stream_synced_to_usage(info.allocation_stream, stream, usage.seq_num)]

    def _report(self, errors: list) -> list:
        for error in errors:
            print(error, file=sys.stderr)
        self.record_stream_errors.extend(errors)
        return errors

    def _get_record_stream_errors(self, data_ptr) -> list[MissingRecordStreamError]:
        return self._errors_of(data_ptr)

    def flush_record_stream_warnings(self) -> list[MissingRecordStreamError]:
        """Check every tracked tensor now (after the program's synchronization); the errors
        found are printed, kept in record_stream_errors and returned."""
        return self._report([e for data_ptr in list(self._npu_tensors) for e in self._errors_of(data_ptr)])

    def _handle_record_stream(self, data_ptr, stream) -> None:
        self._npu_tensors.setdefault(data_ptr, NPUTensorInfo()).recorded_streams.add(stream)

    def _handle_erase_stream(self, data_ptr, stream) -> None:
        """A communication work stopped holding `stream` for the tensor (eraseStream)."""
        info = self._npu_tensors.get(data_ptr)
        if info is not None:
            info.recorded_streams.discard(stream)


class NPUArgumentHandler(csan.ArgumentHandler):
    """torch's ArgumentHandler for npu tensors, also collecting the storages accessed."""

    def __init__(self) -> None:
        super().__init__()
        self.storage_dataptrs_accessed: set = set()

    def _handle_argument(self, value, is_write: bool, metadata_only: bool, name=None, is_output: bool = False) -> None:
        if not isinstance(value, torch.Tensor) or value.device.type != "npu" or metadata_only:
            return  # a view's or a factory's metadata is no access to the data
        data_ptr = value.data_ptr() or id(value)  # two empty tensors are not the same memory
        (self.dataptrs_written if is_write else self.dataptrs_read).add(data_ptr)
        aliases = self.tensor_aliases.setdefault(data_ptr, [])
        if name is not None:
            aliases.append(name)
        if is_output:
            self.outputs.add(data_ptr)
        try:
            storage_ptr = value.untyped_storage().data_ptr()
        except (RuntimeError, AttributeError):
            return
        if storage_ptr:
            self.storage_dataptrs_accessed.add(storage_ptr)

    def parse_outputs(self, schema, outputs, *, is_factory: bool = False) -> None:
        # outputs are written, a factory's too (new_empty, empty_like make memory); a view is not
        for result, value in zip(schema.returns, (outputs,)):
            metadata_only = result.alias_info is not None and not result.alias_info.is_write
            pytree.tree_map_(functools.partial(self._handle_argument, is_write=True, metadata_only=metadata_only,
                                               is_output=True), value)


class NPUSanitizerDispatchMode(TorchDispatchMode):
    """Reports each op's npu tensor accesses on the current stream to `event_handler`."""

    def __init__(self, event_handler: csan.EventHandler):
        super().__init__()
        self.event_handler = event_handler
        self.args_handler: NPUArgumentHandler | None = None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if "record_stream" in getattr(func, "__name__", str(func)):
            return func(*args, **kwargs)  # no kernel launch: the allocator's record is what counts
        is_factory = bool(FACTORY_FUNCTION_REGEX.match(func._schema.name))
        self.args_handler = NPUArgumentHandler()
        self.parse_inputs(func._schema, args, kwargs, is_factory=is_factory)
        outputs = func(*args, **kwargs)
        self.parse_outputs(func._schema, outputs, is_factory=is_factory)
        handler = self.args_handler
        if not (handler.dataptrs_read or handler.dataptrs_written or handler.outputs
                or handler.storage_dataptrs_accessed):
            return outputs
        try:
            stream = _current_npu_stream()
        except RuntimeError:
            logger.info("no current npu stream: this launch is not checked", exc_info=True)
            return outputs
        self.check_errors(func, stream)
        return outputs

    def parse_inputs(self, schema, args, kwargs, is_factory=False):
        self.args_handler.parse_inputs(schema, args, kwargs, is_factory=is_factory)

    def parse_outputs(self, schema, outputs, is_factory=False):
        self.args_handler.parse_outputs(schema, outputs, is_factory=is_factory)

    def check_errors(self, func, npu_stream) -> None:
        h = self.args_handler
        extra = {"storage_dataptrs_accessed": h.storage_dataptrs_accessed}
        if isinstance(self.event_handler, csan.EventHandler) and not isinstance(self.event_handler,
                                                                              NPURecordStreamHandler):
            extra = {}  # torch's own handler takes no storages
        errors = self.event_handler._handle_kernel_launch(
            npu_stream, h.dataptrs_read - h.dataptrs_written, h.dataptrs_written, h.outputs, str(func._schema),
            h.tensor_aliases, **extra)
        if errors:
            for error in errors:
                print(error, file=sys.stderr)
            raise csan.CUDASanitizerErrors(errors)
