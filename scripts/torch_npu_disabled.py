"""torch_npu's CI list of disabled tests, and the rule its harness matches a test against it.

torch_npu's CI runs its tests with `DISABLED_TESTS_FILE` pointing at the checkout's
`test/unsupported_test_cases/.pytorch-disabled-tests.json` (test/README.md); its
`torch_npu.testing` package then skips every test the file names (`_check_if_enable_npu` in
torch_npu/testing/__init__.py). The harness here skips that package __init__, so this module
carries the same rule: an entry is `"<method> (__main__.<Class>)": [issue, platforms]`; a test
matches when its class name starts with the entry's class (PRIVATEUSE1 and NPU taken as one
another) and its method name, as written or without its device / dtype suffix, is the entry's.
Entries whose platforms name 910A are for that chip only and are dropped, as torch_npu does on
other chips. The module is pure (no torch) so the counting script can use it too.
"""
from __future__ import annotations

import json
import os
import re

DEFAULT_LIST = os.path.join("test", "unsupported_test_cases", ".pytorch-disabled-tests.json")
SKIP_REASON = "disabled in torch_npu's CI"


def load(path: str) -> dict[str, set[str]]:
    """method name -> the class names it is disabled for, from a disabled-tests JSON file."""
    with open(path, encoding="utf-8") as f:
        entries = json.load(f)
    table: dict[str, set[str]] = {}
    for target, value in entries.items():
        if not isinstance(value, list) or len(value) < 2:
            continue
        platforms = value[1]
        if platforms and any("910A" in str(p) for p in platforms):
            continue
        parts = re.split(" (?=\\(__main__)", target) if "__main__" in target else target.split()
        if len(parts) < 2:
            continue  # a malformed entry disables nothing (as in torch_npu)
        classname = parts[1][1:-1].split(".")[-1]
        table.setdefault(parts[0], set()).add(classname)
    return table


def is_disabled(table: dict[str, set[str]], classname: str, method: str, sanitized: str | None = None) -> bool:
    """Whether torch_npu's CI skips `classname.method` (sanitized: the method without its
    device / dtype suffix, as torch's remove_device_and_dtype_suffixes gives it)."""
    for name in {method, sanitized or method}:
        for target_class in table.get(name, ()):
            alias = target_class.replace("PRIVATEUSE1", "NPU") if "PRIVATEUSE1" in target_class \
                else target_class.replace("NPU", "PRIVATEUSE1")
            if classname.startswith(target_class) or classname.startswith(alias):
                return True
    return False
