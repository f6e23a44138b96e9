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
    assert "unknown option" in capfd.readouterr().err


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
