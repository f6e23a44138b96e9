"""torch on npu (npurt.torch): what an aten op costs the host, and a transformer layer's
training step against CPU torch in the same run.

* torch_op_us: host time of one `c = a + b` on 16-element npu tensors, the device idle when
  it starts (each timed call is followed by an untimed synchronize): the launch cost, as a
  profiler's host lane shows it. `torch_op_queued_us` is the same while the device is held
  (its stream waits on an event, so every op's memory is still in use: the pool's slow path),
  `torch_op_busy_us` a loop of adds with the device running (it shares the host's cores and
  GIL), `torch_op_sync_us` the add plus a synchronize.
* torch_transformer_ratio: an `nn.TransformerEncoderLayer` forward + backward + SGD step on
  npu over the same step in CPU torch (> 1: npu faster), timed alternately, each npu sample
  ending with a synchronize.
* torch_script_ratio: a small torch_npu training script (an MLP, SGD, autocast, one step) as a
  whole process under `npurt run --torch-npu`, over the same script on CPU torch (`python
  script.py cpu`), timed alternately: what a user's edit-run cycle pays (< 1.5x is the target;
  the first op on npu used to stall seconds importing torch._dynamo). Not measured at the test
  size (two processes per sample).

Skipped with a note (not an error) when PyTorch is not installed.
"""
from __future__ import annotations

import copy
import os
import subprocess
import sys
import tempfile
import time

from ... import runtime as rt  # the runtime's operations: its published surface
from ...runtime import constants as C
from .harness import MiB, Profile, Stat, clock, paired, per_call_us  # noqa: F401


class Skipped(Exception):
    """The figures cannot be measured here; `notes` says why, per figure."""

    def __init__(self, notes: dict[str, str]):
        super().__init__(next(iter(notes.values())))
        self.notes = notes


SCRIPT = """import sys
import torch
device = sys.argv[1]
if device == "npu":
    import torch_npu  # noqa: F401
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 32).to(device), torch.randint(0, 4, (16,)).to(device)
with torch.autocast(device_type=device, dtype=torch.bfloat16):
    loss = torch.nn.functional.cross_entropy(model(x), y)
loss.backward()
opt.step()
print(loss.item())
"""
SCRIPT_FIGURES = ("torch_script_ratio", "torch_script_npu_s", "torch_script_cpu_s")


def measure_script(session, p: Profile) -> dict[str, Stat]:
    """The whole-process figure: CPU torch and npurt run --torch-npu, alternately."""
    if p.name == "tiny":
        raise Skipped({f: "skipped at the test size: two whole processes per sample" for f in SCRIPT_FIGURES})
    try:
        import torch  # noqa: F401
    except ImportError:
        raise Skipped({f: "skipped: PyTorch is not installed" for f in SCRIPT_FIGURES}) from None
    repeats = 3 if p.name == "full" else 1
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))))), os.environ.get("PYTHONPATH")]))}
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "train_step.py")
        with open(script, "w") as f:
            f.write(SCRIPT)

        def process(*argv):
            def run():
                subprocess.run([sys.executable, *argv], check=True, capture_output=True, env=env, timeout=600)
            return run

        r = paired(process(script, "cpu"), process("-m", "npurt", "run", "--torch-npu", script, "npu"), repeats, 0)
    times = Stat(1 / r.ratio.median, 1 / r.ratio.hi, 1 / r.ratio.lo, r.ratio.n)   # npu time / CPU time
    return {"torch_script_ratio": times, "torch_script_npu_s": r.subject_s, "torch_script_cpu_s": r.reference_s}


FIGURES = ("torch_op_us", "torch_op_queued_us", "torch_op_busy_us", "torch_op_sync_us", "torch_op_cpu_us",
           "torch_op_cpu_ratio", "torch_op_sync_cpu_us", "torch_sync_idle_us",
           "torch_transformer_ratio", "torch_transformer_npu_ms", "torch_transformer_cpu_ms")


def measure(session, p: Profile) -> dict[str, Stat]:
    try:
        import torch
        if not hasattr(torch, "__version__"):  # a folder named torch on sys.path (tests/torch), not PyTorch
            raise ImportError("PyTorch is not installed")
        import npurt.torch  # noqa: F401 - registers the npu device
    except ImportError:
        raise Skipped({f: "skipped: PyTorch is not installed (its CPU build: pip install torch --index-url https://download.pytorch.org/whl/cpu)" for f in FIGURES}) from None
    out = _op_latency(torch, p)
    out.update(_transformer(torch, p))
    return out


def _op_latency(torch, p: Profile) -> dict[str, Stat]:
    a = torch.randn(16, device="npu")
    b = torch.randn(16, device="npu")
    calls = max(p.latency_calls // 4, 50)

    def launch(n):
        t = 0.0
        for _ in range(n):
            t0 = clock()
            c = a + b
            t += clock() - t0
            del c
            torch.npu.synchronize()
        return t

    opener = torch.npu.Stream()  # kept alive: a dropped torch.npu.Stream destroys its npurt stream

    def held(n):
        gate = rt.create_event(flags=C.ACL_EVENT_SYNC)  # a wait before any record blocks until one runs
        rt.stream_wait_event(torch.npu.current_stream().npurt_stream.runtime_stream, gate)
        t0 = clock()
        for _ in range(n):
            a + b
        t = clock() - t0
        rt.record_event(gate, opener.npurt_stream.runtime_stream)
        torch.npu.synchronize()
        rt.destroy_event(gate)
        return t

    def busy(n):
        t0 = clock()
        for _ in range(n):
            a + b
        t = clock() - t0
        torch.npu.synchronize()
        return t

    def roundtrip(n):
        t0 = clock()
        for _ in range(n):
            a + b
            torch.npu.synchronize()
        return clock() - t0

    def idle_sync(n):
        t0 = clock()
        for _ in range(n):
            torch.npu.synchronize()
        return clock() - t0

    reps, warm = p.latency_repeats, p.warmup
    return {**_op_cpu(torch, a, b, calls // 2, reps, warm),
            "torch_sync_idle_us": per_call_us(idle_sync, calls, reps, warm),
            "torch_op_us": per_call_us(launch, calls // 2, reps, warm),
            "torch_op_queued_us": per_call_us(held, calls, reps, warm),
            "torch_op_busy_us": per_call_us(busy, calls, reps, warm),
            "torch_op_sync_us": per_call_us(roundtrip, calls // 4, reps, warm)}


def _op_cpu(torch, a, b, calls: int, reps: int, warm: int) -> dict[str, Stat]:
    """Calling-thread CPU time (time.thread_time_ns: what the machine's load disturbs least)
    of the idle npu add and of add + synchronize, and the idle add over CPU torch's add of the
    same 16 elements, the two loops alternating sample by sample (a paired ratio). Each idle
    add is timed on its own (the synchronize after it is not counted), less the cost of
    reading the clock, measured beside it."""
    ca, cb = a.cpu(), b.cpu()
    cpu_ns = time.thread_time_ns

    def npu_add():
        t = 0
        for _ in range(calls):
            t0 = cpu_ns()
            c = a + b
            t += cpu_ns() - t0
            del c
            torch.npu.synchronize()
        return t / calls / 1e3 - clock_cost()

    def clock_cost():  # what reading the thread's CPU clock adds to each timed add (a syscall)
        t = 0
        for _ in range(calls):
            t0 = cpu_ns()
            t += cpu_ns() - t0
        return t / calls / 1e3

    def cpu_add():
        t0 = cpu_ns()
        for _ in range(calls):
            c = ca + cb  # noqa: F841
        return (cpu_ns() - t0) / calls / 1e3

    def add_sync():
        t0 = cpu_ns()
        for _ in range(calls):
            a + b
            torch.npu.synchronize()
        return (cpu_ns() - t0) / calls / 1e3

    for _ in range(warm):
        npu_add(), cpu_add(), add_sync()
    npu, ref, sync, ratios = [], [], [], []
    for _ in range(reps):
        n, r = npu_add(), cpu_add()
        npu.append(n)
        ref.append(r)
        ratios.append(n / r)
        sync.append(add_sync())
    return {"torch_op_cpu_us": Stat.of(npu), "torch_op_cpu_ratio": Stat.of(ratios),
            "torch_op_sync_cpu_us": Stat.of(sync)}


def _transformer(torch, p: Profile) -> dict[str, Stat]:
    # full: d=512, 8 sequences of 128 tokens (~45 ms of CPU work per step here)
    full = p.name == "full"
    d, batch, seq = (512, 8, 128) if full else (256, 4, 64) if p.name == "quick" else (64, 2, 16)
    torch.manual_seed(0)
    cpu = torch.nn.TransformerEncoderLayer(d, 8, 4 * d, dropout=0.0, batch_first=True)
    npu = copy.deepcopy(cpu).to("npu")
    x_cpu = torch.randn(batch, seq, d)
    x_npu = x_cpu.to("npu")
    opt_cpu = torch.optim.SGD(cpu.parameters(), lr=1e-4)
    opt_npu = torch.optim.SGD(npu.parameters(), lr=1e-4)

    def step(model, opt, x):
        opt.zero_grad(set_to_none=True)
        model(x).square().mean().backward()
        opt.step()

    def on_cpu():
        step(cpu, opt_cpu, x_cpu)

    def on_npu():
        step(npu, opt_npu, x_npu)
        torch.npu.synchronize()

    r = paired(on_cpu, on_npu, p.matmul_repeats if full else max(p.matmul_repeats, 5), p.warmup)
    return {"torch_transformer_ratio": r.ratio, "torch_transformer_npu_ms": r.subject_s.scaled(1e3),
            "torch_transformer_cpu_ms": r.reference_s.scaled(1e3)}
