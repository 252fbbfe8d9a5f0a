"""Data that checks itself, bit for bit as smddp-bench makes it (bench/src/sweep/data.cc).

Input `index` of `rank` comes from (seed, rank, index) through splitmix64's
finaliser; the values are small integers (or +-1 and one 2 per element for
prod), so every dtype holds them and every reduction order gives the same
exact result. Expected outputs are computed per element and compared by
bits; avg is the exact sum, stored in the dtype, then divided once in the
dtype (integers truncate, float16/bfloat16 divide in float32 and round to
nearest even), as smddp-bench's divide() does.

Everything here works on numpy arrays of element bits (bfloat16 as uint16),
in blocks, so it needs no torch and checks any size in bounded memory.
"""
from collections import namedtuple

import numpy as np

from .types import DTYPE_SIZE, UNSIGNED, base_collective, reduces

Spec = namedtuple("Spec", "collective dtype op seed nranks root")

_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_NP = {"int8": np.int8, "uint8": np.uint8, "int32": np.int32, "uint32": np.uint32, "int64": np.int64,
       "uint64": np.uint64, "half": np.float16, "float": np.float32, "double": np.float64}
BLOCK = 1 << 20  # elements per block of expected values
U = np.uint64


def bits_type(dtype):
    """The unsigned numpy type that holds one element's bits."""
    return _BITS[DTYPE_SIZE[dtype]]


def _mix(x):
    with np.errstate(over="ignore"):
        x = x + U(0x9E3779B97F4A7C15)
        x = (x ^ (x >> U(30))) * U(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> U(27))) * U(0x94D049BB133111EB)
        return x ^ (x >> U(31))


def _input(s, rank, index):
    """Values (float64) of input elements `index` (uint64 array) of `rank`."""
    with np.errstate(over="ignore"):
        h = _mix(U(s.seed & 0xFFFFFFFFFFFFFFFF) ^ _mix((U(rank) << U(40)) + index))
    unsigned = s.dtype in UNSIGNED
    if s.op == "prod":
        # Exactly one rank contributes 2, the others +-1 (1 for unsigned).
        one = np.ones(index.shape) if unsigned else np.where(h & U(1), 1.0, -1.0)
        return np.where(index % U(s.nranks) == U(rank), 2.0, one)
    if s.op in ("min", "max"):
        v = (h % U(17)).astype(np.float64)
        return v if unsigned else v - 8
    v = (h % U(3) if unsigned else h % U(5)).astype(np.float64)
    return v if unsigned else v - 2


def _combined(s, index):
    """The exact reduction over all ranks, before any avg."""
    acc = _input(s, 0, index)
    for r in range(1, s.nranks):
        x = _input(s, r, index)
        if s.op == "prod":
            acc = acc * x
        elif s.op == "min":
            acc = np.minimum(acc, x)
        elif s.op == "max":
            acc = np.maximum(acc, x)
        else:
            acc = acc + x
    return acc


def _bf16_narrow(f32):
    """float32 -> bfloat16 bits, rounding to nearest even (convert_impl.h)."""
    x = f32.view(np.uint32).astype(np.uint64)
    return ((x + U(0x7FFF) + ((x >> U(16)) & U(1))) >> U(16)).astype(np.uint16)


def _store(values, dtype):
    """Exact small values (float64) -> element bits of `dtype`."""
    if dtype == "bfloat16":
        # Exact for these values: the top half of the float32.
        return (values.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    if dtype in UNSIGNED or dtype.startswith("int"):
        return values.astype(np.int64).astype(_NP[dtype]).view(bits_type(dtype))
    return values.astype(_NP[dtype]).view(bits_type(dtype))


def _divide(values, dtype, n):
    """avg: the stored sum divided once, in the dtype, as smddp's divide()."""
    if dtype in UNSIGNED:
        return _store(np.floor_divide(values, n), dtype)
    if dtype.startswith("int"):
        # The sum as the dtype holds it, then C++'s truncating division.
        held = values.astype(np.int64).astype(_NP[dtype]).astype(np.int64)
        return _store(np.trunc(held / n), dtype)
    if dtype == "double":
        return (values / float(n)).view(np.uint64)
    q = values.astype(np.float32) / np.float32(n)
    if dtype == "float":
        return q.view(np.uint32)
    if dtype == "half":
        return q.astype(np.float16).view(np.uint16)
    return _bf16_narrow(q)


def fill(s, rank, count, first=0):
    """Bits of this rank's send elements first..first+count-1."""
    out = np.empty(count, dtype=bits_type(s.dtype))
    for base in range(0, count, BLOCK):
        n = min(BLOCK, count - base)
        idx = np.arange(first + base, first + base + n, dtype=np.uint64)
        out[base:base + n] = _store(_input(s, rank, idx), s.dtype)
    return out


def _expected_block(s, segment_rank, combine, first, n):
    idx = np.arange(first, first + n, dtype=np.uint64)
    if not combine:
        return _store(_input(s, segment_rank, idx), s.dtype)
    values = _combined(s, idx)
    if s.op == "avg" and reduces(s.collective):
        return _divide(values, s.dtype, s.nranks)
    return _store(values, s.dtype)


def _segments(s, rank, count):
    """(output offset, input rank or None for the reduction, first input index, length)."""
    c, n = base_collective(s.collective), s.nranks
    if c == "allreduce":
        return [(0, None, 0, count)]
    if c == "reduce":
        return [(0, None, 0, count)] if rank == s.root else []
    if c == "reducescatter":
        return [(0, None, rank * count, count)]
    if c == "allgather":
        return [(r * count, r, 0, count) for r in range(n)]
    if c == "broadcast":
        return [(0, s.root, 0, count)]
    if c == "alltoall":
        return [(r * count, r, rank * count, count) for r in range(n)]
    return []


def expected(s, rank, count):
    """Bits of this rank's whole expected output (None where nothing is checked)."""
    segs = _segments(s, rank, count)
    if not segs:
        return None
    total = max(off + length for off, _, _, length in segs)
    out = np.zeros(total, dtype=bits_type(s.dtype))
    for off, src, first, length in segs:
        for base in range(0, length, BLOCK):
            m = min(BLOCK, length - base)
            out[off + base:off + base + m] = _expected_block(s, src, src is None, first + base, m)
    return out


def count_wrong(s, rank, got, count):
    """Wrong elements of this rank's output bits `got` after one call with `count`."""
    wrong = 0
    for off, src, first, length in _segments(s, rank, count):
        for base in range(0, length, BLOCK):
            m = min(BLOCK, length - base)
            want = _expected_block(s, src, src is None, first + base, m)
            wrong += int(np.count_nonzero(got[off + base:off + base + m] != want))
    return wrong
