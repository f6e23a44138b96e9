"""The driver contract: everything the runtime asks of the hardware, held by two drivers.

`npurt.driver` declares the contract (Driver, DeviceBackend, Cores); the simulated NPU and
the null driver (addresses and accounting, no memory, no execution) both implement it, and
the runtime runs on either: it reaches the hardware only through the contract.
"""
import dataclasses
import os
import subprocess
import sys

import numpy as np
import pytest

from npurt import driver
from npurt.driver import layout
from npurt.driver.hbm import HUGE_PAGE, NORMAL_PAGE
from npurt.driver.soc import SOCS



def _spec():
    """A small Ascend910B3 (256 MiB): the contract does not depend on the capacity."""
    return dataclasses.replace(SOCS["Ascend910B3"], memory_bytes=256 << 20, system_reserved=16 << 20)


@pytest.fixture(params=sorted(driver.DRIVERS))
def drv(request):
    d = driver.open(request.param, _spec(), 2)
    yield d
    d.close()


def test_both_drivers_implement_the_whole_contract(drv):
    assert isinstance(drv, driver.Driver)
    assert isinstance(drv.cores, driver.Cores)
    dev = drv.device(1)
    assert isinstance(dev, driver.DeviceBackend)
    assert drv.device(1) is dev  # one backend per physical device
    assert len(dev.uuid) == 16


def test_addresses_follow_the_layout_and_are_page_aligned(drv):
    dev = drv.device(1)
    a = dev.map_pages(5000, NORMAL_PAGE)
    b = dev.map_pages(1, HUGE_PAGE)
    assert layout.physical_of(a) == layout.physical_of(b) == 1
    assert a % NORMAL_PAGE == 0 and b % HUGE_PAGE == 0 and a != b
    assert not layout.is_alias(a) and layout.is_alias(dev.alias_base)
    assert dev.va_base <= a < dev.alias_base
    assert layout.physical_of(0x1000) == -1


def test_accounting_counts_committed_pages_and_refuses_past_capacity(drv):
    dev = drv.device(0)
    before = dev.committed_bytes
    a = dev.map_pages(5000, NORMAL_PAGE)
    assert dev.committed_bytes == before + 8192
    assert dev.free_bytes == dev.usable - dev.committed_bytes
    assert dev.map_pages(dev.usable + 1, NORMAL_PAGE) is None  # full: None, not an exception
    dev.unmap_pages(a, 5000, NORMAL_PAGE)
    assert dev.committed_bytes == before
    assert dev.largest_free(HUGE_PAGE) >= dev.usable - HUGE_PAGE


def test_the_null_device_accounts_exactly_as_the_simulated_one():
    """One accounting for both (driver/paged.py): the same maps and unmaps give the same
    offsets, committed bytes, largest free range and the same refusal when full."""
    drivers = [driver.open(name, _spec(), 1) for name in ("null", "simulated")]
    seen = []
    for dev in (d.device(0) for d in drivers):
        trace = []
        a = dev.map_pages(3 << 20, HUGE_PAGE)
        b = dev.map_pages(5000, NORMAL_PAGE)
        dev.unmap_pages(a, 3 << 20, HUGE_PAGE)
        c = dev.map_pages(1 << 20, NORMAL_PAGE)
        trace += [x - dev.va_base for x in (a, b, c)]
        trace += [dev.committed_bytes, dev.free_bytes, dev.largest_free(HUGE_PAGE)]
        trace.append(dev.map_pages(dev.free_bytes + HUGE_PAGE, HUGE_PAGE))
        dev.reset()
        trace.append(dev.committed_bytes)
        seen.append(trace)
    for d in drivers:
        d.close()
    assert seen[0] == seen[1]
    assert seen[0][-1] == 0 and seen[0][-2] is None


def test_views_are_writable_bytes_of_the_asked_length(drv):
    dev = drv.device(0)
    a = dev.map_pages(4096, NORMAL_PAGE)
    v = dev.view(a, 100)
    assert v.dtype == np.uint8 and v.shape == (100,)
    v[:] = 7  # the null driver keeps nothing, but takes the write


def test_the_simulated_memory_is_one_host_buffer_and_the_null_driver_has_none():
    sim = driver.open("simulated", _spec(), 1)
    null = driver.open("null", _spec(), 1)
    try:
        dev = sim.device(0)
        a = dev.map_pages(4096, NORMAL_PAGE)
        dev.view(a, 4)[:] = [1, 2, 3, 4]
        buf = dev.host_buffer()
        assert list(buf[a - dev.va_base:a - dev.va_base + 4]) == [1, 2, 3, 4]
        assert null.device(0).host_buffer() is None
    finally:
        sim.close()
        null.close()


def test_null_cores_run_no_block_and_simulated_cores_run_each_once():
    ran = []
    null = driver.open("null", _spec(), 1)
    null.cores.run(8, ran.append)
    assert ran == [] and null.cores.launched == 8
    sim = driver.open("simulated", _spec(), 1)
    try:
        sim.cores.run(8, ran.append)
        assert sorted(ran) == list(range(8))
    finally:
        sim.close()


def test_unknown_driver_names_the_choices():
    with pytest.raises(ValueError, match="null, simulated"):
        driver.open("cuda", _spec(), 1)


def test_the_runtime_runs_on_the_null_driver():
    """malloc, copies, memset, a kernel launch and stats work with no memory behind the
    addresses: the runtime needs nothing outside the contract. (A fresh process: the
    driver is chosen when the runtime starts.)"""
    code = """
import numpy as np, npurt.runtime as rt
from npurt.runtime import RUNTIME
rt.set_device(0)
assert RUNTIME.driver.name == "null"
p = rt.malloc(1 << 20)
host = np.ones(1 << 18, np.float32)
rt.memcpy(p, 1 << 20, host.ctypes.data, 1 << 20, 1)
rt.memset(p, 1 << 20, 0, 1 << 20)
from npurt.runtime import GM, kernel_function, launch_function
@kernel_function
def never(ctx, x: GM):
    raise RuntimeError("a block ran on the null driver")
launch_function(never, 4, (p,))
rt.synchronize_device()
assert RUNTIME.driver.cores.launched == 4
assert rt.memory_stats(0)["allocated_bytes"] >= 1 << 20
rt.free(p)
free, total = rt.get_mem_info(rt.constants.ACL_HBM_MEM)
assert 0 < free <= total
rt.reset_device(0)
print("ok")
"""
    env = dict(os.environ, NPURT_DRIVER="null", NPURT_HBM_SIZE="256M")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
