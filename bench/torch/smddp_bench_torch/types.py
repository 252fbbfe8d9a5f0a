"""Names of collectives, dtypes and ops, spelled as smddp-bench spells them
(collectives/core/src/core/types.cc), with the same aliases and sizes."""

# nccl-tests' names (smddp-bench's since issue 22); fp8 is smddp-bench's only.
DTYPES = ["int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "bfloat16", "float", "double"]
DTYPE_SIZE = {"int8": 1, "uint8": 1, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8,
              "half": 2, "bfloat16": 2, "float": 4, "double": 8}
DTYPE_ALIASES = {"float16": "half", "fp16": "half", "bf16": "bfloat16", "float32": "float", "fp32": "float",
                 "float64": "double", "fp64": "double", "int": "int32", "char": "int8"}
UNSIGNED = {"uint8", "uint32", "uint64"}
FLOATS = {"half", "bfloat16", "float", "double"}

OPS = ["sum", "prod", "min", "max", "avg"]

# smddp-bench's seven, in its order. allgather_list is ours: all_gather into
# a list of tensors (the JSON calls it allgather; its algorithm says which).
COLLECTIVES = ["allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall", "barrier"]
EXTRA_COLLECTIVES = ["allgather_list"]
COLLECTIVE_ALIASES = {"reduce_scatter": "reducescatter", "reduce-scatter": "reducescatter",
                      "all_reduce": "allreduce", "all_gather": "allgather", "all_to_all": "alltoall",
                      "allgather-list": "allgather_list", "all_gather_list": "allgather_list"}


def base_collective(c):
    """The smddp-bench collective a name measures (allgather_list is allgather)."""
    return "allgather" if c == "allgather_list" else c


def reduces(c):
    return base_collective(c) in ("allreduce", "reducescatter", "reduce")


def has_root(c):
    return base_collective(c) in ("broadcast", "reduce")


def buffer_counts(c, count, n):
    """(send, recv) elements of a call with `count` (collectives/src/communicator.cc)."""
    c = base_collective(c)
    if c == "allgather":
        return count, count * n
    if c == "reducescatter":
        return count * n, count
    if c == "alltoall":
        return count * n, count * n
    if c == "barrier":
        return 0, 0
    return count, count


def row_counts(c, nbytes, dtype, n):
    """bench/src/cli/collective_spec.cc: (count, send, recv, bytes, elements) of a row."""
    es = DTYPE_SIZE[dtype]
    elements = nbytes // es
    b = base_collective(c)
    if b in ("allgather", "reducescatter", "alltoall"):
        count = elements // n
    elif b == "barrier":
        count = 0
    else:
        count = elements
    send, recv = buffer_counts(c, count, n)
    el = max(send, recv)
    return {"count": count, "send": send, "recv": recv, "bytes": el * es, "elements": el}


def bus_factor(c, n):
    b = base_collective(c)
    if b == "allreduce":
        return 2 * (n - 1) / n
    if b in ("allgather", "reducescatter", "alltoall"):
        return (n - 1) / n
    if b == "barrier":
        return 0.0
    return 1.0
