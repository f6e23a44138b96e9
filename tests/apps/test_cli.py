"""The `npurt` command line as a user meets it: --version, `python -m npurt`, one-line errors
for bad settings and arguments, output paths checked first, `npurt info`, NPURT_LOG_LEVEL,
and the leak and hang warnings shown by default at the user's line."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import npurt
from npurt.apps import cli
from npurt.apps.cliargs import Exit


def _npurt(*args, env=None, timeout=60):
    import os
    return subprocess.run([sys.executable, "-m", "npurt", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def test_python_dash_m_npurt_prints_the_package_version():
    proc = _npurt("--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"npurt {npurt.__version__} (Python ")


@pytest.mark.parametrize("command", [["info"], ["demo"], ["bench", "--quick"], ["run", "x.py"], ["launch", "x.py"]])
@pytest.mark.parametrize("env", [{"NPURT_SOC": "Ascend999"}, {"NPURT_DEVICE_COUNT": "99"},
                                 {"NPURT_HBM_SIZE": "lots"}, {"NPURT_LOG_LEVEL": "LOUD"}],
                         ids=lambda e: next(iter(e)))
def test_a_bad_setting_is_one_line_naming_it_and_exit_status_2(command, env, monkeypatch, capsys):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert cli.main(command) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"npurt {command[0]}: error: ")
    assert next(iter(env)) in err


def test_a_bad_setting_prints_no_traceback():
    proc = _npurt("info", env={"NPURT_SOC": "Ascend999"})
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("npurt info: error: NPURT_SOC: unknown SoC 'Ascend999'; known SoCs: "
                                   "Ascend910B3, Ascend310P3, Ascend910A")


def test_bench_refuses_an_unwritable_json_path_before_measuring(monkeypatch, capsys):
    import npurt.apps.bench
    monkeypatch.setattr(npurt.apps.bench, "main", lambda **kw: pytest.fail("the benchmark started"))
    assert cli.main(["bench", "--json", "/nonexistent-dir/x.json"]) == 2
    assert "directory '/nonexistent-dir' does not exist" in capsys.readouterr().err


def test_plot_refuses_an_unwritable_picture_path(tmp_path, capsys):
    assert cli.main(["plot", str(tmp_path), "-o", str(tmp_path / "no" / "t.png")]) == 2
    assert "cannot write picture" in capsys.readouterr().err


def test_demo_refuses_zero_batches_in_one_line(capsys):
    assert cli.main(["demo", "--batches", "0"]) == 2
    assert capsys.readouterr().err == "npurt demo: error: --batches must be at least 1\n"


def test_info_shows_devices_settings_in_effect_and_extras(fresh_runtime, monkeypatch, capsys):
    monkeypatch.setenv("NPURT_HBM_SIZE", "2G")
    monkeypatch.setenv("NPURT_WORKERS", "3")
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    assert "device 0 (physical 0): HBM 1.91 GiB usable of 2 GiB (0.0938 GiB kept by the driver)" in out   # the reserve
    assert "device 1 (physical 1)" in out
    assert "NPURT_HBM_SIZE             2 GiB per device       from NPURT_HBM_SIZE=2G" in out
    assert "NPURT_WORKERS              3                      from NPURT_WORKERS=3" in out
    assert "NPURT_SOC                  Ascend910B3            default" in out
    assert "  models  yes onnx " in out              # installed by the test extra
    for extra in cli.EXTRAS:
        assert f"\n  {extra} " in out


def test_npurt_log_level_info_shows_the_runtimes_messages():
    code = "import npurt; npurt.zeros(4).to_host()"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**__import__("os").environ, "NPURT_LOG_LEVEL": "INFO"})
    assert proc.returncode == 0, proc.stderr
    assert "npurt INFO: started: simulated Ascend910B3, 2 visible device(s)" in proc.stderr
    quiet = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert quiet.stderr == ""


def _script(tmp_path, body: str, env=None):
    import os
    path = tmp_path / "user_script.py"
    path.write_text(textwrap.dedent(body))
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})
    return proc, path


def test_a_leak_report_is_shown_by_default_at_the_users_line(tmp_path):
    proc, path = _script(tmp_path, """\
        import npurt.acl as acl
        acl.init(); acl.rt.set_device(0)
        ptr, ret = acl.rt.malloc(4096, 0)
        acl.rt.reset_device(0)
        """)
    assert proc.returncode == 0, proc.stderr
    assert f"{path}:4: LeakWarning: npurt: reset_device(0) released 1 device allocation(s)" in proc.stderr


def test_a_hang_warning_is_shown_by_default_at_the_users_line(tmp_path):
    proc, path = _script(tmp_path, """\
        import npurt.acl as acl
        acl.rt.set_device(0)
        s, ret = acl.rt.create_stream()
        ev, ret = acl.rt.create_event_with_flag(acl.constants.ACL_EVENT_SYNC)
        acl.rt.stream_wait_event(s, ev)       # never recorded: the stream waits forever
        if acl.rt.synchronize_stream_with_timeout(s, 600) == 507046:
            print("timed out")
        acl.rt.stream_abort(s)
        """, env={"NPURT_HANG_WARNING_S": "0.1"})
    assert "timed out" in proc.stdout, proc.stderr
    assert f"{path}:6: HangWarning: npurt: this host thread has waited 0 s for" in proc.stderr


# ---- one argparse style for every subcommand: help, usage, exit status 2

@pytest.mark.parametrize("command", list(cli.COMMANDS))
def test_every_command_has_argparse_help(command, capsys):
    assert cli.main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: npurt {command}") and "\noptions:\n  -h, --help" in out


@pytest.mark.parametrize("command", list(cli.COMMANDS))
def test_every_command_refuses_an_unknown_option_with_its_usage(command, capsys):
    needed = ["prof_dir"] if command == "plot" else []     # its one required argument
    assert cli.main([command, *needed, "--no-such-option"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: npurt {command}")
    assert err.endswith(f"npurt {command}: error: unrecognized arguments: --no-such-option\n")


@pytest.mark.parametrize("command", ["run", "launch", "atc", "plot"])
def test_commands_that_need_arguments_print_the_usage_without_them(command, capsys):
    assert cli.main([command]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: npurt {command}") and f"\nnpurt {command}: error: " in err


def test_every_command_has_a_parser_and_a_line_in_the_top_level_help(capsys):
    assert set(cli.PARSERS) == set(cli.COMMANDS)
    with pytest.raises(Exit):
        cli.parser().parse_args(["--help"])
    out = capsys.readouterr().out
    for command in cli.COMMANDS:
        assert f"\n    {command} " in out
    assert "--torch-npu" in out and "-m module" in out


def test_no_command_and_an_unknown_command_are_usage_errors(capsys):
    assert cli.main([]) == 2
    assert capsys.readouterr().err.startswith("usage: npurt [-h] [-V] COMMAND ...\nnpurt: error: give a command")
    assert cli.main(["frobnicate"]) == 2
    assert "npurt: error: argument COMMAND: invalid choice: 'frobnicate'" in capsys.readouterr().err


def test_a_bad_option_value_names_the_option(capsys):
    assert cli.main(["launch", "-n", "zero", "x.py"]) == 2
    assert "npurt launch: error: argument -n/--np: must be a positive integer, got 'zero'" in capsys.readouterr().err
    assert cli.main(["plot", "prof", "--window", "1"]) == 2
    assert "npurt plot: error: argument --window: expected 2 arguments" in capsys.readouterr().err


def test_the_torch_hint_is_the_cpu_build():
    assert cli.install_hint("torch") == "pip install torch --index-url https://download.pytorch.org/whl/cpu"
    assert cli.install_hint("plot") == "pip install 'npurt[plot]'"


def test_help_and_info_load_no_command_module():
    """`npurt --help` and `npurt info` stay light: each command loads its own module only when
    it runs (cli.COMMAND_MODULES; the pyACL face, the sanitizer, the collectives, the bench)."""
    code = textwrap.dedent("""
        import contextlib, io, sys
        from npurt.apps import cli
        heavy = list(cli.COMMAND_MODULES.values()) + ["npurt.acl", "npurt.tools.sanitizer", "npurt.hccl"]
        with contextlib.redirect_stdout(io.StringIO()):
            assert cli.main(["--help"]) == 0
            assert cli.main(["info"]) == 0
        print([m for m in heavy if m in sys.modules])
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            cli.main(["demo", "--batches", "0"])    # refused before the demo's module loads
        print([m for m in heavy if m in sys.modules])
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["[]", "[]"]
