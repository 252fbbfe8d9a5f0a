#!/usr/bin/env python3
"""SageMaker entry of smddp-bench-torch: SAGEMAKER_PROGRAM of the extended
PyTorch image (docker/sagemaker-pytorch.Dockerfile), and the entry_point of a
PyTorch framework estimator (scripts/sagemaker/launch.py).

SageMaker's training toolkit passes the hyperparameters as arguments:
  --torch-args "ARGS"        smddp-bench-torch's (default below)
  --bench-args "ARGS"        smddp-bench's engine rows (generic estimator only)
  --preflight-profile NAME   --preflight true|false

Started by the framework estimator's `distribution` (mpirun + smddprun: every
rank runs this file), it runs smddp-bench-torch in this process: SMDDP's
backend and NCCL measured side by side. Started once per host (a generic
estimator on the extended image), it hands over to sagemaker-entry.sh, which
runs preflight, smddp-bench-torch over every host, then smddp-bench's engine
rows. Results land in /opt/ml/output/data (SM_OUTPUT_DATA_DIR).
"""
import argparse
import os
import shlex
import sys

TORCH_ARGS = "allreduce allgather -b 8 -e 1G -f 2 -c 1 --backend smddp,nccl"
BENCH_ARGS = "allreduce allgather -b 8 -e 1G -f 2 -c 1 --mem cuda --backend smddp,nccl"
ENTRY = "/usr/local/share/smddp/scripts/sagemaker-entry.sh"


def fail(message):
    print(f"sagemaker_entry: {message}", file=sys.stderr)
    sys.exit(64)


def words(text, name):
    try:
        out = shlex.split(text)
    except ValueError as e:
        fail(f"--{name} {text!r}: {e}")
    if any(w in ("-J", "--output-file") or w.startswith("--output-file=") for w in out):
        fail(f"--{name}: -J is set by the entry (results go to the job's output/data)")
    return out


def main(argv):
    p = argparse.ArgumentParser(prog="sagemaker_entry.py")
    p.add_argument("--torch-args", default=TORCH_ARGS)
    p.add_argument("--bench-args", default=BENCH_ARGS)
    p.add_argument("--preflight-profile", default="")
    p.add_argument("--preflight", default="true", choices=["true", "false", "1", "0"])
    # The toolkit may pass hyperparameters this entry does not know: keep going.
    o, _unknown = p.parse_known_args(argv)
    torch_words = words(o.torch_args, "torch-args")
    bench_words = words(o.bench_args, "bench-args")
    out = os.environ.get("SM_OUTPUT_DATA_DIR", "/opt/ml/output/data")
    if "OMPI_COMM_WORLD_RANK" in os.environ or "PMIX_RANK" in os.environ:
        # One rank of the framework estimator's MPI job.
        sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
        sys.dont_write_bytecode = True
        from smddp_bench_torch.cli import main as bench_main
        if os.environ.get("OMPI_COMM_WORLD_RANK", "0") == "0":
            os.makedirs(out, exist_ok=True)
        return bench_main(["smddp-bench-torch", *torch_words, "-J", os.path.join(out, "torch-results.json")])
    env = dict(os.environ, SMDDP_SM_TORCH_ARGS=shlex.join(torch_words), SMDDP_BENCH_ARGS=shlex.join(bench_words))
    if o.preflight_profile:
        env["SMDDP_PREFLIGHT_PROFILE"] = o.preflight_profile
    if o.preflight in ("false", "0"):
        env["SMDDP_PREFLIGHT"] = "0"
    entry = os.environ.get("SMDDP_SM_ENTRY", ENTRY)
    if not os.access(entry, os.X_OK):
        fail(f"{entry} not found: run this file in the extended image (docker/sagemaker-pytorch.Dockerfile), "
             "or through the framework estimator's distribution")
    os.execve(entry, [entry, "train"], env)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
