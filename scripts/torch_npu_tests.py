#!/usr/bin/env python
"""Run torch_npu's own runtime-level tests against npurt, unmodified, and count the results.

    python scripts/torch_npu_tests.py --checkout PATH/TO/Ascend-pytorch [--out results.json]
                                      [--files test/npu/test_stream.py ...] [--timeout 900]

PATH is a checkout of Ascend/pytorch (torch_npu's source; never part of npurt). Each test file
runs in its own `pytest` process with `import torch_npu` resolving to npurt's shim (as under
`npurt run --torch-npu`) and npurt's src/ on the path. Only the *harness* is stood in, by
scripts/torch_npu_harness.py: `torch_npu.testing` is the checkout's own package directory
(its testcase.py, common_utils.py, ... are used as they are, without their package __init__,
which imports torch's op-info database), and `torch_npu.utils._path_manager`, a file helper
those modules import, is a small stand-in. Test files are not copied or changed.

The default file list (RUNTIME_TESTS) is torch_npu's runtime-level tests: streams, events,
synchronisation, memory statistics and the caching allocator, devices, pinned memory, copies,
record_stream, tensor basics, options, the device-generic layer, graph capture and IPC. The
summary counts passed / failed / errored / skipped per file and overall; the pass rate is
passed over collected tests (a skip is not a pass).
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")

# torch_npu's runtime-level tests; the graph-capture and memory-pool files are listed apart
RUNTIME_TESTS = [
    "test/test_npu.py", "test/npu/test_npu.py", "test/npu/test_torch_npu.py", "test/npu/test_stream.py",
    "test/npu/test_device.py", "test/npu/test_copy.py", "test/npu/test_tensor.py", "test/npu/test_tensors.py",
    "test/npu/test_storage.py", "test/test_npu_allocator.py", "test/test_npu_multinpu.py",
    "test/test_npu_pinned_memory_background_threads.py", "test/npu/test_pin_memory_withoutsetdevice.py",
    "test/npu/test_pin_memory_host_register.py", "test/npu/test_per_process_memory_fraction.py",
    "test/npu/test_allocator_envs.py", "test/npu/test_npu_sleep.py", "test/npu/test_multi_stream_lazy_reclaim.py",
    "test/npu/test_no_npu_memory_caching.py", "test/npu/test_roundup_power2_divisions.py",
    "test/npu/test_custom_segment_size.py", "test/npu/test_large_segment_size.py", "test/npu/test_option.py",
    "test/npu/test_torch_backends.py", "test/test_accelerator.py", "test/npu/test_multi_devices_single_process.py",
    "test/npu/test_stream_check.py",
]
# waiting on graph capture (NPUGraph) and the memory issue (MemPool, expandable segments, IPC)
DEPENDENT_TESTS = [
    "test/npu/test_ipc_event.py", "test/npu/test_expandable_segments.py", "test/npu/test_mempool_destructor.py",
    "test/npu/test_graph_tree.py", "test/npu/test_npugraph_handler.py",
    "test/npu/test_aclgraph_conditional_nodes.py", "test/npu/test_aclgraph_dfx.py",
    "test/npu/test_aclgraph_launch_host_func.py", "test/npu/test_aclgraph_multi_stream.py",
    "test/npu/test_aclgraph_pin_memory.py", "test/npu/test_aclgraph_rng_state.py",
    "test/npu/test_aclgraph_super_kernel.py", "test/npu/test_aclgraph_support_blocking.py",
    "test/npu/test_aclgraph_update.py", "test/npu/test_aclgraph_update_plan.py",
]


def count_tests(path: str) -> int:
    """The test methods a file defines (test* functions in classes and at module level)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    n = 0
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            n += 1
    return n


def run_file(checkout: str, rel: str, timeout: int, workdir: str) -> dict:
    path = os.path.join(checkout, rel)
    xml = os.path.join(workdir, rel.replace("/", "_") + ".xml")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [HERE, SRC, env.get("PYTHONPATH")]))
    env["NPURT_TORCH_NPU_CHECKOUT"] = os.path.abspath(checkout)
    env.setdefault("NPURT_DEVICE_COUNT", "2")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "torch_npu_harness",
           "--junitxml", xml, "-o", "junit_family=xunit1", path]
    try:
        proc = subprocess.run(cmd, env=env, cwd=os.path.dirname(path), capture_output=True, text=True,
                              timeout=timeout)
        tail = (proc.stdout + proc.stderr)[-3000:]
    except subprocess.TimeoutExpired as exc:
        tail = f"timed out after {timeout} s: {exc}"
    result = {"file": rel, "passed": 0, "failed": 0, "errors": 0, "skipped": 0, "cases": {}}
    cases = list(ET.parse(xml).getroot().iter("testcase")) if os.path.exists(xml) else []
    if all(c.get("name") in (None, "", os.path.splitext(os.path.basename(rel))[0]) for c in cases):
        # the module failed to import (or pytest did not run): each of its tests counts as an error
        result["errors"] = max(1, count_tests(path))
        result["cases"]["<import>"] = ["errors", tail[-300:]]
        result["tail"] = tail
        return result
    for case in cases:
        name = f"{case.get('classname')}::{case.get('name')}"
        kinds = {child.tag for child in case}
        if "error" in kinds:
            outcome = "errors"
        elif "failure" in kinds:
            outcome = "failed"
        elif "skipped" in kinds:
            outcome = "skipped"
        else:
            outcome = "passed"
        result[outcome] += 1
        detail = next((c.get("message", "") for c in case if c.tag in ("error", "failure", "skipped")), "")
        result["cases"][name] = [outcome, detail[:300]]
    result["tail"] = tail[-800:]
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkout", required=True, help="a checkout of Ascend/pytorch (torch_npu's source)")
    ap.add_argument("--files", nargs="*", help="test files relative to the checkout (default: RUNTIME_TESTS)")
    ap.add_argument("--with-dependent", action="store_true", help="also run the graph-capture / MemPool / IPC files")
    ap.add_argument("--out", help="write every case's outcome to this JSON file")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per file")
    args = ap.parse_args(argv)
    files = args.files or (RUNTIME_TESTS + (DEPENDENT_TESTS if args.with_dependent else []))
    totals = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    results = []
    with tempfile.TemporaryDirectory() as workdir:
        for rel in files:
            r = run_file(args.checkout, rel, args.timeout, workdir)
            results.append(r)
            for k in totals:
                totals[k] += r[k]
            print(f"{rel:60s} passed {r['passed']:4d}  failed {r['failed']:4d}  errors {r['errors']:4d}  "
                  f"skipped {r['skipped']:4d}", flush=True)
    total = sum(totals.values())
    rate = totals["passed"] / total if total else 0.0
    print(f"{'total':60s} passed {totals['passed']:4d}  failed {totals['failed']:4d}  errors {totals['errors']:4d}  "
          f"skipped {totals['skipped']:4d}   pass rate {rate:.1%} of {total}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"totals": totals, "pass_rate": rate, "files": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
