"""What ACL graphs save: replaying captured work against enqueueing it.

graph_replay_ratio: 200 small tasks (64-byte device-to-device copies and memsets, as a decode
step's bookkeeping is) enqueued one by one on a stream and synchronized, against one replay of
the same 200 tasks captured once (execute_async + synchronize). Target <= 0.5: a replay must
cost less than the enqueues it replaces. Both times are reported.

torch_graph_step_ratio: a decode-like torch step on npu (a small MLP: 20 ops) run eagerly,
against the same step replayed through torch.npu.NPUGraph with its input copied into the
static one. Target <= 0.5.
"""
from __future__ import annotations

from ... import runtime as rt
from ...runtime import constants as C
from .harness import Profile, Stat, clock
from .torchnpu import Skipped

TASKS = 200


def _enqueue(stream, a, b) -> None:
    for i in range(TASKS // 2):
        rt.memcpy_async(b, 64, a, 64, C.ACL_MEMCPY_DEVICE_TO_DEVICE, stream)
        rt.memset_async(a, 64, i & 0xFF, 64, stream)


def measure(session, p: Profile) -> dict[str, Stat]:
    stream = rt.create_stream()
    a, b = rt.malloc(64), rt.malloc(64)
    try:
        rt.capture_begin(stream, rt.graph.GLOBAL)
        _enqueue(stream, a, b)
        g = rt.capture_end(stream)
        repeats = max(p.latency_repeats, 3)
        eager, replay = [], []
        for _ in range(repeats):
            t0 = clock()
            _enqueue(stream, a, b)
            rt.synchronize_stream(stream)
            eager.append(clock() - t0)
            t0 = clock()
            rt.execute_async(g, stream)
            rt.synchronize_stream(stream)
            replay.append(clock() - t0)
        rt.destroy_graph(g)
    finally:
        rt.free(a)
        rt.free(b)
        rt.destroy_stream(stream)
    e, r = Stat.of(eager).scaled(1e6), Stat.of(replay).scaled(1e6)
    ratio = r.median / e.median
    return {"graph_replay_ratio": Stat(ratio, ratio, ratio, 1), "graph_enqueue_us": e, "graph_replay_us": r}


def measure_torch(session, p: Profile) -> dict[str, Stat]:
    try:
        import torch
        if not hasattr(torch, "__version__"):
            raise ImportError("PyTorch is not installed")
        import npurt.torch  # noqa: F401 - registers the npu device
    except ImportError:
        raise Skipped({"torch_graph_step_ratio": "skipped: PyTorch is not installed (pip install 'npurt[torch]')"}) \
            from None
    torch.manual_seed(0)
    layers = []
    for _ in range(6):
        layers += [torch.nn.Linear(32, 32), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).to("npu")   # 6 x (matmul, add bias, relu) + input copy ~ 20 ops
    x = torch.randn(4, 32, device="npu")
    static_x = torch.zeros(4, 32, device="npu")
    repeats = max(p.latency_repeats, 3)
    eager, replay = [], []
    with torch.no_grad():
        model(static_x)
        torch.npu.synchronize()
        g = torch.npu.NPUGraph()
        with torch.npu.graph(g):
            static_y = model(static_x)
        s = torch.npu.Stream()
        with torch.npu.stream(s):
            for _ in range(repeats):
                t0 = clock()
                y = model(x)
                s.synchronize()
                eager.append(clock() - t0)
                t0 = clock()
                static_x.copy_(x)
                g.replay()
                s.synchronize()
                replay.append(clock() - t0)
        if not torch.allclose(static_y.cpu(), y.cpu()):
            raise RuntimeError("the replayed torch step differs from the eager one")
        g.reset()
    e, r = Stat.of(eager).scaled(1e3), Stat.of(replay).scaled(1e3)
    ratio = r.median / e.median
    return {"torch_graph_step_ratio": Stat(ratio, ratio, ratio, 1), "torch_graph_eager_ms": e,
            "torch_graph_replay_ms": r}
