"""The sweep, as smddp-bench runs it (bench/src/sweep/sweep.cc): every
(collective, dtype, op, size) row, every backend on the same tensors, its
checking calls first, then the timed calls in up to four rounds that
alternate between backends and placements, each slice after its own
warm-up. Times, #wrong and stragglers are aggregated over a gloo group of
their own, so the measured backends carry only the measured calls."""
import datetime
import os
import socket
import sys
import time

import numpy as np
import torch
import torch.distributed as dist

from . import __version__, codes, data
from .backends import Call, placement_unsupported, torch_dtype
from .cli import EXIT_BELOW, EXIT_LOST, EXIT_OK, EXIT_RUNTIME, EXIT_USAGE, EXIT_WRONG, utc_now
from .report import Json, Table
from .types import DTYPE_SIZE, base_collective, bus_factor, has_root, reduces, row_counts

STRAGGLER_FACTOR = 1.10  # slower than the median rank by 10%
ROUNDS = 4               # timed slices per measurement when comparing
STARTUP_CALLS = 100      # tiny calls per backend before the first row
POISON = 0xA5


class Fatal(Exception):
    def __init__(self, message, code):
        super().__init__(message)
        self.code = code


def _lost(e):
    text = str(e).lower()
    return any(w in text for w in ("timed out", "timeout", "connection closed", "connection reset", "broken pipe",
                                   "peer", "aborted"))


def _stats(times):
    """Nearest-rank percentiles (p50 the upper median), mean, cv and the calls
    themselves, as bench/src/sweep/stats.cc and json_reporter.cc write them."""
    t = sorted(times)
    if not t:
        return {**{k: 0.0 for k in ("min_us", "p50_us", "p95_us", "p99_us", "max_us", "mean_us", "cv")},
                "samples_us": []}

    def pct(p):
        rank = int(np.ceil(p * len(t)))
        return float(t[min(len(t) - 1, 0 if rank == 0 else rank - 1)])
    mean = float(sum(t) / len(t))
    var = sum((x - mean) ** 2 for x in t) / len(t)
    return {"min_us": float(t[0]), "p50_us": float(t[len(t) // 2]), "p95_us": pct(0.95), "p99_us": pct(0.99),
            "max_us": float(t[-1]), "mean_us": mean, "cv": float(np.sqrt(var) / mean) if mean > 0 else 0.0,
            "samples_us": [float(x) for x in times]}


def skip_lines(refused, placements):
    """(backend, what, why) for the report: what a backend refused. A form
    torch lacks (all_reduce out of place) shows as N/A, and only when no
    placement of a row is left is it said."""
    out, done = [], set()
    for (b, c, t, op, _), _why in refused.items():
        if (b, c, t, op) in done:
            continue
        done.add((b, c, t, op))
        name = f"{c} {t}" + (f" {op}" if reduces(c) else "")
        real = {p: refused[(b, c, t, op, p)] for p in placements
                if (b, c, t, op, p) in refused and placement_unsupported(c, p) is None}
        if len(real) == 0:
            if all((b, c, t, op, p) in refused for p in placements):
                out.append((b, name, "; ".join(dict.fromkeys(refused[(b, c, t, op, p)] for p in placements))))
            continue
        if all((b, c, t, op, p) in refused for p in placements) and len(set(real.values())) == 1:
            out.append((b, name, next(iter(real.values()))))
        else:
            for p, why in real.items():
                out.append((b, f"{name} {p}", why))
    return out


def plan_rows(o, sizes):
    rows = []
    for c in o.collectives:
        for t in o.dtypes:
            for op in (o.ops if reduces(c) else ["sum"]):
                for nbytes in ([0] if c == "barrier" else sizes):
                    rows.append((c, t, op, nbytes))
    return rows


def faults_from_environment():
    """SMDDP_TORCH_TEST_FAULTS=RANK:N[,RANK:N]: the tests' way to prove that
    #wrong is counted on every rank and summed: N output elements of RANK
    read back with their lowest bit flipped, after every checking call."""
    faults = {}
    for item in filter(None, os.environ.get("SMDDP_TORCH_TEST_FAULTS", "").split(",")):
        rank, _, count = item.partition(":")
        faults[int(rank)] = int(count)
    return faults


class Runner:
    def __init__(self, o, rank, n, device, groups, book, timeout):
        self.o, self.rank, self.n, self.device, self.timeout = o, rank, n, device, timeout
        self.groups, self.book = groups, book
        self.cuda = device.type == "cuda"
        self.faults = faults_from_environment()
        self.where = "connecting"  # what the ranks were doing, for error messages

    # Bookkeeping over the gloo group.
    def sync(self):
        if self.cuda:
            torch.cuda.synchronize(self.device)

    def gather(self, value):
        parts = [torch.zeros(1, dtype=torch.float64) for _ in range(self.n)]
        dist.all_gather(parts, torch.tensor([float(value)], dtype=torch.float64), group=self.book)
        return [float(p.item()) for p in parts]

    def reduce(self, tensor, op):
        dist.all_reduce(tensor, op=op, group=self.book)
        return tensor

    def objects(self, value):
        out = [None] * self.n
        dist.all_gather_object(out, value, group=self.book)
        return out

    def call(self, backend, row, placement, send, recv):
        c, t, op, nbytes = row
        rc = row_counts(c, nbytes, t, self.n)
        root = self.o.root if has_root(c) else 0
        es = DTYPE_SIZE[t]
        td = torch_dtype(t)
        s = send[:rc["send"] * es].view(td) if c != "barrier" else send[:0]
        r = recv[:rc["recv"] * es].view(td) if c != "barrier" else recv[:0]
        return Call(backend, self.groups[backend], c, op, root, s, r, self.rank, self.n, placement, rc["count"]), rc

    def probe(self, backends, combos):
        """{(backend, collective, dtype, op, placement): reason} of what cannot run, agreed by every rank.

        gloo reports some refusals from its worker threads, and a process
        group that refused a call was seen to hang in a later one (torch
        1.13): gloo and mpi are probed on groups of their own, a new one
        after every refusal, never on the groups that are measured. NCCL
        refuses before it communicates, so nccl and smddp probe in place."""
        mine = {}
        send = torch.zeros(64 * self.n, dtype=torch.uint8, device=self.device)
        recv = torch.zeros(64 * self.n, dtype=torch.uint8, device=self.device)
        isolated = {"gloo", "mpi"}
        probe_groups = {b: dist.new_group(backend=b, timeout=self.timeout) if b in isolated else self.groups[b]
                        for b in backends}
        measured = self.groups
        for key in combos:
            b, c, t, op, placement = key
            why = placement_unsupported(c, placement)
            if why is None and torch_dtype(t) is None and c != "barrier":
                why = f"torch {torch.__version__} has no {t}"
            if why is None:
                self.where = f"probing {b} {c} {t} {op} {placement}"
                self.groups = dict(measured, **{b: probe_groups[b]})
                try:
                    call, _ = self.call(b, (c, t, op, DTYPE_SIZE[t] * self.n), placement, send, recv)
                    call.run()
                    self.sync()
                except Exception as e:  # the backend refuses the combination
                    why = (str(e).strip().splitlines() or [type(e).__name__])[0]
                    if b in isolated:
                        probe_groups[b] = dist.new_group(backend=b, timeout=self.timeout)
                finally:
                    self.groups = measured
            if why:
                mine[key] = why
        refused = {}
        self.where = "agreeing on what each backend runs"
        for theirs in self.objects(mine):
            for key, why in theirs.items():
                refused.setdefault(key, why)
        return refused

    def startup(self, backends):
        # Connection setup and a fresh process's first slow calls belong to no row.
        t = torch.zeros(1, dtype=torch.float32, device=self.device)
        for b in backends:
            self.where = f"{STARTUP_CALLS} start-up calls on {b}"
            for _ in range(STARTUP_CALLS):
                dist.all_reduce(t, group=self.groups[b])
            self.sync()
        dist.barrier(group=self.book)

    def start(self, backend, row, placement, send, recv):
        c, t, op, nbytes = row
        self.where = f"{backend} {c} {t} {op} {nbytes} B {placement}"
        call, rc = self.call(backend, row, placement, send, recv)
        spec = data.Spec(base_collective(c), t, op, self.o.seed, self.n, max(call.root, 0))
        m = {"call": call, "rc": rc, "backend": backend, "placement": placement, "times": [], "wrong": 0,
             "row": row}
        in_place_input = c in ("allreduce", "broadcast", "reduce")
        for _ in range(self.o.check):
            if c != "barrier":
                target = call.recv if in_place_input else call.send
                bits = data.fill(spec, self.rank, rc["send"] if not in_place_input else rc["recv"])
                target.view(torch.uint8).copy_(torch.from_numpy(bits.view(np.uint8)))
                if placement == "out-of-place":
                    call.recv.view(torch.uint8).fill_(POISON)
            call.run()
            self.sync()
            if c != "barrier":
                got = call.output().cpu().contiguous().view(torch.uint8).numpy().view(data.bits_type(t))
                flips = self.faults.get(self.rank, 0)
                if flips:
                    got = got.copy()
                    got[:flips] ^= got.dtype.type(1)
                m["wrong"] += data.count_wrong(spec, self.rank, got, rc["count"])
        return m

    def time_slice(self, m, warmup, iters):
        call = m["call"]
        self.where = f"{m['backend']} {' '.join(map(str, m['row']))} B {m['placement']} (timed)"
        for _ in range(warmup):
            call.run()
        self.sync()
        dist.barrier(group=self.book)
        for _ in range(iters):
            t0 = time.perf_counter()
            call.run()
            self.sync()
            m["times"].append((time.perf_counter() - t0) * 1e6)

    def finish(self, m, row_index, hosts):
        o, n = self.o, self.n
        c, t, op, _ = m["row"]
        times = m["times"]
        mine = sum(times) / len(times) if times else 0.0
        every = self.gather(mine)
        time_us = [every[0], sum(every) / n, min(every), max(every)][o.average]
        r = {"row": row_index, "collective": base_collective(c), "dtype": t, "op": op if reduces(c) else "none",
             "root": o.root if has_root(c) else -1, "bytes": m["rc"]["bytes"], "count": m["rc"]["elements"],
             "backend": m["backend"], "algorithm": m["call"].algorithm, "placement": m["placement"],
             "time_us": float(time_us), "algbw_gbps": 0.0, "busbw_gbps": 0.0, "wrong": None,
             "iterations": o.iters, "ratio": 1.0}
        if o.per_iteration:
            r["per_iteration"] = _stats(self.reduce(torch.tensor(times, dtype=torch.float64),
                                                    dist.ReduceOp.MAX).tolist())
        ordered = sorted(every)
        median = ordered[len(ordered) // 2]
        slowest = max(range(n), key=lambda i: every[i])
        if n > 1 and median > 0 and every[slowest] > STRAGGLER_FACTOR * median:
            r["straggler"] = {"rank": slowest, "host": hosts[slowest],
                              "slower_pct": float((every[slowest] / median - 1) * 100)}
        wrong = int(self.reduce(torch.tensor([m["wrong"]], dtype=torch.int64), dist.ReduceOp.SUM).item())
        r["wrong"] = wrong if o.check > 0 else None
        if time_us > 0:
            r["algbw_gbps"] = r["bytes"] / 1e3 / time_us
            r["busbw_gbps"] = r["algbw_gbps"] * bus_factor(c, n)
        return r, wrong


def _versions(o, cuda):
    v = {"smddp": __version__, "torch": torch.__version__}
    if cuda and dist.is_nccl_available():
        try:
            v["nccl"] = ".".join(str(x) for x in torch.cuda.nccl.version())
        except Exception:
            pass
    if "smddp" in o.backends:
        try:
            import smdistributed.dataparallel as smddp
            v["smdistributed"] = str(getattr(smddp, "__version__", "unknown"))
        except Exception:
            pass
    return v


def _exit_now(code):
    # A peer may be stuck in a collective, and tearing a process group down
    # can wait for it: leave at once, with our code.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def run(o, argv, cuda, sizes):
    rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ["LOCAL_RANK"])
    host = socket.gethostname()
    timeout = datetime.timedelta(seconds=o.timeout if o.timeout > 0 else 300)
    on_cuda = o.mem == "cuda" or (o.mem == "auto" and cuda)
    device = torch.device("cpu")
    if on_cuda:
        device = torch.device("cuda", local % torch.cuda.device_count())
        torch.cuda.set_device(device)
    # SMDDP is documented as the default group's backend; others get groups of their own.
    first = "smddp" if "smddp" in o.backends else o.backends[0]
    try:
        dist.init_process_group(backend=first, init_method="env://", rank=rank, world_size=n, timeout=timeout)
        groups = {first: dist.group.WORLD}
        for b in o.backends:
            if b != first:
                groups[b] = dist.new_group(backend=b, timeout=timeout)
        book = dist.new_group(backend="gloo", timeout=timeout)
    except Exception as e:
        print(f"smddp-bench-torch: rank {rank} on {host}: cannot connect the ranks at "
              f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}: {e}", file=sys.stderr, flush=True)
        _exit_now(EXIT_LOST)
    runner = Runner(o, rank, n, device, groups, book, timeout)
    reporters, summary = [], {"wrong": 0, "avg_busbw_gbps": {}, "threshold_gbps": o.min_busbw,
                              "below_threshold": False, "exit_code": 0, "complete": False}
    try:
        # Host, pid and device of every rank: the table's "Using devices" lines.
        placed = runner.objects((host, os.getpid(), device.index if on_cuda else -1))
        hosts = [h for h, _, _ in placed]
        nodes, seen = [], {}
        for h in hosts:
            nodes.append(seen.setdefault(h, len(seen)))
        rows = plan_rows(o, sizes)
        combos = []
        for c, t, op, _ in rows:
            for b in o.backends:
                for p in o.placements:
                    if (b, c, t, op, p) not in combos:
                        combos.append((b, c, t, op, p))
        refused = runner.probe(o.backends, combos)
        if len(refused) == len(combos):
            if rank == 0:
                why = "; ".join(f"{b} {c} {t} {op} {p}: {w}" for (b, c, t, op, p), w in list(refused.items())[:3])
                more = f" (and {len(refused) - 3} more)" if len(refused) > 3 else ""
                print(f"smddp-bench-torch: nothing to run: {why}{more}", file=sys.stderr, flush=True)
            _exit_now(EXIT_USAGE)
        ctx = {"options": o, "argv": argv, "versions": _versions(o, cuda), "nranks": n, "nnodes": len(seen),
               "ranks": [{"rank": i, "host": hosts[i], "node": nodes[i]} for i in range(n)],
               "placed": [{"pid": pid, "device": dev} for _, pid, dev in placed],
               "environment": {k: v for k, v in sorted(os.environ.items())
                               if k.startswith(("SMDDP_", "NCCL_", "FI_", "OMPI_"))},
               "started_utc": utc_now(), "memory": "cuda" if on_cuda else "host"}
        if rank == 0:
            reporters.append(Table(o.quiet))
            if o.output_file:
                reporters.append(Json(o.output_file))
            for rep in reporters:
                rep.begin(ctx)
                for b, what, why in skip_lines(refused, o.placements):
                    rep.skipped(b, what, why)
        max_send = max_recv = 64
        for c, t, op, nbytes in rows:
            rc = row_counts(c, nbytes, t, n)
            max_send = max(max_send, rc["send"] * DTYPE_SIZE[t])
            max_recv = max(max_recv, rc["recv"] * DTYPE_SIZE[t])
        send = torch.zeros(max_send + 64, dtype=torch.uint8, device=device)
        recv = torch.zeros(max_recv + 64, dtype=torch.uint8, device=device)
        runner.startup(o.backends)
        busbw = {}
        for index, row in enumerate(rows):
            c, t, op, nbytes = row
            if c != "barrier" and row_counts(c, nbytes, t, n)["count"] == 0:
                # torch backends do not all take empty tensors (gloo's allgather divides by zero).
                for rep in reporters:
                    rep.skipped("all", f"{c} {t} {nbytes} B", f"under one element per rank at {n} ranks")
                continue
            ms = []
            for b in o.backends:
                for p in o.placements:
                    if (b, c, t, op, p) in refused:
                        continue
                    m = runner.start(b, row, p, send, recv)
                    m["row"] = row
                    ms.append(m)
            if not ms:
                continue
            rounds = max(1, min(ROUNDS, o.iters)) if len(ms) > 1 else 1
            for rnd in range(rounds):
                warmup = o.warmup_iters if rnd == 0 else min(o.warmup_iters, 1)
                share = o.iters // rounds + (1 if rnd < o.iters % rounds else 0)
                for m in ms:
                    runner.time_slice(m, warmup, share)
            results = []
            for m in ms:
                r, wrong = runner.finish(m, index, hosts)
                summary["wrong"] += wrong
                results.append(r)
            # Ratio: the first backend's bandwidth over each one's (time for barrier).
            for r in results:
                for f in results:
                    if f["backend"] != results[0]["backend"] or f["placement"] != r["placement"]:
                        continue
                    if r["collective"] == "barrier" or r["busbw_gbps"] <= 0:
                        r["ratio"] = r["time_us"] / f["time_us"] if f["time_us"] > 0 else 1.0
                    else:
                        r["ratio"] = f["busbw_gbps"] / r["busbw_gbps"]
                acc = busbw.setdefault(r["backend"], [0.0, 0])
                acc[0] += r["busbw_gbps"]
                acc[1] += 1
            for rep in reporters:
                rep.row(results)
        summary["avg_busbw_gbps"] = {b: s / k for b, (s, k) in busbw.items()}
        first_avg = summary["avg_busbw_gbps"].get(o.backends[0], 0.0)
        summary["below_threshold"] = o.min_busbw > 0 and first_avg < o.min_busbw
        summary["complete"] = True
        summary["verdicts"] = codes.verdicts(summary, o.backends[0])
        code = EXIT_WRONG if summary["wrong"] else EXIT_BELOW if summary["below_threshold"] else EXIT_OK
        summary["exit_code"] = code
        for rep in reporters:
            rep.end(summary, o.backends)
    except Exception as e:
        code = EXIT_LOST if _lost(e) else EXIT_RUNTIME
        first_line = (str(e).strip().splitlines() or [type(e).__name__])[0]
        print(f"smddp-bench-torch: rank {rank} on {host}: {runner.where}: {first_line}", file=sys.stderr, flush=True)
        summary.update(error=first_line, exit_code=code)
        for rep in reporters:
            try:
                rep.end(summary, o.backends)
            except Exception:
                pass
        _exit_now(code)
    try:
        dist.barrier(group=book)
        dist.destroy_process_group()
    except Exception:
        pass
    sys.stdout.flush()
    return code
