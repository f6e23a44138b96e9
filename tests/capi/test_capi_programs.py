"""C programs against the prefix: each one checks itself and prints "<name>: ok"."""
from __future__ import annotations

import subprocess

import pytest


def run_ok(program, name, *args, **kw):
    res = program.run(*args, **kw)
    assert res.returncode == 0 and f"{name}: ok" in res.stdout, res.stdout + res.stderr
    return res


def test_memory_in_every_direction(build_c):
    res = run_ok(build_c("memory.c"), "memory")
    assert "oversized copy: 107000 aclrtMemcpy: count (32) is larger than destMax (16)" in res.stdout


def test_a_program_runs_with_only_set_env_sh(build_c):
    """No Python environment of its own: env -i plus the prefix's set_env.sh."""
    import subprocess
    prog = build_c("memory.c")
    res = subprocess.run(["env", "-i", "bash", "-c", f". {prog.prefix}/set_env.sh && PYTHONPATH=/nonexistent "
                          f"PYTHONHOME=/nonexistent {prog.exe}"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "memory: ok" in res.stdout, res.stdout + res.stderr


def test_streams_and_events(build_c):
    res = run_ok(build_c("streams_events.c"), "streams_events")
    assert "stale event: 107017" in res.stdout
    assert "stub: 207000 aclrtGetGroupCount: not supported by npurt: npurt does not implement it" in res.stdout


def test_callbacks_and_host_functions_run_on_the_right_threads(build_c):
    run_ok(build_c("callbacks.cpp"), "callbacks")


def test_four_c_threads_at_once(build_c):
    run_ok(build_c("threads.cpp"), "threads")


def test_a_host_dereference_of_device_memory_is_sigsegv_explained(build_c):
    import signal
    res = build_c("fault.c").run()
    assert res.returncode == -signal.SIGSEGV, (res.returncode, res.stdout, res.stderr)
    assert "about to read device memory" in res.stdout
    assert "device memory of device 0: 4096 bytes from aclrtMalloc" in res.stderr
    assert "aclrtMemcpy" in res.stderr
    # where it was allocated: the call site in the program (fault.c's allocate_buffer), with
    # the addr2line command that names its source line
    assert "It was allocated by aclrtMalloc called from" in res.stderr, res.stderr
    site = res.stderr.split("called from ", 1)[1].split("\n", 1)[0]
    assert "allocate_buffer+0x" in site and f"addr2line -f -e {build_c('fault.c').exe} 0x" in site, site


def test_no_call_succeeds_when_the_python_side_cannot_start(build_c, tmp_path):
    """A prefix whose config names a Python without npurt: every call returns an error and
    aclGetRecentErrMsg says why (a cffi function whose Python side failed would return 0)."""
    import os
    import shutil
    import sys
    prog = build_c("memory.c")
    broken = tmp_path / "prefix"
    shutil.copytree(prog.prefix, broken, symlinks=True)
    base_python = os.path.join(sys.base_prefix, "bin", os.path.basename(sys.executable))
    (broken / "lib64" / "npurt_python.cfg").write_text(f"executable={base_python}\npath={tmp_path}/nothing\n")
    res = subprocess.run([prog.exe], capture_output=True, text=True, timeout=120,
                         env={"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": str(broken / "lib64")})
    assert res.returncode == 1
    assert "aclInit(NULL) -> 500000" in res.stdout
    assert "failed to start" in res.stdout and "npurt" in res.stdout


@pytest.mark.parametrize("name", ["memory", "streams_events"])
def test_the_c_examples_build_with_cmake_and_run(cann_home, tmp_path, name):
    """examples/c/<name>: CMake against the prefix, then the program prints OK."""
    import os
    import shutil
    if shutil.which("cmake") is None:
        pytest.skip("cmake is not on PATH: the C examples are CMake projects")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp")}
    build = tmp_path / "build"
    for cmd in (["cmake", "-S", os.path.join(root, "examples", "c", name), "-B", str(build),
                 f"-DASCEND_CANN_PACKAGE_PATH={cann_home}"], ["cmake", "--build", str(build), "-j2"]):
        res = subprocess.run(cmd, capture_output=True, text=True, env=env)
        assert res.returncode == 0, res.stdout + res.stderr
    res = subprocess.run([str(build / name)], capture_output=True, text=True, timeout=120,
                         env=dict(env, LD_LIBRARY_PATH=os.path.join(cann_home, "lib64")))
    assert res.returncode == 0 and res.stdout.splitlines()[-1] == "OK", res.stdout + res.stderr


def test_the_runtime_guides_snippets(build_c):
    """Devices, memory across cards, multi-stream overlap with events, synchronize before read."""
    res = run_ok(build_c("guide.c"), "guide")
    assert "two streams overlapped" in res.stdout


def test_un_evented_streams_sharing_a_buffer_are_reported_by_the_sanitizer(build_c, cann_home):
    """The second classic pitfall, under `npurt run --sanitize`: a race report, exit status 86."""
    import os
    import sys
    env = {**os.environ, "NPURT_CANN_HOME": cann_home}
    res = subprocess.run([sys.executable, "-m", "npurt", "run", "--sanitize", build_c("guide.c").exe, "racy"],
                         capture_output=True, text=True, env=env, timeout=180)
    assert res.returncode == 86, res.stdout + res.stderr
    assert "race" in res.stderr.lower()


def test_reduce_random_numbers_and_stream_values(build_c):
    run_ok(build_c("builtin_tasks.c"), "builtin_tasks")


def test_notifies_order_two_streams_and_time_out(build_c):
    res = run_ok(build_c("notify.c"), "notify")
    assert "timed out: 107019" in res.stdout


def test_acl_graph_capture_and_replay(build_c):
    res = run_ok(build_c("graph.c"), "graph")
    assert "synchronize during capture: 107027" in res.stdout
    assert "end after a refused synchronize: 0" in res.stdout
    assert "synchronous copy in GLOBAL mode: 107030" in res.stdout


def test_virtual_memory_reserve_map_share_and_bad_input(build_c):
    res = run_ok(build_c("vmm.c"), "vmm")
    for line in ("copy from unmapped: 100000", "map over mapped: 107000", "unmap never mapped: 107000",
                 "size not a granularity multiple: 107000", "release with mappings: 107000",
                 "export twice: 107000", "import refused: 207006", "imported value 4242",
                 "import of a freed handle: 107000"):
        assert line in res.stdout, res.stdout


def test_built_models_labels_switches_task_groups_and_conditional_tasks(build_c):
    res = run_ok(build_c("model_build.c"), "model_build")
    assert "bind a non-persistent stream: 107000" in res.stdout
    assert "activate from an unbound stream: 107005" in res.stdout
    assert "label 1: a=0 b=0x22" in res.stdout
    assert "after the update: a=0x44" in res.stdout
    assert "IF on zero: b=0x66" in res.stdout
    assert "value after SetParams + Update: 9" in res.stdout
    assert "a task array too small: 107039" in res.stdout
    assert "destroy callback saw 42" in res.stdout


def test_stream_ordered_memory_pools_and_managed_memory(build_c):
    res = run_ok(build_c("mempool.c"), "mempool")
    for line in ("past maxSize: 507000", "set a read-only attribute: 107000", "destroy in use: 507000",
                 "p2p map past the allocation: 100000"):
        assert line in res.stdout, res.stdout


def test_model_subscription_registers_the_model_and_closes_the_pipe_at_unsubscribe(build_c):
    res = build_c("prof_subscribe.c", libs=("ascendcl", "msprofiler", "profapi")).run()
    assert res.returncode == 0 and "prof_subscribe: ok" in res.stdout, res.stdout + res.stderr
    assert "unregistered model: 145003" in res.stdout


def test_ipc_memory_events_and_notifies_between_two_c_processes(build_c, tmp_path):
    """Two C processes of one device namespace, driven step by step through their pipes."""
    import subprocess
    import uuid
    program = build_c("ipc.c")
    env = program.env({"NPURT_DEVICE_NAMESPACE": f"capi-ipc-{uuid.uuid4().hex[:8]}"})

    def start(*args):
        return subprocess.Popen([program.exe, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                env=env)

    def until(proc, prefix):
        lines = []
        while True:
            line = proc.stdout.readline()
            assert line, "".join(lines)
            lines.append(line)
            if line.startswith(prefix) or line.startswith("FAIL"):
                return "".join(lines)

    exp = start("export")
    out = until(exp, "exported")
    assert "key too small: 107000" in out and "past the allocation: 107000" in out, out
    key, handle, notify_key = out.splitlines()[-1].split()[1:]
    imp = start("import", key, handle, notify_key)
    got = until(imp, "pid")
    for line in ("before the allow-list: 207006", "forged key: 107000", "close unknown: 107000",
                 "forged event handle: 107000"):
        assert line in got, got
    exp.stdin.write(got.splitlines()[-1].split()[1] + "\n")
    exp.stdin.flush()
    assert "allowed" in until(exp, "allowed")
    imp.stdin.write("go\n")
    imp.stdin.flush()
    got = until(imp, "done")
    for line in ("imported byte 0x5a", "free imported: 100000", "event status 1"):
        assert line in got, got
    exp.stdin.write("check\n")
    exp.stdin.flush()
    out = until(exp, "notified")
    assert "byte after the importer wrote: 0x33" in out, out
    exp.stdin.close()
    imp.stdin.close()
    assert "ipc: ok" in exp.stdout.read() and exp.wait(timeout=60) == 0
    assert "ipc: ok" in imp.stdout.read() and imp.wait(timeout=60) == 0
