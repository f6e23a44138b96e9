"""`npurt atc`: ATC's command line, converting ONNX models to npurt .om files.

    npurt atc --model=net.onnx --framework=5 --output=net --soc_version=Ascend910B3 \\
              [--input_shape="x:1,3,224,224"] [--input_format=NCHW] [--dynamic_batch_size="1,2,4"]
              [--dynamic_image_size="224,224;448,448"] [--dynamic_dims="1,8;2,16"]
              [--insert_op_conf=aipp.cfg] [--output_type=FP32] [--out_nodes="node:0"]
              [--input_fp16_nodes="x"] [--log=info]
    npurt atc --singleop=ops.json --output=op_models --soc_version=Ascend910B3
    npurt atc --mode=1 --om=net.om --json=net.json        (the model's description as JSON)
    npurt atc --mode=6 --om=net.om                        (print the model's header and I/O)

Flags are `--name=value` (or `--name value`), as ATC's. --framework must be 5 (ONNX): other
frameworks get an error naming the ONNX route. Options ATC has that change nothing here
(--precision_mode, --op_select_implmode, --fusion_switch_file, ...) are accepted and
ignored. --mode: 0 convert (default), 1 om -> JSON, 3 check only, 6 display the om's header.
On success it prints ATC's "ATC run success" line; on failure the reason, and exits with
status 1, as ATC; no arguments or an option ATC does not have print the usage and exit with
status 2.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys

from . import om
from .converter import ConversionError, convert
from .engine import MissingExtraError
from .ops.compile import compile_ops

FLAGS = {"model", "weight", "framework", "output", "soc_version", "mode", "om", "json", "input_shape",
         "input_shape_range", "input_format", "dynamic_batch_size", "dynamic_image_size", "dynamic_dims",
         "insert_op_conf", "output_type", "out_nodes", "input_fp16_nodes", "log", "singleop"}
IGNORED = {"precision_mode", "precision_mode_v2", "op_select_implmode", "optypelist_for_implmode",
           "disable_reuse_memory", "external_weight", "enable_small_channel", "jit_compile", "keep_dtype",
           "fusion_switch_file", "op_debug_level", "debug_dir", "is_input_adjust_hw_layout",
           "is_output_adjust_hw_layout", "buffer_optimize", "compression_optimize_conf", "customize_dtypes",
           "op_compiler_cache_mode", "op_compiler_cache_dir", "auto_tune_mode", "host_env_os", "host_env_cpu",
           "virtual_type", "allow_hf32", "status_check", "op_precision_mode", "modify_mixlist",
           "sparsity", "deterministic", "atomic_clean_policy", "display_model_info", "core_type",
           "aicore_num", "oo_level", "framework_config", "dump_mode", "check_report", "op_name_map",
           "enable_compress_weight", "compress_weight_conf", "input_hw_layout"}
FRAMEWORKS = {"0": "Caffe", "1": "MindSpore", "3": "TensorFlow", "5": "ONNX"}
LOG_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR,
              "null": logging.CRITICAL + 10}
log = logging.getLogger("npurt.atc")


class UsageError(ValueError):
    pass


HELP = {
    "model": "the ONNX model file to convert",
    "weight": "the weights of a Caffe model (refused: an ONNX model carries its weights)",
    "framework": "the model's framework: 5 (ONNX); 0 Caffe, 1 MindSpore, 3 TensorFlow are refused",
    "output": "the .om to write, without its extension (--singleop: the output directory)",
    "soc_version": "the SoC the model is built for, e.g. Ascend910B3",
    "mode": "0 convert (default), 1 .om to JSON, 3 check only, 6 display an .om's header and I/O",
    "om": "the .om file of --mode=1 and --mode=6",
    "json": "the JSON file --mode=1 writes",
    "input_shape": 'input shapes, "name:d0,d1,...;name2:..." (-1 for a dimension given by gears)',
    "input_shape_range": 'input shape ranges, "name:[1~4],3,224,224" (read as --input_shape)',
    "input_format": "the inputs' layout: NCHW, NHWC or ND",
    "dynamic_batch_size": 'batch-size gears, "1,2,4"',
    "dynamic_image_size": 'image-size gears, "224,224;448,448"',
    "dynamic_dims": 'gears of the -1 dimensions, "1,8;2,16"',
    "insert_op_conf": "an AIPP configuration file (the AIPP stage before the first layer)",
    "output_type": "the outputs' data type: FP32, FP16, UINT8, ... (or node:index:type;...)",
    "out_nodes": 'outputs to expose instead of the graph\'s, "node:0;node2:1"',
    "input_fp16_nodes": 'inputs given as float16, "x;y"',
    "log": "ATC's log level: debug, info, warning, error, null",
    "singleop": "a JSON list of single operators to compile into op models (acl.op)",
}
EPILOG = """ATC's option names and spelling: --name=value or --name value. Options ATC has that change
nothing on the simulated NPU (--precision_mode, --op_select_implmode, --fusion_switch_file, ...)
are accepted and ignored.

exit status: 0 "ATC run success"; 1 "ATC run failed: <reason>" (a bad option value, a missing
or unreadable model, a conversion error), as ATC; 2 with the usage for no arguments or an
option ATC does not have."""


USAGE = """npurt atc --model=M.onnx --framework=5 --output=NAME --soc_version=SOC [--option=value ...]
       npurt atc --singleop=OPS.json --output=DIR --soc_version=SOC
       npurt atc --mode=1 --om=M.om --json=OUT.json | --mode=6 --om=M.om"""


def parser() -> argparse.ArgumentParser:
    """`npurt atc`'s options: ATC's names, one string value each."""
    p = argparse.ArgumentParser(prog="npurt atc", allow_abbrev=False, epilog=EPILOG, usage=USAGE,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description="Convert an ONNX model to an .om (or single operators to op\n"
                                            "models) with ATC's options.")
    for name in HELP:
        p.add_argument(f"--{name}", metavar="V", help=HELP[name])
    for name in sorted(IGNORED):
        p.add_argument(f"--{name}", help=argparse.SUPPRESS)
    return p


def parse_args(argv: list[str]) -> dict[str, str]:
    """The options given, by ATC's name; SystemExit(2) with the usage on a bad argument, (0)
    after --help."""
    if not argv:
        parser().error("give ATC's options, e.g. --model=net.onnx --framework=5 --output=net "
                       "--soc_version=Ascend910B3")
    return {k: v for k, v in vars(parser().parse_args(argv)).items() if v is not None}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        opts = parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    level = opts.get("log")
    if level is not None:
        if level not in LOG_LEVELS:
            print(f"ATC run failed: --log={level} must be one of {', '.join(LOG_LEVELS)}", file=sys.stderr)
            return 1
        logging.basicConfig(format="[%(levelname)s] ATC: %(message)s")
        log.setLevel(LOG_LEVELS[level])
    for name in sorted(set(opts) & IGNORED):
        log.info("--%s has no effect on the simulated NPU; ignored", name)
    try:
        _run(opts)
    except (ConversionError, UsageError, MissingExtraError, om.ModelFormatError) as exc:
        print(f"ATC run failed: {getattr(exc, 'message', None) or exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - any other failure is reported, not a traceback
        message = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        print(f"ATC run failed: {message}", file=sys.stderr)
        return 1
    print("ATC run success, welcome to the next use.")
    return 0


def _run(opts: dict[str, str]) -> None:
    mode = opts.get("mode", "0")
    if mode in ("1", "6"):
        path = opts.get("om")
        if not path:
            raise UsageError(f"--mode={mode} needs --om=<model.om>")
        meta, _, header = om.unpack(om.read_file(path))
        if mode == "1":
            out = opts.get("json")
            if not out:
                raise UsageError("--mode=1 needs --json=<output.json>")
            with open(out, "w", encoding="utf-8") as f:
                json.dump({"header": {k: v for k, v in header.items() if k != "checksum"}, "model": meta}, f,
                          indent=2, default=str)
            log.info("wrote %s", out)
        else:
            print(f"model: {meta.get('name')}  soc: {header['platform_version']}  kind: {meta['kind']}  "
                  f"om version: {header['version']}  dynamic shape: {header['is_unknow_model']}")
            for role in ("inputs", "outputs"):
                for io in meta.get(role, []):
                    print(f"  {role[:-1]} {io['name']}: dtype {io['dtype']} format {io['format']} dims {io['dims']} "
                          f"size {io['size']}")
        return
    if mode not in ("0", "3"):
        raise UsageError(f"--mode={mode} is not supported (0 convert, 1 om -> JSON, 3 check only, 6 display an om)")
    if "singleop" in opts:
        written = compile_ops(opts["singleop"], opts.get("output"), opts.get("soc_version"), check_only=mode == "3")
        for path in written:
            log.info("wrote %s", path)
        return
    framework = opts.get("framework")
    if framework is None:
        raise UsageError("--framework is required: 5 (ONNX)")
    if framework != "5":
        what = FRAMEWORKS.get(framework, f"framework {framework}")
        raise UsageError(f"--framework={framework} ({what}) is not supported by npurt's converter: export the "
                         "model to ONNX (torch.onnx.export, tf2onnx, ...) and convert it with --framework=5")
    if "weight" in opts:
        raise UsageError("--weight is for Caffe models; an ONNX model carries its weights")
    if "input_shape_range" in opts:
        if "input_shape" in opts:
            raise UsageError("--input_shape_range and --input_shape are mutually exclusive")
        opts["input_shape"] = opts["input_shape_range"].replace("[", "").replace("]", "")
    output = opts.get("output")
    if mode == "3":
        import os
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            output = os.path.join(tmp, "check")
            _convert(opts, output)
        return
    path = _convert(opts, output)
    log.info("wrote %s", path)


def _convert(opts: dict[str, str], output: str | None) -> str:
    return convert(opts.get("model"), output, opts.get("soc_version"), opts.get("input_shape"),
                   opts.get("input_format"), opts.get("dynamic_batch_size"), opts.get("dynamic_image_size"),
                   opts.get("dynamic_dims"), opts.get("insert_op_conf"), opts.get("output_type"),
                   opts.get("out_nodes"), opts.get("input_fp16_nodes"))
