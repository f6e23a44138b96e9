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
summary counts passed / failed / errored / skipped per file and overall; a skip is not a pass,
except that a skip whose reason holds on torch_npu's own CI machines too (a slow test, an
unconditional `@unittest.skip`, ROCm- or CUDA-only: scripts/torch_npu_ci_skips.py has the
rules) is a test its CI does not run either, counted apart as "skipped on its CI too" and left
out of the pass rate's denominator like the disabled ones. A test that kills its pytest process (a
crash) or runs past --test-timeout counts as failed, and the rest of its file runs on in a new
process; a file past --timeout keeps the outcomes it had.

torch_npu's CI does not run every test it has: it skips those its disabled-tests list names
(`test/unsupported_test_cases/.pytorch-disabled-tests.json`, applied by torch_npu.testing;
scripts/torch_npu_disabled.py holds the rule). They are skipped here too and counted apart as
"disabled"; the pass rate is given over the tests torch_npu's CI runs (collected less disabled,
less skipped on its CI too)
and over all collected tests. --run-disabled runs them as well (their outcomes then count as
any other test's).
"""
from __future__ import annotations

import argparse
import ast
import json
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

import torch_npu_ci_skips
import torch_npu_disabled

HAVE_TIMEOUT_PLUGIN = importlib.util.find_spec("pytest_timeout") is not None
HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")
TORCH_NPU_PATH = os.path.join(SRC, "npurt", "apps", "torch_npu_path")

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


OUTCOME = re.compile(r"^(\S.*?::\S.*?) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")
STARTED = re.compile(r"^(\S.*?::\S+)\s*$")
# torch_npu's CI runs the files with unittest, whose run succeeds on an expected failure
# (`@unittest.expectedFailure` that fails: pytest's XFAIL) and fails on an unexpected success
KIND = {"PASSED": "passed", "XPASS": "failed", "FAILED": "failed", "ERROR": "errors", "SKIPPED": "skipped",
        "XFAIL": "passed"}
RANK = {"passed": 0, "skipped": 1, "ci_skipped": 1, "disabled": 1, "failed": 2, "errors": 3}
KINDS = ("passed", "failed", "errors", "skipped", "ci_skipped", "disabled")
# a line "==== warnings summary ====" (or FAILURES, short test summary info, ...) ends the
# per-test lines: the node ids listed under it are not tests that started
SECTION = re.compile(r"^=+ .+ =+$")


def _details(xml: str) -> dict:
    """test name -> the failure / error / skip message, from a junit file (when pytest wrote one)."""
    out = {}
    if not os.path.exists(xml):
        return out
    try:
        cases = ET.parse(xml).getroot().iter("testcase")
    except ET.ParseError:
        return out
    for case in cases:
        detail = next((c.get("message", "") for c in case if c.tag in ("error", "failure", "skipped")), "")
        out[case.get("name")] = detail
    return out


def read_outcomes(out: str, outcomes: dict, details: dict, disabled: set, ci_skip) -> str | None:
    """Add the outcomes pytest -v printed (node -> [kind, detail]) to `outcomes`; return the
    test that started last without an outcome (the process died in it), else None.
    `details`: test name -> message (junit); `disabled`: 'Class::method' of the disabled tests;
    `ci_skip(node, message)`: the rule by which a skip holds on torch_npu's CI too, or None."""
    last_started = None
    sections = 0
    for line in out.splitlines():
        if SECTION.match(line):
            sections += 1  # the first is "test session starts"
            continue
        m = OUTCOME.match(line)
        if m:
            node, kind = m.group(1), KIND[m.group(2)]
            detail = details.get(node.rsplit("::", 1)[-1], "")
            if kind == "skipped" and node.split("::", 1)[-1] in disabled:
                kind = "disabled"
            elif kind == "skipped":
                rule = ci_skip(node, detail)
                if rule:
                    kind, detail = "ci_skipped", f"[{rule}] {detail}"
            if RANK[kind] >= RANK.get(outcomes.get(node, ["passed"])[0], 0) or node not in outcomes:
                outcomes[node] = [kind, detail[:300]]
            last_started = None
        elif sections <= 1:
            m = STARTED.match(line)
            if m and "::" in m.group(1) and not line.startswith(("FAILED", "ERROR")):
                last_started = m.group(1)
    return None if last_started in outcomes else last_started


def cann_environment(env: dict) -> dict:
    """What a CANN machine's set_env.sh gives the tests' processes, over npurt's prefix
    (`npurt cann-home`): its lib64 on the loader's and linker's paths, and its include/ on the
    compiler's (torch_npu's shipped ACL headers, npurt/torch/shim/include/third_party, forward
    there), so the C++ extensions tests build against torch_npu link and load npurt's
    libascendcl. Empty when the prefix cannot be made here (no compiler, no cffi)."""
    proc = subprocess.run([sys.executable, "-m", "npurt", "cann-home"], env=env, capture_output=True, text=True)
    prefix = proc.stdout.strip().splitlines()[-1] if proc.returncode == 0 and proc.stdout.strip() else ""
    if not os.path.isdir(os.path.join(prefix, "lib64")):
        print(f"npurt cann-home failed; C++ extensions will not build: {proc.stderr[-300:]}", file=sys.stderr)
        return {}
    out = {}
    for name, sub in (("LD_LIBRARY_PATH", "lib64"), ("LIBRARY_PATH", "lib64"), ("CPATH", "include")):
        out[name] = os.pathsep.join(filter(None, [os.path.join(prefix, sub), env.get(name)]))
    return out


def run_file(checkout: str, rel: str, timeout: int, workdir: str, per_test: int = 300,
             disabled_list: str = "", cann_env: dict | None = None) -> dict:
    """Run one test file; a test that kills the pytest process (a crash, or its own timeout)
    counts as failed and the file goes on from the test after it, in a new process."""
    path = os.path.join(checkout, rel)
    env = dict(os.environ)
    # TORCH_NPU_PATH: `import torch_npu` in the tests' own subprocesses (python -c, spawn), as
    # `npurt run --torch-npu` gives its children
    # and torch_npu_site/sitecustomize.py: their torch_npu.testing is the harness's too
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [HERE, os.path.join(HERE, "torch_npu_site"), SRC,
                                                      TORCH_NPU_PATH, env.get("PYTHONPATH")]))
    env["NPURT_TORCH_NPU_CHECKOUT"] = os.path.abspath(checkout)
    env.setdefault("NPURT_DEVICE_COUNT", "2")
    env["NPURT_TORCH_NPU_DISABLED_TESTS"] = disabled_list
    listing = os.path.join(workdir, f"{rel.replace('/', '_')}.disabled")
    env["NPURT_TORCH_NPU_DISABLED_OUT"] = listing
    env.update(cann_env or {})
    result = {"file": rel, **{k: 0 for k in KINDS}, "cases": {}}
    with open(path, encoding="utf-8") as f:
        source = f.read()
    ci_skips, tests = torch_npu_ci_skips.decorated(source), torch_npu_ci_skips.test_names(source)
    outcomes: dict = {}
    deadline = time.monotonic() + timeout
    tail = ""
    prefix = ""
    for rnd in range(50):
        left = deadline - time.monotonic()
        if left <= 1:
            tail += f"\ntimed out after {timeout} s"
            break
        xml = os.path.join(workdir, f"{rel.replace('/', '_')}.{rnd}.xml")
        cmd = [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-p", "torch_npu_harness",
               "--junitxml", xml, "-o", "junit_family=xunit1", path]
        if HAVE_TIMEOUT_PLUGIN:
            cmd[3:3] = ["--timeout", str(per_test)]
        for done in outcomes:
            # -v prints node ids relative to the file's directory; --deselect takes them
            # relative to pytest's rootdir (the checkout, by its pyproject.toml)
            cmd += ["--deselect", f"{prefix}/{done}" if prefix not in ("", ".") else done]
        crashed = None
        try:
            proc = subprocess.run(cmd, env=env, cwd=os.path.dirname(path), capture_output=True, text=True,
                                  timeout=left)
            out, code = proc.stdout, proc.returncode
            tail = (proc.stdout + proc.stderr)[-3000:]
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            code, tail = None, f"timed out after {timeout} s"
        root = re.search(r"^rootdir: (.+?)(?:,|$)", out, re.M)
        if root:
            prefix = os.path.relpath(os.path.dirname(path), root.group(1).strip())
        details = _details(xml)
        disabled = set()
        if os.path.exists(listing):
            with open(listing, encoding="utf-8") as f:
                # "Class::method" (pytest's node ids here are relative to the invocation dir,
                # the harness's to the rootdir)
                disabled = {node.split("::", 1)[-1] for node in f.read().split()}
        last_started = read_outcomes(
            out, outcomes, details, disabled, lambda node, msg: torch_npu_ci_skips.classify(ci_skips, tests, node, msg))
        if last_started is not None:
            crashed = last_started
            why = "timed out" if code is None else f"the pytest process died (exit status {code})"
            outcomes[crashed] = ["failed", f"crashed: {why} during this test"]
        if crashed is None:
            break
    if not outcomes:
        # the module failed to import (or pytest did not run): each of its tests counts as an error
        result["errors"] = max(1, count_tests(path))
        result["cases"]["<import>"] = ["errors", tail[-300:]]
        result["tail"] = tail
        return result
    for node, (kind, detail) in outcomes.items():
        result[kind] += 1
        result["cases"][node] = [kind, detail]
    result["tail"] = tail[-800:]
    return result


def _counts(r: dict) -> str:
    return (f"passed {r['passed']:4d}  failed {r['failed']:4d}  errors {r['errors']:4d}  skipped {r['skipped']:4d}  "
            f"skipped on its CI too {r['ci_skipped']:4d}  disabled {r['disabled']:4d}")


def ci_skip_reasons(results: list) -> dict:
    """rule -> the tests it left out of the count, with their skip messages."""
    out: dict = {}
    for r in results:
        for node, (kind, detail) in r["cases"].items():
            if kind == "ci_skipped":
                rule, _, message = detail[1:].partition("] ")
                out.setdefault(rule, []).append(f"{r['file']}::{node.split('::', 1)[-1]}: {message}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkout", required=True, help="a checkout of Ascend/pytorch (torch_npu's source)")
    ap.add_argument("--files", nargs="*", help="test files relative to the checkout (default: RUNTIME_TESTS)")
    ap.add_argument("--with-dependent", action="store_true", help="also run the graph-capture / MemPool / IPC files")
    ap.add_argument("--out", help="write every case's outcome to this JSON file")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per file")
    ap.add_argument("--test-timeout", type=int, default=300,
                    help="seconds per test (with pytest-timeout installed); a test past it counts as failed")
    ap.add_argument("--run-disabled", action="store_true",
                    help="also run the tests torch_npu's CI disables (its disabled-tests list)")
    args = ap.parse_args(argv)
    files = args.files or (RUNTIME_TESTS + (DEPENDENT_TESTS if args.with_dependent else []))
    disabled_list = os.path.join(os.path.abspath(args.checkout), torch_npu_disabled.DEFAULT_LIST)
    if args.run_disabled or not os.path.exists(disabled_list):
        disabled_list = ""
    totals = {k: 0 for k in KINDS}
    results = []
    cann_env = cann_environment(dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [
        SRC, os.environ.get("PYTHONPATH")]))))
    with tempfile.TemporaryDirectory() as workdir:
        for rel in files:
            r = run_file(args.checkout, rel, args.timeout, workdir, args.test_timeout, disabled_list, cann_env)
            results.append(r)
            for k in totals:
                totals[k] += r[k]
            print(f"{rel:60s} {_counts(r)}", flush=True)
    total = sum(totals.values())
    ci_run = total - totals["disabled"] - totals["ci_skipped"]
    rate = totals["passed"] / ci_run if ci_run else 0.0
    rate_all = totals["passed"] / total if total else 0.0
    print(f"{'total':60s} {_counts(totals)}")
    print(f"pass rate {rate:.1%} of the {ci_run} tests torch_npu's CI runs; {rate_all:.1%} of all {total} collected")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"totals": totals, "pass_rate": rate, "pass_rate_all": rate_all, "ci_run": ci_run,
                       "ci_skip_rules": torch_npu_ci_skips.REASONS, "ci_skipped": ci_skip_reasons(results),
                       "files": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
