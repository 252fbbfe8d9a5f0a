#!/usr/bin/env python3
"""smddp-bench with a cost model (docs/model.md, "Using the model as a baseline"): --model prints the
predicted time beside the measured one and flags rows off by more than the
tolerance; --baseline MODEL.json gates rows below the predicted busbw.

Usage: model_e2e.py --bench PATH --model-tool PATH --mpirun PATH TEST
Runs are 2 ranks on this host (the shared-memory tier only).
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile

ARGS = None
SWEEP = ["-b", "16K", "-e", "1M", "-f", "4", "-n", "5", "-w", "1", "-c", "0", "-q"]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(cmd, timeout=120):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SMDDP_")}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def bench(*args):
    return run([ARGS.mpirun, "--oversubscribe", "--bind-to", "none", "-np", "2", ARGS.bench, *args])


def model_doc(shm, network=None):
    """An smddp-model file: per tier alpha, beta, gamma, overhead (network: no data)."""
    names = ["alpha_us", "beta_us_per_byte", "gamma_us_per_byte", "overhead_us"]
    tiers = {"shm": dict(zip(names, shm), undetermined={})}
    if network is None:
        tiers["network"] = dict(zip(names, [0, 0, 0, 0]), undetermined={n: "no data" for n in names})
    else:
        tiers["network"] = dict(zip(names, network), undetermined={})
    return {"format": "smddp-model", "version": 1, "tiers": tiers}


def write(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f)


def scaled(path, out, factor):
    """The model at `path` with every parameter times `factor`."""
    doc = json.load(open(path))
    for tier in doc["tiers"].values():
        for k in ("alpha_us", "beta_us_per_byte", "gamma_us_per_byte", "overhead_us"):
            tier[k] *= factor
    write(out, doc)


def table_rows(stdout):
    return [l.split() for l in stdout.splitlines() if l.strip() and not l.startswith("#")]


def rows_of(path):
    return json.load(open(path))["rows"]


def test_predict():
    """Each row's prediction is smddp-model predict's for its algorithm and size, exactly."""
    with tempfile.TemporaryDirectory() as d:
        m = os.path.join(d, "m.json")
        write(m, model_doc([2.5, 0.001, 0.0005, 1.25]))
        out = os.path.join(d, "out.json")
        r = bench(*SWEEP, "--model", m, "-J", out)
        if r.returncode != 0:
            fail(f"exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        checked = 0
        for row in rows_of(out):
            p = run([ARGS.model_tool, "predict", m, "--hosts", "1", "--ranks-per-host", "2", "-b", str(row["bytes"]),
                     "-e", str(row["bytes"]), "--json"])
            if p.returncode != 0:
                fail(f"predict: {p.stderr}")
            preds = json.loads(p.stdout)["collectives"][0]["sizes"][0]["predictions"]
            want = [x for x in preds if x["algorithm"] == row["algorithm"]]
            if len(want) != 1 or "model" not in row or "predicted_us" not in row["model"]:
                fail(f"row {row} has no prediction for {row['algorithm']}: {preds}")
            got, exp = row["model"], want[0]
            if abs(got["predicted_us"] - exp["time_us"]) > 1e-9 * exp["time_us"]:
                fail(f"{row['bytes']} B {row['algorithm']}: {got['predicted_us']} us, predict says {exp['time_us']}")
            # busbw = bytes / t x 2(n-1)/n, n = 2: bytes / t.
            busbw = row["bytes"] / (exp["time_us"] * 1e3)
            if abs(got["predicted_busbw_gbps"] - busbw) > 1e-9 * busbw:
                fail(f"predicted busbw {got['predicted_busbw_gbps']}, want {busbw}")
            dev = (row["time_us"] - exp["time_us"]) / exp["time_us"] * 100
            if abs(got["deviation_pct"] - dev) > 1e-6 * max(1, abs(dev)) or got["flagged"] != (abs(dev) > 25):
                fail(f"deviation {got}, want {dev:.3f} %")
            checked += 1
        lines = table_rows(r.stdout)
        if checked != 8 or len(lines) != 4 or any(len(l) != 17 for l in lines):
            fail(f"want 4 sizes x 2 placements, 13 + 4 fields a line:\n{r.stdout}")
        for line, row in zip(lines, [x for x in rows_of(out) if x["placement"] == "out-of-place"]):
            if abs(float(line[13]) - row["model"]["predicted_us"]) > 0.01 * row["model"]["predicted_us"] + 0.01:
                fail(f"table model(us) {line[13]} against {row['model']['predicted_us']}")
        if not re.search(r"^# model: \d+ of 8 rows deviate more than 25% \(", r.stdout, re.M):
            fail(f"no summary line:\n{r.stdout}")
        # Without --model: nccl-tests' 13 fields alone, no model key.
        r = bench(*SWEEP, "-J", out)
        if r.returncode != 0 or any(len(l) != 13 for l in table_rows(r.stdout)) or "model" in rows_of(out)[0]:
            fail(f"without --model the table or rows changed:\n{r.stdout}")
        print(f"{checked} rows predicted exactly as smddp-model predict")


GATE = ["-b", "64K", "-e", "1M", "-f", "2", "-n", "10", "-w", "2", "-c", "0", "-q"]


def fitted(d):
    """A model fitted on two runs of the gate's sweep (-I 1: per-iteration medians)."""
    runs = []
    for i in range(2):
        out = os.path.join(d, f"fit{i}.json")
        r = bench(*GATE, "-I", "1", "-J", out)
        if r.returncode != 0:
            fail(f"fit run {i}: exit {r.returncode}\n{r.stderr}")
        runs.append(out)
    m = os.path.join(d, "fitted.json")
    r = run([ARGS.model_tool, "fit", *runs, "-o", m])
    if r.returncode != 0:
        fail(f"fit: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    return m


def test_gate():
    """--baseline MODEL.json: its own fit passes; a model 100x too fast fails every row, named, exit 2."""
    with tempfile.TemporaryDirectory() as d:
        m = fitted(d)
        # Generous: on shared cores one preempted iteration can make a row's mean 50x its median.
        r = bench(*GATE, "--baseline", m, "--baseline-tolerance", "99.9")
        if r.returncode != 0 or not re.search(r"--baseline \S+: (\d+) of \1 rows judged, 0 below", r.stderr):
            fail(f"its own model (tolerance 99.9 %): exit {r.returncode}\n{r.stderr[-3000:]}")
        # As the YAML gate's test: the expectation raised 100x, so every row is below it.
        fast = os.path.join(d, "fast.json")
        scaled(m, fast, 0.01)
        r = bench(*GATE, "--baseline", fast)
        below = re.findall(r"smddp-bench: below the baseline: (allreduce float (\d+) B.*less 25 %, .*predicted.*)", r.stderr)
        if r.returncode != 2 or len(below) != 10 or sorted({int(b[1]) for b in below}) != [65536 << i for i in range(5)]:
            fail(f"want exit 2 naming 10 rows; exit {r.returncode}\n{r.stderr[-3000:]}")
        print(f"own model passes; 100x model fails {len(below)} rows with exit 2")


def test_flag():
    """--model off by far more than 10x both ways flags every row; the exit code stays 0.

    Synthetic models, not a scaled fit: on shared cores a row's time can vary
    several-fold between runs, so the models are off by orders of magnitude
    (a 0.1 s overhead per step; 1 ns per step and nothing else)."""
    with tempfile.TemporaryDirectory() as d:
        for name, params, slower in (("slow", [0, 0, 0, 1e5], False), ("fast", [0, 0, 0, 1e-3], True)):
            off = os.path.join(d, f"{name}.json")
            write(off, model_doc(params))
            out = os.path.join(d, "out.json")
            r = bench(*SWEEP, "--model", off, "-J", out)
            flagged = re.findall(r"^# model: flagged: (allreduce float \d+ B.*)$", r.stdout, re.M)
            rows = rows_of(out) if os.path.exists(out) else []
            if (r.returncode != 0 or len(flagged) != 8 or "# model: 8 of 8 rows deviate more than 25%" not in r.stdout
                    or len(rows) != 8
                    or not all(x["model"]["flagged"] and (x["model"]["deviation_pct"] > 0) == slower for x in rows)
                    or any(l[16] != "!" for l in table_rows(r.stdout))):
                fail(f"{name}: exit {r.returncode}, flagged {len(flagged)}\n{r.stdout}\n{r.stderr[-2000:]}")
            summary = json.load(open(out))["model"]
            if summary["predicted_rows"] != 8 or len(summary["flagged"]) != 8 or summary["tolerance_pct"] != 25:
                fail(f"{name}: the document's model summary {summary}")
        # A model too slow deviates by less than -100 %: with a 100 % tolerance nothing is flagged.
        r = bench(*SWEEP, "--model", os.path.join(d, "slow.json"), "--model-tolerance", "100")
        if (r.returncode != 0 or "# model: 0 of 8 rows deviate more than 100%" not in r.stdout
                or any(l[16] != "-" for l in table_rows(r.stdout))):
            fail(f"tolerance 100 %:\n{r.stdout}")
        print("models off both ways: 8 of 8 rows flagged, exit 0")


def test_bad_input():
    """A bad model or tolerance, or a --model/--baseline that is a directory, FIFO or endless device: exit 64,
    one line from rank 0, no file written, before any work."""
    with tempfile.TemporaryDirectory() as d:
        good = os.path.join(d, "m.json")
        write(good, model_doc([1, 0.001, 0, 1]))
        no_tier = os.path.join(d, "no_tier.json")
        doc = model_doc([1, 0.001, 0, 1])
        del doc["tiers"]["shm"]
        write(no_tier, doc)
        negative = os.path.join(d, "negative.json")
        write(negative, model_doc([1, -0.001, 0, 1]))
        text = os.path.join(d, "text.json")
        with open(text, "w") as f:
            f.write("{not json")
        fifo = os.path.join(d, "fifo")
        os.mkfifo(fifo)  # no writer: a blocking open would hang the run
        cases = [
            (["--model", d], "a directory"),
            (["--model", fifo], "not a regular file"),
            (["--model", "/dev/zero"], "not a regular file"),
            (["--baseline", d], "a directory"),
            (["--baseline", fifo], "not a regular file"),
            (["--baseline", "/dev/zero"], "not a regular file"),
            (["--model", no_tier], "tier"),
            (["--model", negative], "beta_us_per_byte"),
            (["--model", text], "not valid json"),
            (["--model", os.path.join(d, "missing.json")], "cannot read"),
            (["--baseline", no_tier], "tier"),
            (["--baseline", negative], "beta_us_per_byte"),
            (["--model", good, "--model-tolerance", "-5"], "model-tolerance"),
            (["--model-tolerance", "5"], "needs --model"),
            (["--baseline", good, "--baseline-tolerance", "100"], "baseline-tolerance"),
            (["--baseline-tolerance", "10"], "needs --baseline"),
        ]
        # YAML baselines: every name is the engine's, and some entry must be for this run.
        def yaml_baseline(name, *entries):
            path = os.path.join(d, name)
            with open(path, "w") as f:
                f.write("baseline:\n  entries:\n" + "".join(f"    - {{{e}, busbw_gbps: 1}}\n" for e in entries))
            return path
        ok_entry = "collective: allreduce"
        cases += [
            (["--baseline", yaml_baseline("c.yaml", ok_entry, ok_entry, "collective: allreduc")],
             "entry 3: unknown collective 'allreduc'; valid: allreduce, allgather"),
            (["--baseline", yaml_baseline("d.yaml", "collective: allreduce, dtype: flaot")], "entry 1: unknown dtype 'flaot'"),
            (["--baseline", yaml_baseline("b.yaml", "collective: allreduce, backend: ncll")], "unknown backend 'ncll'"),
            (["--baseline", yaml_baseline("m.yaml", "collective: allreduce, memory: gpu")], "unknown memory 'gpu'"),
            (["--baseline", yaml_baseline("other.yaml", "collective: broadcast", "collective: allreduce, dtype: half")],
             "none of its 2 entries is for this run"),
            (["--baseline", yaml_baseline("nccl.yaml", "collective: allreduce, backend: nccl")],
             "none of its 1 entries is for this run"),
            (["--baseline", good, "--backend", "mpi"], "judges smddp's rows only"),
        ]
        doc = model_doc([1, 0.001, 0, 1])
        doc["tiers"]["shm"]["undetermined"] = {"alpah_us": "no data"}
        misspelled = os.path.join(d, "misspelled.json")
        write(misspelled, doc)
        cases += [(["--baseline", misspelled], "unknown key 'alpah_us'"), (["--model", misspelled], "unknown key 'alpah_us'")]
        # -J into a FIFO that no process reads: refused, never waited on (run's timeout turns a hang into a failure).
        cases += [(["-J", fifo], "a FIFO with no reader"), (["--emf", fifo], "a FIFO with no reader")]
        # A few at a time: each run waits on mpirun's start far more than it computes.
        def refused(i, args, needle):
            out = os.path.join(d, f"out{i}.json")
            r = bench(*SWEEP, *args, *([] if "-J" in args else ["-J", out]))
            lines = [l for l in (r.stdout + r.stderr).splitlines() if l.startswith("smddp-bench")]
            if r.returncode != 64 or r.stdout.strip() or len(lines) != 1 or needle.lower() not in lines[0].lower():
                return f"{args}: exit {r.returncode}, want 64 and one line with '{needle}'\n{r.stdout}\n{r.stderr}"
            return f"{args}: {out} was written" if os.path.exists(out) else None
        with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
            problems = [p for p in pool.map(lambda c: refused(c[0], *c[1]), enumerate(cases)) if p]
        if problems:
            fail("\n".join(problems))
        # Entries of the run's names that match no row after all (no such size): the gate fails.
        r = bench(*SWEEP, "--baseline", yaml_baseline("size.yaml", "collective: allreduce, bytes: 3"))
        if r.returncode != 2 or "no row was judged (no entry matches a row with a bus bandwidth): the gate fails" not in r.stderr:
            fail(f"a baseline that judged no row: exit {r.returncode}, want 2\n{r.stderr[-2000:]}")
        print(f"{len(cases)} bad inputs refused with one line; a gate that judged nothing fails")


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--bench", required=True)
    p.add_argument("--model-tool", required=True)
    p.add_argument("--mpirun", required=True)
    p.add_argument("test", choices=["predict", "gate", "flag", "bad_input"])
    ARGS = p.parse_args()
    globals()["test_" + ARGS.test]()


if __name__ == "__main__":
    main()
