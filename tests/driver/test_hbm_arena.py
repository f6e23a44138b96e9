"""The HBM arena of a simulated device: lazily committed pages, accounting, release to the
OS, and the device address windows (issue 2, scope 2)."""
from __future__ import annotations

import numpy as np

from npurt.driver import SOCS, VA_BASE, SimulatedDevice, device_of_address
from npurt.driver.hbm import HUGE1G_PAGE, HUGE_PAGE, NORMAL_PAGE, HbmArena

GiB, MiB = 1 << 30, 1 << 20


def test_a_64_gib_device_maps_without_using_ram():
    """MAP_NORESERVE: the whole capacity is mapped (more than this 24 GiB machine has) and
    nothing is resident until touched."""
    dev = SimulatedDevice(0, SOCS["Ascend910B3"])
    assert dev.arena.capacity == 64 * GiB
    assert dev.arena.mem.size == 64 * GiB
    assert dev.arena.resident_bytes() == 0
    assert dev.arena.committed_bytes == 0


def test_the_last_page_of_a_64_gib_arena_is_backed_on_demand():
    dev = SimulatedDevice(0, SOCS["Ascend910B3"])
    last = dev.va_base + dev.arena.capacity - NORMAL_PAGE
    tail = dev.view(last, NORMAL_PAGE)
    tail[:] = 7
    assert int(tail.sum()) == 7 * NORMAL_PAGE
    assert NORMAL_PAGE <= dev.arena.resident_bytes() <= HUGE_PAGE  # one page, not the arena
    dev.reset()
    assert dev.arena.resident_bytes() == 0


def test_map_pages_accounts_committed_bytes_per_page_kind():
    arena = HbmArena(4 * GiB)
    a = arena.map_pages(10, NORMAL_PAGE)
    b = arena.map_pages(3 * MiB, HUGE_PAGE)
    c = arena.map_pages(1, HUGE1G_PAGE)
    assert arena.committed == {"normal": NORMAL_PAGE, "huge": 4 * MiB, "huge1g": GiB}
    assert arena.committed_bytes == NORMAL_PAGE + 4 * MiB + GiB
    assert arena.free_bytes == 4 * GiB - arena.committed_bytes
    assert a % NORMAL_PAGE == 0 and b % HUGE_PAGE == 0 and c % HUGE1G_PAGE == 0


def test_unmap_pages_gives_the_accounting_back():
    arena = HbmArena(1 * GiB)
    offs = [arena.map_pages(HUGE_PAGE, HUGE_PAGE) for _ in range(5)]
    for off in offs:
        arena.unmap_pages(off, HUGE_PAGE, HUGE_PAGE)
    assert arena.committed_bytes == 0
    assert arena.largest_free(HUGE_PAGE) == 1 * GiB  # freed ranges merged back into one


def test_map_pages_returns_none_when_the_arena_is_full():
    arena = HbmArena(8 * MiB)
    assert arena.map_pages(8 * MiB, HUGE_PAGE) == 0
    assert arena.map_pages(NORMAL_PAGE, NORMAL_PAGE) is None
    assert arena.map_pages(16 * MiB, HUGE_PAGE) is None


def test_ranges_handed_out_do_not_overlap():
    arena = HbmArena(64 * MiB)
    rng = np.random.default_rng()
    spans = []
    for size in rng.integers(1, 3 * MiB, size=12):
        page = HUGE_PAGE if size > MiB else NORMAL_PAGE
        off = arena.map_pages(int(size), page)
        assert off is not None
        spans.append((off, off + (int(size) + page - 1) // page * page))
    spans.sort()
    for (s0, e0), (s1, _) in zip(spans, spans[1:]):
        assert e0 <= s1


def test_release_all_returns_every_page():
    arena = HbmArena(256 * MiB)
    off = arena.map_pages(32 * MiB, HUGE_PAGE)
    arena.mem[off:off + 32 * MiB] = 1
    arena.release_all()
    assert arena.committed_bytes == 0
    assert arena.resident_bytes() == 0
    assert arena.largest_free(HUGE_PAGE) == 256 * MiB


def test_touched_then_unmapped_memory_really_leaves_ram():
    arena = HbmArena(1 * GiB)
    off = arena.map_pages(64 * MiB, HUGE_PAGE)
    arena.mem[off:off + 64 * MiB] = 0xFF  # touch every page
    assert arena.resident_bytes() >= 64 * MiB
    arena.unmap_pages(off, 64 * MiB, HUGE_PAGE)  # madvise(MADV_DONTNEED)
    assert arena.resident_bytes() < 1 * MiB


def test_resident_bytes_are_per_arena_when_two_arenas_exist():
    # the kernel may merge adjacent identical mappings; each arena must still count its own
    a, b = HbmArena(1 * GiB), HbmArena(1 * GiB)
    a.mem[:8 * MiB] = 1
    assert 8 * MiB <= a.resident_bytes() <= 10 * MiB  # (one huge page of slack where THP is on)
    assert b.resident_bytes() == 0


def test_unmapped_memory_reads_back_as_zero():
    arena = HbmArena(16 * MiB)
    off = arena.map_pages(HUGE_PAGE, HUGE_PAGE)
    arena.mem[off:off + 4096] = 9
    arena.unmap_pages(off, HUGE_PAGE, HUGE_PAGE)
    assert not arena.mem[off:off + 4096].any()


# ---------------------------------------------------------------- device address windows
def test_device_addresses_live_above_the_47_bit_host_range():
    dev = SimulatedDevice(0, SOCS["Ascend310P3"])
    va = dev.map_pages(NORMAL_PAGE, NORMAL_PAGE)
    assert va >= 1 << 47
    assert dev.va_base == VA_BASE > 1 << 47


def test_each_physical_device_has_its_own_address_window():
    d0 = SimulatedDevice(0, SOCS["Ascend310P3"])
    d3 = SimulatedDevice(3, SOCS["Ascend310P3"])
    assert d3.va_base - d0.va_base == 3 << 40
    assert device_of_address(d0.map_pages(NORMAL_PAGE, NORMAL_PAGE)) == 0
    assert device_of_address(d3.map_pages(NORMAL_PAGE, NORMAL_PAGE)) == 3
    assert device_of_address(0x7FFF_0000_0000) == -1  # a host address


def test_view_translates_device_addresses_to_the_arena():
    dev = SimulatedDevice(1, SOCS["Ascend310P3"])
    va = dev.map_pages(HUGE_PAGE, HUGE_PAGE)
    dev.view(va + 100, 4)[:] = [1, 2, 3, 4]
    off = va - dev.va_base
    assert list(dev.arena.mem[off + 100:off + 104]) == [1, 2, 3, 4]


def test_runtime_device_addresses_are_above_2_pow_47_and_per_device(rt):
    p0 = rt.malloc(100)
    rt.set_device(1)
    p1 = rt.malloc(100)
    assert p0 > 1 << 47 and p1 > 1 << 47
    assert device_of_address(p0) == 0 and device_of_address(p1) == 1


def _mapped_bytes(lo: int, hi: int) -> int:
    """How much of the host address range [lo, hi) this process has mapped (/proc/self/maps:
    per range, so other threads' mappings elsewhere do not count)."""
    total = 0
    with open("/proc/self/maps") as f:
        for line in f:
            a, b = (int(x, 16) for x in line.split(None, 1)[0].split("-"))
            total += max(0, min(b, hi) - max(a, lo))
    return total


def test_with_unlimited_address_space_the_window_s_place_next_to_the_memory_is_held(monkeypatch):
    # torch's views of reserved ranges need the window right after the memory on the host: that
    # space is kept reserved from the device's start, so no mapping made meanwhile can take it
    from npurt.driver import simulated, vmm
    monkeypatch.setattr(simulated, "hold_window_space", lambda: True)
    for name in ("Ascend910B3", "Ascend310P3"):  # a power-of-two memory and one that is not
        spec = SOCS[name]
        dev = SimulatedDevice(0, spec)
        try:
            assert dev.vmm is None
            assert vmm.map_anonymous_near(dev.arena.host_address + dev.vmm_base - dev.va_base, 1 << 20) is None
            dev.ensure_vmm_window()
            assert dev.adjacent and dev.vmm.host_address == dev.arena.host_address + (dev.vmm_base - dev.va_base)
        finally:
            dev.close()


def test_a_device_that_never_uses_vmm_reserves_no_host_window(monkeypatch):
    # under ulimit -v the VMM window (3x the memory) costs address space only from its first
    # use: a process that never reserves device addresses needs room for the memory alone
    from npurt.driver import simulated
    monkeypatch.setattr(simulated, "hold_window_space", lambda: False)
    spec = SOCS["Ascend910B3"]  # 64 GiB
    dev = SimulatedDevice(0, spec)
    try:
        assert dev.vmm is None and not dev.adjacent
        after_memory = dev.arena.host_address + spec.memory_bytes
        assert _mapped_bytes(after_memory, after_memory + 3 * spec.memory_bytes) == 0
        window = dev.ensure_vmm_window()
        assert dev.vmm is window and dev.ensure_vmm_window() is window
        assert _mapped_bytes(window.host_address, window.host_address + window.size) == window.size
        assert dev.vmm_base == dev.va_base + spec.memory_bytes and dev.vmm_size == 3 * spec.memory_bytes
    finally:
        dev.close()


def test_vmm_window_device_addresses_do_not_depend_on_its_host_reservation():
    spec = SOCS["Ascend910B3"]
    a, b = SimulatedDevice(0, spec, generation=3), SimulatedDevice(1, spec, generation=3)
    try:
        a.ensure_vmm_window()  # b's stays unreserved
        assert a.vmm_base - a.va_base == b.vmm_base - b.va_base == spec.memory_bytes
        assert a.va_base - (VA_BASE) == b.va_base - (VA_BASE + (1 << 40))
    finally:
        a.close(), b.close()


def test_stale_memory_of_the_last_four_driver_instances_never_lies_in_live_memory():
    # a 64 GiB device has 5 placements: addresses kept across a finalize and a new init (up to
    # four times) point outside the memory the new instance hands out, so they are caught
    spec = SOCS["Ascend910B3"]
    size = spec.memory_bytes
    bases = []
    for generation in range(5):
        dev = SimulatedDevice(0, spec, generation=generation)
        bases.append(dev.va_base)
        dev.close()
    assert len(set(bases)) == 5
    for live, base in enumerate(bases):
        for stale in bases[:live]:
            assert stale + size <= base or stale >= base + size
