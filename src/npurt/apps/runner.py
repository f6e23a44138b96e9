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
import json
import os
import runpy
import subprocess
import sys
import tempfile
import traceback
import types

<<<<<<< HEAD
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
=======
from .cliargs import CommandParser, Exit, command_parser, parse, split_passthrough

ACL_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "acl_path")  # holds the `acl` shim

>>>>>>> main
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


SUMMARY = ("Run a Python program on npurt, as `python` would run it, with `import acl` resolving to "
           "npurt's pyACL facade (npurt.acl); or run a native program (./app) against the CANN prefix "
           "that `npurt cann-home` builds.")
EPILOG = """programs:
  npurt run script.py [args...]      a pyACL or torch_npu script (its directory first on sys.path)
  npurt run -m module [args...]      a module, as `python -m module` (pytest, your package's main)
  npurt run -c "code" [args...]      a string of code, as `python -c`
  npurt run ./app [args...]          a native executable linked against libacl_rt (npurt cann-home)

The exit status is the program's; 86 if --sanitize reported anything; 2 for bad arguments.
`import torch_npu` works only with --torch-npu (torch's "npu" device is then npurt's)."""


def parser() -> CommandParser:
    p = command_parser("run", SUMMARY, EPILOG)
    p.add_argument("-v", "--verbose", action="store_true",
                   help="say what is run, on which simulated SoC, and the exit status (on stderr)")
    p.add_argument("--torch-npu", action="store_true",
                   help="`import torch_npu` resolves to npurt's shim and torch's \"npu\" device is npurt's "
                        "(needs the CPU build of PyTorch: pip install torch --index-url "
                        "https://download.pytorch.org/whl/cpu)")
    p.add_argument("--profile", metavar="OUT_DIR",
                   help="profile the whole run: the timeline (msprof.json), the summary tables (*.csv) and "
                        "summary.txt go to OUT_DIR; the summary is printed on stderr at the end")
    p.add_argument("--sanitize", action="store_true",
                   help="find races, memory errors, leaks and hangs while it runs; reports go to stderr and "
                        f"the exit status is {SANITIZER_EXIT} if there is any")
    p.add_argument("--tools", metavar="LIST",
                   help="the sanitizer's tools, comma-separated: race,mem,init,leak,sync (default all; "
                        "implies --sanitize)")
    p.add_argument("--sanitize-report", metavar="FILE", help="also write the reports as JSON to FILE "
                                                             "(implies --sanitize)")
    target = p.add_mutually_exclusive_group()
    target.add_argument("-m", dest="module", metavar="MODULE", help="run a module as `python -m MODULE`")
    target.add_argument("-c", dest="code", metavar="CODE", help="run CODE as `python -c CODE`")
    p.add_argument("program", nargs="?", metavar="PROGRAM", help="a Python script or a native executable")
    p.add_argument("args", nargs="*", metavar="ARGS", help="the program's arguments (passed through)")
    return p


OPTIONS_WITH_VALUES = {"--profile", "--tools", "--sanitize-report"}


def parse_run_args(argv: list[str], prog_parser: CommandParser | None = None):
    """npurt run's options and its program: argparse reads the options, the program's arguments
    pass through untouched. Raises Exit on a usage error (status 2) or after --help (0)."""
    p = prog_parser or parser()
    own, program, rest = split_passthrough(list(argv), OPTIONS_WITH_VALUES, ("-m", "-c"))
    args = parse(p, own + program)
    args.args = rest
    if args.tools is not None or args.sanitize_report is not None:
        args.sanitize = True
    if args.tools == "":
        p.error("--tools needs a list such as race,mem")
    if args.sanitize_report == "":
        p.error("--sanitize-report needs a file name")
    if args.profile == "":
        p.error("--profile needs an output directory")
    if args.program is None and args.module is None and args.code is None:
        p.error("give a program: script.py, -m MODULE, -c CODE or ./app")
    if args.program is not None:
        path = os.path.abspath(args.program)
        if os.path.isdir(path):
            p.error(f"{args.program!r} is a directory: give a script in it, or -m PACKAGE for a package "
                    "with a __main__.py")
        if not os.path.isfile(path):
            p.error(f"can't open file {args.program!r}: no such file")
    return args


def is_native(path: str) -> bool:
    """An ELF executable (a C/C++ program), not a Python script."""
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def _exit_status(code) -> int:
    """What `python` does with SystemExit(code)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


_OWN_FILES = (os.path.abspath(__file__), os.path.abspath(runpy.__file__))


def _print_program_traceback(exc: BaseException) -> None:
    """Print the traceback as `python` would: from the program's first frame on, without
    npurt run's own frames (a SyntaxError in the script shows only the script's line)."""
    tb = exc.__traceback__
    while tb is not None and (os.path.abspath(tb.tb_frame.f_code.co_filename) in _OWN_FILES
                              or tb.tb_frame.f_code.co_filename.startswith("<frozen")):
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb)


def _missing_torch_npu(exc: BaseException) -> bool:
    return isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] == "torch_npu"


def _fresh_main(filename: str | None) -> types.ModuleType:
    module = types.ModuleType("__main__")
    if filename is not None:
        module.__file__ = filename
    module.__builtins__ = builtins
    module.__spec__ = None
    sys.modules["__main__"] = module
    return module


def _run_script(script: str) -> None:
    """Execute the file as the __main__ module, as the interpreter runs a script (its
    __file__ absolute, sys.argv[0] as the user typed it)."""
    with io.open_code(script) as f:
        source = f.read()
    code = compile(source, script, "exec", dont_inherit=True)
    exec(code, _fresh_main(script).__dict__)  # noqa: S102 - running the user's program is the point


def _run_code(source: str) -> None:
    code = compile(source, "<string>", "exec", dont_inherit=True)
    exec(code, _fresh_main(None).__dict__)  # noqa: S102


def _run_module(name: str) -> None:
    runpy.run_module(name, run_name="__main__", alter_sys=True)


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
<<<<<<< HEAD
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
=======
    try:
        args = parse_run_args(argv)
    except Exit as exc:
        return exc.status
    if args.program is not None and is_native(os.path.abspath(args.program)):
        return run_native(args)
>>>>>>> main

    profile = None
    if args.profile is not None:
        from npurt.runtime.errors import NpuError
        from npurt.tools.profiler import Profile
        try:
            profile = Profile(args.profile)  # the directory is checked before the program runs
        except NpuError as exc:
            print(f"npurt run: error: {exc.message}", file=sys.stderr)
            return 2

    sanitizer = None
    if args.sanitize:
        from npurt.tools.sanitizer import Sanitizer
        try:
            sanitizer = Sanitizer(args.tools or "all", json_path=args.sanitize_report)
        except ValueError as exc:
            print(f"npurt run: error: --tools: {exc}", file=sys.stderr)
            return 2
        report_dir = os.path.dirname(os.path.abspath(args.sanitize_report)) if args.sanitize_report else None
        if report_dir is not None and not os.path.isdir(report_dir):
            print(f"npurt run: error: --sanitize-report: directory {report_dir!r} does not exist", file=sys.stderr)
            return 2

    before = {name: sys.modules[name] for name in list(sys.modules)
              if name.split(".")[0] in ("acl", "torch_npu")}
    aliases = install_acl_alias()
    if args.torch_npu:
        try:
            aliases += install_torch_npu_alias()
        except (ImportError, RuntimeError) as exc:
            for alias in aliases:
                sys.modules.pop(alias, None)
            sys.modules.update(before)
            print(f"npurt run: error: --torch-npu: {exc}", file=sys.stderr)
            return 2
    if args.program is not None:
        shown, argv0 = args.program, args.program
        path0 = os.path.dirname(os.path.abspath(args.program))
    elif args.module is not None:
        shown, argv0, path0 = f"-m {args.module}", args.module, os.getcwd()  # runpy sets argv[0] to the file
    else:
        shown, argv0, path0 = "-c", "-c", ""
    if args.verbose:
        from npurt.runtime.config import Settings
        settings = Settings.from_env()
        shim = " and torch_npu -> npurt.torch.shim" if args.torch_npu else ""
        print(f"npurt run: {shown} with acl -> npurt.acl{shim} ({', '.join(aliases)}); simulated {settings.soc}, "
              f"{len(settings.visible_devices)} device(s)", file=sys.stderr)

    saved_pythonpath = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [ACL_PATH, saved_pythonpath]))
    saved_argv, saved_path0 = sys.argv, sys.path[0] if sys.path else None
    sys.argv = [argv0, *args.args]
    if sys.path:
        sys.path[0] = path0
    else:
        sys.path.insert(0, path0)
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
        if args.program is not None:
            _run_script(os.path.abspath(args.program))
        elif args.module is not None:
            _run_module(args.module)
        else:
            _run_code(args.code)
    except SystemExit as exc:
        status = _exit_status(exc.code)
    except KeyboardInterrupt:
        traceback.print_exc()
        status = 130
    except BaseException as exc:  # noqa: BLE001 - reported exactly as python would
        _print_program_traceback(exc)
        if _missing_torch_npu(exc) and not args.torch_npu:
            print("npurt run: torch_npu is npurt's shim only under --torch-npu: run with "
                  f"npurt run --torch-npu {' '.join(argv)}", file=sys.stderr)
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
        if saved_path0 is not None and sys.path and sys.path[0] == path0:
            sys.path[0] = saved_path0
        sys.stdout.flush()
    if args.verbose:
        print(f"npurt run: {shown} exited with status {status}", file=sys.stderr)
    return status


def cann_home() -> str | None:
    """The CANN prefix of `npurt cann-home` (None until it is built). Wired to npurt.capi when
    its builder lands; until then native programs are refused with the command to run."""
    return None


def native_environment(prefix: str, args, report_path: str | None) -> dict[str, str]:
    """The environment of a native program under `npurt run`: the prefix's libacl_rt first on
    the library path, and the variables the library's Python start reads (NPURT_SANITIZE,
    NPURT_SANITIZE_REPORT, NPURT_PROFILE; see npurt.envvars)."""
    env = dict(os.environ)
    lib64 = os.path.join(prefix, "lib64")
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [lib64, env.get("LD_LIBRARY_PATH")]))
    env["ASCEND_HOME_PATH"] = prefix
    for name in ("NPURT_SANITIZE", "NPURT_SANITIZE_REPORT", "NPURT_PROFILE"):
        env.pop(name, None)
    if args.sanitize:
        env["NPURT_SANITIZE"] = args.tools or "all"
        env["NPURT_SANITIZE_REPORT"] = report_path
    if args.profile is not None:
        env["NPURT_PROFILE"] = os.path.abspath(args.profile)
    return env


def _reported_errors(path: str) -> int | None:
    """The number of errors in a sanitizer JSON report (None when the program wrote none)."""
    try:
        with open(path, encoding="utf-8") as f:
            return int(json.load(f).get("errors", 0))
    except (OSError, ValueError):
        return None


def run_native(args) -> int:
    """Run a native program (an ELF executable) linked against the `npurt cann-home` prefix."""
    prefix = cann_home()
    if prefix is None:
        print(f"npurt run: error: {args.program} is a native program and there is no CANN prefix yet: "
              "build it with `npurt cann-home`", file=sys.stderr)
        return 2
    if args.torch_npu:
        print("npurt run: error: --torch-npu is for Python programs", file=sys.stderr)
        return 2
    if args.profile is not None:
        try:
            os.makedirs(args.profile, exist_ok=True)
        except OSError as exc:
            print(f"npurt run: error: --profile: cannot make {args.profile!r}: {exc.strerror}", file=sys.stderr)
            return 2
    with tempfile.TemporaryDirectory(prefix="npurt-run-") as tmp:
        report = (os.path.abspath(args.sanitize_report) if args.sanitize_report
                  else os.path.join(tmp, "sanitizer.json")) if args.sanitize else None
        env = native_environment(prefix, args, report)
        program = os.path.abspath(args.program)
        if args.verbose:
            print(f"npurt run: {args.program} (native) with libacl_rt from {prefix}", file=sys.stderr)
        try:
            status = subprocess.call([program, *args.args], env=env)
        except OSError as exc:
            print(f"npurt run: error: cannot run {args.program!r}: {exc.strerror}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            return 130
        status = status if status >= 0 else 128 - status   # killed by a signal: as a shell shows it
        if report is not None:
            errors = _reported_errors(report)
            if errors is None:
                print(f"npurt run: the sanitizer wrote no report: {args.program} never started npurt's "
                      "runtime (did it link libacl_rt?) or died before exiting", file=sys.stderr)
            elif errors:
                status = SANITIZER_EXIT
    if args.profile is not None:
        print(f"npurt run: profile written to {os.path.abspath(args.profile)} (draw it with "
              f"`npurt plot {args.profile}`)", file=sys.stderr)
    if args.verbose:
        print(f"npurt run: {args.program} exited with status {status}", file=sys.stderr)
    return status
