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

Testing options (docs/testing.md): `--faults SPEC` injects faults (NPURT_FAULTS); `--schedule
SEED` runs the device under a controlled schedule (NPURT_SCHEDULE); `--schedules N` runs the
program under seeds 1..N in child processes and reports the failing seeds with the command that
replays one (exit status 0 when all passed); `--schedules all --max-steps K` enumerates the
interleavings of the first K steps. With `--sanitize`, a race report is followed by a seed under
which the program's own check fails, if one of `--race-seeds N` does (without it, the report says
how to look).
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

from npurt.runtime import (FAULTS, FaultSpecError, NpuError, SCHEDULE, ScheduleSpecError, Settings,
                           parse_schedule)

from .. import acl  # a Python program's `import acl` is this package (install_acl_alias)
from ..capi import home as capi_home
from ..tools.profiler import Profile
from ..tools.sanitizer import Sanitizer
from . import schedules as runs
from .cliargs import CommandParser, Exit, command_parser, parse, split_passthrough

ACL_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "acl_path")  # holds the `acl` shim

SANITIZER_EXIT = 86  # the exit status of a run the sanitizer reported errors in


def install_acl_alias() -> list[str]:
    """Make `acl` and `acl.<sub>` name npurt.acl and its submodules; returns the aliases."""
    made = []   # npurt.acl imports every submodule and namespace of the face
    for name, module in list(sys.modules.items()):
        if name == acl.__name__ or name.startswith(acl.__name__ + "."):
            alias = name[len("npurt."):]
            if not alias.split(".")[-1].startswith("_"):
                sys.modules[alias] = module
                made.append(alias)
    return sorted(made)


TORCH_NPU_SUBMODULES = ("optim", "profiler", "formats", "ops", "utils", "utils.collect_env", "_C", "_inductor")
TORCH_NPU_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_npu_path")  # children's torch_npu


# torch_npu modules that cost an import of their own: aliased on first import (the module they name)
TORCH_NPU_LAZY = {"torch_npu.npu._stream_check": "npurt.torch.stream_check",
                  "torch.npu._stream_check": "npurt.torch.stream_check",
                  "torch_npu.npu._graph_tree": "npurt.torch.graph_tree",
                  "torch.npu._graph_tree": "npurt.torch.graph_tree",
                  "torch_npu.npu._npugraph_conditional_nodes": "npurt.torch.npugraph_cond",
                  "torch.npu._npugraph_conditional_nodes": "npurt.torch.npugraph_cond",
                  # `from torch_npu.npu import _graph_tree`: the import system asks for the
                  # submodule by the package's own name
                  "npurt.torch.npu._graph_tree": "npurt.torch.graph_tree",
                  "npurt.torch.npu._npugraph_conditional_nodes": "npurt.torch.npugraph_cond"}


class _LazyAliases:
    """A sys.meta_path finder and loader: `import torch_npu.npu._stream_check` imports the
    npurt module it names (TORCH_NPU_LAZY) and that module object becomes the alias."""

    def __init__(self, names: dict[str, str]):
        self.names = names

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.names:
            return None
        import importlib.util
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        import importlib
        return importlib.import_module(self.names[spec.name])

    def exec_module(self, module) -> None:
        pass  # imported already by create_module


def install_torch_npu_alias() -> list[str]:
    """Make `torch_npu` (and torch_npu.npu, .optim, .profiler, ...) name npurt's shim; returns
    the aliases. Raises ImportError when PyTorch is missing or too old."""
    import npurt.torch.shim as shim  # registers the npu device

    made = {"torch_npu": shim, "torch_npu.npu": sys.modules["torch.npu"],
            "torch_npu.npu.amp": sys.modules["torch.npu.amp"]}
    for sub in TORCH_NPU_SUBMODULES:
        made[f"torch_npu.{sub}"] = sys.modules[f"npurt.torch.shim.{sub}"]
    made["torch_npu.npu.utils"] = made["torch.npu.utils"] = sys.modules["npurt.torch.shim.npu_utils"]
    made["torch_npu.npu.memory"] = sys.modules["npurt.torch.npu_memory"]
    for path, module in sys.modules["torch.npu"].GRAPH_MODULES.items():
        made[f"torch_npu.npu.{path}"] = module
    plan = sys.modules["npurt.torch.graph_update_plan"]   # its inductor side (torch_npu/_inductor/...)
    made["torch_npu._inductor._aclgraph_update_plan"] = made["torch_npu._inductor._aclgraph_update_plan.codegen"] = plan
    sys.modules.update(made)
    if not any(isinstance(finder, _LazyAliases) for finder in sys.meta_path):
        sys.meta_path.append(_LazyAliases(TORCH_NPU_LAZY))
    return sorted(made) + sorted(TORCH_NPU_LAZY)


SUMMARY = ("Run a Python program on npurt, as `python` would run it, with `import acl` resolving to "
           "npurt's pyACL facade (npurt.acl); or run a native program (./app) against the CANN prefix "
           "that `npurt cann-home` builds.")
EPILOG = """programs:
  npurt run script.py [args...]      a pyACL or torch_npu script (its directory first on sys.path)
  npurt run -m module [args...]      a module, as `python -m module` (pytest, your package's main)
  npurt run -c "code" [args...]      a string of code, as `python -c`
  npurt run ./app [args...]          a native executable linked against libacl_rt (npurt cann-home)

The exit status is the program's; 86 if --sanitize reported anything; 2 for bad arguments.
With --schedules: 0 when the program passed under every seed, 1 otherwise (each failing seed is
listed with the command that replays it, `npurt run --schedule SEED program`).
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
    p.add_argument("--faults", metavar="SPEC",
                   help="inject faults (the NPURT_FAULTS language, docs/testing.md), e.g. "
                        "'acl.rt.malloc@3=207001;task:kernel@1=507015'; a summary is printed at exit")
    p.add_argument("--schedule", metavar="SEED",
                   help="run the device under the controlled schedule of SEED (NPURT_SCHEDULE): one task at a "
                        "time, in the order the seed chooses; the same seed, the same run")
    p.add_argument("--schedules", metavar="N|all",
                   help="run the program under seeds 1..N (child processes, --jobs at a time) and report the "
                        "seeds it fails under; 'all' enumerates the interleavings of the first --max-steps steps")
    p.add_argument("--max-steps", metavar="K", type=int, default=8,
                   help="--schedules all: branch over the first K steps (default 8)")
    p.add_argument("--max-runs", metavar="M", type=int, default=1000,
                   help="--schedules all: at most M runs (default 1000)")
    p.add_argument("--jobs", metavar="J", type=int, default=os.cpu_count() or 1,
                   help="--schedules: runs at a time (default: the number of cores)")
    p.add_argument("--race-seeds", metavar="N", type=int, default=0,
                   help="--sanitize: when it reports a race, try the program under up to N controlled schedules "
                        "and name a seed under which the program's own check fails (default 0: only say how)")
    p.add_argument("--timeout", metavar="S", type=float, default=60.0,
                   help="--schedules: a run longer than S seconds is a hang (default 60)")
    target = p.add_mutually_exclusive_group()
    target.add_argument("-m", dest="module", metavar="MODULE", help="run a module as `python -m MODULE`")
    target.add_argument("-c", dest="code", metavar="CODE", help="run CODE as `python -c CODE`")
    p.add_argument("program", nargs="?", metavar="PROGRAM", help="a Python script or a native executable")
    p.add_argument("args", nargs="*", metavar="ARGS", help="the program's arguments (passed through)")
    return p


OPTIONS_WITH_VALUES = {"--profile", "--tools", "--sanitize-report", "--faults", "--schedule", "--schedules",
                       "--max-steps", "--max-runs", "--jobs", "--timeout", "--race-seeds"}


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
    try:
        if args.faults is not None:
            FAULTS.check(args.faults)
        if args.schedule is not None:
            parse_schedule(args.schedule)
    except (FaultSpecError, ScheduleSpecError) as exc:
        p.error(f"{'--faults' if isinstance(exc, FaultSpecError) else '--schedule'}: {exc}")
    if args.schedules is not None:
        if args.schedule is not None:
            p.error("--schedule and --schedules exclude each other")
        if args.schedules != "all" and not (args.schedules.isdigit() and int(args.schedules) > 0):
            p.error(f"--schedules needs a number of seeds or 'all', got {args.schedules!r}")
    for name in ("max_steps", "max_runs", "jobs", "timeout"):
        if getattr(args, name) <= 0:
            p.error(f"--{name.replace('_', '-')} must be positive")
    if args.race_seeds < 0:
        p.error("--race-seeds must be 0 or more")
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


def main(argv: list[str], uncaught: list | None = None) -> int:
    """`npurt run`; an uncaught exception of the program is also appended to `uncaught`
    (npurt launch aborts the job for it)."""
    try:
        args = parse_run_args(argv)
    except Exit as exc:
        return exc.status
    if args.schedules is not None:
        return run_schedules(args)
    if args.program is not None and is_native(os.path.abspath(args.program)):
        return run_native(args)

    profile = None
    if args.profile is not None:
        try:
            profile = Profile(args.profile)  # the directory is checked before the program runs
        except NpuError as exc:
            print(f"npurt run: error: {exc.message}", file=sys.stderr)
            return 2

    sanitizer = None
    if args.sanitize:
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
        settings = Settings.from_env()
        shim = " and torch_npu -> npurt.torch.shim" if args.torch_npu else ""
        print(f"npurt run: {shown} with acl -> npurt.acl{shim} ({', '.join(aliases)}); simulated {settings.soc}, "
              f"{len(settings.visible_devices)} device(s)", file=sys.stderr)

    saved_pythonpath = os.environ.get("PYTHONPATH")
    child_paths = [ACL_PATH, TORCH_NPU_PATH] if args.torch_npu else [ACL_PATH]
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [*child_paths, saved_pythonpath]))
    saved_argv, saved_path0 = sys.argv, sys.path[0] if sys.path else None
    sys.argv = [argv0, *args.args]
    if sys.path:
        sys.path[0] = path0
    else:
        sys.path.insert(0, path0)
    sys.path[1:1] = child_paths  # 'spawn' workers take sys.path from the parent, not PYTHONPATH
    status = 0
    saved_main = sys.modules.get("__main__")
    saved_env = {k: os.environ.get(k) for k in ("NPURT_FAULTS", "NPURT_SCHEDULE")}
    try:
        if args.faults is not None:  # the program's own child processes get them too
            os.environ["NPURT_FAULTS"] = args.faults
            FAULTS.arm(args.faults)
        if args.schedule is not None:
            os.environ["NPURT_SCHEDULE"] = args.schedule
            SCHEDULE.start(args.schedule)
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
        if uncaught is not None:
            uncaught.append(exc)
        if _missing_torch_npu(exc) and not args.torch_npu:
            print("npurt run: torch_npu is npurt's shim only under --torch-npu: run with "
                  f"npurt run --torch-npu {' '.join(argv)}", file=sys.stderr)
        status = 1
    finally:
        if args.schedule is not None:
            SCHEDULE.stop()
        if args.faults is not None:
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
            if args.schedule is None and any(r.tool == "racecheck" for r in sanitizer.reports):
                if args.race_seeds:
                    _show_that_the_race_matters(args)
                else:
                    print("npurt run: to see whether the race makes the program fail, add --race-seeds N: it "
                          "tries N controlled schedules and names one under which the program's check fails",
                          file=sys.stderr)
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
        for path in child_paths:
            if path in sys.path:
                sys.path.remove(path)
        if saved_path0 is not None and sys.path and sys.path[0] == path0:
            sys.path[0] = saved_path0
        sys.stdout.flush()
    if args.verbose:
        print(f"npurt run: {shown} exited with status {status}", file=sys.stderr)
    return status


def _show_that_the_race_matters(args) -> None:
    """After a race report: look for a controlled schedule under which the program's own check
    fails (it then exits non-zero), and print the command that replays it."""
    options, program = _child_options(args, sanitize=False), _program_of(args)
    found = runs.first_failing_seed(options, program, args.jobs, args.timeout, args.race_seeds)
    if found is None:
        print(f"npurt run: the race did not make the program fail under seeds 1..{args.race_seeds} "
              "(it may still corrupt results the program does not check)", file=sys.stderr)
        return
    why = "did not finish" if found.status is None else f"exits with status {found.status}"
    print(f"npurt run: the race matters: under seed {found.schedule} the program {why}; replay it with\n"
          f"  {runs.replay_command(found.schedule, options, program)}", file=sys.stderr)


def _child_options(args, sanitize: bool = True) -> list[str]:
    options = ["--faults", args.faults] if args.faults is not None else []
    options += ["--torch-npu"] if args.torch_npu else []
    if sanitize and args.sanitize:
        options += ["--sanitize"] + (["--tools", args.tools] if args.tools else [])
    return options


def _program_of(args) -> list[str]:
    if args.program is not None:
        return [args.program, *args.args]
    if args.module is not None:
        return ["-m", args.module, *args.args]
    return ["-c", args.code, *args.args]


def run_schedules(args) -> int:
    """--schedules: the program under many seeds (or every interleaving of its first steps),
    each run a child `npurt run --schedule ...` (apps/schedules.py)."""
    options, program = _child_options(args), _program_of(args)
    if args.schedules == "all":
        outcomes, complete = runs.enumerate_schedules(args.max_steps, options, program, args.jobs, args.timeout,
                                                      args.max_runs)
        return runs.report(outcomes, options, program, complete)
    return runs.report(runs.run_seeds(int(args.schedules), options, program, args.jobs, args.timeout),
                       options, program)


def cann_home() -> str | None:
    """The CANN prefix native programs run against: NPURT_CANN_HOME (what the prefix's
    set_env.sh exports) when it names a finished prefix, else the one `npurt cann-home` makes
    (built now if missing or stale). None when NPURT_CANN_HOME names something else."""
    named = os.environ.get("NPURT_CANN_HOME", "").strip()
    if named:
        return named if os.path.isfile(os.path.join(named, ".npurt-stamp")) else None
    return capi_home.cann_home()


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
    if args.faults is not None:  # read by the runtime when the library starts Python
        env["NPURT_FAULTS"] = args.faults
    if args.schedule is not None:
        env["NPURT_SCHEDULE"] = args.schedule
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
    try:
        prefix = cann_home()
    except Exception as exc:  # noqa: BLE001 - the build's own failure, said in one line
        print(f"npurt run: error: cannot make the CANN prefix for {args.program}: {exc}", file=sys.stderr)
        return 2
    if prefix is None:
        print(f"npurt run: error: NPURT_CANN_HOME={os.environ['NPURT_CANN_HOME']!r} is not a prefix made by "
              "`npurt cann-home`: unset it, or source the set_env.sh of one", file=sys.stderr)
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
