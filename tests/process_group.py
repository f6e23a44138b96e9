"""Run a command in its own process group, and kill the whole group if it outlives its
timeout: an MPI job is mpiexec plus its proxies plus the ranks, and killing only the first
would leave the others running."""
from __future__ import annotations

import os
import signal
import subprocess


def run_group(command: list[str], timeout: float, **kwargs) -> subprocess.CompletedProcess:
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True, **kwargs)
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        out, err = child.communicate()
        raise AssertionError(f"{command} did not finish within {timeout} s:\n{out}\n{err}") from None
    return subprocess.CompletedProcess(command, child.returncode, out, err)
