"""torch_npu.npu._stream_check (npurt.torch.stream_check): which npu tensors an op reads and
writes, the sanitizer's dispatch mode reporting them per stream, and the deferred
missing-record_stream check."""
from __future__ import annotations

import sys

import pytest
import torch
import torch.cuda._sanitizer as csan

from npurt.apps.runner import install_torch_npu_alias
from npurt.torch import stream_check as sc


def test_torch_npus_module_name_is_npurts_stream_check():
    saved = {k: v for k, v in sys.modules.items() if k.startswith("torch_npu")}
    try:
        install_torch_npu_alias()
        import torch_npu.npu._stream_check as module
        assert module is sc
    finally:
        for k in [k for k in sys.modules if k.startswith("torch_npu")]:
            del sys.modules[k]
        sys.modules.update(saved)


def test_an_op_reads_its_inputs_and_writes_its_output(npu):
    a, b = torch.ones(5, 3, device=npu), torch.ones(5, 3, device=npu)
    h = sc.NPUArgumentHandler()
    schema = torch.ops.aten.add.Tensor._schema
    h.parse_inputs(schema, (a, b), {}, is_factory=False)
    c = a + b
    h.parse_outputs(schema, c, is_factory=False)
    assert h.dataptrs_read == {a.data_ptr(), b.data_ptr()}
    assert h.dataptrs_written == {c.data_ptr()} == h.outputs
    assert h.tensor_aliases[a.data_ptr()] == ["self"] and h.tensor_aliases[b.data_ptr()] == ["other"]
    assert h.storage_dataptrs_accessed == {t.untyped_storage().data_ptr() for t in (a, b, c)}


def test_views_and_factory_inputs_are_no_data_access(npu):
    a = torch.arange(10, device=npu).reshape(5, 2)
    h = sc.NPUArgumentHandler()
    schema = torch.ops.aten.split.Tensor._schema
    h.parse_inputs(schema, (a, 2), {}, is_factory=False)
    h.parse_outputs(schema, torch.split(a, 2), is_factory=False)
    assert not h.dataptrs_read and not h.dataptrs_written
    # empty_like reads a's metadata only; its output is new memory, written
    h = sc.NPUArgumentHandler()
    schema = torch.ops.aten.empty_like.default._schema
    h.parse_inputs(schema, (a,), {}, is_factory=True)
    out = torch.empty_like(a)
    h.parse_outputs(schema, out, is_factory=True)
    assert h.dataptrs_read == set() and h.dataptrs_written == {out.data_ptr()}


def test_an_in_place_op_writes_its_self(npu):
    a = torch.rand(4, 2, device=npu)
    h = sc.NPUArgumentHandler()
    schema = torch.ops.aten.add_.Tensor._schema
    h.parse_inputs(schema, (a, 5), {}, is_factory=False)
    h.parse_outputs(schema, a.add_(5), is_factory=False)
    assert h.dataptrs_read == set() and h.dataptrs_written == {a.data_ptr()}


def test_the_mode_reports_an_unsynchronized_read_on_another_stream(npu):
    handler = csan.EventHandler()
    side = torch.npu.Stream()
    x = torch.zeros(16, device=npu)
    with sc.NPUSanitizerDispatchMode(handler):
        x.add_(1)  # written on the current stream
        with torch.npu.stream(side):
            with pytest.raises(csan.CUDASanitizerErrors) as info:
                x.sum()  # read on the side stream, which never waited for the write
    [error] = info.value.errors
    assert isinstance(error, csan.UnsynchronizedAccessError)
    assert error.current_access.stream == side.npu_stream
    assert error.previous_access.stream == torch.npu.current_stream().npu_stream
    torch.npu.synchronize()


def test_a_read_after_a_device_synchronize_is_ordered(npu):
    handler = csan.EventHandler()
    side = torch.npu.Stream()
    x = torch.zeros(16, device=npu)
    with sc.NPUSanitizerDispatchMode(handler):
        x.add_(1)
        handler._handle_device_synchronization()  # the trace torch_npu's C++ would report
        with torch.npu.stream(side):
            assert x.sum().item() == 16
    torch.npu.synchronize()


def test_a_cross_stream_use_without_record_stream_is_reported_at_deallocation(npu, capsys):
    handler = sc.NPURecordStreamHandler()
    handler._handle_memory_allocation(1000)  # allocated on the current stream
    other = torch.npu.current_stream().npu_stream + 1
    handler._handle_kernel_launch(other, {1000}, set(), set(), "aten::sum", {1000: ["self"]})
    handler._handle_memory_deallocation(1000)
    [error] = handler.record_stream_errors
    assert isinstance(error, sc.MissingRecordStreamError)
    assert (error.allocation_stream, error.usage_stream) == (torch.npu.current_stream().npu_stream, other)
    assert "missing record_stream" in capsys.readouterr().err


def test_record_stream_or_a_wait_for_the_use_clears_it(npu):
    handler = sc.NPURecordStreamHandler()
    here = torch.npu.current_stream().npu_stream
    handler._handle_stream_creation(here)  # the trace torch_npu's C++ would report
    handler._handle_stream_creation(here + 1)
    for ptr in (1, 2):
        handler._handle_memory_allocation(ptr)
        handler._handle_kernel_launch(here + 1, {ptr}, set(), set(), "aten::sum", {ptr: []})
    handler._handle_record_stream(1, here + 1)
    assert [e.data_ptr for e in handler.flush_record_stream_warnings()] == [2]
    handler.record_stream_errors.clear()
    handler._handle_device_synchronization()  # the allocation stream now waited for the use
    assert handler.flush_record_stream_warnings() == []


def test_erase_stream_forgets_a_recorded_stream():
    handler = sc.NPURecordStreamHandler()
    handler._npu_tensors[7] = sc.NPUTensorInfo(recorded_streams={11, 22})
    handler._handle_erase_stream(7, 11)
    handler._handle_erase_stream(8, 11)  # a tensor freed already: nothing
    assert handler._npu_tensors[7].recorded_streams == {22} and 8 not in handler._npu_tensors
