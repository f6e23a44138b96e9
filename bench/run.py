"""Run the benchmark: `python bench/run.py [--quick] [--json OUT] [--peers]`.

The same as `npurt bench ...`; without --json the figures go to bench/results/latest.json
(git-ignored), with a timestamped copy beside it.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

from npurt.bench import main

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke size (CI): small sizes, few repeats")
    parser.add_argument("--json", metavar="OUT", help="write the JSON figures here")
    parser.add_argument("--peers", action="store_true", help="also measure PoCL and Numba's CUDA simulator")
    args = parser.parse_args()
    out = args.json
    if out is None:
        results = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
        os.makedirs(results, exist_ok=True)
        out = os.path.join(results, "latest.json")
    code = main(quick=args.quick, json_out=out, peers=args.peers)
    if args.json is None and os.path.exists(out):
        kind = "quick" if args.quick else "full"
        shutil.copyfile(out, os.path.join(os.path.dirname(out), f"{time.strftime('%Y%m%d-%H%M%S')}-{kind}.json"))
    sys.exit(code)
