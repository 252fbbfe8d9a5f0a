"""smddp-bench's flags (bench/src/cli/cli.cc), validated before torch is imported
or any rank is contacted: bad usage is one line on stderr and exit 64."""
import argparse
import math
import os

import smddp_safeio

from .types import (COLLECTIVE_ALIASES, COLLECTIVES, DTYPE_ALIASES, DTYPES, EXTRA_COLLECTIVES, OPS)

BACKENDS = ["smddp", "nccl", "gloo", "mpi"]


UsageError = smddp_safeio.UsageError
MAX_SECONDS = smddp_safeio.MAX_SECONDS  # as smddp-bench's -T and SMDDP_TIMEOUT


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message + " (see --help)")


MAX_SIZE = (1 << 63) - 1  # sizes travel as int64 (JSON, MPI counts)
_SIZE_EXAMPLES = "a byte count like 8, 4K, 1.5M or 64 MiB (docs/bench.md#sizes)"
_BLANKS = " \t\n\v\f\r"
_TOO_LARGE = "more than 2^63-1 bytes"
_FRACTION = "not a whole number of bytes"


def _unit_shift(unit):
    """"" and "B": 0; K, M, G, T, P, E in either case, alone or with B or iB: 10, 20, ...; else None."""
    if unit in ("", "B"):
        return 0
    at = "KMGTPE".find(unit[0].upper())
    if at < 0 or unit[1:] not in ("", "B", "iB"):
        return None
    return 10 * (at + 1)


def size_or_reason(text):
    """(bytes, "") or (None, why): the one size grammar of docs/bench.md#sizes,
    step for step as smddp::common::parse_size (common/src/sizes.cc) reads it;
    tests/e2e/torch/torch_e2e.py checks both against tests/unit/size_cases.json."""
    text = text.strip(_BLANKS)
    if not text:
        return None, "empty"
    if text[0] == "-":
        return None, "negative"
    if text[0] == "+":
        return None, "signed"
    if len(text) > 1 and text[0] == "0" and text[1] in "xX":
        return None, "hexadecimal"
    if text[:3].lower() in ("nan", "inf"):
        return None, "not a number"
    i, mantissa, fraction_digits, digits, point = 0, 0, 0, False, False
    while i < len(text):
        c = text[i]
        if c == "." and not point:
            point = True
            i += 1
            continue
        if not "0" <= c <= "9":
            break
        digits = True
        if mantissa > MAX_SIZE * 10:
            return None, _TOO_LARGE
        mantissa = mantissa * 10 + ord(c) - ord("0")
        if point:
            fraction_digits += 1
            if fraction_digits > 18:
                return None, "more than 18 decimals"
        i += 1
    if not digits:
        return None, "no number"
    # An exponent: e followed by a digit or a signed digit ("7E" stays exbibytes).
    exponent = -fraction_digits
    if i + 1 < len(text) and text[i] in "eE":
        j = i + 1
        negative = text[j] == "-"
        if text[j] in "+-":
            j += 1
        if j < len(text) and "0" <= text[j] <= "9":
            e = 0
            while j < len(text) and "0" <= text[j] <= "9":
                e = min(e * 10 + ord(text[j]) - ord("0"), 100000)
                j += 1
            exponent += -e if negative else e
            i = j
    unit = text[i:].strip(_BLANKS)
    shift = _unit_shift(unit)
    if shift is None:
        return None, f"unknown unit '{unit}'"
    if mantissa == 0:
        return 0, ""
    while exponent > 0:
        mantissa *= 10
        exponent -= 1
        if mantissa > MAX_SIZE:
            return None, _TOO_LARGE
    scaled = mantissa << shift
    if scaled >> 128:  # the C++ reader's 128-bit arithmetic
        return None, _TOO_LARGE
    if exponent < -38:
        return None, _FRACTION
    divisor = 10 ** -exponent
    if scaled % divisor:
        return None, _FRACTION
    if scaled // divisor > MAX_SIZE:
        return None, _TOO_LARGE
    return scaled // divisor, ""


def parse_size(text, flag):
    """size_or_reason, or the one-line UsageError smddp-bench gives."""
    value, why = size_or_reason(text)
    if value is None:
        raise UsageError(f"{flag} '{text}': {why}; expected {_SIZE_EXAMPLES}")
    return value


def _split(text):
    return [x for x in text.split(",") if x]


def _names(text, valid, aliases, flag, what):
    listing = ", ".join(valid) + ", all"
    out = []
    for name in _split(text):
        if name == "all":
            return list(valid)
        name = aliases.get(name, name)
        if name not in valid:
            raise UsageError(f"unknown {what} '{name}'; valid: {listing}")
        out.append(name)
    if not out:
        raise UsageError(f"{flag} is empty; valid: {listing}")
    return out


def _check_writable(path, flag):
    """Refused before any rank starts, as smddp_safeio.write_atomically would."""
    if path:
        smddp_safeio.check_writable(path, flag)


def _int(flag):
    """Decimal, as smddp-bench reads it: '0x10' is not sixteen."""
    return smddp_safeio.integer_arg(flag, -(1 << 63), (1 << 63) - 1)


def _float(flag):
    return smddp_safeio.decimal_arg(flag, -1e300, 1e300)


def build_parser():
    p = _Parser(prog="smddp-bench-torch",
                description="smddp-bench's sweeps through torch.distributed (smddp, nccl, gloo, mpi)")
    p.add_argument("collectives", nargs="*", default=["allreduce"],
                   help="allreduce allgather allgather_list reducescatter broadcast reduce alltoall barrier, or all")
    p.add_argument("-b", "--minbytes", default="32M", help="smallest size (K, M, G suffixes)")
    p.add_argument("-e", "--maxbytes", default="32M", help="largest size")
    p.add_argument("-f", "--stepfactor", type=_float("-f/--stepfactor"), default=2.0, help="multiply the size by this each row")
    p.add_argument("-i", "--stepbytes", default="", help="add this many bytes each row (instead of -f)")
    p.add_argument("-n", "--iters", type=_int("-n/--iters"), default=20, help="timed iterations per row")
    p.add_argument("-w", "--warmup-iters", type=_int("-w/--warmup-iters"), default=5, help="untimed iterations per row")
    p.add_argument("-c", "--check", type=_int("-c/--check"), default=1, help="checking iterations per row (0: off)")
    p.add_argument("-d", "--datatype", default="float", help="data type name, a comma list, or all")
    p.add_argument("-o", "--op", default="sum", help="sum prod min max avg, a comma list, or all")
    p.add_argument("-r", "--root", type=_int("-r/--root"), default=0, help="root rank of broadcast and reduce")
    p.add_argument("-a", "--average", type=_int("-a/--average"), default=1,
                   help="time across ranks: 0 rank 0, 1 mean, 2 min, 3 max")
    p.add_argument("-T", "--timeout", type=_float("-T/--timeout"), default=None,
                   help="seconds one collective call may take (default: SMDDP_TIMEOUT or 300)")
    p.add_argument("-J", "--output-file", default="", help="write results as JSON (rewritten after every row)")
    p.add_argument("--backend", default="smddp", help="smddp, nccl, gloo or mpi; a comma list compares them")
    p.add_argument("--mem", default="auto", help="tensors on: auto (cuda when a device is present), host or cuda")
    p.add_argument("--in-place", action="store_true", help="only in-place")
    p.add_argument("--out-of-place", action="store_true", help="only out-of-place")
    p.add_argument("--both", action="store_true", help="out-of-place and in-place (default)")
    p.add_argument("--per-iteration", action="store_true", help="time every iteration: min p50 p95 p99 max cv")
    p.add_argument("--min-busbw", type=_float("--min-busbw"), default=0.0, help="exit 2 when the average busbw is below, GB/s")
    p.add_argument("--seed", type=_int("--seed"), default=0x5EED, help="seed of the generated data")
    p.add_argument("-q", "--quiet", action="store_true", help="no table header")
    p.add_argument("--version", action="store_true", help="print the version and exit")
    return p


def parse(argv):
    """argparse.Namespace with validated, normalised fields; raises UsageError."""
    o = build_parser().parse_intermixed_args(argv)
    if o.version:
        return o
    collectives = []
    valid = COLLECTIVES + EXTRA_COLLECTIVES
    for name in o.collectives:
        if name == "all":
            collectives += COLLECTIVES
            continue
        name = COLLECTIVE_ALIASES.get(name, name)
        if name not in valid:
            raise UsageError(f"unknown collective '{name}'; valid: {', '.join(valid)}, all")
        collectives.append(name)
    o.collectives = collectives or ["allreduce"]
    o.min_bytes = parse_size(o.minbytes, "-b/--minbytes")
    o.max_bytes = parse_size(o.maxbytes, "-e/--maxbytes")
    if o.min_bytes > o.max_bytes:
        raise UsageError(f"-b/--minbytes ({o.minbytes}) is above -e/--maxbytes ({o.maxbytes})")
    o.step_bytes = 0
    if o.stepbytes:
        o.step_bytes = parse_size(o.stepbytes, "-i/--stepbytes")
        if o.step_bytes == 0:
            raise UsageError("-i/--stepbytes must be above 0")
    elif not o.stepfactor > 1 and o.min_bytes != o.max_bytes:
        raise UsageError("-f/--stepfactor must be above 1")
    if o.iters < 1:
        raise UsageError("-n/--iters must be at least 1")
    if o.warmup_iters < 0:
        raise UsageError("-w/--warmup-iters must not be negative")
    if o.check < 0:
        raise UsageError("-c/--check must not be negative")
    if o.timeout is None:
        o.timeout = smddp_safeio.decimal(os.environ.get("SMDDP_TIMEOUT", "300"), "SMDDP_TIMEOUT", 0, MAX_SECONDS,
                                         "seconds")
    if not 0 <= o.timeout <= MAX_SECONDS:
        raise UsageError(f"-T/--timeout {o.timeout:g}: expected seconds 0..{MAX_SECONDS:g}")
    if o.min_busbw < 0:
        raise UsageError("--min-busbw must not be negative")
    if not 0 <= o.average <= 3:
        raise UsageError("-a/--average must be 0, 1, 2 or 3")
    if o.root < 0:
        raise UsageError(f"-r/--root {o.root} is not a rank of this job")
    if not 0 <= o.seed < 1 << 64:
        raise UsageError(f"--seed {o.seed}: expected 0 .. 2^64-1")
    o.dtypes = _names(o.datatype, DTYPES, DTYPE_ALIASES, "-d/--datatype", "datatype")
    o.ops = _names(o.op, OPS, {}, "-o/--op", "op")
    o.backends = _split(o.backend)
    if not o.backends:
        raise UsageError(f"--backend is empty; valid: {', '.join(BACKENDS)}")
    for b in o.backends:
        if b not in BACKENDS:
            raise UsageError(f"unknown backend '{b}'; valid: {', '.join(BACKENDS)}")
    if len(set(o.backends)) != len(o.backends):
        raise UsageError(f"--backend '{o.backend}' names a backend twice")
    if o.mem not in ("auto", "host", "cuda"):
        raise UsageError(f"unknown --mem '{o.mem}'; valid: auto, host, cuda")
    if o.in_place + o.out_of_place + o.both > 1:
        raise UsageError("--in-place, --out-of-place and --both exclude each other")
    o.placements = ["in-place"] if o.in_place else ["out-of-place"] if o.out_of_place else \
        ["out-of-place", "in-place"]
    _check_writable(o.output_file, "-J/--output-file")
    return o


def sweep_sizes(o):
    """Sizes of the sweep, in bytes, before per-collective rounding (options.cc)."""
    sizes, s = [], o.min_bytes
    while s <= o.max_bytes:
        sizes.append(s)
        nxt = s + o.step_bytes if o.step_bytes else int(math.ceil(s * o.stepfactor))
        if nxt <= s:
            break  # a factor that cannot grow 0
        s = nxt
    return sizes
