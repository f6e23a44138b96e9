"""What a host dereference of device memory was: the message libacl_rt.so prints before the
SIGSEGV goes on (c/start.c installs the handler, chaining to the one there before).

On an NPU, reading device memory on the host faults too; npurt's device addresses lie above
the 47-bit user space (the driver's VA_BASE), so the access faults the same way. This module
says which allocation the address is in and what to do instead.
"""
from __future__ import annotations

from .. import runtime as rt


def describe_fault(addr: int, exact: bool = False) -> str:
    """The explanation for a fault at (or, when not `exact`, through a register holding)
    device address `addr`. x86-64 does not report the address of a non-canonical access, so
    the handler finds the device address the access used in the registers: the access may be
    at an offset from it."""
    try:
        attrs = rt.pointer_get_attributes(addr)
    except Exception:  # noqa: BLE001 - a freed or unknown address: say what is known
        attrs = None
    head = (f"\nnpurt: the program dereferenced {'' if exact else 'an address at or near '}0x{addr:x} on the host, ")
    if attrs and attrs.get("size"):
        where = (f"which is device memory of device {attrs['location']['id']}: {attrs['size']} bytes from "
                 f"aclrtMalloc at 0x{attrs['allocation']:x} (offset {addr - attrs['allocation']})")
    else:
        where = "which is a device address (not memory the host can read; freed, or never allocated)"
    return (head + where + ".\n  The host cannot read or write device memory (on an NPU this faults too). "
            "Copy it with aclrtMemcpy(hostBuf, size, devPtr, size, ACL_MEMCPY_DEVICE_TO_HOST) and use the "
            "copy, or allocate host memory with aclrtMallocHost.\n")
