"""`npurt run script.py [args]`: the script runs as `python script.py` would, with `import
acl` resolving to npurt.acl, and nothing named `acl` is installed outside the command."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from npurt.apps import runner


def _script(tmp_path, body: str, name: str = "script.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def test_script_sees_its_argv_and_runs_as_main(tmp_path, capfd):
    path = _script(tmp_path, """
        import sys
        print(__name__, sys.argv[1:], __file__)
    """)
    assert runner.main([str(path), "a", "--flag"]) == 0
    assert capfd.readouterr().out == f"__main__ ['a', '--flag'] {path}\n"


def test_argv0_is_the_script_path_as_given(tmp_path, capfd, monkeypatch):
    _script(tmp_path, "import sys; print(sys.argv[0])")
    monkeypatch.chdir(tmp_path)
    assert runner.main(["script.py"]) == 0
    assert capfd.readouterr().out == "script.py\n"


def test_import_acl_resolves_to_the_facade(tmp_path, capfd):
    path = _script(tmp_path, """
        import acl
        import acl.rt
        from acl import rt, util
        import npurt.acl
        print(acl is npurt.acl, rt is npurt.acl.rt, util is npurt.acl.util, acl.mdl is npurt.acl.mdl)
    """)
    assert runner.main([str(path)]) == 0
    assert capfd.readouterr().out == "True True True True\n"


def test_acl_is_not_importable_after_the_run(tmp_path):
    path = _script(tmp_path, "import acl")
    assert runner.main([str(path)]) == 0
    assert "acl" not in sys.modules
    with pytest.raises(ImportError):
        __import__("acl")


def test_the_scripts_directory_comes_first_on_sys_path(tmp_path, capfd):
    _script(tmp_path, "VALUE = 42\n", name="helper_mod_for_runner_test.py")
    path = _script(tmp_path, "import helper_mod_for_runner_test as h; print(h.VALUE)")
    assert runner.main([str(path)]) == 0
    assert capfd.readouterr().out == "42\n"
    sys.modules.pop("helper_mod_for_runner_test", None)


@pytest.mark.parametrize("body,status", [("import sys; sys.exit(3)", 3), ("import sys; sys.exit()", 0),
                                         ("pass", 0), ("raise SystemExit(0)", 0)])
def test_exit_status_is_the_scripts(tmp_path, body, status):
    assert runner.main([str(_script(tmp_path, body))]) == status


def test_exit_with_a_message_prints_it_and_returns_1(tmp_path, capfd):
    assert runner.main([str(_script(tmp_path, "import sys; sys.exit('bad input')"))]) == 1
    assert capfd.readouterr().err == "bad input\n"


def test_uncaught_exception_prints_the_scripts_traceback_and_returns_1(tmp_path, capfd):
    path = _script(tmp_path, """
        def inner():
            raise ValueError("broken")
        inner()
    """)
    assert runner.main([str(path)]) == 1
    err = capfd.readouterr().err
    assert err.startswith("Traceback (most recent call last):")
    assert f'File "{path}", line 4, in <module>' in err and "ValueError: broken" in err
    assert "runner.py" not in err  # frames of npurt run itself are not shown


def test_run_prints_nothing_of_its_own(tmp_path, capfd):
    assert runner.main([str(_script(tmp_path, "import acl"))]) == 0
    assert capfd.readouterr() == ("", "")


def test_verbose_reports_on_stderr(tmp_path, capfd):
    assert runner.main(["-v", str(_script(tmp_path, "print('out')"))]) == 0
    captured = capfd.readouterr()
    assert captured.out == "out\n"
    assert "acl -> npurt.acl" in captured.err and "exited with status 0" in captured.err


def test_missing_script_is_status_2(tmp_path, capfd):
    assert runner.main([str(tmp_path / "nope.py")]) == 2
    assert "can't open file" in capfd.readouterr().err


def test_unknown_option_is_status_2(capfd):
    assert runner.main(["--fast", "x.py"]) == 2
    err = capfd.readouterr().err
    assert err.startswith("usage: npurt run") and "npurt run: error: unrecognized arguments: --fast" in err


def test_help(capfd):
    assert runner.main(["-h"]) == 0
    assert "usage: npurt run" in capfd.readouterr().out


def test_options_after_the_script_go_to_the_script(tmp_path, capfd):
    path = _script(tmp_path, "import sys; print(sys.argv[1:])")
    assert runner.main([str(path), "-v", "-h"]) == 0
    assert capfd.readouterr().out == "['-v', '-h']\n"


def test_npurt_command_runs_a_pyacl_script_in_a_fresh_process(tmp_path):
    path = _script(tmp_path, """
        import sys
        import acl
        ret = acl.init()
        ret2 = acl.rt.set_device(0)
        ptr, ret3 = acl.rt.malloc(1024, 0)
        print(ret, ret2, ret3, ptr >= 1 << 48)
        acl.rt.free(ptr)                  # a leak would be reported (a LeakWarning on stderr)
        acl.finalize()
        sys.exit(5)
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NPURT_", "ASCEND_"))}
    result = subprocess.run([sys.executable, "-m", "npurt.cli", "run", str(path)], capture_output=True, text=True,
                            timeout=60, env=env)
    assert (result.returncode, result.stdout, result.stderr) == (5, "0 0 0 True\n", "")


def test_plain_python_cannot_import_acl():
    result = subprocess.run([sys.executable, "-c", "import acl"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and "No module named 'acl'" in result.stderr


# ---- -m module and -c code, as python's own -m and -c

def test_dash_m_runs_a_module_as_main_with_its_argv(tmp_path, capfd, monkeypatch):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "tool.py").write_text("import sys, acl\nprint(__name__, acl.__name__, sys.argv[1:])\n")
    monkeypatch.chdir(tmp_path)      # as `python -m`, the current directory is on sys.path
    assert runner.main(["-m", "mypkg.tool", "x", "--flag"]) == 0
    assert capfd.readouterr().out == "__main__ npurt.acl ['x', '--flag']\n"


def test_dash_m_of_a_missing_module_says_so_and_returns_1(tmp_path, capfd, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert runner.main(["-m", "no_such_module_here"]) == 1
    err = capfd.readouterr().err
    assert "No module named no_such_module_here" in err and "runner.py" not in err


def test_dash_c_runs_code_with_argv_dash_c(capfd):
    assert runner.main(["-c", "import sys, acl; print(acl.__name__, sys.argv)", "a", "-v"]) == 0
    assert capfd.readouterr().out == "npurt.acl ['-c', 'a', '-v']\n"


def test_dash_c_under_the_sanitizer_reports_a_race_with_status_86(capfd):
    # a is complete before s reads it (no initcheck report whatever the timing); the fill on the
    # default stream then overwrites what s may still be reading: a race by stream order alone
    race = ("import npurt\na = npurt.ones(1 << 16)\nnpurt.synchronize()\ns = npurt.Stream()\n"
            "with npurt.stream(s):\n    b = a * 2\na.fill(0)\ns.synchronize()\n")
    assert runner.main(["--sanitize", "-c", race]) == runner.SANITIZER_EXIT
    err = capfd.readouterr().err
    assert "racecheck" in err and "Traceback" not in err, err


def test_dash_m_under_the_profiler_writes_the_trace(tmp_path, capfd, monkeypatch):
    (tmp_path / "work.py").write_text("import npurt\nnpurt.ones(4).to_host()\n")
    monkeypatch.chdir(tmp_path)
    assert runner.main(["--profile", str(tmp_path / "prof"), "-m", "work"]) == 0
    assert (tmp_path / "prof" / "msprof.json").is_file()
    assert "npurt run: profile of" in capfd.readouterr().err


def test_a_program_is_required(capfd):
    assert runner.main(["--sanitize"]) == 2
    err = capfd.readouterr().err
    assert err.startswith("usage: npurt run") and "npurt run: error: give a program" in err


def test_a_directory_is_refused_as_a_directory(tmp_path, capfd):
    assert runner.main([str(tmp_path)]) == 2
    assert f"npurt run: error: '{tmp_path}' is a directory" in capfd.readouterr().err


def test_a_syntax_error_shows_only_the_scripts_line(tmp_path, capfd):
    path = _script(tmp_path, "x = 1\ndef broken(:\n")
    assert runner.main([str(path)]) == 1
    err = capfd.readouterr().err
    assert err.startswith(f'  File "{path}", line 2') and "SyntaxError" in err
    assert "Traceback" not in err and "npurt" not in err.replace(str(tmp_path), "")


def test_a_missing_torch_npu_says_to_run_with_torch_npu(tmp_path, capfd):
    path = _script(tmp_path, "import torch_npu\n")
    assert runner.main([str(path)]) == 1
    err = capfd.readouterr().err
    assert "No module named 'torch_npu'" in err
    assert f"run with npurt run --torch-npu {path}" in err


def test_options_of_the_program_after_dash_m_pass_through(tmp_path, capfd, monkeypatch):
    (tmp_path / "echo_args.py").write_text("import sys; print(sys.argv[1:])\n")
    monkeypatch.chdir(tmp_path)
    assert runner.main(["-m", "echo_args", "--sanitize", "-c", "x", "--help"]) == 0
    assert capfd.readouterr().out == "['--sanitize', '-c', 'x', '--help']\n"


def test_a_native_program_refuses_a_cann_home_that_is_no_prefix(tmp_path, capfd, monkeypatch):
    app = tmp_path / "app"
    app.write_bytes(b"\x7fELF" + bytes(60))
    app.chmod(0o755)
    monkeypatch.setenv("NPURT_CANN_HOME", str(tmp_path))
    assert runner.main([str(app)]) == 2
    assert "is not a prefix made by `npurt cann-home`" in capfd.readouterr().err


def test_a_native_program_gets_the_prefix_and_the_tools_in_its_environment(tmp_path):
    args = runner.parse_run_args(["--sanitize", "--tools", "race", "--profile", str(tmp_path / "p"), "/bin/true"])
    env = runner.native_environment("/opt/cann", args, str(tmp_path / "r.json"))
    assert env["LD_LIBRARY_PATH"].split(os.pathsep)[0] == "/opt/cann/lib64"
    assert env["ASCEND_HOME_PATH"] == "/opt/cann"
    assert (env["NPURT_SANITIZE"], env["NPURT_SANITIZE_REPORT"]) == ("race", str(tmp_path / "r.json"))
    assert env["NPURT_PROFILE"] == str(tmp_path / "p")
    plain = runner.native_environment("/opt/cann", runner.parse_run_args(["/bin/true"]), None)
    assert "NPURT_SANITIZE" not in plain and "NPURT_PROFILE" not in plain
