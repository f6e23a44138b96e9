"""The `npurt` command line.

    npurt info                 list the simulated devices and their memory
    npurt demo                 the main job: a small pipeline on two streams, checked against numpy
    npurt run script.py ...    run an unmodified pyACL script on npurt (`import acl` -> npurt.acl)
    npurt atc --model=... ...  convert an ONNX model to an .om, with ATC's options (npurt.ge.atc)
    npurt plot OUT_DIR         draw a profile's timeline as a PNG (npurt run/demo --profile OUT_DIR)
    npurt launch -n N script.py ...   run a script as N ranks (processes) connected by MPI
    npurt bench [--quick]      benchmarks against numpy and the peers

Each subcommand lives in its own module and is imported only when used, so the core import
stays light.
"""
from __future__ import annotations

import argparse
import sys


def _info(args: argparse.Namespace) -> int:
    from .runtime import api as rt
    from .runtime import constants as C
    from .runtime.runtime import RUNTIME

    rt.ensure_initialized()
    settings = RUNTIME.settings
    spec = RUNTIME.driver.spec
    print(f"npurt simulated NPU: {spec.name}, {rt.get_device_count()} visible device(s) "
          f"(of {settings.physical_devices}; ASCEND_RT_VISIBLE_DEVICES={settings.visible_devices})")
    for dev_id in range(rt.get_device_count()):
        rt.set_device(dev_id)
        free, total = rt.get_mem_info(C.ACL_MEM_NORMAL)
        dev = rt.current_device()
        print(f"  device {dev_id} (physical {dev.backend.physical_id}): {spec.memory_kind} "
              f"{total / 2**30:.0f} GiB ({free / 2**30:.1f} GiB free), {spec.aicore_num} AI cores, "
              f"{spec.vector_core_num} vector cores, {dev.max_streams} streams max, "
              f"{spec.memory_bandwidth / 1e9:.0f} GB/s memory, {spec.host_link_bandwidth / 1e9:.0f} GB/s host link")
        rt.reset_device(dev_id)
    return 0


def _plot(args: argparse.Namespace) -> int:
    from .tools.profiler.plot import PlotError, plot
    try:
        out = plot(args.profile, args.output, window=tuple(args.window) if args.window else None,
                   range_name=args.range_name, host=not args.no_host, title=args.title)
    except PlotError as exc:
        print(f"npurt plot: {exc}", file=sys.stderr)
        return 2
    print(f"npurt plot: wrote {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # `npurt run` passes everything after the script through untouched
    if argv and argv[0] == "run":
        from .tools.runner import main as run_main
        return run_main(argv[1:])
    if argv and argv[0] == "atc":  # ATC's own --name=value options, passed through
        from .ge.atc import main as atc_main
        return atc_main(argv[1:])
    if argv and argv[0] == "launch":
        from .tools.launch import main as launch_main
        return launch_main(argv[1:])
    parser = argparse.ArgumentParser(prog="npurt", description="npurt: an NPU runtime with a simulated NPU")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="list the simulated devices")
    demo = sub.add_parser("demo", help="run the demo pipeline (the main job)")
    demo.add_argument("--batches", type=int, default=None, help="number of batches")
    demo.add_argument("--quiet", action="store_true", help="print only the verdict")
    demo.add_argument("--profile", metavar="OUT_DIR", help="profile the run; write the trace and summaries there")
    bench = sub.add_parser("bench", help="run the benchmarks")
    bench.add_argument("--quick", action="store_true", help="smoke size (CI)")
    bench.add_argument("--json", metavar="OUT", help="write the metrics as JSON")
    bench.add_argument("--peers", action="store_true", help="also measure PoCL and Numba's CUDA simulator")
    sub.add_parser("atc", help="convert an ONNX model to an .om: npurt atc --model=m.onnx --framework=5 ...")
    sub.add_parser("run", help="run a pyACL script: npurt run [--profile OUT_DIR] [--sanitize] script.py [args...]")
    plot = sub.add_parser("plot", help="draw a profile's timeline as a PNG")
    plot.add_argument("profile", metavar="OUT_DIR", help="a profile directory (or its msprof.json)")
    plot.add_argument("-o", "--output", default="timeline.png", help="the PNG to write (default: timeline.png)")
    plot.add_argument("--range", dest="range_name", metavar="NAME", help="zoom to the user range or step NAME")
    plot.add_argument("--window", nargs=2, type=float, metavar=("START_MS", "END_MS"), help="zoom to a time window")
    plot.add_argument("--no-host", action="store_true", help="draw only the device streams")
    plot.add_argument("--title", help="the picture's title")
    sub.add_parser("launch", help="run a script as N ranks: npurt launch -n N script.py [args...]")
    args = parser.parse_args(argv)
    if args.command == "info":
        return _info(args)
    if args.command == "demo":
        from .demo import main as demo_main
        return demo_main(batches=args.batches, quiet=args.quiet, profile=args.profile)
    if args.command == "plot":
        return _plot(args)
    if args.command == "bench":
        from .bench import main as bench_main
        return bench_main(quick=args.quick, json_out=args.json, peers=args.peers)
    return 2


if __name__ == "__main__":
    sys.exit(main())
