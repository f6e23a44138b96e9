"""PYTORCH_NPU_ALLOC_CONF and torch.npu.memory._set_allocator_settings: torch_npu's keys,
checks and messages; what npurt applies (the memory fraction) takes effect."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
from isolation import own_namespace

from npurt.torch import alloc_conf


def test_tokens_are_split_as_torchs_config_tokenizer_splits_them():
    assert alloc_conf.tokenize("a:1, b:[2:3,>:4]") == ["a", ":", "1", ",", "b", ":", "[", "2", ":", "3", ",",
                                                        ">", ":", "4", "]"]


def test_values_parse_into_the_settings():
    s = alloc_conf.parse("max_split_size_mb:64,garbage_collection_threshold:0.5,roundup_power2_divisions:"
                         "[256:1,>:4],base_addr_aligned_kb:4,segment_size_mb:40,throw_on_npumalloc_oom:True")
    assert s.max_split_size == 64 << 20 and s.garbage_collection_threshold == 0.5
    assert s.roundup_power2_divisions == ("256", "1", ">", "4")
    assert s.base_addr_aligned_size == 4096 and s.segment_size == 40 << 20 and s.throw_on_npumalloc_oom


@pytest.mark.parametrize("text, error", [
    ("foo:1", "Unrecognized key 'foo' in NPU allocator config"),
    ("max_split_size_mb:10", "max_split_size_mb too small, must be >= 20"),
    ("garbage_collection_threshold:1.5", "set it in \\(0.0, 1.0\\)"),
    ("segment_size_mb:10", "segment_size_mb error, must be \\[20, 512\\]"),
    ("base_addr_aligned_kb:17", "base_addr_aligned_kb error, must be \\[0~16\\]"),
    ("per_process_memory_fraction:1.5", "per_process_memory_fraction is invalid, set it in \\[0.0, 1.0\\]"),
    ("multi_stream_lazy_reclaim:yes", "Expected a single True/False argument for multi_stream_lazy_reclaim"),
    ("page_size:2m", "Unsupported page_size value: 2m"),
])
def test_bad_keys_and_values_are_refused_with_torch_npus_messages(text, error):
    with pytest.raises((ValueError, RuntimeError), match=error):
        alloc_conf.parse(text)


def test_expandable_segments_refuse_max_split_size():
    with pytest.raises(RuntimeError, match="cannot be enabled with `expandable_segments`"):
        alloc_conf.parse("expandable_segments:True,max_split_size_mb:40")


def test_set_allocator_settings_takes_only_the_run_time_keys():
    before = alloc_conf.settings()
    try:
        torch.npu.memory._set_allocator_settings("release_lock_on_npumalloc:True")
        assert alloc_conf.settings().release_lock_on_npumalloc
        with pytest.raises(ValueError, match="_set_allocator_settings\\(\\) unsupported setting: segment_size_mb"):
            torch.npu.memory._set_allocator_settings("segment_size_mb:40")
        assert alloc_conf.settings().release_lock_on_npumalloc     # a refused string changes nothing
    finally:
        alloc_conf.configure(before)


def test_both_variables_set_is_an_error():
    with pytest.raises(ValueError, match="Both PYTORCH_NPU_ALLOC_CONF and PYTORCH_ALLOC_CONF"):
        alloc_conf.from_environment({"PYTORCH_NPU_ALLOC_CONF": "a:1", "PYTORCH_ALLOC_CONF": "b:2"})


def test_the_environments_memory_fraction_caps_npu_tensors():
    code = ("import torch, npurt.torch\n"
            "total = torch.npu.mem_get_info()[1]\n"
            "assert torch.npu.get_per_process_memory_fraction() == 0.25\n"
            "try:\n"
            "    torch.empty(int(total * 0.3), dtype=torch.uint8, device='npu')\n"
            "except torch.OutOfMemoryError:\n"
            "    print('capped')\n")
    env = dict(os.environ, PYTORCH_NPU_ALLOC_CONF="per_process_memory_fraction:0.25", NPURT_HBM_SIZE="256M",
               **own_namespace())
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "capped", out.stderr[-2000:]
