"""Collectives across processes: `npurt launch -n 4` runs tests/hccl_checks.py (every
collective and data type family against numpy, mismatches, invalid arguments, and a rank that
leaves: HCCL_E_TIMEOUT, not a hang); the same script runs under the MPI launcher directly;
`npurt launch` sets the torchrun-style variables and explains what it needs."""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from hccl_checks import CHECKS
from process_group import run_group
from npurt.apps import launcher as launch
from npurt.apps.launcher import find_mpiexec

pytest.importorskip("mpi4py", reason="needs the npurt[dist] extra")
TESTS = Path(__file__).resolve().parents[1]
NPURT = [sys.executable, "-m", "npurt.cli"]
SCALE = float(os.environ.get("NPURT_TEST_SCALE", "1"))


def run(command, timeout=240, **env):
    full_env = {k: v for k, v in os.environ.items() if k != "NPURT_DEVICE_COUNT"}
    full_env.update(HCCL_EXEC_TIMEOUT="60", **env)
    return run_group(command, timeout, env=full_env, cwd=TESTS.parent)


def checks(launcher: list[str], out: Path, *options: str, timeout: int = 240):
    """Run hccl_checks.py under `launcher`; (the process, {rank: its result})."""
    out.mkdir(parents=True, exist_ok=True)
    proc = run([*launcher, str(TESTS / "hccl_checks.py"), "--out", str(out), *options], timeout=timeout)
    return proc, {int(p.stem[4:]): json.loads(p.read_text()) for p in out.glob("rank*.json")}


@pytest.fixture(scope="module")
def four_processes(tmp_path_factory):
    """One `npurt launch -n 4` of every check, then the timeout phase (rank 3 leaves)."""
    return checks([*NPURT, "launch", "-n", "4"], tmp_path_factory.mktemp("four"), "--timeout-phase")


def test_launch_runs_four_ranks_each_on_its_local_device(four_processes):
    proc, results = four_processes
    assert sorted(results) == [0, 1, 2, 3], proc.stdout + proc.stderr
    assert [(results[r]["size"], results[r]["device"]) for r in range(4)] == [(4, r) for r in range(4)]


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_collective_matches_numpy_across_four_processes(four_processes, name):
    proc, results = four_processes
    for rank in range(4):
        assert rank in results, proc.stdout + proc.stderr
        assert results[rank]["checks"][name] == "ok", f"rank {rank}: {results[rank]['checks'][name]}"


def test_rank_that_leaves_makes_the_other_processes_time_out_and_exit(four_processes):
    proc, results = four_processes
    assert [results[r]["timeout"] for r in range(4)] == ["timeout", "timeout", "timeout", "left"]
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
def test_checks_at_a_larger_size_across_four_processes(tmp_path):
    proc, results = checks([*NPURT, "launch", "-n", "4"], tmp_path, "--scale", str(4 * SCALE), timeout=900)
    assert sorted(results) == [0, 1, 2, 3], proc.stdout + proc.stderr
    bad = {(r, k): v for r in results for k, v in results[r]["checks"].items() if v != "ok"}
    assert not bad


def test_same_script_runs_under_mpiexec_directly_and_on_simulated_hosts(tmp_path):
    """Plain `mpiexec -n 2 python script.py`: ranks come from the MPI launcher's variables;
    `npurt launch --per-host 1` puts each rank on its own simulated host (device 0 of each)."""
    only = ("--only", "all_reduce_integers,send_recv_ring,pyacl_style_api")
    direct = checks([find_mpiexec(), "-n", "2", sys.executable], tmp_path / "direct", *only)
    hosts = checks([*NPURT, "launch", "-n", "2", "--per-host", "1"], tmp_path / "hosts", *only)
    for (proc, results), devices in ((direct, [0, 1]), (hosts, [0, 0])):
        assert sorted(results) == [0, 1], proc.stdout + proc.stderr
        assert [results[r]["device"] for r in (0, 1)] == devices
        assert all(v == "ok" for r in results.values() for v in r["checks"].values()), results


def env_script(tmp_path, names) -> Path:
    """A script that writes the variables `names` to <tmp_path>/<RANK>.vars (output lines of
    several ranks may interleave)."""
    script = tmp_path / "env.py"
    script.write_text(f"import os\nopen(os.path.join({str(tmp_path)!r}, os.environ['RANK'] + '.vars'), 'w')"
                      f".write(' '.join(os.environ[k] for k in {names!r}))\n")
    return script


def written_vars(tmp_path) -> list[list[str]]:
    return [p.read_text().split() for p in sorted(tmp_path.glob("*.vars"))]


def test_launch_sets_the_torchrun_variables(tmp_path):
    script = env_script(tmp_path, ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NPURT_DEVICE_COUNT"])
    proc = run([*NPURT, "launch", "-n", "3", "--per-host", "2", str(script)])
    assert written_vars(tmp_path) == [["0", "0", "3", "2", "8"], ["1", "1", "3", "2", "8"],
                                      ["2", "0", "3", "2", "8"]], proc.stdout + proc.stderr


def test_launch_returns_the_failing_rank_status(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text("import os, sys\nsys.exit(3 if os.environ['RANK'] == '1' else 0)\n")
    assert run([*NPURT, "launch", "-n", "2", str(script)]).returncode != 0


def test_a_rank_that_raises_aborts_the_job_with_its_traceback(tmp_path):
    # issue 29: the other ranks waited (in a collective, or here in a sleep) for 30 minutes
    script = tmp_path / "raises.py"
    script.write_text("import os, time\n"
                      "if os.environ['RANK'] == '1':\n"
                      "    raise ValueError('rank 1 found bad data')\n"
                      "time.sleep(600)\n")
    proc = run([*NPURT, "launch", "-n", "3", str(script)], timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "ValueError: rank 1 found bad data" in out and "rank 1 raised ValueError" in out, out[-3000:]


def test_an_aborting_rank_waits_until_its_output_was_read():
    # MPI_Abort kills the MPI launcher's proxies at once: a rank's traceback still in its output
    # pipe would be lost, so the abort waits for the proxy to read it
    read_fd, write_fd = os.pipe()
    os.write(write_fd, b"Traceback (most recent call last): ...\n")
    got = []
    reader = threading.Thread(target=lambda: (time.sleep(0.2), got.append(os.read(read_fd, 4096))))
    reader.start()
    launch.wait_for_output_read((write_fd,), limit_s=60)
    assert got and got[0].startswith(b"Traceback")  # it returned only once the reader had it
    reader.join()
    os.write(write_fd, b"nobody reads this")  # an output no one reads delays the abort at most limit_s
    launch.wait_for_output_read((write_fd,), limit_s=0.1)
    os.close(read_fd)
    os.close(write_fd)


def test_launch_explains_bad_usage(tmp_path, capsys, monkeypatch):
    script = tmp_path / "s.py"
    script.write_text("pass\n")
    monkeypatch.delenv("NPURT_DEVICE_COUNT", raising=False)
    cases = [
        (["-n", "zero", str(script)], {}, "positive integer"),
        (["-n", "2", str(tmp_path / "missing.py")], {}, "no such file"),
        (["--per-host", "17", "-n", "17", str(script)], {}, "at most 16"),
        (["--frobnicate", str(script)], {}, "unrecognized arguments: --frobnicate"),
        (["--hostfile", str(tmp_path / "no-hosts"), str(script)], {}, "does not exist"),
        (["-n", "4", str(script)], {"NPURT_DEVICE_COUNT": "2"}, "NPURT_DEVICE_COUNT=2"),
        (["-n", "2", str(script)], {"NPURT_MPIEXEC": str(tmp_path / "no-mpiexec")}, "could not run"),
    ]
    for argv, env, words in cases:
        with monkeypatch.context() as m:
            for k, v in env.items():
                m.setenv(k, v)
            assert launch.main(argv) == 2, argv
        assert words in capsys.readouterr().err, argv


def test_missing_dist_extra_is_named_in_the_error(tmp_path, capsys, monkeypatch):
    """Without mpi4py (hidden here), `npurt launch` and multi-process communicators say what to
    install; `import npurt` and `import npurt.hccl` never import mpi4py."""
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "mpi4py.py").write_text("raise ImportError('No module named mpi4py')\n")
    script = tmp_path / "s.py"
    script.write_text("import sys, npurt, npurt.hccl\nassert 'mpi4py' not in sys.modules\n"
                      "from npurt.hccl import mpi\ntry:\n    mpi.mpi()\nexcept ImportError as exc:\n"
                      "    print('ERR', exc)\n")
    proc = run([sys.executable, str(script)], PYTHONPATH=str(hide))
    assert "pip install 'npurt[dist]'" in proc.stdout, proc.stdout + proc.stderr
    monkeypatch.setattr(launch.importlib.util, "find_spec", lambda name, *a: None)
    assert launch.main(["-n", "2", str(script)]) == 2
    assert "pip install 'npurt[dist]'" in capsys.readouterr().err


def test_process_that_never_creates_the_communicator_makes_init_time_out(tmp_path):
    script = tmp_path / "init.py"
    script.write_text(
        "import os, sys, npurt, npurt.hccl as hccl\n"
        "if os.environ['RANK'] == '1':\n    sys.exit(0)\n"
        "npurt.set_device(0)\n"
        "try:\n    hccl.Communicator.world()\nexcept hccl.HcclError as exc:\n"
        "    print('CODE', exc.code, 'HCCL_CONNECT_TIMEOUT' in str(exc))\n")
    proc = run([*NPURT, "launch", "-n", "2", str(script)], HCCL_CONNECT_TIMEOUT="1")
    assert f"CODE {9} True" in proc.stdout, proc.stdout + proc.stderr


def test_launch_on_the_hosts_of_a_hostfile(tmp_path):
    """--hostfile hands the hosts to mpiexec (here this machine, as `localhost`); LOCAL_RANK is
    then the MPI launcher's local rank."""
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost:2\n")
    script = env_script(tmp_path, ["RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE"])
    proc = run([*NPURT, "launch", "-v", "-n", "2", "--hostfile", str(hosts), "--per-host", "2", str(script)])
    assert f"-f {hosts} -ppn 2" in proc.stderr
    assert written_vars(tmp_path) == [["0", "0", "2"], ["1", "1", "2"]], proc.stdout + proc.stderr


def test_terminating_npurt_launch_stops_every_rank(tmp_path):
    import signal
    import subprocess
    import time
    script = tmp_path / "sleeper.py"
    script.write_text("import os, time\nopen(os.path.join(%r, os.environ['RANK'] + '.pid'), 'w')"
                      ".write(str(os.getpid()))\ntime.sleep(120)\n" % str(tmp_path))
    launcher = subprocess.Popen([*NPURT, "launch", "-n", "2", str(script)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while len(list(tmp_path.glob("*.pid"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.2)  # both files exist; let their writes finish
        pids = [int(p.read_text()) for p in tmp_path.glob("*.pid")]
        assert len(pids) == 2
        launcher.send_signal(signal.SIGTERM)  # the launcher only, not its process group
        assert launcher.wait(30) != 0
        deadline = time.monotonic() + 10
        alive = pids
        while alive and time.monotonic() < deadline:
            alive = [p for p in pids if _alive(p)]
            time.sleep(0.1)
        assert not alive, f"ranks {alive} still run after npurt launch was terminated"
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"  # a zombie has exited
    except OSError:
        return False


def test_each_rank_gets_its_own_profile_directory_and_sanitizer_report():
    argv = ["--sanitize", "--sanitize-report", "/r/out.json", "--profile", "/p", "--", "s.py", "--profile", "mine"]
    assert launch.per_rank_outputs(argv, 1) == ["--sanitize", "--sanitize-report", "/r/out.rank1.json", "--profile",
                                                "/p/rank1", "--", "s.py", "--profile", "mine"]


def test_launch_profiles_and_sanitizes_every_rank(tmp_path):
    script = tmp_path / "work.py"
    # one write per line (print's separate pieces interleave between the ranks' pipes)
    script.write_text("import os, npurt\nnpurt.ones(4).to_host()\nprint(f\"rank {os.environ['RANK']} ok\", flush=True)\n")
    proc = run([*NPURT, "launch", "-n", "2", "--sanitize", "--profile", str(tmp_path / "prof"), str(script)])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "rank 0 ok" in proc.stdout and "rank 1 ok" in proc.stdout
    assert (tmp_path / "prof" / "rank0" / "msprof.json").is_file()
    assert (tmp_path / "prof" / "rank1" / "msprof.json").is_file()
    assert proc.stderr.count("npurt-sanitizer") >= 2, proc.stderr    # each rank's summary line


IPC_SCRIPT = '''
import os
import numpy as np
import npurt
from mpi4py import MPI
comm = MPI.COMM_WORLD
rank = comm.Get_rank()
npurt.set_device(int(os.environ["LOCAL_RANK"]))
if rank % 2 == 0:   # the first rank of each host exports a buffer of its device
    w = npurt.to_device(np.full(1000, rank, np.float32))
    npurt.synchronize()           # the upload is queued work: done before a peer uses the buffer
    comm.send(npurt.ipc_export(w), dest=rank + 1)
    comm.recv(source=rank + 1)
    seen = npurt.asnumpy(w)[:3].tolist()
else:               # its peer on the same host works on it in place
    v = npurt.ipc_import(comm.recv(source=rank - 1))
    v += 1
    npurt.synchronize(v.device)   # the add runs on the buffer's device (0), not on this rank's
    seen = [v.device, os.environ["NPURT_DEVICE_NAMESPACE"].rsplit(".", 1)[-1]]
    del v
    comm.send("done", dest=rank - 1)
with open(os.path.join(os.environ["OUT"], f"rank{rank}.txt"), "w") as f:
    f.write(repr(seen))
'''


def test_a_rank_imports_the_buffer_of_a_peer_rank_on_its_host(tmp_path):
    """Ranks of one (simulated) host share its devices: rank 1 works in place on rank 0's
    buffer on device 0, exported with npurt.ipc_export (ranks 2 and 3 do the same on host 1)."""
    script = tmp_path / "ipc.py"
    script.write_text(IPC_SCRIPT)
    proc = run([*NPURT, "launch", "-n", "4", "--per-host", "2", str(script)], OUT=str(tmp_path))
    seen = {r: (tmp_path / f"rank{r}.txt").read_text() for r in range(4) if (tmp_path / f"rank{r}.txt").exists()}
    assert seen == {0: "[1.0, 1.0, 1.0]", 1: "[0, 'host0']", 2: "[3.0, 3.0, 3.0]", 3: "[0, 'host1']"}, \
        proc.stdout + proc.stderr
