"""Every script in examples/pyacl runs unmodified through `npurt run` and prints what it
should (each script checks its own results and prints them as True/False lines)."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "pyacl"

# script -> lines its output must contain
EXPECTED = {
    "hello.py": ["devices: 2, soc: Ascend910B3", "device 0 ready, run mode 1 (host)", "hello: teardown complete"],
    "memcpy_sync.py": ["data matches: True", "bytes round trip matches: True"],
    "memcpy_async.py": ["5 async copies done, stream status 0 (0 = complete)", "async round trip matches: True"],
    "memcpy_d2d.py": ["sync D2D matches: True", "async D2D (first half) + memset (second half) matches: True"],
    "multi_stream_events.py": ["event recorded status complete: True", "event wait status complete: True",
                               "event reset for reuse: True", "two-stream pipeline matches: True"],
    "event_timing.py": ["end event complete: True", "elapsed time is a non-negative float: True",
                        "timestamps ordered: True"],
    "callbacks.py": ["callbacks run: 3", "callbacks in stream order: True", "user data passed through: True"],
    "image_classification.py": ["probabilities sum to 1: True", "npu results match onnxruntime: True",
                                "classification: teardown complete"],
    "async_inference.py": ["batches post-processed by the callback: 6", "npu results match onnxruntime: True",
                           "async inference: teardown complete"],
    "kernel_launch.py": ["loaded kernel 'vadd' from vadd.py", "vadd over 8 blocks matches numpy: True",
                         "scale via kernel_args matches numpy: True"],
    "dvpp_classify.py": ["decoded sample.jpg: 320 x 240, NV12 stride 320 x 240",
                         "JPEGD luma matches Pillow's decode: True", "VPC resized to 64 x 64: True",
                         "AIPP model (YUV420SP -> RGB) gives the picture's colour means: True"],
    "error_handling.py": ["second acl.init returns ACL_ERROR_REPEAT_INITIALIZE: True",
                          "malloc(0) returns ACL_ERROR_INVALID_PARAM: True",
                          "recent error message names the call: True", "peek keeps the code: True",
                          "get_last_error returns then clears it: True", "launch is accepted (async): True",
                          "synchronize_stream reports the AI core exception: True",
                          "message names the kernel: True", "exception callback saw it: True",
                          "finalize twice returns ACL_ERROR_REPEAT_FINALIZE: True"],
    "profiling.py": ["pipeline result matches: True", "profile written: True", "summaries written: True"],
}


def _run(script: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NPURT_", "ASCEND_"))}
    return subprocess.run([sys.executable, "-m", "npurt.cli", "run", str(script)], capture_output=True,
                          text=True, timeout=120, env=env, cwd=str(script.parent))


def test_every_example_has_expected_output():
    scripts = sorted(p.name for p in EXAMPLES.glob("*.py"))
    assert scripts == sorted(EXPECTED)
    assert len(scripts) >= 8


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs_through_npurt_run(name):
    result = _run(EXAMPLES / name)
    assert result.returncode == 0, result.stderr
    out = result.stdout.splitlines()
    for line in EXPECTED[name]:
        assert line in out, f"{name}: missing {line!r} in:\n{result.stdout}\n{result.stderr}"
    assert "False" not in result.stdout


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_is_plain_pyacl(name):
    """Imports `acl` and nothing of npurt (a string holding kernel source may mention it)."""
    tree = ast.parse((EXAMPLES / name).read_text())
    modules = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
               for alias in node.names}
    modules |= {node.module.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module}
    assert "acl" in modules
    assert "npurt" not in modules
