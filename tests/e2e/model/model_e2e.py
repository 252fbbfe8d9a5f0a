#!/usr/bin/env python3
"""smddp-model end to end: the binary on files.

Rows in smddp-bench's -J format are made from a known model's own
predictions (predict --json), so fit must give that model back, check must
find no error, and export must write the formats' keys.
Usage: model_e2e.py --bin SMDDP_MODEL [--bench SMDDP_BENCH] [--mpirun MPIRUN] CASE
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

KNOWN = {
    "shm": {"alpha_us": 2.0, "beta_us_per_byte": 1 / 4000, "gamma_us_per_byte": 1 / 8000, "overhead_us": 3.0},
    "network": {"alpha_us": 30.0, "beta_us_per_byte": 1 / 25, "gamma_us_per_byte": 1 / 9000, "overhead_us": 12.0},
}
TOPOLOGIES = [(1, 2), (1, 4), (2, 1), (3, 1), (4, 1), (2, 2), (4, 2)]
COLLECTIVES = ["allreduce", "allgather", "reduce_scatter"]


def model_doc(tiers):
    return {"format": "smddp-model", "version": 1,
            "tiers": {t: dict(p, undetermined={}) for t, p in tiers.items()}}


def run(binary, *args, expect=0):
    p = subprocess.run([binary, *args], capture_output=True, text=True, timeout=120)
    if p.returncode != expect:
        sys.exit(f"FAIL: {' '.join(args)}: exit {p.returncode}, expected {expect}\n{p.stdout}\n{p.stderr}")
    return p


def bench_doc(hosts, per_host, rows):
    """A minimal smddp-bench -J document: the keys smddp-model reads."""
    ranks = [{"rank": r, "host": f"h{r // per_host}", "node": r // per_host} for r in range(hosts * per_host)]
    out = []
    for i, (coll, alg, size, t) in enumerate(rows):
        out.append({"row": i, "collective": coll, "dtype": "float", "bytes": size, "backend": "smddp",
                    "algorithm": alg, "placement": "out-of-place", "time_us": t * 1.05, "wrong": 0,
                    "per_iteration": {"p50_us": t}})
    # Rows smddp-model must skip: another backend, an unknown algorithm.
    out.append({"row": 99, "collective": "allreduce", "dtype": "float", "bytes": 4096, "backend": "mpi",
                "algorithm": "mpi:default", "time_us": 1.0})
    return {"tool": "smddp-bench", "nranks": hosts * per_host, "nnodes": hosts, "ranks": ranks, "rows": out}


def make_results(binary, tmp, model_path):
    files = []
    for hosts, per_host in TOPOLOGIES:
        p = run(binary, "predict", model_path, "--hosts", str(hosts), "--ranks-per-host", str(per_host),
                *COLLECTIVES, "-b", "4K", "-e", "64M", "-f", "4", "--json")
        pred = json.loads(p.stdout)
        rows = []
        for c in pred["collectives"]:
            for s in c["sizes"]:
                for a in s["predictions"]:
                    rows.append((c["collective"], a["algorithm"], s["bytes"], a["time_us"]))
        path = os.path.join(tmp, f"bench_{hosts}x{per_host}.json")
        with open(path, "w") as f:
            json.dump(bench_doc(hosts, per_host, rows), f)
        files.append(path)
    return files


def case_fit_recovers(binary, tmp):
    known = os.path.join(tmp, "known.json")
    with open(known, "w") as f:
        json.dump(model_doc(KNOWN), f)
    files = make_results(binary, tmp, known)
    fitted = os.path.join(tmp, "fitted.json")
    p = run(binary, "fit", *files, "-o", fitted)
    assert "median abs error: 0.0%" in p.stdout, p.stdout
    assert "skipped" in p.stdout, p.stdout
    with open(fitted) as f:
        m = json.load(f)
    assert m["format"] == "smddp-model" and m["version"] == 1, m
    for tier, params in KNOWN.items():
        assert m["tiers"][tier]["undetermined"] == {}, m["tiers"][tier]
        for k, v in params.items():
            got = m["tiers"][tier][k]
            assert abs(got - v) <= 1e-4 * v, (tier, k, got, v)
    p = run(binary, "check", fitted, *files, "-b", "64K", "-e", "64M")
    last = p.stdout.strip().splitlines()[-1]
    assert last == "median abs error: 0.0%", last


def case_fit_undetermined(binary, tmp):
    known = os.path.join(tmp, "known.json")
    with open(known, "w") as f:
        json.dump(model_doc(KNOWN), f)
    files = make_results(binary, tmp, known)
    one_host = [f for f in files if f.endswith("_1x2.json") or f.endswith("_1x4.json")]
    p = run(binary, "fit", *one_host, "-o", os.path.join(tmp, "m.json"))
    assert "network: undetermined" in p.stdout and "no multi-host rows" in p.stdout, p.stdout
    # Predicting across hosts with it warns that the network terms are missing.
    p = run(binary, "predict", os.path.join(tmp, "m.json"), "--hosts", "2", "--ranks-per-host", "2")
    assert "no data for the network tier" in p.stdout, p.stdout


def case_check_error(binary, tmp):
    # A model twice as slow on the network: ring rows on 2 hosts are
    # predicted 100% too slow.
    known = os.path.join(tmp, "known.json")
    with open(known, "w") as f:
        json.dump(model_doc(KNOWN), f)
    files = make_results(binary, tmp, known)
    slow = {t: dict(p) for t, p in KNOWN.items()}
    for k in slow["network"]:
        slow["network"][k] *= 2
    slow_path = os.path.join(tmp, "slow.json")
    with open(slow_path, "w") as f:
        json.dump(model_doc(slow), f)
    p = run(binary, "check", slow_path, [f for f in files if f.endswith("_2x1.json")][0])
    assert p.stdout.strip().splitlines()[-1] == "median abs error: 100.0%", p.stdout


def case_predict(binary, tmp):
    known = os.path.join(tmp, "known.json")
    with open(known, "w") as f:
        json.dump(model_doc(KNOWN), f)
    p = run(binary, "predict", known, "--hosts", "2", "--ranks-per-host", "1", "-b", "1M", "-e", "1M", "--json")
    j = json.loads(p.stdout)
    ring = [a for a in j["collectives"][0]["sizes"][0]["predictions"] if a["algorithm"] == "ring"][0]
    n, s = KNOWN["network"], 1 << 20
    expect = 2 * (n["overhead_us"] + n["alpha_us"] + s / 2 * n["beta_us_per_byte"]) + s / 2 * n["gamma_us_per_byte"]
    assert abs(ring["time_us"] - expect) < 1e-6 * expect, (ring, expect)
    # busbw as smddp-bench: size / time * 2(n-1)/n
    assert abs(ring["busbw_gbps"] - s / (expect * 1e3) * 1.0) < 1e-9, ring
    tuning = os.path.join(tmp, "tuning.txt")
    p = run(binary, "predict", known, "--hosts", "4", "--ranks-per-host", "2", "allreduce", "allgather",
            "--tuning-file", tuning)
    assert "crossovers allreduce:" in p.stdout and "best" in p.stdout, p.stdout
    with open(tuning) as f:
        lines = [line.split() for line in f if line.strip() and not line.startswith("#")]
    assert lines and all(len(x) == 4 and x[1] == "multi" for x in lines), lines
    assert [x for x in lines if x[0] == "allreduce"][-1][2] == "inf", lines


def case_export(binary, tmp):
    known = os.path.join(tmp, "known.json")
    with open(known, "w") as f:
        json.dump(model_doc(KNOWN), f)
    simai = os.path.join(tmp, "busbw.yaml")
    astra = os.path.join(tmp, "astra")
    run(binary, "export", known, "--simai", simai, "--astra-sim", astra, "--hosts", "4", "--ranks-per-host", "2")
    with open(simai) as f:
        text = f.read().splitlines()
    for key in ["TP:", "DP:", "EP:", "PP:"]:
        assert key in text, text
    assert any(line.startswith("allreduce,: ") for line in text), text
    assert any(line.startswith("busbw: ") for line in text), text
    with open(os.path.join(astra, "network.yml")) as f:
        net = f.read()
    for key in ["topology: [ Switch, Switch ]", "npus_count: [ 2, 4 ]", "bandwidth: [", "latency: ["]:
        assert key in net, net
    # network bandwidth per NPU: 25 MB/s link shared by 2 ranks = 0.0125 GB/s
    assert "0.0125" in net, net
    with open(os.path.join(astra, "system.json")) as f:
        sys_cfg = json.load(f)
    assert len(sys_cfg["all-reduce-implementation"]) == 2, sys_cfg
    assert sys_cfg["local-mem-bw"] == 4.0, sys_cfg


def case_bad_input(binary, tmp):
    known = os.path.join(tmp, "known.json")
    with open(known, "w") as f:
        json.dump(model_doc(KNOWN), f)
    junk = os.path.join(tmp, "junk.json")
    with open(junk, "w") as f:
        f.write("{not json")
    # Absurd files (docs/model.md#bounds): refused before any schedule is drawn.
    tiny_slots = os.path.join(tmp, "tiny_slots.json")
    with open(tiny_slots, "w") as f:
        json.dump(dict(model_doc(KNOWN), schedule={"shm_slot_bytes": 1}), f)
    huge_slots = os.path.join(tmp, "huge_slots.json")
    with open(huge_slots, "w") as f:
        json.dump(dict(model_doc(KNOWN), schedule={"shm_slot_bytes": -1}), f)
    many_ranks = os.path.join(tmp, "many_ranks.json")
    with open(many_ranks, "w") as f:
        json.dump(dict(bench_doc(1, 2, [("allreduce", "ring", 4096, 10.0)]), nranks=10**12, nnodes=1), f)
    big_rows = os.path.join(tmp, "big_rows.json")
    with open(big_rows, "w") as f:
        json.dump(dict(bench_doc(1, 2, [("allreduce", "ring", 4096, 10.0)]), nranks=1 << 20, nnodes=1), f)
    export_dir = os.path.join(tmp, "astra_never")
    bounded = [
        # (arguments, a word of the one line)
        (["predict", known, "--hosts", "1000000000", "--ranks-per-host", "1"], "4096 ranks"),
        (["predict", known, "--hosts", "65536", "--ranks-per-host", "65536"], "4096 ranks"),
        (["predict", known, "--hosts", "2", "--ranks-per-host", "1", "-e", "1P"], "shared-memory steps"),
        (["predict", known, "--hosts", "0x10", "--ranks-per-host", "1"], "--hosts '0x10': hexadecimal"),
        (["predict", known, "--hosts", "2", "--ranks-per-host", "1.5"], "--ranks-per-host '1.5': not a whole number"),
        (["predict", known, "--hosts", "99999999999", "--ranks-per-host", "1"], "--hosts"),
        (["predict", tiny_slots, "--hosts", "2", "--ranks-per-host", "1"], "shm_slot_bytes must be a byte count 4096..1073741824"),
        (["predict", huge_slots, "--hosts", "2", "--ranks-per-host", "1"], "shm_slot_bytes must be a byte count 4096..1073741824"),
        (["export", known, "--astra-sim", export_dir, "--hosts", "100000"], "4096 ranks"),
        (["fit", many_ranks, "-o", os.path.join(tmp, "m.json")], "`nranks` must be an integer 0..1048576"),
        (["fit", big_rows, "-o", os.path.join(tmp, "m.json")], "4096 ranks"),
        (["check", known, big_rows], "4096 ranks"),
        (["fit", many_ranks, "-o", os.path.join(tmp, "m.json"), "--shm-slot-bytes", "1"], "--shm-slot-bytes"),
    ]
    for args, word in bounded:
        p = run(binary, *args, expect=64)
        lines = p.stderr.strip().splitlines()
        assert p.stdout == "" and len(lines) == 1 and word in lines[0], (args, p.stderr)
    assert not os.path.exists(export_dir), "export created its directory before refusing"
    assert not os.path.exists(os.path.join(tmp, "m.json")), "fit wrote a model from a refused file"
    cases = [
        ["predict", known, "--hosts", "0", "--ranks-per-host", "1"],
        ["predict", known, "--hosts", "2", "--ranks-per-host", "1", "nosuchcollective"],
        ["predict", known, "--hosts", "2", "--ranks-per-host", "1", "-b", "12Q"],
        ["predict", junk, "--hosts", "2", "--ranks-per-host", "1"],
        ["predict", known, "--hosts", "2", "--ranks-per-host", "1", "--tuning-file", "/nonexistent/dir/t"],
        ["fit", junk, "-o", os.path.join(tmp, "m.json")],
        ["fit", os.path.join(tmp, "missing.json"), "-o", os.path.join(tmp, "m.json")],
        ["check", junk, junk],
        ["export", known],
        ["nosuchverb"],
    ]
    # Special files where a file is read, each through the bounded reader: refused at once, never read
    # (a blocking open of the FIFO would hang until run()'s timeout, which fails the test).
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    results = make_results(binary, tmp, known)[:1]
    predict = ["--hosts", "2", "--ranks-per-host", "1"]
    for special, why in ((fifo, "not a regular file"), ("/dev/zero", "not a regular file"), (tmp, "a directory")):
        cases += [
            (["predict", special, *predict], why),
            (["export", special, "--simai", os.path.join(tmp, "never.yaml")], why),
            (["check", special, *results], why),
            (["check", known, special], why),
            (["fit", special, "-o", os.path.join(tmp, "never.json")], why),
        ]
    # Misspelled names in a model are refused, not ignored.
    misspelled = os.path.join(tmp, "misspelled.json")
    doc = model_doc(KNOWN)
    doc["tiers"]["netwrok"] = doc["tiers"].pop("network")
    with open(misspelled, "w") as f:
        json.dump(doc, f)
    cases += [(["predict", misspelled, *predict], "unknown key 'netwrok' in tiers; valid: shm, network")]
    # Outputs into a FIFO that no process reads: refused, never waited on.
    cases += [
        (["predict", known, *predict, "--tuning-file", fifo], "a FIFO with no reader"),
        (["fit", *results, "-o", fifo], "a FIFO with no reader"),
        (["export", known, "--simai", fifo], "a FIFO with no reader"),
        # Nothing is created for a refused export: not even the --astra-sim directory.
        (["export", junk, "--astra-sim", os.path.join(tmp, "astra-never")], "not valid JSON"),
        (["export", known, "--astra-sim", os.path.join(tmp, "astra-never"), "--hosts", "1", "--ranks-per-host", "1"],
         "no network to describe"),
        (["export", known, "--astra-sim", known], "not a directory"),
    ]
    for entry in cases:
        args, want = entry if isinstance(entry, tuple) else (entry, "")
        p = run(binary, *args, expect=64)
        assert p.stdout == "", (args, p.stdout)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("smddp-model: ") and want in lines[0], (args, want, p.stderr)
    for never in ("never.yaml", "never.json", "astra-never"):
        assert not os.path.exists(os.path.join(tmp, never)), never


def case_real_bench(binary, tmp, bench, mpirun):
    """A real smddp-bench -J file (2 ranks, one host): fit reads it, names
    the network undetermined, and check ends with the median line."""
    out = os.path.join(tmp, "real.json")
    rows = []
    for alg in ["ring", "shm_direct"]:
        path = os.path.join(tmp, f"real_{alg}.json")
        p = subprocess.run([mpirun, "--oversubscribe", "--bind-to", "none", "-np", "2", bench, "allreduce", "allgather",
                            "-b", "4K", "-e", "256K", "-f", "4", "-n", "3", "-w", "1", "--per-iteration",
                            "--algorithm", alg, "-J", path], capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1"))
        if p.returncode != 0:
            sys.exit(f"FAIL: smddp-bench exit {p.returncode}\n{p.stdout}\n{p.stderr}")
        rows.append(path)
    p = run(binary, "fit", *rows, "-o", out)
    assert "network: undetermined" in p.stdout, p.stdout
    assert "rows: 16 fitted" in p.stdout, p.stdout  # out of place: 2 algorithms x 2 collectives x 4 sizes
    p = run(binary, "check", out, *rows)
    assert p.stdout.strip().splitlines()[-1].startswith("median abs error: "), p.stdout


def mpirun_tune(binary, mpirun, *args, np=2):
    return subprocess.run([mpirun, "--oversubscribe", "--bind-to", "none", "-np", str(np), binary, "tune", *args],
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1"))


def case_tune(binary, tmp, mpirun):
    """tune on 2 ranks of this host: a model file every verb reads, the shm
    tier determined, the network named undetermined (one host), and the
    probe within the budget it recorded."""
    out = os.path.join(tmp, "tuned.json")
    p = mpirun_tune(binary, mpirun, "-o", out, "--seconds", "5")
    if p.returncode != 0:
        sys.exit(f"FAIL: tune exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    assert "network: undetermined" in p.stdout and "one host" in p.stdout, p.stdout
    assert "median abs error: " in p.stdout and p.stdout.count("wrote ") == 1, p.stdout  # rank 0 only
    with open(out) as f:
        m = json.load(f)
    shm, net = m["tiers"]["shm"], m["tiers"]["network"]
    assert "beta_us_per_byte" not in shm["undetermined"] and shm["beta_us_per_byte"] > 0, shm
    assert set(net["undetermined"]) == {"alpha_us", "beta_us_per_byte", "gamma_us_per_byte", "overhead_us"}, net
    probe = m["fit"]["probe"]
    assert probe["hosts"] == 1 and probe["ranks_per_host"] == 2 and probe["budget_seconds"] == 5, probe
    # Order, not timing: the probe ended before the file was written.
    assert 0 < probe["probe_seconds"] <= probe["seconds"], probe
    assert m["fit"]["rows"] > 0 and any("one host" in n for n in m["fit"]["notes"]), m["fit"]
    # The engine's reader (model::load, through predict) takes the file.
    p = run(binary, "predict", out, "--hosts", "1", "--ranks-per-host", "2", "-b", "4K", "-e", "1M")
    assert "crossovers allreduce" in p.stdout, p.stdout
    p = run(binary, "predict", out, "--hosts", "2", "--ranks-per-host", "2", "-b", "4K", "-e", "1M")
    assert "network" in p.stderr + p.stdout, p.stdout  # warned: no network data


def case_tune_bad_input(binary, tmp, mpirun):
    """Bad options: one line from rank 0, exit 64, no file, before any probe."""
    out = os.path.join(tmp, "t.json")
    os.mkdir(os.path.join(tmp, "adir"))
    cases = [
        (["-o", out, "--seconds", "0x10"], "hexadecimal"),
        (["-o", out, "--seconds", "nan"], "not finite"),
        (["-o", out, "--seconds", "-1"], "negative"),
        (["-o", out, "--seconds", "1e9"], "seconds"),
        (["-o", out, "--seconds", "0.5"], "1..600"),
        (["-o", out, "--seconds", "601"], "1..600"),
        (["-o", out, "-e", "1K"], "maxbytes"),
        (["-o", out, "--bogus"], "--bogus"),
        (["--seconds", "5"], "--output"),
        (["-o", os.path.join(tmp, "missing", "t.json"), "--seconds", "5"], "does not exist"),
        (["-o", os.path.join(tmp, "adir"), "--seconds", "5"], "is a directory"),
    ]
    for args, needle in cases:
        p = mpirun_tune(binary, mpirun, *args)
        ours = [l for l in (p.stdout + p.stderr).splitlines() if l.startswith("smddp-model")]
        if p.returncode != 64 or p.stdout.strip() or len(ours) != 1 or needle not in ours[0]:
            sys.exit(f"FAIL: tune {args}: exit {p.returncode}, want 64 and one line with '{needle}'\n"
                     f"{p.stdout}\n{p.stderr}")
        assert not os.path.exists(out), args
    # One rank: nothing to probe between ranks.
    p = subprocess.run([binary, "tune", "-o", out, "--seconds", "5"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 64 and "at least 2 ranks" in p.stderr and not os.path.exists(out), p
    print(f"{len(cases) + 1} refused")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--bench")
    ap.add_argument("--mpirun")
    ap.add_argument("case")
    a = ap.parse_args()
    fn = globals().get("case_" + a.case)
    if not fn:
        sys.exit(f"unknown case {a.case}")
    with tempfile.TemporaryDirectory() as tmp:
        if a.case == "real_bench":
            fn(a.bin, tmp, a.bench, a.mpirun)
        elif a.case.startswith("tune"):
            fn(a.bin, tmp, a.mpirun)
        else:
            fn(a.bin, tmp)
    print("PASS", a.case)


if __name__ == "__main__":
    main()
