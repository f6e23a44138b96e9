"""The `npurt` command line (also `python -m npurt`).

    npurt info                 devices, memory, the settings in effect, optional extras installed
    npurt demo                 the main job: a pipeline on two streams, then npurt finding bugs
    npurt run script.py ...    run a pyACL / torch_npu program on npurt (also -m module, -c code, ./app)
    npurt launch -n N script.py ...   run a program as N ranks (processes) connected by MPI
    npurt atc --model=... ...  convert an ONNX model to an .om, with ATC's options (npurt.ge.atc)
    npurt plot OUT_DIR         draw a profile's timeline as a picture (npurt run/demo --profile OUT_DIR)
    npurt bench [--quick]      benchmarks against numpy and the peers
    npurt cann-home [--prefix DIR]   a CANN-like prefix for C/C++ programs (acl/acl.h, libacl_rt.so)
    npurt --version

Every subcommand parses its arguments with argparse in one style (`npurt COMMAND --help`);
no or bad arguments print the usage and one `npurt COMMAND: error: ...` line, exit status 2.
Bad settings (NPURT_* variables) are one line on stderr and exit status 2, never a traceback;
output paths are checked before any long work starts. `run` and `launch` pass everything after
the program's name to the program; `atc` keeps ATC's option names and ATC's exit status 1 for a
failed run.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

from .._version import __version__
from ..capi import home as capi_home
from ..envvars import VARIABLES
from ..ge import atc
from .cliargs import CommandParser, Exit, command_parser, parse
from .. import runtime as rt  # the runtime's operations: its published surface
from ..runtime import ENV_VARIABLES, NpuError, RUNTIME, Settings, constants as C

# the optional extras and the distributions each one installs (what `npurt info` reports)
EXTRAS = {"ops": ["ml_dtypes"], "models": ["onnx", "onnxruntime"], "media": ["Pillow"], "plot": ["matplotlib"],
          "dist": ["mpi4py", "mpich"], "torch": ["torch"], "docs": ["mkdocs-material", "mkdocstrings-python"]}
# PyTorch's CPU build: a plain `pip install torch` on Linux resolves to the CUDA build (gigabytes)
TORCH_CPU_INSTALL = "pip install torch --index-url https://download.pytorch.org/whl/cpu"

# name: one line for `npurt --help`
COMMANDS = {
    "info": "devices, memory, the settings in effect, the optional extras installed",
    "demo": "the main job: an overlapped pipeline checked against numpy, then npurt finding bugs",
    "run": "run a program on npurt: script.py, -m module, -c code or ./app "
           "(--torch-npu, --sanitize, --profile DIR)",
    "launch": "run a program as N ranks connected by MPI: npurt launch -n N script.py",
    "atc": "convert an ONNX model to an .om with ATC's options: npurt atc --model=m.onnx --framework=5 ...",
    "plot": "draw a profile's timeline as a picture: npurt plot OUT_DIR -o timeline.png",
    "bench": "benchmarks against numpy, the peers and the physical limits",
    "cann-home": "make (or reuse) a CANN-like prefix for C/C++ programs (acl/acl.h, libacl_rt.so, set_env.sh); "
                 "print its path",
}

# The module that runs each of these commands, loaded when that command runs: `npurt --help`,
# `npurt info` and `npurt atc` load none of them (the bench, the pyACL face, the sanitizer, the
# collectives and matplotlib's plotting cost several times npurt's own start-up), `npurt demo`
# loads the demo's. tests/architecture/layers.toml [loads] names this table, so its entries are
# held to the import contract like the imports written above.
COMMAND_MODULES = {"demo": "npurt.apps.demo", "bench": "npurt.apps.bench", "plot": "npurt.tools.profiler.plot",
                   "run": "npurt.apps.runner", "launch": "npurt.apps.launcher"}


def command_module(command: str):
    """The module that runs `command` (COMMAND_MODULES), loaded on first use."""
    return importlib.import_module(COMMAND_MODULES[command])


class CliError(Exception):
    """A bad argument or setting: printed as one line, exit status 2."""


def check_settings():
    """The settings in effect and the simulated SoC; a CliError for a bad NPURT_* variable."""
    try:
        settings = Settings.from_env()
        return settings, settings.spec()
    except NpuError as exc:
        raise CliError(exc.message) from None


def check_output(path: str, what: str = "output file") -> str:
    """Refuse an output file that cannot be written, before the work that produces it."""
    target = os.path.abspath(path)
    parent = os.path.dirname(target)
    if os.path.isdir(target):
        raise CliError(f"{what} {path!r} is a directory")
    if not os.path.isdir(parent):
        raise CliError(f"cannot write {what} {path!r}: directory {os.path.dirname(path) or parent!r} does not exist")
    if not os.access(parent, os.W_OK):
        raise CliError(f"cannot write {what} {path!r}: directory {parent!r} is not writable")
    return path


def _version_line() -> str:
    import numpy
    return f"npurt {__version__} (Python {sys.version.split()[0]}, numpy {numpy.__version__})"


def install_hint(extra: str) -> str:
    """The command that installs an extra (torch: its CPU build first)."""
    if extra == "torch":
        return TORCH_CPU_INSTALL
    return f"pip install 'npurt[{extra}]'"


def _extras() -> list[str]:
    from importlib import metadata
    lines = []
    for extra, dists in EXTRAS.items():
        found = []
        for dist in dists:
            try:
                found.append(f"{dist} {metadata.version(dist)}")
            except metadata.PackageNotFoundError:
                found.append(f"{dist} missing")
        ok = all(not f.endswith(" missing") for f in found)
        hint = "" if ok else f"   ({install_hint(extra)})"
        lines.append(f"  {extra:<7} {'yes' if ok else 'no ':<4}{', '.join(found)}{hint}")
    return lines


def _settings_lines(settings) -> list[str]:
    """Every variable of the registry (npurt.envvars) with the value in effect and where it
    came from; the runtime's values as the runtime read them."""
    in_effect = dict(ENV_VARIABLES(settings))
    lines = []
    for var in VARIABLES:
        raw = os.environ.get(var.name)
        value = in_effect.get(var.name, raw if raw is not None else var.default)
        source = f"from {var.name}={raw}" if raw is not None else "default"
        lines.append(f"  {var.name:<26} {value:<22} {source}")
    return lines


def gib(n: int) -> str:
    """Bytes as GiB with at most 3 significant digits: 61 GiB, 1.91 GiB."""
    return f"{n / 2**30:.3g} GiB"


def _info(args: argparse.Namespace) -> int:
    settings, spec = check_settings()

    rt.ensure_initialized()
    print(_version_line())
    print(f"simulated NPU: {spec.name}, {rt.get_device_count()} visible device(s) of {settings.physical_devices}")
    for dev_id in range(rt.get_device_count()):
        rt.set_device(dev_id)
        free, total = rt.get_mem_info(C.ACL_MEM_NORMAL)
        dev = rt.current_device()
        print(f"  device {dev_id} (physical {dev.backend.physical_id}): {spec.memory_kind} {gib(total)} usable of "
              f"{gib(spec.memory_bytes)} ({gib(spec.memory_bytes - total)} kept by the driver), {gib(free)} free; "
              f"{spec.aicore_num} AI cores, {spec.vector_core_num} vector cores, {dev.max_streams} streams max, "
              f"{spec.memory_bandwidth / 1e9:.0f} GB/s memory, {spec.host_link_bandwidth / 1e9:.0f} GB/s host link")
        rt.reset_device(dev_id)
    print("  (device memory is reserved address space; RAM is used only for the pages touched)")
    print(f"caching pool: {rt.accelerator()}")
    print("settings in effect:")
    print("\n".join(_settings_lines(RUNTIME.settings)))
    print("optional extras:")
    print("\n".join(_extras()))
    return 0


def _plot(args: argparse.Namespace) -> int:
    plotting = command_module("plot")
    try:
        check_output(plotting.picture_path(args.output), "picture")
    except plotting.PlotError as exc:
        raise CliError(str(exc)) from None
    try:
        out = plotting.plot(args.profile, args.output, window=tuple(args.window) if args.window else None,
                   range_name=args.range_name, host=not args.no_host, title=args.title)
    except plotting.PlotError as exc:
        raise CliError(str(exc)) from None
    print(f"npurt plot: wrote {out}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    check_settings()
    if args.batches is not None and args.batches < 1:
        raise CliError("--batches must be at least 1")
    return command_module("demo").main(batches=args.batches, quiet=args.quiet, profile=args.profile)


def _bench(args: argparse.Namespace) -> int:
    check_settings()
    if args.json:
        check_output(args.json, "JSON file")
    only = tuple(w.strip() for w in args.only.split(",") if w.strip()) if args.only else None
    return command_module("bench").main(quick=args.quick, json_out=args.json, peers=args.peers, only=only)


def info_parser() -> CommandParser:
    return command_parser("info", "The simulated devices and their memory, the settings in effect (NPURT_* "
                                  "variables) and the optional extras installed.")


def demo_parser() -> CommandParser:
    p = command_parser("demo", "The main job: a two-stage pipeline on two streams, checked against numpy, "
                               "then small buggy programs and npurt's report on each.")
    p.add_argument("--batches", type=int, default=None, metavar="N", help="number of batches")
    p.add_argument("--quiet", action="store_true", help="print only the verdict")
    p.add_argument("--profile", metavar="OUT_DIR", help="profile the run; write the trace and summaries there")
    return p


def bench_parser() -> CommandParser:
    p = command_parser("bench", "npurt against numpy, the peers and the physical limits, side by side "
                                "(bench/README.md explains the figures).")
    p.add_argument("--quick", action="store_true", help="smoke size (CI): checks the benchmarks work")
    p.add_argument("--json", metavar="OUT", help="write the metrics as JSON")
    p.add_argument("--peers", action="store_true", help="also measure PoCL and Numba's CUDA simulator")
    p.add_argument("--only", metavar="WORDS", help="only the groups of figures whose names contain one of these "
                                                   "comma-separated words (latency,streams,overlap,...)")
    return p


def plot_parser() -> CommandParser:
    p = command_parser("plot", "Draw a profile's timeline: a row per stream of each device and per host "
                               "thread (matplotlib: pip install 'npurt[plot]').")
    p.add_argument("profile", metavar="OUT_DIR", help="a profile directory (or its msprof.json)")
    p.add_argument("-o", "--output", default="timeline.png", metavar="FILE",
                   help="the picture to write: .png (default timeline.png), .svg or .pdf")
    p.add_argument("--range", dest="range_name", metavar="NAME", help="zoom to the user range or step NAME")
    p.add_argument("--window", nargs=2, type=float, metavar=("START_MS", "END_MS"), help="zoom to a time window")
    p.add_argument("--no-host", action="store_true", help="draw only the device streams")
    p.add_argument("--title", help="the picture's title")
    return p


def cann_home_parser() -> CommandParser:
    p = command_parser("cann-home", "Make (or reuse) a directory laid out as a CANN toolkit over npurt: "
                                    "include/acl/*.h, lib64/libacl_rt.so and the library names programs "
                                    "link, set_env.sh; print its path (docs/c-api.md).")
    p.add_argument("--prefix", metavar="DIR", help="build it in DIR (default: a cache directory per npurt and Python)")
    p.add_argument("--rebuild", action="store_true", help="build it again even if it is up to date")
    return p


def _cann_home(args: argparse.Namespace) -> int:
    try:
        print(capi_home.cann_home(args.prefix, rebuild=args.rebuild))
    except (RuntimeError, ImportError) as exc:  # no shared libpython, no cffi, no compiler
        raise CliError(str(exc)) from None
    return 0


# name: (its parser, what runs it). run, launch and atc take their argv whole (they pass the
# program's arguments through, or keep ATC's rules).
def run_parser() -> CommandParser:
    return command_module("run").parser()


def launch_parser() -> CommandParser:
    return command_module("launch").parser()


PARSERS = {"info": info_parser, "demo": demo_parser, "run": run_parser, "launch": launch_parser,
           "atc": atc.parser, "plot": plot_parser, "bench": bench_parser,
           "cann-home": cann_home_parser}
_HANDLERS = {"info": _info, "demo": _demo, "plot": _plot, "bench": _bench, "cann-home": _cann_home}
_PROGRAMS = {"run": lambda argv: command_module("run").main(argv),
             "launch": lambda argv: command_module("launch").main(argv), "atc": atc.main}


def parser() -> CommandParser:
    """The top-level parser: `npurt [-V] COMMAND ...` (each command has its own parser)."""
    p = CommandParser(prog="npurt", description="npurt: an NPU runtime with a simulated NPU",
                      epilog="`npurt COMMAND --help` shows a command's options.", allow_abbrev=False,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-V", "--version", action="version", version=_version_line())
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name, line in COMMANDS.items():
        sub.add_parser(name, help=line, add_help=False)
    return p


def _dispatch(argv: list[str]) -> int:
    top = parser()
    if not argv or argv[0] not in COMMANDS:
        if not argv:
            top.print_usage(sys.stderr)
            print("npurt: error: give a command: " + ", ".join(COMMANDS), file=sys.stderr)
            return 2
        parse(top, argv[:1])      # --help, --version, or an unknown command (usage + exit 2)
        return 2
    command, rest = argv[0], argv[1:]
    if command in ("run", "launch"):
        check_settings()
    if command in _PROGRAMS:
        return _PROGRAMS[command](rest)
    return _HANDLERS[command](parse(PARSERS[command](), rest))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = argv[0] if argv and argv[0] in COMMANDS else ""
    try:
        return _dispatch(argv)
    except Exit as exc:
        return exc.status
    except CliError as exc:
        print(f"npurt {command}: error: {exc}".replace("npurt : ", "npurt: "), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"npurt {command}: interrupted".replace("npurt : ", "npurt: "), file=sys.stderr)
        return 130
    except BrokenPipeError:  # `npurt info | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as exc:  # a configuration the runtime refused at init (e.g. no room to map memory)
        if not isinstance(exc, NpuError) or command == "run":
            raise
        print(f"npurt {command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
