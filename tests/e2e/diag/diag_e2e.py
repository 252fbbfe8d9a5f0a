#!/usr/bin/env python3
"""End-to-end tests of smddp-diag: the real binary against real tools
(mpirun, Prometheus, promtool), with what this machine lacks (GPUs, EFA,
other hosts' topologies) supplied by fixtures: topology XML files, a fake
sysfs tree and an NVML stand-in library. One CTest test per case:
    diag_e2e.py CASE --bin smddp-diag --fake-nvml libsmddp_fake_nvml.so ..."""

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases_bad_input  # noqa: E402,F401  (the imports register the cases)
import cases_exporter  # noqa: E402,F401
import cases_fabric  # noqa: E402,F401
import cases_fix  # noqa: E402,F401
import cases_inspector  # noqa: E402,F401
import cases_isolate_sim  # noqa: E402,F401
import cases_preflight  # noqa: E402,F401
import cases_ras  # noqa: E402,F401
import cases_topo  # noqa: E402,F401
from harness import ARGS, CASES, Failure  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("case", choices=sorted(CASES))
    parser.add_argument("--bin", required=True)
    parser.add_argument("--fake-nvml", required=True)
    parser.add_argument("--mpirun", default="mpirun")
    parser.add_argument("--promtool", default="promtool")
    parser.add_argument("--prometheus", default="prometheus")
    args = parser.parse_args()
    for key, value in vars(args).items():
        setattr(ARGS, key, value)
    with tempfile.TemporaryDirectory(prefix=f"smddp-diag-{ARGS.case}-") as tmp:
        started = time.time()
        try:
            CASES[ARGS.case](tmp)
        except Failure as e:
            print(f"FAIL {ARGS.case}: {e}", file=sys.stderr)
            return 1
        print(f"PASS {ARGS.case} ({time.time() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
