"""The `npurt` command line (also `python -m npurt`).

    npurt info                 devices, memory, the settings in effect, optional extras installed
    npurt demo                 the main job: a pipeline on two streams, then npurt finding bugs
    npurt run script.py ...    run an unmodified pyACL script on npurt (`import acl` -> npurt.acl)
    npurt atc --model=... ...  convert an ONNX model to an .om, with ATC's options (npurt.ge.atc)
    npurt plot OUT_DIR         draw a profile's timeline as a PNG (npurt run/demo --profile OUT_DIR)
    npurt launch -n N script.py ...   run a script as N ranks (processes) connected by MPI
    npurt bench [--quick]      benchmarks against numpy and the peers
    npurt cann-home [--prefix DIR]   make (or reuse) a CANN-like prefix for C/C++ programs; print it
    npurt --version

Bad settings (NPURT_* variables) and bad arguments are one line on stderr and exit status 2,
never a traceback; output paths are checked before any long work starts. Each subcommand
lives in its own module and is imported only when used, so the core import stays light.
"""
from __future__ import annotations

import argparse
import os
import sys

from .._version import __version__

# the optional extras and the distributions each one installs (what `npurt info` reports)
EXTRAS = {"ops": ["ml_dtypes"], "models": ["onnx", "onnxruntime"], "media": ["Pillow"], "plot": ["matplotlib"],
          "dist": ["mpi4py", "mpich"], "torch": ["torch"], "docs": ["mkdocs-material", "mkdocstrings-python"]}


class CliError(Exception):
    """A bad argument or setting: printed as one line, exit status 2."""


def check_settings():
    """The settings in effect and the simulated SoC; a CliError for a bad NPURT_* variable."""
    from ..runtime.config import Settings
    from ..runtime.errors import NpuError
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
        hint = "" if ok else f"   (pip install 'npurt[{extra}]')"
        lines.append(f"  {extra:<7} {'yes' if ok else 'no ':<4}{', '.join(found)}{hint}")
    return lines


def _settings_lines(settings) -> list[str]:
    from ..runtime.config import ENV_VARIABLES
    lines = []
    for name, value in ENV_VARIABLES(settings):
        raw = os.environ.get(name)
        source = f"from {name}={raw}" if raw is not None else "default"
        lines.append(f"  {name:<26} {value:<22} {source}")
    return lines


def _info(args: argparse.Namespace) -> int:
    settings, spec = check_settings()
    from ..runtime import api as rt
    from ..runtime import constants as C
    from ..runtime.runtime import RUNTIME

    rt.ensure_initialized()
    print(_version_line())
    print(f"simulated NPU: {spec.name}, {rt.get_device_count()} visible device(s) of {settings.physical_devices}")
    for dev_id in range(rt.get_device_count()):
        rt.set_device(dev_id)
        free, total = rt.get_mem_info(C.ACL_MEM_NORMAL)
        dev = rt.current_device()
        print(f"  device {dev_id} (physical {dev.backend.physical_id}): {spec.memory_kind} "
              f"{total / 2**30:.3g} GiB ({free / 2**30:.3g} GiB free), {spec.aicore_num} AI cores, "
              f"{spec.vector_core_num} vector cores, {dev.max_streams} streams max, "
              f"{spec.memory_bandwidth / 1e9:.0f} GB/s memory, {spec.host_link_bandwidth / 1e9:.0f} GB/s host link")
        rt.reset_device(dev_id)
    print("  (device memory is reserved address space; RAM is used only for the pages touched)")
    print("settings in effect:")
    print("\n".join(_settings_lines(RUNTIME.settings)))
    print("optional extras:")
    print("\n".join(_extras()))
    return 0


def _plot(args: argparse.Namespace) -> int:
    from ..tools.profiler.plot import PlotError, plot
    check_output(args.output, "picture")
    try:
        out = plot(args.profile, args.output, window=tuple(args.window) if args.window else None,
                   range_name=args.range_name, host=not args.no_host, title=args.title)
    except PlotError as exc:
        raise CliError(str(exc)) from None
    print(f"npurt plot: wrote {out}")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="npurt", description="npurt: an NPU runtime with a simulated NPU")
    parser.add_argument("-V", "--version", action="version", version=_version_line())
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("info", help="devices, memory, settings in effect, optional extras installed")
    demo = sub.add_parser("demo", help="the main job: an overlapped pipeline, then npurt finding bugs")
    demo.add_argument("--batches", type=int, default=None, help="number of batches")
    demo.add_argument("--quiet", action="store_true", help="print only the verdict")
    demo.add_argument("--profile", metavar="OUT_DIR", help="profile the run; write the trace and summaries there")
    bench = sub.add_parser("bench", help="run the benchmarks")
    bench.add_argument("--quick", action="store_true", help="smoke size (CI)")
    bench.add_argument("--json", metavar="OUT", help="write the metrics as JSON")
    bench.add_argument("--peers", action="store_true", help="also measure PoCL and Numba's CUDA simulator")
    sub.add_parser("run", help="run a pyACL script: npurt run [--profile OUT_DIR] [--sanitize] script.py [args...]")
    sub.add_parser("atc", help="convert an ONNX model to an .om: npurt atc --model=m.onnx --framework=5 ...")
    plot = sub.add_parser("plot", help="draw a profile's timeline as a PNG")
    plot.add_argument("profile", metavar="OUT_DIR", help="a profile directory (or its msprof.json)")
    plot.add_argument("-o", "--output", default="timeline.png", help="the PNG to write (default: timeline.png)")
    plot.add_argument("--range", dest="range_name", metavar="NAME", help="zoom to the user range or step NAME")
    plot.add_argument("--window", nargs=2, type=float, metavar=("START_MS", "END_MS"), help="zoom to a time window")
    plot.add_argument("--no-host", action="store_true", help="draw only the device streams")
    plot.add_argument("--title", help="the picture's title")
    sub.add_parser("launch", help="run a script as N ranks: npurt launch -n N script.py [args...]")
    home = sub.add_parser("cann-home", help="make (or reuse) a CANN-like prefix (acl/acl.h, libacl_rt.so, "
                          "set_env.sh) for C/C++ programs; print its path")
    home.add_argument("--prefix", metavar="DIR", help="build it in DIR (default: a cache directory per npurt and Python)")
    home.add_argument("--rebuild", action="store_true", help="build it again even if it is up to date")
    return parser


def _dispatch(argv: list[str]) -> int:
    # `run`, `atc` and `launch` parse their own options and pass the rest to the script or tool
    if argv and argv[0] == "run":
        check_settings()
        from .runner import main as run_main
        return run_main(argv[1:])
    if argv and argv[0] == "atc":
        from ..ge.atc import main as atc_main
        return atc_main(argv[1:])
    if argv and argv[0] == "launch":
        check_settings()
        from .launcher import main as launch_main
        return launch_main(argv[1:])
    args = _parser().parse_args(argv)
    if args.command == "info":
        return _info(args)
    if args.command == "demo":
        check_settings()
        if args.batches is not None and args.batches < 1:
            raise CliError("--batches must be at least 1")
        from .demo import main as demo_main
        return demo_main(batches=args.batches, quiet=args.quiet, profile=args.profile)
    if args.command == "plot":
        return _plot(args)
    if args.command == "cann-home":
        from ..capi.home import cann_home
        print(cann_home(args.prefix, rebuild=args.rebuild))
        return 0
    if args.command == "bench":
        check_settings()
        if args.json:
            check_output(args.json, "JSON file")
        from .bench import main as bench_main
        return bench_main(quick=args.quick, json_out=args.json, peers=args.peers)
    return 2


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = next((a for a in argv if not a.startswith("-")), "")
    try:
        return _dispatch(argv)
    except CliError as exc:
        print(f"npurt {command}: error: {exc}".replace("npurt : ", "npurt: "), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"npurt {command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `npurt info | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as exc:  # a configuration the runtime refused at init (e.g. no room to map memory)
        from ..runtime.errors import NpuError
        if not isinstance(exc, NpuError) or argv[:1] == ["run"]:
            raise
        print(f"npurt {command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
