"""torch's caching-allocator rules for npu tensors (npurt.torch.caching, as torch_npu's
NPUCachingAllocator): rounding with roundup_power2_divisions, large segments, max_split_size's
oversize blocks, and PYTORCH_NPU_ALLOC_CONF read when the allocator starts."""
from __future__ import annotations

import dataclasses
import gc
import os
import subprocess
import sys

import pytest
import torch
from isolation import own_namespace

from npurt.torch import alloc_conf, caching

MiB = 1 << 20


def test_the_divisions_table_follows_c10s_parser():
    # torch_npu's test_roundup_power2_divisions spells this table out in a comment
    table = caching.divisions_table(("8", "1", "64", "4", "128", "8", "256", "2", ">", "16"))
    assert table == (1, 1, 1, 1, 0, 0, 4, 8, 2) + (16,) * 7
    assert caching.divisions_table(("4",)) == (4,) * 16


@pytest.mark.parametrize("nbytes, divisions, expected", [
    (1, (), 512),                        # at least 512 bytes
    (513, (), 1024),                     # 32 bytes of padding, then 512-byte steps
    (1025, (), 1536),
    (33 * MiB, (0,) * 16, 33 * MiB + 512),
    (65 * MiB, (0,) * 6 + (4,) * 10, 80 * MiB),     # 4 steps between 64 and 128 MiB
    (200 * MiB, (0,) * 7 + (8,) * 9, 208 * MiB),    # 8 steps between 128 and 256 MiB
    (64 * MiB - 32, (0,) * 6 + (4,) * 10, 64 * MiB),  # a power of two stays
])
def test_requests_round_as_torch_npu_rounds_them(nbytes, divisions, expected):
    assert caching.round_size(nbytes, divisions) == expected


def test_large_segments_are_20_mib_below_10_mib_and_2_mib_rounded_above():
    rules = caching.Rules(alloc_conf.AllocatorSettings())
    assert rules.segment_for(5 * MiB) == 20 * MiB
    assert rules.segment_for(11 * MiB + 512) == 12 * MiB
    # (settings made directly: parse() also sets torch's own allocator config, process-wide)
    custom = dataclasses.replace(alloc_conf.AllocatorSettings(), large_segment_size=50 * MiB)
    assert caching.Rules(custom).segment_for(5 * MiB) == 50 * MiB


def _reserved_after(npu, nbytes):
    gc.collect()
    torch.npu.synchronize()
    torch.npu.empty_cache()
    before = torch.npu.memory_reserved()
    t = torch.empty(nbytes, dtype=torch.uint8, device=npu)
    return t, torch.npu.memory_reserved() - before


def test_a_5_mib_tensor_reserves_a_20_mib_segment_and_the_next_shares_it(npu):
    a, grown = _reserved_after(npu, 5 * MiB)
    assert grown == 20 * MiB
    b = torch.empty(5 * MiB, dtype=torch.uint8, device=npu)
    assert torch.npu.memory_reserved() - grown >= 0 and b.data_ptr() == a.data_ptr() + 5 * MiB + 512
    assert torch.npu.memory_allocated() >= 2 * (5 * MiB + 512)


def test_max_non_split_rounding_decides_whether_a_cached_oversize_block_serves(npu):
    def grown_for_75_after_100(conf):
        torch.npu.memory._set_allocator_settings(conf)
        big = torch.empty(100 * MiB, dtype=torch.uint8, device=npu)
        del big
        torch.npu.synchronize()
        before = torch.npu.memory_reserved()
        small = torch.empty(75 * MiB, dtype=torch.uint8, device=npu)
        grown = torch.npu.memory_reserved() - before
        del small
        torch.npu.synchronize()
        torch.npu.empty_cache()
        return grown
    try:
        torch.npu.empty_cache()
        assert grown_for_75_after_100("max_split_size_mb:50,max_non_split_rounding_mb:20") >= 75 * MiB
        assert grown_for_75_after_100("max_split_size_mb:50,max_non_split_rounding_mb:30") == 0
    finally:
        alloc_conf.configure(alloc_conf.parse(""))
        # torch's own config (parse() sets it too) back to no split limit, 20 MiB rounding
        torch._C._accelerator_setAllocatorSettings(f"max_split_size_mb:{(1 << 64) // MiB - 1},"
                                                  "max_non_split_rounding_mb:20")


def test_the_environment_is_read_when_the_allocator_starts_not_at_import():
    code = ("import os, torch, npurt.torch\n"
            "os.environ['PYTORCH_NPU_ALLOC_CONF'] = 'large_segment_size_mb:50'\n"
            "t = torch.empty(5 << 20, dtype=torch.uint8, device='npu')\n"
            "print(torch.npu.memory_reserved() >> 20)\n"
            "os.environ['PYTORCH_NPU_ALLOC_CONF'] = 'large_segment_size_mb:5'\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTORCH_NPU_ALLOC_CONF", "PYTORCH_ALLOC_CONF")}
    env.update(NPURT_HBM_SIZE="256M", **own_namespace())
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "50", out.stderr[-2000:]
    bad = code.replace("large_segment_size_mb:50", "large_segment_size_mb:5")
    out = subprocess.run([sys.executable, "-c", bad], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "large_segment_size_mb must be > 10 MB" in out.stderr
