#!/usr/bin/env python3
"""smddp-bench -B (docs/bench.md, "Bitwise repeatability") against the
engine's fault injector SMDDP_TEST_FLIP (docs/engine.md, "Fault injection
for tests"), under a real mpirun.

Usage: bitwise_e2e.py --bench PATH --mpirun PATH TEST
  np2, np4  every collective that reduces or copies, in one sweep of -B 3:
            without the flip no difference and exit 0; then, once per
            collective, the same sweep with one bit of one element flipped
            after one call (the row's repeat 2, from the clean run's
            engine_calls; placements alternate) on a rank with output: exit 1,
            the text line and the -J row name that rank, its host, the
            element, the bit and the repeat, every other row stays clean; on
            np2 allreduce's repeat 1 too (then #wrong counts it)
  split     the same under NCCL_TESTS_SPLIT (groups on their own
            communicators): the job rank is named
  backends  --backend smddp,mpi with -B 2: no difference; the mpi rows have
            no engine call numbers
Sizes are small and -n 1 -w 0: each sweep takes a few seconds.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from e2e_harness import SEED, fail, main_of_tests  # noqa: E402  (tests/e2e/e2e_harness.py)

ARGS = None
# Every collective that reduces or copies (barrier has no data).
COLLECTIVES = ["allreduce", "reducescatter", "reduce", "broadcast", "allgather", "alltoall", "gather", "scatter",
               "sendrecv", "alltoallv"]
# The outputs every rank must hold alike (sweep/bitwise.h, rank_agreement).
AGREE = {"allreduce", "allgather", "broadcast"}
REPEATS = 3




def run(cmd, env=None, timeout=180):
    full = {k: v for k, v in os.environ.items() if not k.startswith(("SMDDP_", "NCCL_TESTS_"))}
    full.update(env or {})
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full)


def sweep(np, json_path, args, env=None):
    cmd = [ARGS.mpirun, "--oversubscribe", "--bind-to", "none", "-np", str(np)]
    for k in (env or {}):
        cmd += ["-x", k]
    cmd += [ARGS.bench, *args, "-n", "1", "-w", "0", "-B", str(REPEATS), "--seed", str(SEED), "-J", json_path]
    r = run(cmd, env=env)
    try:
        doc = json.load(open(json_path))
    except (OSError, ValueError) as e:
        fail(f"{' '.join(cmd)}: no -J document ({e})\nexit {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r, doc


def bitwise_lines(stdout):
    return [l for l in stdout.splitlines() if l.startswith("# bitwise (")]


def check_clean(what, r, doc, rows_expected):
    if r.returncode != 0:
        fail(f"{what}: exit {r.returncode}, want 0\n{r.stdout}\n{r.stderr}")
    rows = [x for x in doc["rows"] if x["collective"] != "barrier"]
    if len(rows) != rows_expected:
        fail(f"{what}: {len(rows)} rows, want {rows_expected}")
    for x in rows:
        b = x.get("bitwise")
        if not b or b["repeats"] != REPEATS or b["differences"] != 0 or b["shown"] or x["wrong"] != 0:
            fail(f"{what}: row {x['collective']} {x['placement']}: {b}, wrong {x['wrong']}")
        want = "every rank" if x["collective"] in AGREE else "none"
        if b["ranks_compared"] != want:
            fail(f"{what}: {x['collective']} compares across ranks {b['ranks_compared']!r}, want {want!r}")
    if bitwise_lines(r.stdout):
        fail(f"{what}: difference lines without a flip:\n" + "\n".join(bitwise_lines(r.stdout)))
    footers = re.findall(r"^# Bitwise differences\s+: (\d+) (\w+)$", r.stdout, re.M)
    if not footers or any(f != ("0", "OK") for f in footers):
        fail(f"{what}: section footers {footers}")
    if doc["totals"].get("bitwise_differences") != 0 or doc["totals"].get("verdicts") != []:
        fail(f"{what}: totals {doc['totals']}")


def row_of(doc, collective, placement):
    for x in doc["rows"]:
        if x["collective"] == collective and x["placement"] == placement:
            return x
    fail(f"no {collective} {placement} row")


def check_flip(what, r, doc, collective, placement, rank, element, bit, repeat):
    """The flipped row names rank, host, element, bit and repeat; nothing else differs."""
    if r.returncode != 1:
        fail(f"{what}: exit {r.returncode}, want 1 (a difference fails as a wrong value)\n{r.stdout}\n{r.stderr}")
    host = {x["rank"]: x["host"] for x in doc["ranks"]}[rank]
    for x in doc["rows"]:
        if x["collective"] == "barrier" or (x["collective"], x["placement"]) == (collective, placement):
            continue
        if x["bitwise"]["differences"] != 0 or x["wrong"] != 0:
            fail(f"{what}: another row differs: {x['collective']} {x['placement']}: {x['bitwise']}")
    x = row_of(doc, collective, placement)
    b = x["bitwise"]
    agree = collective in AGREE
    # Repeat 1 corrupted: it differs from the expected value, and the clean
    # repeats 2..N differ from it; a later repeat differs from repeat 1 alone.
    want = {"against_expected": 1 if repeat == 1 else 0,
            "against_repeat_1": REPEATS - 1 if repeat == 1 else 1,
            "against_ranks": 1 if agree else 0}
    got = {k: b[k] for k in want}
    if got != want or x["wrong"] != want["against_expected"]:
        fail(f"{what}: counts {got}, #wrong {x['wrong']}; want {want}")
    elements = [s for s in b["shown"] if s["against"] != "ranks"]
    mine = [s for s in elements if s["repeat"] == repeat]
    if len(mine) != 1:
        fail(f"{what}: want one element difference in repeat {repeat}, shown {b['shown']}")
    s = mine[0]
    against = "expected value" if repeat == 1 else "repeat 1"
    if (s["rank"], s["host"], s["element"], s["bits"], s["against"]) != (rank, host, element, [bit], against):
        fail(f"{what}: shown {s}; want rank {rank} on {host}, element {element}, bits [{bit}] against {against}")
    if int(s["expected"], 16) ^ int(s["received"], 16) != 1 << bit:
        fail(f"{what}: expected {s['expected']} and received {s['received']} differ in more than bit {bit}")
    for e in elements:  # repeat 1 corrupted: the others name the same element and bit
        if (e["rank"], e["element"], e["bits"]) != (rank, element, [bit]):
            fail(f"{what}: another element difference {e}")
    ranks = [s for s in b["shown"] if s["against"] == "ranks"]
    if agree and (len(ranks) != 1 or ranks[0]["rank"] != rank or ranks[0]["repeat"] != repeat
                  or ranks[0]["agreed_rank"] == rank):
        fail(f"{what}: across ranks {ranks}; want rank {rank}, repeat {repeat} against another rank")
    # The text: one line per difference shown, then the count.
    lines = bitwise_lines(r.stdout)
    needle = (f"rank {rank} on {host}, repeat {repeat} of {REPEATS}, element {element}: expected {s['expected']} "
              f"({against}), received {s['received']}, bit {bit} differs")
    mine = [l for l in lines if needle in l]
    if len(mine) != 1 or f"({collective} " not in mine[0] or f", {placement}):" not in mine[0]:
        fail(f"{what}: want one line with {needle!r} for {collective} {placement}; lines:\n" + "\n".join(lines))
    if len(lines) != len(b["shown"]) + 1 or f"{sum(want.values())} differences" not in lines[-1]:
        fail(f"{what}: lines:\n" + "\n".join(lines))
    if not re.search(r"^# Bitwise differences\s+: [1-9]\d* FAILED$", r.stdout, re.M):
        fail(f"{what}: no FAILED footer")
    # The verdicts, with their codes and action classes (docs/diag.md,
    # "Failure codes"): a corrupted repeat 1 is #wrong as well.
    want = [("SMDDP-BENCH-WRONG", "escalate")] if repeat == 1 else []
    want.append(("SMDDP-BENCH-BITWISE", "replace"))
    verdicts = doc["totals"].get("verdicts")
    if not isinstance(verdicts, list) or [(v.get("code"), v.get("action")) for v in verdicts] != want or \
            f"{doc['totals']['bitwise_differences']} differences" not in verdicts[-1]["text"]:
        fail(f"{what}: totals.verdicts {verdicts}; want codes and actions {want}")


def flips(np, root, flip_rank, extra_env=None, extra_args=(), collectives=COLLECTIVES, element_base=3):
    with tempfile.TemporaryDirectory() as d:
        args = [*collectives, "-b", "4K", "-e", "4K", "-r", str(root), *extra_args]
        r, clean = sweep(np, os.path.join(d, "clean.json"), args, env=extra_env)
        check_clean(f"np{np} without a flip", r, clean, 2 * len(collectives))
        cases = [(c, ("out-of-place", "in-place")[i % 2], 2, element_base + 7 * i, (5 * i + 3) % 32)
                 for i, c in enumerate(collectives)]
        if np == 2:
            cases.append(("allreduce", "out-of-place", 1, 11, 30))
        for collective, placement, repeat, element, bit in cases:
            # The rooted collectives' output is on the root: flip there.
            rank = root if collective in ("reduce", "gather") else flip_rank
            calls = row_of(clean, collective, placement)["bitwise"]["engine_calls"]
            if not calls or len(calls) != REPEATS or calls != sorted(calls):
                fail(f"{collective} {placement}: engine_calls {calls}")
            env = dict(extra_env or {})
            env["SMDDP_TEST_FLIP"] = f"{rank}:{calls[repeat - 1]}:{element}:{bit}"
            what = f"np{np} {collective} {placement} SMDDP_TEST_FLIP={env['SMDDP_TEST_FLIP']}"
            r, doc = sweep(np, os.path.join(d, "flip.json"), args, env=env)
            check_flip(what, r, doc, collective, placement, rank, element, bit, repeat)
            print(f"{what}: named")


def test_np2():
    flips(2, root=1, flip_rank=1)


def test_np4():
    flips(4, root=3, flip_rank=2)


def test_split():
    # Groups {0, 2} and {1, 3}, each on its own communicator. The job's
    # communicator counts its own (bookkeeping) calls too: an element past
    # their small outputs leaves them alone (docs/engine.md).
    flips(4, root=1, flip_rank=3, extra_env={"NCCL_TESTS_SPLIT": "MOD 2"}, extra_args=["-b", "64K", "-e", "64K"],
          collectives=["allreduce", "allgather", "broadcast", "reducescatter"], element_base=3000)


def test_backends():
    with tempfile.TemporaryDirectory() as d:
        r, doc = sweep(2, os.path.join(d, "b.json"), ["allreduce", "allgather", "alltoall", "-b", "8K", "-e", "8K",
                                                      "--backend", "smddp,mpi"])
        check_clean("--backend smddp,mpi", r, doc, 12)
        for x in doc["rows"]:
            calls = x["bitwise"]["engine_calls"]
            if (x["backend"] == "mpi") != (calls is None):
                fail(f"{x['backend']} {x['collective']}: engine_calls {calls}")
    print("smddp and mpi rows repeat bit for bit")


def main():
    main_of_tests(globals(), {"--bench": True, "--mpirun": True})


if __name__ == "__main__":
    main()
