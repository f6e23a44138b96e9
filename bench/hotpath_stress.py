"""The torch hot path's memory-reuse check, many times: `python bench/hotpath_stress.py [--runs N]`.

Each run is tests/torch/test_torch_hotpath.py's round: results dropped while their tasks wait
behind a gate on the current stream, then results made on a second stream (ordered after the
operand's producer with wait_stream), which must never land in a block the held tasks will
still write; the cyclic GC is made eager so collections fall anywhere between launch, drop
and free. Prints how many runs gave a wrong result (the target: 0 of 300).
"""
from __future__ import annotations

import argparse
import gc

import torch

import npurt.torch  # noqa: F401 - registers the npu device
from npurt.runtime import api as rt
from npurt.runtime import constants as C


def one_run(other, opener) -> bool:
    """One round; True when every kept result is right."""
    gate = rt.create_event(flags=C.ACL_EVENT_SYNC)
    try:
        x = torch.full((256,), 3.0, device="npu")
        torch.mul(x, x), torch.mul(x, x)  # the second call takes the hot path
        other.wait_stream(torch.npu.current_stream())
        rt.stream_wait_event(torch.npu.current_stream().npurt_stream.runtime_stream, gate)
        for _ in range(20):
            torch.mul(x, x)  # dropped at once while held
        with torch.npu.stream(other):
            kept = [torch.add(x, x) for _ in range(20)]
            other.synchronize()
        rt.record_event(gate, opener.npurt_stream.runtime_stream)
        torch.npu.synchronize()
        want = torch.full((256,), 6.0)
        return all(torch.equal(k.cpu(), want) for k in kept)
    finally:
        rt.destroy_event(gate)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    gc.set_threshold(50, 2, 2)
    other, opener = torch.npu.Stream(), torch.npu.Stream()
    wrong = 0
    for _ in range(args.runs):
        cycles = [[] for _ in range(200)]
        for c in cycles:
            c.append(c)
        del cycles
        wrong += not one_run(other, opener)
    print(f"hot-path stress: {wrong} wrong results in {args.runs} runs")
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
