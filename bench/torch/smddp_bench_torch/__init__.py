"""smddp-bench-torch: smddp-bench's sweeps through torch.distributed.

The same flags, table, JSON and seeded, self-checking data as smddp-bench
(bench/src), run on any torch.distributed backend: smddp (SageMaker's SMDDP
library), nccl, gloo and mpi.
"""

import os
import sys

try:  # the Python tools' input/output discipline: common/python, or beside this package once installed
    import smddp_safeio  # noqa: F401
except ImportError:
    _here = os.path.dirname(os.path.realpath(__file__))
    for _dir in (os.path.join(_here, ".."), os.path.join(_here, "..", "..", "..", "common", "python")):
        if os.path.isfile(os.path.join(_dir, "smddp_safeio.py")):
            sys.path.insert(0, os.path.normpath(_dir))
            break
    import smddp_safeio  # noqa: F401

# The project's version (collectives/core/include/smddp/version.h); the format
# test checks that both tools report the same one.
__version__ = "0.1.0"
