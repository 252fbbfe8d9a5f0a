"""smddp-bench-torch: smddp-bench's sweeps through torch.distributed.

The same flags, table, JSON and seeded, self-checking data as smddp-bench
(bench/src), run on any torch.distributed backend: smddp (SageMaker's SMDDP
library), nccl, gloo and mpi.
"""

# The project's version (collectives/core/include/smddp/version.h); the format
# test checks that both tools report the same one.
__version__ = "0.1.0"
