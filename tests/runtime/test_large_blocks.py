"""The pool of large blocks a caching allocator with torch's rules takes its memory from
(DeviceMemory.malloc_large; npurt.torch computes the sizes): segments of the size asked for,
splitting only below max_split with more than 1 MiB left, oversize blocks whole and kept for
requests they fit closely, and garbage collection of cached whole segments."""
from __future__ import annotations

import pytest

MiB = 1 << 20


@pytest.fixture
def memory(rt):
    return rt.current_device().memory


def test_a_block_below_the_segment_splits_and_the_next_one_reuses_the_segment(memory):
    maps = memory.segment_maps
    a = memory.malloc_large(5 * MiB, 5 * MiB + 512, 20 * MiB)
    b = memory.malloc_large(5 * MiB, 5 * MiB + 512, 20 * MiB)
    assert memory.segment_maps - maps == 1                 # one 20 MiB segment holds both
    assert b == a + 5 * MiB + 512
    assert memory.live[a].size == 5 * MiB + 512
    memory.free(a)
    memory.free(b)


def test_a_remainder_of_1_mib_or_less_stays_with_the_block(memory):
    a = memory.malloc_large(33 * MiB, 33 * MiB + 512, 34 * MiB)
    assert memory.live[a].size == 34 * MiB                  # 34 MiB - (33 MiB + 512) is under 1 MiB
    memory.free(a)


def test_an_oversize_block_is_not_split_nor_given_to_a_smaller_request(memory):
    big = memory.malloc_large(60 * MiB, 60 * MiB, 100 * MiB, max_split=50 * MiB)
    assert memory.live[big].size == 100 * MiB               # oversize request: never split
    memory.free(big)
    maps = memory.segment_maps
    small = memory.malloc_large(5 * MiB, 5 * MiB + 512, 20 * MiB, max_split=50 * MiB)
    assert memory.segment_maps - maps == 1                  # the cached 100 MiB block is not used
    assert small != big
    memory.free(small)


@pytest.mark.parametrize("max_round, new_segment", [(20 * MiB, True), (30 * MiB, False)])
def test_an_oversize_request_takes_a_cached_block_only_within_max_round(memory, max_round, new_segment):
    big = memory.malloc_large(100 * MiB, 100 * MiB, 100 * MiB, max_split=50 * MiB, max_round=max_round)
    memory.free(big)
    maps = memory.segment_maps
    got = memory.malloc_large(75 * MiB, 75 * MiB, 76 * MiB, max_split=50 * MiB, max_round=max_round)
    assert (memory.segment_maps - maps == 1) is new_segment  # 100 >= 75 + 20, but 100 < 75 + 30
    assert (got == big) is not new_segment
    memory.free(got)


def test_garbage_collection_gives_cached_whole_segments_back_before_mapping_more(memory):
    held = [memory.malloc_large(20 * MiB, 20 * MiB, 20 * MiB) for _ in range(3)]
    for addr in held:
        memory.free(addr)
    unmaps = memory.segment_unmaps
    got = memory.malloc_large(30 * MiB, 30 * MiB, 30 * MiB, gc_limit=40 * MiB)
    assert memory.segment_unmaps - unmaps == 1              # 60 MiB cached > 40: the oldest goes
    memory.free(got)
    unmaps = memory.segment_unmaps
    got = memory.malloc_large(40 * MiB, 40 * MiB, 40 * MiB)  # no limit: nothing is collected
    assert memory.segment_unmaps == unmaps
    memory.free(got)
