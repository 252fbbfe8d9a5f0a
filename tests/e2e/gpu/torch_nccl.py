#!/usr/bin/env python3
"""torch.distributed over NCCL on this machine's GPUs: allreduce values checked,
then the bus bandwidth of a 64 MiB float32 allreduce, one line for
scripts/device-check.sh. Run as: torch_nccl.py NPROCS (spawns the ranks,
torchrun-style environment). Exit 0 checked, 1 wrong or failed, 77 no torch
or no GPU the torch build can use.
"""
import os
import socket
import sys
import time


def worker(rank, world, port, q):
    import torch
    import torch.distributed as dist
    os.environ.update({"RANK": str(rank), "WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1",
                       "MASTER_PORT": str(port), "LOCAL_RANK": str(rank)})
    try:
        torch.cuda.set_device(rank)
        dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
        n = 16 << 20  # 64 MiB of float32
        x = torch.full((n,), float(rank + 1), device="cuda")
        dist.all_reduce(x)
        want = world * (world + 1) / 2
        wrong = int((x != want).sum().item())
        for _ in range(3):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        iters = 20
        t0 = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        us = (time.perf_counter() - t0) / iters * 1e6
        busbw = (n * 4) / us / 1e3 * (2 * (world - 1) / world if world > 1 else 1)
        q.put((rank, wrong, us, busbw, torch.cuda.nccl.version()))
        dist.destroy_process_group()
    except Exception as e:  # reported by the parent
        q.put((rank, -1, 0.0, 0.0, repr(e)))


def main():
    world = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    try:
        import torch
        import torch.multiprocessing as mp
    except ImportError as e:
        print(f"SKIP: no PyTorch ({e})")
        return 77
    if not torch.cuda.is_available() or torch.cuda.device_count() < world:
        print(f"SKIP: torch sees {torch.cuda.device_count()} GPU(s), needs {world}")
        return 77
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, world, port, q)) for r in range(world)]
    for p in procs:
        p.start()
    results = sorted(q.get(timeout=240) for _ in procs)
    for p in procs:
        p.join(60)
    bad = [r for r in results if r[1] != 0]
    if bad:
        print(f"FAIL: {bad}")
        return 1
    r = results[0]
    print(f"torch {torch.__version__}, NCCL {r[4]}: allreduce float32 64 MiB on {world} rank(s): "
          f"{r[2]:.0f} us, busbw {r[3]:.1f} GB/s, #wrong 0")
    return 0


if __name__ == "__main__":
    sys.exit(main())
