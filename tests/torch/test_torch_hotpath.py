"""The hot path of small ops (npurt.torch.fastpath.hot_kernel): a second call with the same
signature skips the fast kernel's argument walk, and must be indistinguishable from it: same
results as CPU torch, same dtype promotion and broadcasting, same task (name, stream, accesses
and modes), and memory a queued op still uses is never reused, also under cyclic GC."""
from __future__ import annotations

import gc

import pytest
import torch

from npurt.runtime.observers import HOOKS
from npurt.torch import fastpath
from npurt.torch.plan import plan_of

A = torch.ops.aten
BINARY = {torch.add: A.add.Tensor, torch.sub: A.sub.Tensor, torch.mul: A.mul.Tensor, torch.div: A.div.Tensor,
          torch.maximum: A.maximum.default, torch.atan2: A.atan2.default, torch.eq: A.eq.Tensor, torch.lt: A.lt.Tensor}
UNARY = {torch.relu: A.relu.default, torch.neg: A.neg.default, torch.exp: A.exp.default,
         torch.sigmoid: A.sigmoid.default, torch.tanh: A.tanh.default}


def hot_keys(op) -> dict:
    return fastpath.HOT.get(plan_of(op), {})


def twice(fn, *args):
    """The first call (general path, fills the meta cache) and the second (hot path)."""
    return fn(*args), fn(*args)


@pytest.fixture
def recorder():
    tasks = []

    def observer(name, **fields):
        if name == "task_enqueued" and fields["task"].kind == "kernel":
            tasks.append(fields["task"])
    HOOKS.add(observer)
    yield tasks
    HOOKS.remove(observer)


@pytest.mark.parametrize("fn", BINARY, ids=lambda f: f.__name__)
def test_a_repeated_binary_op_takes_the_hot_path_and_equals_cpu_torch(fn, npu):
    x, y = torch.randn(5, 7), torch.randn(5, 7)
    first, second = twice(fn, x.to(npu), y.to(npu))
    want = fn(x, y)
    for got in (first, second):
        assert got.device == npu and got.dtype == want.dtype and got.shape == want.shape
        torch.testing.assert_close(got.cpu(), want)
    assert (x.shape, x.stride(), x.dtype) * 2 in hot_keys(BINARY[fn])


@pytest.mark.parametrize("fn", UNARY, ids=lambda f: f.__name__)
def test_a_repeated_unary_op_takes_the_hot_path_and_equals_cpu_torch(fn, npu):
    x = torch.randn(33)
    first, second = twice(fn, x.to(npu))
    for got in (first, second):
        torch.testing.assert_close(got.cpu(), fn(x))
    assert (x.shape, x.stride(), x.dtype) in hot_keys(UNARY[fn])


@pytest.mark.parametrize("dtypes", [(torch.int32, torch.float32), (torch.float16, torch.float32),
                                    (torch.bool, torch.int64), (torch.uint8, torch.int8),
                                    (torch.bfloat16, torch.float16)], ids=str)
def test_the_hot_path_keeps_dtype_promotion(dtypes, npu):
    x = (torch.arange(12) % 5).to(dtypes[0]).reshape(3, 4)
    y = (torch.arange(12) % 3 + 1).to(dtypes[1]).reshape(3, 4)
    for got in twice(torch.add, x.to(npu), y.to(npu)) + twice(torch.mul, x.to(npu), y.to(npu)):
        assert got.dtype == torch.result_type(x, y)
    torch.testing.assert_close(torch.mul(x.to(npu), y.to(npu)).cpu(), x * y)
    torch.testing.assert_close(torch.add(x.to(npu), y.to(npu)).cpu(), x + y)


@pytest.mark.parametrize("shapes", [((4, 1), (3,)), ((2, 1, 5), (1, 6, 1)), ((), (7,)), ((3, 0), (1,))], ids=str)
def test_the_hot_path_keeps_broadcasting(shapes, npu):
    x, y = torch.randn(shapes[0]), torch.randn(shapes[1])
    for got in twice(torch.sub, x.to(npu), y.to(npu)):
        assert got.shape == torch.broadcast_shapes(x.shape, y.shape)
        torch.testing.assert_close(got.cpu(), x - y)


def test_the_hot_path_reads_strided_and_offset_views(npu):
    base = torch.randn(6, 8)
    d = base.to(npu)
    views = [(d.t(), base.t()), (d[1:, ::2], base[1:, ::2]), (d[2], base[2])]
    for (dv, cv) in views:
        for got in twice(torch.mul, dv, dv):
            assert got.stride() == torch.mul(cv, cv).stride()
            torch.testing.assert_close(got.cpu(), cv * cv)


def test_calls_the_hot_path_does_not_cover_still_give_cpu_results(npu):
    x = torch.randn(4)
    d = x.to(npu)
    cases = [
        (lambda: d + 2, x + 2),                                   # a Python number
        (lambda: d + torch.tensor(3.0), x + 3.0),                 # a CPU scalar tensor
        (lambda: torch.add(d, d, alpha=2), torch.add(x, x, alpha=2)),  # a keyword argument
        (lambda: torch.empty(0, device=npu) * torch.empty(0, device=npu), torch.empty(0)),  # empty result
    ]
    for make, want in cases:
        for _ in range(2):
            got = make()
            assert got.device == npu
            torch.testing.assert_close(got.cpu(), want)


def test_a_cpu_tensor_in_a_hot_signature_goes_the_general_way(npu):
    x, y = torch.randn(5), torch.randn(5)
    d = x.to(npu)
    twice(torch.add, d, d)
    for _ in range(2):  # the general path's answer (as on CUDA: a device mismatch), every time
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            torch.add(d, y)
    torch.testing.assert_close(torch.add(d, torch.tensor(2.0)).cpu(), x + 2)  # a 0-dim CPU tensor is a scalar


def test_the_hot_path_calls_torchs_binding_only_where_it_dispatches_to_the_out_overload(npu):
    x, y = torch.randn(6), torch.randn(6)
    twice(torch.atan2, x.to(npu), y.to(npu))
    twice(torch.relu, x.to(npu))
    assert plan_of(A.atan2.default).binding is torch._C._VariableFunctions.atan2
    assert plan_of(A.relu.default).binding is None  # torch.relu takes no out=: the OpOverload's call


class _Counting(torch.overrides.TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls.append(func)
        return func(*args, **(kwargs or {}))


def test_a_torch_function_mode_sees_the_users_calls_only(npu, gate):
    """Inside a task the op's out kernel is called past torch functions: a mode the user
    entered sees `torch.sub` and `aten.sub.Tensor`, never the hot path's own
    `sub(..., out=)` on host views, also when the op runs inside the user's synchronize."""
    x, y = torch.randn(6), torch.randn(6)
    d, e = x.to(npu), y.to(npu)
    twice(torch.sub, d, e)
    mode = _Counting()
    with mode:
        got = torch.sub(d, e)          # (torch runs each call with the mode off)
        direct = A.sub.Tensor(d, e)
    assert mode.calls == [torch.sub, A.sub.Tensor]
    gate.hold()
    held = torch.sub(d, e)             # queued behind the gate: runs in a synchronize below
    mode = _Counting()
    with mode:
        gate.open()
        torch.npu.synchronize()        # not a torch function: the mode stays on while it runs the task
    assert mode.calls == []
    for t in (got, direct, held):
        torch.testing.assert_close(t.cpu(), x - y)
    with torch.device(npu):  # a function mode too (torch's DeviceContext)
        torch.testing.assert_close(torch.sub(d, e).cpu(), x - y)


def test_hot_and_general_paths_queue_the_same_task(npu, recorder):
    x, y = torch.randn(8, 3, device=npu), torch.randn(3, device=npu)
    first, second = twice(torch.add, x, y)
    general, hot = recorder[-2:]
    assert general.name == hot.name == "aten::add.Tensor"
    assert general.details()["name"] == hot.details()["name"]
    assert [m for _, _, m in general.accesses()] == [m for _, _, m in hot.accesses()] == ["r", "r", "w"]
    spans = {t: (t.data_ptr(), t.numel() * t.element_size()) for t in (x, y)}
    assert [a[:2] for a in hot.accesses()] == [spans[x], spans[y], (second.data_ptr(), 96)]
    assert [a[:2] for a in general.accesses()][:2] == [spans[x], spans[y]]
    assert general.stream is hot.stream


def test_the_hot_path_queues_on_the_current_stream_in_order(npu, gate, recorder):
    s = torch.npu.Stream()
    x = torch.ones(16, device=npu)
    twice(torch.mul, x, x)
    # s reads x, which the current stream makes: order it after x's producer (without this
    # the read races, on any path: under load with NPURT_INLINE=0 the fill could still be
    # queued when the gate opened, 1 run in 20)
    s.wait_stream(torch.npu.current_stream())
    with torch.npu.stream(s):
        gate.hold()
        y = torch.mul(x, x)       # hot: queued behind the gate on s
        z = torch.add(y, y)       # reads y: must run after it
    assert recorder[-1].stream is recorder[-2].stream is s.npurt_stream.runtime_stream
    assert not s.query()
    gate.open()
    s.synchronize()
    torch.testing.assert_close(z.cpu(), torch.full((16,), 2.0))


def reuse_round(npu, gate, other) -> list:
    """Results dropped while their tasks wait behind a gate, then results made on a second
    stream: those must never land in a block the held tasks will still write."""
    x = torch.full((256,), 3.0, device=npu)
    twice(torch.mul, x, x)
    # `other` reads x, which the current stream makes: order it after x's producer (without
    # this the read itself races, on any path; with it the hot path failed 0 of 300 runs)
    other.wait_stream(torch.npu.current_stream())
    gate.hold()
    for _ in range(20):
        torch.mul(x, x)           # 9s, each result dropped while its task waits behind the gate
    with torch.npu.stream(other):
        kept = [torch.add(x, x) for _ in range(20)]  # 6s, run at once: never in a block the 9s will write
        other.synchronize()
    gate.open()
    torch.npu.synchronize()
    return kept


def test_an_output_dropped_at_once_is_not_reused_before_its_task_ran(npu, gate):
    for k in reuse_round(npu, gate, torch.npu.Stream()):
        torch.testing.assert_close(k.cpu(), torch.full((256,), 6.0))


def test_dropped_outputs_are_not_reused_early_under_cyclic_gc(npu):
    """The stress form (bench/hotpath_stress.py runs it 300 times): rounds with the cyclic GC
    made eager, so collections land anywhere between launch, drop and free."""
    from npurt.runtime import api as rt
    from npurt.runtime import constants as C
    before = gc.get_threshold()
    gc.set_threshold(50, 2, 2)
    other = torch.npu.Stream()
    opener = torch.npu.Stream()
    try:
        for _ in range(8):
            event = rt.create_event(flags=C.ACL_EVENT_SYNC)

            class Gate:
                def hold(self):
                    rt.stream_wait_event(torch.npu.current_stream().npurt_stream.runtime_stream, event)

                def open(self):
                    rt.record_event(event, opener.npurt_stream.runtime_stream)
            cycles = [[] for _ in range(200)]
            for c in cycles:
                c.append(c)  # garbage for the cyclic collector
            del cycles
            kept = reuse_round(npu, Gate(), other)
            for k in kept:
                torch.testing.assert_close(k.cpu(), torch.full((256,), 6.0))
            rt.destroy_event(event)
    finally:
        gc.set_threshold(*before)
