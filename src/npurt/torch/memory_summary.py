"""torch.npu.memory_summary(device=None, abbreviated=False): torch_npu's table of the allocator's
statistics (torch_npu/npu/memory.py, which lays it out as torch.cuda.memory_summary does).

75 columns between `|` borders: a header (device id, NPU OOMs, npuMalloc retries), then for
each metric its current / peak / total allocated / total freed, for all blocks and (unless
`abbreviated`) the large and small pools apart, then the oversize allocations and segments.
Sizes are shown in B, KiB, MiB, ... and counts in units, K, M, each row scaled by the unit
that suits its "all" row. The numbers are memory_stats()'s (npurt.torch.npu); a key it does
not give (`inactive_split*`: npurt's pool does not expose its split remainders) shows 0.
"""
from __future__ import annotations

WIDTH = 75
METRICS = (("allocated_bytes", "Allocated memory", "size"), ("active_bytes", "Active memory", "size"),
           ("reserved_bytes", "NPU reserved memory", "size"), ("inactive_split_bytes", "Non-releasable memory", "size"),
           ("allocation", "Allocations", "count"), ("active", "Active allocs", "count"),
           ("segment", "NPU reserved segments", "count"), ("inactive_split", "Non-releasable allocs", "count"))
WHOLE = (("oversize_allocations", "Oversize allocations"), ("oversize_segments", "Oversize NPU segments"))
COLUMNS = ("current", "peak", "allocated", "freed")


def _size(value: int, scale_by: float) -> str:
    """Bytes in the largest unit that keeps `scale_by` (the row's reference) under 768 of it."""
    unit = "B  "
    for bigger in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        if scale_by < 768 * 1024:
            break
        unit, value, scale_by = bigger, value // 1024, scale_by / 1024
    return f"{value:6d} {unit}"


def _count(value: int, scale_by: float) -> str:
    """A count in units, thousands or millions, by the same rule (750 of the unit)."""
    unit = " "
    for bigger in ("K", "M"):
        if scale_by < 750 * 1000:
            break
        unit, value, scale_by = bigger, value // 1000, scale_by / 1000
    return f"{value:7d} {unit} "


def _row(name: str, values, references, fmt) -> str:
    cells = " | ".join(fmt(v, r) for v, r in zip(values, references))
    return f" {name:<21} | {cells} "


def summary(stats: dict, device: int, abbreviated: bool = False) -> str:
    """The table for `stats` (memory_stats of npu:`device`)."""
    get = lambda key: int(stats.get(key, 0))  # noqa: E731
    lines = ["=" * WIDTH,
             f" {'':16} PyTorch NPU memory summary, device ID {device:<18d} ",
             "-" * WIDTH,
             f"  {'':9} NPU OOMs: {get('num_ooms'):<13d} | {'':6} npuMalloc retries: {get('num_alloc_retries'):<9d}  ",
             "=" * WIDTH,
             "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  "]
    for key, name, kind in METRICS:
        fmt = _size if kind == "size" else _count
        lines.append("-" * WIDTH)
        pools = [("all", name)] + ([] if abbreviated else [("large_pool", "      from large pool"),
                                                           ("small_pool", "      from small pool")])
        reference = [get(f"{key}.all.{c}") for c in COLUMNS]
        for pool, label in pools:
            lines.append(_row(label, [get(f"{key}.{pool}.{c}") for c in COLUMNS], reference, fmt))
    for key, name in WHOLE:
        lines.append("-" * WIDTH)
        values = [get(f"{key}.{c}") for c in COLUMNS]
        lines.append(_row(name, values, values, _count))
    lines.append("=" * WIDTH)
    return "|" + "|\n|".join(lines) + "|\n"
