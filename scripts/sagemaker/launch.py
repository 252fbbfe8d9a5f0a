#!/usr/bin/env python3
"""Starts smddp-bench on SageMaker: SMDDP against NCCL (and our engine).

  launch.py framework [options] [--dry-run]
      A PyTorch framework estimator with
      distribution={"smdistributed": {"dataparallel": {"enabled": True}}}:
      SageMaker's launcher (mpirun + smddprun) runs bench/torch/sagemaker_entry.py
      on every GPU, which runs smddp-bench-torch there (SMDDP's backend and NCCL).
  launch.py generic --image-uri URI [options] [--dry-run]
      A generic estimator on the extended image (docker/sagemaker-pytorch.Dockerfile):
      preflight, smddp-bench-torch, then smddp-bench's engine rows.

Options: --role ARN, --instance-type (ml.p4d.24xlarge), --instance-count (2),
--torch-args, --bench-args, --preflight-profile, --no-preflight, --env K=V,
--max-run SECONDS, --job-name, --region, --output-path s3://..., --wait;
framework only: --framework-version, --py-version, --image-uri.

--dry-run prints the estimator's class and arguments as JSON and calls
nothing; it needs neither the sagemaker SDK nor AWS credentials. A
malformed argument is one line on stderr and exit 64, before anything starts.
"""
import argparse
import json
import os
import re
import shlex
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TORCH_DIR = os.path.join(ROOT, "bench", "torch")
DISTRIBUTION = {"smdistributed": {"dataparallel": {"enabled": True}}}
# SMDDP's collectives run on these instance types only.
SMDDP_INSTANCES = ("ml.p4d.24xlarge", "ml.p4de.24xlarge", "ml.p5.48xlarge", "ml.p5e.48xlarge", "ml.p5en.48xlarge")
TORCH_ARGS = "allreduce allgather -b 8 -e 1G -f 2 -c 1 --backend smddp,nccl"
BENCH_ARGS = "allreduce allgather -b 8 -e 1G -f 2 -c 1 --mem cuda --backend smddp,nccl"


class Usage(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise Usage(message)


def parser():
    p = Parser(prog="launch.py", description="SMDDP against NCCL on SageMaker")
    sub = p.add_subparsers(dest="kind", required=True, parser_class=Parser)
    for kind in ("framework", "generic"):
        s = sub.add_parser(kind)
        s.add_argument("--role", default="")
        s.add_argument("--instance-type", default="ml.p4d.24xlarge")
        s.add_argument("--instance-count", default="2")
        s.add_argument("--torch-args", default=TORCH_ARGS)
        s.add_argument("--bench-args", default=BENCH_ARGS)
        s.add_argument("--preflight-profile", default="")
        s.add_argument("--no-preflight", action="store_true")
        s.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
        s.add_argument("--max-run", default="3600")
        s.add_argument("--job-name", default="smddp-bench")
        s.add_argument("--region", default="")
        s.add_argument("--output-path", default="")
        s.add_argument("--wait", action="store_true", help="wait for the job and stream its logs")
        s.add_argument("--dry-run", action="store_true")
        s.add_argument("--image-uri", default="", required=kind == "generic")
        if kind == "framework":
            s.add_argument("--framework-version", default="2.3.0")
            s.add_argument("--py-version", default="py311")
    return p


def check_torch_args(text):
    """The companion's own parser, so a bad flag fails here, not an hour into a job."""
    words = split("--torch-args", text)
    sys.path.insert(0, TORCH_DIR)
    sys.dont_write_bytecode = True  # leave the source tree clean
    from smddp_bench_torch.options import UsageError, parse  # stdlib only: no torch needed
    if any(w in ("-J", "--output-file") or w.startswith("--output-file=") for w in words):
        raise Usage("--torch-args: -J is set by the entry (results go to the job's output/data)")
    try:
        parse(words)
    except UsageError as e:
        raise Usage(f"--torch-args: {e}") from None
    return words


def split(flag, text):
    try:
        return shlex.split(text)
    except ValueError as e:
        raise Usage(f"{flag} {text!r}: {e}") from None


def positive(flag, text):
    if not re.fullmatch(r"[1-9][0-9]*", text):
        raise Usage(f"{flag} '{text}': expected a whole number above 0")
    return int(text)


def estimator_arguments(o):
    """(class name, keyword arguments) of the estimator."""
    if not re.fullmatch(r"ml\.[a-z0-9]+\.[a-z0-9]+", o.instance_type):
        raise Usage(f"--instance-type '{o.instance_type}': expected a SageMaker type like ml.p4d.24xlarge")
    count = positive("--instance-count", o.instance_count)
    max_run = positive("--max-run", o.max_run)
    if o.kind == "framework" and o.instance_type not in SMDDP_INSTANCES:
        raise Usage(f"--instance-type {o.instance_type}: SMDDP runs on {', '.join(SMDDP_INSTANCES)}")
    if o.role and not re.fullmatch(r"arn:aws[a-z-]*:iam::[0-9]{12}:role/[\w+=,.@/-]+", o.role):
        raise Usage(f"--role '{o.role}': expected an IAM role ARN (arn:aws:iam::123456789012:role/NAME)")
    if not o.role and not o.dry_run:
        raise Usage("--role is required (an IAM role ARN SageMaker can assume)")
    if o.image_uri and not re.fullmatch(r"[a-z0-9.-]+(:[0-9]+)?/[a-z0-9._/-]+(:[\w.-]+|@sha256:[0-9a-f]{64})?",
                                        o.image_uri):
        raise Usage(f"--image-uri '{o.image_uri}': expected REGISTRY/REPOSITORY[:TAG]")
    if o.output_path and not o.output_path.startswith("s3://"):
        raise Usage(f"--output-path '{o.output_path}': expected an s3:// URI")
    if not re.fullmatch(r"[A-Za-z0-9](-*[A-Za-z0-9]){0,39}", o.job_name):
        raise Usage(f"--job-name '{o.job_name}': letters, digits and hyphens, at most 40")
    environment = {}
    for item in o.env:
        name, eq, value = item.partition("=")
        if not eq or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise Usage(f"--env '{item}': expected NAME=VALUE")
        environment[name] = value
    torch_words = check_torch_args(o.torch_args)
    bench_words = split("--bench-args", o.bench_args)
    # Hyperparameters are strings; SageMaker passes them to the entry as --name value.
    hyper = {"torch-args": shlex.join(torch_words), "bench-args": shlex.join(bench_words),
             "preflight": "false" if o.no_preflight else "true"}
    if o.preflight_profile:
        hyper["preflight-profile"] = o.preflight_profile
    args = {"role": o.role or "<--role>", "instance_type": o.instance_type, "instance_count": count,
            "hyperparameters": hyper, "environment": environment, "max_run": max_run, "base_job_name": o.job_name}
    if o.output_path:
        args["output_path"] = o.output_path
    if o.kind == "framework":
        args.update(entry_point="sagemaker_entry.py", source_dir=TORCH_DIR, framework_version=o.framework_version,
                    py_version=o.py_version, distribution=DISTRIBUTION)
        if o.image_uri:
            args["image_uri"] = o.image_uri
        return "sagemaker.pytorch.PyTorch", args
    args["image_uri"] = o.image_uri
    return "sagemaker.estimator.Estimator", args


def main(argv):
    try:
        o = parser().parse_args(argv)
        cls, args = estimator_arguments(o)
    except Usage as e:
        print(f"launch.py: {e}", file=sys.stderr)
        return 64
    if o.dry_run:
        print(json.dumps({"estimator": cls, "arguments": args, "fit": {"wait": o.wait}}, indent=2, sort_keys=True))
        return 0
    try:  # only now: --dry-run works without the SDK
        import sagemaker
        from sagemaker.estimator import Estimator
        from sagemaker.pytorch import PyTorch
    except ImportError as e:
        print(f"launch.py: the sagemaker SDK is not importable ({e}): pip install sagemaker, "
              "or --dry-run to print the estimator's arguments", file=sys.stderr)
        return 69
    session = sagemaker.Session(boto_session=__import__("boto3").Session(region_name=o.region)) if o.region else None
    estimator = (PyTorch if o.kind == "framework" else Estimator)(sagemaker_session=session, **args)
    estimator.fit(wait=o.wait)
    print(f"launch.py: started {estimator.latest_training_job.name}; results: {estimator.output_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
