"""torch.distributed backends: what each needs, and one call of each
collective on it. Availability is decided before any rank is contacted;
what a backend cannot run (gloo has no reduce-scatter, no bfloat16, ...) is
found by one tiny call per combination, at the start of the run."""
import os

import torch
import torch.distributed as dist

from .types import base_collective

SMDDP_MODULE = "smdistributed.dataparallel.torch.torch_smddp"
# Backends whose ReduceOp.AVG we measure as is (NCCL's ncclAvg); elsewhere
# avg is a sum followed by one division in the dtype, as smddp-bench's mpi
# backend does it.
NATIVE_AVG = {"nccl"}
NEEDS_CUDA = {"smddp", "nccl"}

TORCH_DTYPES = {"int8": "int8", "uint8": "uint8", "int32": "int32", "uint32": "uint32", "int64": "int64",
                "uint64": "uint64", "half": "float16", "bfloat16": "bfloat16", "float": "float32",
                "double": "float64"}


def torch_dtype(name):
    """The torch dtype, or None where this torch has none (uint32 before 2.3)."""
    return getattr(torch, TORCH_DTYPES[name], None)


def unavailable(backend, cuda):
    """Why `backend` cannot run in this process, or None."""
    if backend == "smddp":
        try:
            __import__(SMDDP_MODULE)  # registers the "smddp" torch.distributed backend
        except Exception as e:  # ImportError, or a library it cannot load
            return f"smddp: smdistributed.dataparallel not importable in this container ({type(e).__name__}: {e})"
        if not cuda:
            return "smddp: needs CUDA devices (SageMaker GPU instances); torch.cuda.is_available() is False here"
    elif backend == "nccl":
        if not dist.is_nccl_available():
            return "nccl: this torch was built without NCCL"
        if not cuda:
            return "nccl: needs CUDA devices; torch.cuda.is_available() is False here"
    elif backend == "gloo":
        if not dist.is_gloo_available():
            return "gloo: this torch was built without gloo"
    elif backend == "mpi":
        if not dist.is_mpi_available():
            return "mpi: this torch was built without MPI (torch.distributed.is_mpi_available() is False)"
        if not any(k in os.environ for k in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")):
            return "mpi: needs mpirun (no OMPI_COMM_WORLD_RANK, PMI_RANK or PMIX_RANK)"
    return None


_OPS = {"sum": "SUM", "prod": "PRODUCT", "min": "MIN", "max": "MAX", "avg": "AVG"}


class Call:
    """One collective call on fixed tensors: run() issues it (and avg's division)."""

    def __init__(self, backend, group, collective, op, root, send, recv, rank, nranks, placement, count):
        self.backend, self.group, self.collective = backend, group, collective
        self.root, self.send, self.recv, self.rank, self.n = root, send, recv, rank, nranks
        self.divide = op == "avg" and backend not in NATIVE_AVG and collective in ("allreduce", "reducescatter",
                                                                                    "reduce")
        self.op = getattr(dist.ReduceOp, _OPS["sum" if self.divide else op])
        self.count = count
        c, ip = collective, placement == "in-place"
        if c == "allreduce":
            self.fn, self.algorithm = self._allreduce, "all_reduce"
        elif c == "broadcast":
            self.fn, self.algorithm = self._broadcast, "broadcast"
        elif c == "reduce":
            self.fn, self.algorithm = self._reduce, "reduce"
        elif c == "allgather":
            if ip:  # this rank's part of the output is the input
                self.send = recv[rank * count:(rank + 1) * count]
            self.fn, self.algorithm = self._allgather, "all_gather_into_tensor"
        elif c == "allgather_list":
            self.outputs = list(recv.split(count)) if count else [recv[:0] for _ in range(nranks)]
            if ip:
                self.send = self.outputs[rank]
            self.fn, self.algorithm = self._allgather_list, "all_gather(list)"
        elif c == "reducescatter":
            if ip:  # the output is this rank's part of the input
                self.recv = send[rank * count:(rank + 1) * count]
            self.fn, self.algorithm = self._reduce_scatter, "reduce_scatter_tensor"
        elif c == "alltoall":
            self.fn, self.algorithm = self._alltoall, "all_to_all_single"
        else:
            self.fn, self.algorithm = self._barrier, "barrier"
        if self.divide:
            self.algorithm += "+div"

    # The output tensor the checker reads.
    def output(self):
        return self.recv

    def run(self):
        self.fn()

    def _div(self, t):
        if not self.divide:
            return
        if t.is_floating_point():
            # A tensor divisor: true division, never a multiply by 1/n (CUDA
            # does that for scalars); 16-bit floats divide in float32.
            if t.element_size() == 2:
                t.copy_(t.float() / torch.full_like(t, self.n, dtype=torch.float32))
            else:
                t.div_(torch.full_like(t, self.n))
        elif t.dtype == torch.uint8 or "uint" in str(t.dtype):
            t.copy_(torch.div(t, self.n, rounding_mode="floor"))
        else:
            t.copy_(torch.div(t, self.n, rounding_mode="trunc"))

    def _allreduce(self):
        dist.all_reduce(self.recv, op=self.op, group=self.group)
        self._div(self.recv)

    def _broadcast(self):
        dist.broadcast(self.recv, self.root, group=self.group)

    def _reduce(self):
        dist.reduce(self.recv, self.root, op=self.op, group=self.group)
        if self.rank == self.root:
            self._div(self.recv)

    def _allgather(self):
        dist.all_gather_into_tensor(self.recv, self.send, group=self.group)

    def _allgather_list(self):
        dist.all_gather(self.outputs, self.send, group=self.group)

    def _reduce_scatter(self):
        dist.reduce_scatter_tensor(self.recv, self.send, op=self.op, group=self.group)
        self._div(self.recv)

    def _alltoall(self):
        dist.all_to_all_single(self.recv, self.send, group=self.group)

    def _barrier(self):
        dist.barrier(group=self.group)


def in_place_only(collective):
    """torch's all_reduce, broadcast and reduce work in place only; its
    all_to_all_single needs two tensors, and barrier has none."""
    return base_collective(collective) in ("allreduce", "broadcast", "reduce")


def placement_unsupported(collective, placement):
    c = base_collective(collective)
    if placement == "out-of-place" and c in ("allreduce", "broadcast", "reduce"):
        return f"torch.distributed's {c} works in place only"
    if placement == "in-place" and c in ("alltoall", "barrier"):
        return f"torch.distributed's {'all_to_all_single' if c == 'alltoall' else 'barrier'} has no in-place form"
    return None
