"""`npurt run [-v] [--torch-npu] [--profile DIR] [--sanitize ...] script.py [args...]`: run an
unmodified pyACL script on npurt.

Inside this command only, `import acl` (and `import acl.rt`, `from acl import util`, ...)
resolves to `npurt.acl`: the `acl*` entries are aliases in `sys.modules` made before the
script starts. Processes the script starts get the same: a directory with an `acl` shim
package (npurt/apps/acl_path) is on PYTHONPATH during the run, so multiprocessing workers
('spawn', 'forkserver') and `python` subprocesses can `import acl` too. Nothing named `acl`
is installed, so a real CANN pyACL stays importable everywhere else. With `--torch-npu`,
`import torch_npu` (and its submodules) resolves to npurt's shim the same way, and the "npu"
torch device is registered before the script runs.

The script runs as `python script.py args...` would run it: `sys.argv` is
[script, args...], `__name__ == "__main__"`, the script's directory is first on `sys.path`,
and the exit status is the script's (SystemExit code; 1 with a traceback for an uncaught
exception). The command prints nothing of its own unless `-v` is given, `--profile` is
given (one line saying where the profile went) or `--sanitize` reports (on stderr; the exit
status is then 86, as with compute-sanitizer's --error-exitcode convention of a fixed code).
"""
from __future__ import annotations

import builtins
import io
import os
import sys
import traceback
import types

from npurt.runtime import FAULTS, SCHEDULE, FaultSpecError, ScheduleSpecError, parse_schedule

from . import schedules as runs

ACL_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "acl_path")  # holds the `acl` shim

USAGE = """usage: npurt run [-v] [--torch-npu] [--profile OUT_DIR] [--sanitize [--tools LIST]
                 [--sanitize-report FILE]] [--faults SPEC] [--schedule SEED | --schedules N|all
                 [--max-steps K] [--jobs J] [--timeout S]] script.py [args...]

Run a pyACL script with `import acl` resolving to npurt's facade (npurt.acl).
  -v, --verbose        say what is run, on which simulated SoC, and the exit status (on stderr)
  --torch-npu          also run torch_npu scripts: `import torch_npu` resolves to npurt's shim and
                       torch's "npu" device is npurt's (needs PyTorch: pip install 'npurt[torch]')
  --profile OUT_DIR    profile the whole run: write the timeline (msprof.json), the summary
                       tables (*.csv) and summary.txt to OUT_DIR; the summary is printed
                       on stderr at the end
  --sanitize           find races, memory errors, leaks and hangs while it runs; reports go to
                       stderr and the exit status is 86 if there is any
  --tools LIST         the sanitizer's tools, comma-separated: race,mem,init,leak,sync (default
                       all; implies --sanitize)
  --sanitize-report FILE  also write the reports as JSON to FILE (implies --sanitize)
  --faults SPEC        inject faults (the NPURT_FAULTS language, docs/testing.md), e.g.
                       'acl.rt.malloc@3=207001;task:kernel@1=507015'; a summary is printed at exit
  --schedule SEED      run the device under the controlled schedule of SEED (NPURT_SCHEDULE=random:SEED):
                       one task at a time, the order chosen by the seed; the same seed, the same run
  --schedules N        run the script under seeds 1..N (child processes, --jobs at a time, default
                       the number of cores); report the failing seeds and the command that replays one;
                       exit status 0 when every seed passed
  --schedules all --max-steps K  every interleaving of the first K steps instead (--max-runs M, 1000)
  --timeout S          a run under --schedules that takes longer than S seconds is a hang (default 60)
  -h, --help           show this help
"""
SANITIZER_EXIT = 86  # the exit status of a run the sanitizer reported errors in


def install_acl_alias() -> list[str]:
    """Make `acl` and `acl.<sub>` name npurt.acl and its submodules; returns the aliases."""
    import npurt.acl  # noqa: F401 - imports every submodule and namespace

    made = []
    for name, module in list(sys.modules.items()):
        if name == "npurt.acl" or name.startswith("npurt.acl."):
            alias = name[len("npurt."):]
            if not alias.split(".")[-1].startswith("_"):
                sys.modules[alias] = module
                made.append(alias)
    return sorted(made)


TORCH_NPU_SUBMODULES = ("optim", "profiler", "formats", "ops")


def install_torch_npu_alias() -> list[str]:
    """Make `torch_npu` (and torch_npu.npu, .optim, .profiler, ...) name npurt's shim; returns
    the aliases. Raises ImportError when PyTorch is missing or too old."""
    import npurt.torch.shim as shim  # registers the npu device

    made = {"torch_npu": shim, "torch_npu.npu": sys.modules["torch.npu"],
            "torch_npu.npu.amp": sys.modules["torch.npu.amp"]}
    for sub in TORCH_NPU_SUBMODULES:
        made[f"torch_npu.{sub}"] = sys.modules[f"npurt.torch.shim.{sub}"]
    sys.modules.update(made)
    return sorted(made)


def _exit_status(code) -> int:
    """What `python` does with SystemExit(code)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _print_script_traceback(exc: BaseException, script: str) -> None:
    """Print the traceback as `python script.py` would: from the script's frames on."""
    tb = exc.__traceback__
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != script:
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb if tb is not None else exc.__traceback__)


def _run_as_main(script: str) -> None:
    """Execute the file as the __main__ module, as the interpreter runs a script (its
    __file__ absolute, sys.argv[0] as the user typed it)."""
    with io.open_code(script) as f:
        source = f.read()
    code = compile(source, script, "exec", dont_inherit=True)
    module = types.ModuleType("__main__")
    module.__file__ = script
    module.__builtins__ = builtins
    module.__spec__ = None
    sys.modules["__main__"] = module
    exec(code, module.__dict__)  # noqa: S102 - running the user's script is the point


def _option_value(opt: str, args: list[str]) -> str:
    """The value of `--name=value` or `--name value` (empty when missing)."""
    return opt.partition("=")[2] if "=" in opt else (args.pop(0) if args else "")


def _schedule_option(name: str, value: str) -> str | None:
    """What is wrong with the value of a fault or schedule option, or None."""
    try:
        if name == "--faults":
            FAULTS.check(value)
        elif name == "--schedule":
            parse_schedule(value)
        elif name == "--schedules":
            if value != "all" and not (value.isdigit() and int(value) > 0):
                return f"needs a number of seeds or 'all', got {value!r}"
        elif name == "--timeout":
            if float(value) <= 0:
                return "must be positive"
        elif not (value.isdigit() and int(value) > 0):
            return f"needs a positive integer, got {value!r}"
    except (FaultSpecError, ScheduleSpecError) as exc:
        return str(exc)
    except ValueError:
        return f"needs a number, got {value!r}"
    return None


def main(argv: list[str]) -> int:
    verbose = False
    torch_npu = False
    profile_dir = None
    sanitize, tools, sanitize_report = False, "all", None
    faults = schedule = schedules = None
    max_steps, max_runs, jobs, timeout_s = 8, 1000, os.cpu_count() or 1, 60.0
    passed_on: list[str] = []  # the options a --schedules child gets again
    args = list(argv)
    while args and args[0].startswith("-"):
        opt = args.pop(0)
        given = len(args)
        if opt in ("--faults", "--schedule", "--schedules", "--max-steps", "--max-runs", "--jobs", "--timeout") or \
                opt.split("=")[0] in ("--faults", "--schedule", "--schedules", "--max-steps", "--max-runs", "--jobs",
                                      "--timeout"):
            name, value = opt.split("=")[0], _option_value(opt, args)
            if not value:
                print(f"npurt run: {name} needs a value\n{USAGE}", end="", file=sys.stderr)
                return 2
            problem = _schedule_option(name, value)
            if problem:
                print(f"npurt run: {name}: {problem}", file=sys.stderr)
                return 2
            if name == "--faults":
                faults = value
                passed_on += ["--faults", value]
            elif name == "--schedule":
                schedule = value
            elif name == "--schedules":
                schedules = value
            elif name == "--max-steps":
                max_steps = int(value)
            elif name == "--max-runs":
                max_runs = int(value)
            elif name == "--jobs":
                jobs = int(value)
            else:
                timeout_s = float(value)
            continue
        if opt not in ("-h", "--help", "--"):
            passed_on += [opt, *argv[len(argv) - given:len(argv) - len(args)]]
        if opt in ("-v", "--verbose"):
            verbose = True
        elif opt == "--torch-npu":
            torch_npu = True
        elif opt == "--sanitize":
            sanitize = True
        elif opt == "--tools" or opt.startswith("--tools="):
            sanitize, tools = True, _option_value(opt, args)
            if not tools:
                print(f"npurt run: --tools needs a list such as race,mem\n{USAGE}", end="", file=sys.stderr)
                return 2
        elif opt == "--sanitize-report" or opt.startswith("--sanitize-report="):
            sanitize, sanitize_report = True, _option_value(opt, args)
            if not sanitize_report:
                print(f"npurt run: --sanitize-report needs a file name\n{USAGE}", end="", file=sys.stderr)
                return 2
        elif opt == "--profile" or opt.startswith("--profile="):
            profile_dir = opt.partition("=")[2] if "=" in opt else (args.pop(0) if args else "")
            if not profile_dir:
                print(f"npurt run: --profile needs an output directory\n{USAGE}", end="", file=sys.stderr)
                return 2
        elif opt in ("-h", "--help"):
            print(USAGE, end="")
            return 0
        elif opt == "--":
            break
        else:
            print(f"npurt run: unknown option {opt!r}\n{USAGE}", end="", file=sys.stderr)
            return 2
    if not args:
        print(USAGE, end="", file=sys.stderr)
        return 2
    script = os.path.abspath(args[0])
    if not os.path.isfile(script):
        print(f"npurt run: can't open file {args[0]!r}: no such file", file=sys.stderr)
        return 2
    if schedules is not None:
        if schedule is not None:
            print("npurt run: --schedule and --schedules exclude each other", file=sys.stderr)
            return 2
        if schedules == "all":
            outcomes, complete = runs.enumerate_schedules(max_steps, passed_on, args, jobs, timeout_s, max_runs)
            return runs.report(outcomes, passed_on, args, complete)
        return runs.report(runs.run_seeds(int(schedules), passed_on, args, jobs, timeout_s), passed_on, args)

    profile = None
    if profile_dir is not None:
        from npurt.runtime.errors import NpuError
        from npurt.tools.profiler import Profile
        try:
            profile = Profile(profile_dir)  # the directory is checked before the script runs
        except NpuError as exc:
            print(f"npurt run: {exc.message}", file=sys.stderr)
            return 2

    sanitizer = None
    if sanitize:
        from npurt.tools.sanitizer import Sanitizer
        try:
            sanitizer = Sanitizer(tools, json_path=sanitize_report)
        except ValueError as exc:
            print(f"npurt run: --tools: {exc}", file=sys.stderr)
            return 2
        report_dir = os.path.dirname(os.path.abspath(sanitize_report)) if sanitize_report else None
        if report_dir is not None and not os.path.isdir(report_dir):
            print(f"npurt run: --sanitize-report: directory {report_dir!r} does not exist", file=sys.stderr)
            return 2

    before = {name: sys.modules[name] for name in list(sys.modules)
              if name.split(".")[0] in ("acl", "torch_npu")}
    aliases = install_acl_alias()
    if torch_npu:
        try:
            aliases += install_torch_npu_alias()
        except (ImportError, RuntimeError) as exc:
            for alias in aliases:
                sys.modules.pop(alias, None)
            sys.modules.update(before)
            print(f"npurt run: --torch-npu: {exc}", file=sys.stderr)
            return 2
    if verbose:
        from npurt.runtime.config import Settings
        settings = Settings.from_env()
        shim = " and torch_npu -> npurt.torch.shim" if torch_npu else ""
        print(f"npurt run: {args[0]} with acl -> npurt.acl{shim} ({', '.join(aliases)}); simulated {settings.soc}, "
              f"{len(settings.visible_devices)} device(s)", file=sys.stderr)

    saved_pythonpath = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [ACL_PATH, saved_pythonpath]))
    saved_argv, saved_path0 = sys.argv, sys.path[0] if sys.path else None
    sys.argv = [args[0], *args[1:]]
    script_dir = os.path.dirname(script)
    if sys.path:
        sys.path[0] = script_dir
    else:
        sys.path.insert(0, script_dir)
    sys.path.insert(1, ACL_PATH)  # 'spawn' workers take sys.path from the parent, not PYTHONPATH
    status = 0
    saved_main = sys.modules.get("__main__")
    saved_env = {k: os.environ.get(k) for k in ("NPURT_FAULTS", "NPURT_SCHEDULE")}
    try:
        if faults is not None:  # the script's own child processes get them too
            os.environ["NPURT_FAULTS"] = faults
            FAULTS.arm(faults)
        if schedule is not None:
            os.environ["NPURT_SCHEDULE"] = schedule
            SCHEDULE.start(schedule)
        if profile is not None:
            profile.start()
        if sanitizer is not None:
            sanitizer.enable()
        _run_as_main(script)
    except SystemExit as exc:
        status = _exit_status(exc.code)
    except KeyboardInterrupt:
        traceback.print_exc()
        status = 130
    except BaseException as exc:  # noqa: BLE001 - reported exactly as python would
        _print_script_traceback(exc, script)
        status = 1
    finally:
        if schedule is not None:
            SCHEDULE.stop()
        if faults is not None:
            FAULTS.disarm()
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if sanitizer is not None:
            sanitizer.disable()  # the end-of-run checks, the error summary, the JSON report
            if sanitizer.errors:
                status = SANITIZER_EXIT
        if profile is not None and profile.running:
            profile.stop()
            print(f"\n{profile.report()}npurt run: profile of {len(profile.timeline.tasks)} tasks and "
                  f"{len(profile.timeline.calls)} API calls written to {profile.out_dir} (msprof.json, *.csv, "
                  f"summary.txt; draw it with `npurt plot {profile.out_dir}`)", file=sys.stderr)
        if saved_pythonpath is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved_pythonpath
        sys.argv = saved_argv
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
        for alias in aliases:  # leave sys.modules as it was (matters when called in-process)
            sys.modules.pop(alias, None)
        sys.modules.update(before)
        if ACL_PATH in sys.path:
            sys.path.remove(ACL_PATH)
        if saved_path0 is not None and sys.path and sys.path[0] == script_dir:
            sys.path[0] = saved_path0
        sys.stdout.flush()
    if verbose:
        print(f"npurt run: {args[0]} exited with status {status}", file=sys.stderr)
    return status
