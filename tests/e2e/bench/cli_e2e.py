#!/usr/bin/env python3
"""smddp-bench's command line: nccl-tests' flags and numbers, and every bad
value refused before any work (docs/bench.md#nccl-tests-compatibility).

Usage: cli_e2e.py --bench PATH --mpirun PATH TEST
A refusal is: exit 64, exactly one line (from rank 0 only), nothing on
stdout, no file created, and a result file that existed before unchanged.
"""
import argparse
import json
import os
import re
import signal
import stat
import subprocess
import sys
import tempfile
import time

ARGS = None
SMALL = ["-n", "2", "-w", "1"]  # fast rows; flags given later replace these (last wins)


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(cmd, env=None, timeout=120, cwd=None):
    full = dict(os.environ)
    for k in list(full):
        if k.startswith("SMDDP_") or k.startswith("NCCL_TESTS_"):
            del full[k]
    full.update(env or {})
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full, cwd=cwd)


def mpirun(np, *args):
    return [ARGS.mpirun, "--oversubscribe", "--bind-to", "none", "-np", str(np), ARGS.bench, *args]


def rows(stdout):
    return [l.split() for l in stdout.splitlines() if l.strip() and not l.startswith("#")]


def snapshot(d):
    """Every file of d with its kind, inode, size, mtime and content."""
    out = {}
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        st = os.lstat(p)
        body = open(p, "rb").read() if stat.S_ISREG(st.st_mode) else os.readlink(p) if stat.S_ISLNK(st.st_mode) else b""
        out[name] = (stat.S_IFMT(st.st_mode), st.st_ino, st.st_nlink, st.st_size, st.st_mtime_ns, body)
    return out


def refused(what, r, needle, under_mpirun=False):
    if r.returncode != 64:
        fail(f"{what}: exit {r.returncode}, want 64\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}")
    lines = [l for l in (r.stdout + r.stderr).splitlines() if l.strip()]
    if under_mpirun:  # mpirun adds its own banner about the exit code; ours start with the name
        lines = [l for l in lines if l.startswith("smddp-bench")]
    if r.stdout.strip() or len(lines) != 1 or needle.lower() not in lines[0].lower():
        fail(f"{what}: want one line mentioning '{needle}' and no stdout, got stdout {r.stdout!r}, lines {lines}")


# (arguments, environment, a word of the one line). Each runs with -J and
# --csv naming files in a directory where result files already exist.
BAD = [
    (["-e", "9223372036854775808"], {}, "maxbytes"),
    (["--huge-pages", "--mem", "cuda"], {}, "host buffers only"),
    (["-b", "1.5"], {}, "minbytes"),
    (["-T", "inf"], {}, "timeout"),
    (["-T", "nan"], {}, "timeout"),
    (["-T", "-1"], {}, "timeout"),
    (["-T", "1e300"], {}, "timeout"),
    (["--min-busbw", "nan"], {}, "min-busbw"),
    (["--prom-port", "-1"], {}, "prom-port"),
    (["--linger", "-1"], {}, "linger"),
    (["--seed", "-1"], {}, "seed"),
    (["-b", "0", "-e", "1M", "-f", "2"], {}, "minbytes 0"),
    (["-b", "8", "-e", "1M", "-f", "inf"], {}, "stepfactor"),
    (["-b", "8", "-e", "1M", "-f", "0.5"], {}, "stepfactor"),
    (["-b", "8", "-e", "1M", "-i", "0"], {}, "stepbytes"),
    (["-b", "0", "-e", "4E", "-i", "1"], {}, "sizes"),
    (["allreduce", "broadcast", "--algorithm", "ring"], {}, "broadcast"),
    (["-d", "float32,float32"], {}, "twice"),
    (["-d", "all,float32"], {}, "all"),
    (["all", "allreduce"], {}, "all"),
    (["allreduce", "allreduce"], {}, "twice"),
    (["--backend", "smddp,smddp"], {}, "twice"),
    (["-t", "2"], {}, "nthreads"),
    (["-g", "2"], {}, "ngpus"),
    (["-g", "0"], {}, "ngpus"),
    (["-I", "2"], {}, "per_iter_timing"),
    (["-K", "1"], {}, "per_iter_skip"),
    (["-I", "1", "-K", "5", "-n", "5"], {}, "per_iter_skip"),
    (["-D", "1"], {}, "device_implementation"),
    (["-N", "-1"], {}, "run_cycles"),
    (["-m", "0"], {}, "agg_iters"),
    (["-u", "-1"], {}, "unalign"),
    (["-r", "-2"], {}, "root"),
    ([], {"NCCL_TESTS_MIN_BW": "fast"}, "NCCL_TESTS_MIN_BW"),
    ([], {"SMDDP_TIMEOUT": "1e400"}, "SMDDP_TIMEOUT"),
    ([], {"SMDDP_CMA": "abc"}, "SMDDP_CMA"),
    ([], {"SMDDP_FABRIC_NAP_US": "-5"}, "SMDDP_FABRIC_NAP_US"),
    ([], {"SMDDP_REDUCE_ISA": "bogus"}, "SMDDP_REDUCE_ISA"),
    ([], {"SMDDP_TUNING_FILE": "/"}, "SMDDP_TUNING_FILE"),
    ([], {"SMDDP_MODEL_FILE": "/"}, "SMDDP_MODEL_FILE"),
    ([], {"SMDDP_MODEL_FILE": "/etc/hostname"}, "SMDDP_MODEL_FILE"),
    (["--explain"], {}, "--explain goes with --list-algorithms"),
    (["--list-algorithms", "--backend", "nccl"], {}, "--list-algorithms lists --backend smddp (the default) or mpi"),
    (["--list-algorithms", "--backend", "smddp,mpi"], {}, "not 'smddp,mpi'"),
    (["--list-algorithms", "--explain", "--backend", "mpi"], {}, "drop --backend mpi"),
    ([], {"SMDDP_SHM_SLOT_BYTES": "1"}, "SMDDP_SHM_SLOT_BYTES"),
    ([], {"SMDDP_SHM_CELL_BYTES": "2G"}, "SMDDP_SHM_CELL_BYTES"),
    ([], {"SMDDP_BENCH_MEMORY": "lots"}, "SMDDP_BENCH_MEMORY"),
    # Decimal numbers only (docs/bench.md#numbers): CLI11 alone reads 0x10 as 16.
    (["-T", "0x10"], {}, "-T/--timeout '0x10': hexadecimal"),
    (["-T", "99999999999"], {}, "more than 10000000 seconds"),
    (["-n", "0x2"], {}, "-n/--iters '0x2': hexadecimal"),
    (["-n", "1.5"], {}, "not a whole number"),
    (["-n", "99999999999999999999"], {}, "out of range"),
    (["-w", "inf"], {}, "warmup"),
    (["--linger", "1e999"], {}, "linger"),
    (["--min-busbw", "0x10"], {}, "hexadecimal"),
    (["-f", "0x2"], {}, "stepfactor"),
    (["-r", "0x1"], {}, "hexadecimal"),
    ([], {"SMDDP_TIMEOUT": "0x10"}, "SMDDP_TIMEOUT='0x10': hexadecimal"),
    ([], {"SMDDP_FABRIC_NAP_US": "0x10"}, "hexadecimal"),
    ([], {"NCCL_TESTS_MIN_BW": "inf"}, "NCCL_TESTS_MIN_BW"),
    # -B/--bitwise: 1..1000 repeats, decimal (docs/bench.md, "Bitwise repeatability").
    (["-B", "0"], {}, "-B/--bitwise 0: expected 1..1000"),
    (["-B", "-1"], {}, "-B/--bitwise -1"),
    (["-B", "0x3"], {}, "-B/--bitwise '0x3': hexadecimal"),
    (["-B", "1.5"], {}, "not a whole number"),
    (["-B", "1001"], {}, "-B/--bitwise 1001"),
    (["-B", "99999999999"], {}, "bitwise"),
    (["-B", "99999999999999999999"], {}, "bitwise"),
    ([], {"SMDDP_TEST_FLIP": "1:0:3:4"}, "SMDDP_TEST_FLIP='1:0:3:4': CALL 0"),
    ([], {"SMDDP_TEST_FLIP": "1:2:3:64"}, "BIT 64"),
    # Timings that cannot fit the host's memory budget: -e could be lowered, -n cannot.
    (["-n", "2000000000"], {"SMDDP_BENCH_MEMORY": "1M"}, "-n/--iters 2000000000"),
]


def with_outputs(d, args):
    out = list(args)
    if "-J" not in out:
        out += ["-J", os.path.join(d, "old.json")]
    if "--csv" not in out:
        out += ["--csv", os.path.join(d, "old.csv")]
    return out


def prepared_dir(d):
    for name in ("old.json", "old.csv"):
        with open(os.path.join(d, name), "w") as f:
            f.write(f"results of an earlier run in {name}\n")
    return snapshot(d)


def test_refusals():
    """Every bad value of issue 15: exit 64, one line, no file created or changed."""
    with tempfile.TemporaryDirectory() as d:
        before = prepared_dir(d)
        for args, env, needle in BAD:
            r = run([ARGS.bench, "-b", "8", "-e", "8", *SMALL, *with_outputs(d, args)], env=env, timeout=30)
            refused(f"{args} {env}", r, needle)
            if snapshot(d) != before:
                fail(f"{args} {env}: the directory changed: {sorted(snapshot(d))}")
    print(f"{len(BAD)} bad invocations refused")


def test_refusals_mpi():
    """Under mpirun -np 2: one line from rank 0 only, the other rank silent."""
    cases = [(["allreduce", "broadcast", "--algorithm", "ring"], {}, "broadcast"),
             (["-T", "inf"], {}, "timeout"), (["--seed", "-1"], {}, "seed"),
             (["-d", "float32,float32"], {}, "twice"), (["-r", "2"], {}, "not a rank"),
             (["-n", "0x2"], {}, "hexadecimal"), (["-T", "0x10"], {}, "hexadecimal"),
             # After the ranks connect, the same on every rank: rank 0 says it.
             (["-I", "1", "-n", "100000000"], {"SMDDP_BENCH_MEMORY": "1M"}, "-n/--iters 100000000"),
             ([], {"SMDDP_TIMEOUT": "1e400"}, "SMDDP_TIMEOUT"),
             (["-B", "0"], {}, "-B/--bitwise 0"),
             ([], {"SMDDP_TEST_FLIP": "0:1:2"}, "SMDDP_TEST_FLIP"),
             ([], {"SMDDP_REDUCE_ISA": "bogus"}, "SMDDP_REDUCE_ISA"),
             ([], {"SMDDP_TUNING_FILE": "/"}, "SMDDP_TUNING_FILE"),
             ([], {"SMDDP_MODEL_FILE": "/etc/hostname"}, "SMDDP_MODEL_FILE"),
             # In range, but the node's segment (16 cells per pair) is larger than /dev/shm.
             ([], {"SMDDP_SHM_CELL_BYTES": "1G"}, "SMDDP_SHM_CELL_BYTES")]
    with tempfile.TemporaryDirectory() as d:
        before = prepared_dir(d)
        for args, env, needle in cases:
            r = run(mpirun(2, "-b", "8", "-e", "8", *SMALL, *with_outputs(d, args)), env=env, timeout=60)
            refused(f"mpirun {args} {env}", r, needle, under_mpirun=True)
            if snapshot(d) != before:
                fail(f"{args}: the directory changed")
    print(f"{len(cases)} refused under mpirun")


def test_output_files():
    """Two outputs on one file, a hard link, a directory: refused untouched.
    A symbolic link is written through; /dev/null stays a device."""
    with tempfile.TemporaryDirectory() as d:
        prepared_dir(d)
        with open(os.path.join(d, "linked.json"), "w") as f:
            f.write("a file with two names\n")
        os.link(os.path.join(d, "linked.json"), os.path.join(d, "hard.json"))
        os.symlink("old.csv", os.path.join(d, "link.csv"))
        before = snapshot(d)
        x = os.path.join(d, "old.json")
        cases = [(["-J", x, "--csv", os.path.join(d, ".", "old.json")], "same file"),
                 (["-J", x, "--csv", os.path.join(d, "hard.json")], "hard link"),
                 (["-J", os.path.join(d, "old.csv"), "--csv", os.path.join(d, "link.csv")], "same file"),
                 (["-J", d], "directory")]
        for args, needle in cases:
            r = run([ARGS.bench, "-b", "8", "-e", "8", *SMALL, *args], timeout=30)
            refused(f"{args}", r, needle)
            if snapshot(d) != before:
                fail(f"{args}: the directory changed")
        # Relative against absolute: the same file from another directory.
        r = run([ARGS.bench, "-b", "8", "-e", "8", *SMALL, "-J", "old.csv", "--csv", os.path.join(d, "link.csv")],
                cwd=d, timeout=30)
        refused("relative -J, absolute --csv through a link", r, "same file")
        # Written through the link: the link stays, its target gets the rows.
        os.unlink(os.path.join(d, "hard.json"))
        r = run([ARGS.bench, "-b", "8", "-e", "8", *SMALL, "-J", os.path.join(d, "new.json"),
                 "--csv", os.path.join(d, "link.csv")], timeout=60)
        if r.returncode != 0:
            fail(f"through a link: exit {r.returncode}\n{r.stderr}")
        if not os.path.islink(os.path.join(d, "link.csv")) or "earlier run" in open(os.path.join(d, "old.csv")).read():
            fail("the link was replaced, or its target not written")
        # A device is written to, never replaced (root could replace /dev/null).
        r = run([ARGS.bench, "-b", "8", "-e", "8", *SMALL, "-J", "/dev/null"], timeout=60)
        if r.returncode != 0 or not stat.S_ISCHR(os.stat("/dev/null").st_mode):
            fail(f"-J /dev/null: exit {r.returncode}, /dev/null mode {oct(os.stat('/dev/null').st_mode)}")
    print("output-file policy holds")


def sizes_of(stdout):
    return [int(r[0]) for r in rows(stdout)]


def ok(what, r):
    if r.returncode != 0:
        fail(f"{what}: exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}")
    return r


def test_nccl_tests_lines():
    """The command lines of nccl-tests' README and the AWS/EKS guides."""
    # README: -b 8 -e 128M -f 2 -g 1 (fewer iterations: last wins).
    r = ok("-b 8 -e 128M -f 2 -g 1", run(mpirun(2, "-b", "8", "-e", "128M", "-f", "2", "-g", "1", *SMALL, "-c", "0")))
    want = [8 << k for k in range(25)]
    if sizes_of(r.stdout) != want:
        fail(f"-b 8 -e 128M -f 2: sizes {sizes_of(r.stdout)}")
    # -e 8G on a host where it does not fit: lowered, with nccl-tests' line.
    cmd = mpirun(2, "-b", "8", "-e", "8G", "-f", "2", "-g", "1", "-c", "1", "-n", "20", "-w", "5")
    r = ok("-e 8G", run(cmd, env={"SMDDP_BENCH_MEMORY": "64M"}))
    reduced = [l for l in r.stdout.splitlines() if l.startswith("# Reducing maxBytes to ")]
    if len(reduced) != 1 or not reduced[0].endswith(" due to memory limitation"):
        fail(f"want one Reducing line, got {reduced}\n{r.stdout}")
    limit = int(reduced[0].split()[4])
    sizes = sizes_of(r.stdout)
    # allreduce: send + receive, twice over for scratch, 2 ranks: 8 x size <= 64 MiB
    # less the rows' timings (-n 20: 320 bytes), so the last size is 4 MiB.
    if not (4 << 20) < limit <= (8 << 20) + 7 or sizes != [8 << k for k in range(21) if 8 << k <= limit]:
        fail(f"lowered to {limit}, sizes {sizes}")
    if any(row[8] != "0" or row[12] != "0" for row in rows(r.stdout)):
        fail("wrong values")
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        ok("-I 1 -J", run(mpirun(2, "-b", "8", "-e", "64K", "-f", "4", "-g", "1", *SMALL, "-I", "1", "-J", out)))
        json.load(open(out))
        os.unlink(out)
        ok("--warmup_iters --output_file",
           run(mpirun(2, "-b", "8", "-e", "64K", "-f", "4", *SMALL, "--warmup_iters", "5", "--output_file", out)))
        json.load(open(out))
    print("nccl-tests command lines run")


def test_numbers():
    """Decimal sizes, the additive default step, last-wins, -r -1, -N."""
    def sizes(*args):
        return sizes_of(ok(str(args), run(mpirun(2, *SMALL, *args))).stdout)

    if sizes("-b", "1e3", "-e", "4e3", "-f", "2") != [1000, 2000, 4000]:
        fail("-b 1e3 -e 4e3 -f 2")
    if sizes("-b", "0.5K", "-e", "2.5e3", "-i", "1e3") != [512, 1512]:
        fail("-b 0.5K -e 2.5e3 -i 1e3")
    if sizes("-b", "1M", "-e", "3M") != [1 << 20, 2 << 20, 3 << 20]:
        fail("without -f the step is 1 MiB added")
    if sizes("-b", "8", "-e", "64") != [8]:
        fail("a step past -e leaves one row")
    if sizes("-b", "1M", "-e", "3M", "-f", "1") != [1 << 20, 2 << 20, 3 << 20]:
        fail("-f 1 adds -i")
    if sizes("-b", "8", "-b", "16", "-e", "1K", "-e", "64", "-f", "2") != [16, 32, 64]:
        fail("a repeated flag takes its last value")
    r = ok("broadcast -r -1", run(mpirun(2, *SMALL, "broadcast", "-b", "8", "-e", "16", "-f", "2", "-r", "-1")))
    if [(int(x[0]), x[4]) for x in rows(r.stdout)] != [(8, "0"), (16, "0"), (8, "1"), (16, "1")]:
        fail(f"-r -1 rows {rows(r.stdout)}")
    if sizes("-b", "8", "-e", "16", "-f", "2", "-N", "3") != [8, 16] * 3:
        fail("-N 3 runs the sweep three times")
    # Accepted, same meaning or no effect on host memory; checked rows stay right.
    r = ok("compat flags", run(mpirun(2, *SMALL, "-b", "8", "-e", "4K", "-f", "8", "-t", "1", "-g", "1", "-m", "2",
                                      "-u", "3", "-z", "1", "-y", "0", "-p", "0", "-R", "1", "-M", "0", "-C", "0",
                                      "-S", "0", "-x", "0", "-V", "16", "-a", "3", "-c", "2", "-d", "all")))
    if any(row[8] != "0" or row[12] != "0" for row in rows(r.stdout)):
        fail("wrong values with -u 3 -m 2")
    # NCCL_TESTS_MIN_BW: below 90% of it the run fails, as in nccl-tests.
    r = run(mpirun(2, *SMALL, "-b", "8", "-e", "8"), env={"NCCL_TESTS_MIN_BW": "100000"})
    if r.returncode != 2:
        fail(f"NCCL_TESTS_MIN_BW above reach: exit {r.returncode}")
    ok("NCCL_TESTS_MIN_BW=0", run(mpirun(2, *SMALL, "-b", "8", "-e", "8"), env={"NCCL_TESTS_MIN_BW": "0"}))
    print("numbers as in nccl-tests")


def test_run_cycles_signal():
    """-N 0 runs until SIGTERM, then ends cleanly (exit 0) with its rows kept."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        full = dict(os.environ)
        p = subprocess.Popen([ARGS.bench, "-b", "8", "-e", "64", "-f", "2", *SMALL, "-N", "0", "-J", out],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full)
        deadline = time.time() + 60
        while time.time() < deadline and not (os.path.exists(out) and os.path.getsize(out) > 0):
            time.sleep(0.2)
        time.sleep(1)  # a few cycles
        p.send_signal(signal.SIGTERM)
        try:
            stdout, stderr = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            fail("-N 0 did not stop on SIGTERM")
        if p.returncode != 0:
            fail(f"-N 0 then SIGTERM: exit {p.returncode}\n{stderr}")
        n = len(rows(stdout))
        if n < 5:
            fail(f"only {n} rows before the signal")
        json.load(open(out))
    print(f"-N 0: {n} rows, then a clean stop")


def test_explain():
    """--list-algorithms --explain: rank 0 prints the table the job would use, with its sources."""
    plain = ok("--list-algorithms", run([ARGS.bench, "--list-algorithms"]))
    if "--explain" in plain.stdout or not plain.stdout.startswith("collective"):
        fail(f"--list-algorithms alone changed: {plain.stdout[:200]!r}")

    def explain(env):
        r = ok(f"--explain {env}", run(mpirun(4, "--list-algorithms", "--explain"),
                                      env={"SMDDP_RANKS_PER_NODE": "2", **env}, timeout=120))
        lines = r.stdout.splitlines()
        if sum(l.startswith("# selection for") for l in lines) != 1:
            fail(f"want one table (rank 0's), got {r.stdout!r}")
        return lines

    lines = explain({})
    head = "\n".join(l for l in lines if l.startswith("#"))
    # Two virtual nodes over loopback: the setup probe is named, its
    # figures taken only if a loaded machine made loopback look slow.
    if "2 host(s) x 2 rank(s)" not in head or "setup probe" not in head or not re.search(
            r"model parameters: (built-in figures for|link figures from the setup probe)", head):
        fail(f"header: {head!r}")
    groups = {tuple(l.split()[:2]) for l in lines if not l.startswith("#")}
    for want in [("allreduce", "world"), ("allreduce", "cross"), ("allgather", "node")]:
        if want not in groups:
            fail(f"no {want} rows in {lines}")
    def fields(line):  # collective, group, sizes, algorithm, the rest
        m = re.match(r"(\S+)\s+(\S+)\s+([\[(][^\]]*\])\s+(\S+)\s+(.*)", line)
        if not m:
            fail(f"not a table row: {line!r}")
        return m.groups()

    world = [fields(l) for l in lines if l.startswith("allreduce ") and fields(l)[1] == "world"]
    if not world[0][2].startswith("[0 B,") or not world[-1][2].endswith("inf]") or "model" not in world[0][4]:
        fail(f"allreduce world rows: {world}")
    with tempfile.TemporaryDirectory() as d:
        fit = os.path.join(d, "fit.json")
        tier = {"alpha_us": 10.0, "beta_us_per_byte": 0.001, "gamma_us_per_byte": 0.0, "overhead_us": 0.0}
        with open(fit, "w") as f:
            json.dump({"format": "smddp-model", "version": 1, "tiers": {"shm": tier, "network": tier}}, f)
        head = [l for l in explain({"SMDDP_MODEL_FILE": fit}) if l.startswith("# model parameters")]
        if not head or fit not in head[0]:
            fail(f"the model file is not named: {head}")
        rules = os.path.join(d, "rules")
        with open(rules, "w") as f:
            f.write("allreduce multi inf tree\n")
        world = [fields(l) for l in explain({"SMDDP_TUNING_FILE": rules})
                 if l.startswith("allreduce ") and fields(l)[1] == "world"]
        if len(world) != 1 or world[0][3] != "tree" or "SMDDP_TUNING_FILE" not in world[0][4]:
            fail(f"the tuning file's rule does not come first: {world}")
    # 17 virtual hosts, one rank each: past 16 hosts the table is drawn on
    # proxies (off powers of two: 3-33 hosts) and carried to 17.
    r = ok("--explain on 17 hosts", run(mpirun(17, "--list-algorithms", "--explain"),
                                         env={"SMDDP_RANKS_PER_NODE": "1"}, timeout=180))
    if "# drawn on 3, 5, 9, 17, 33 hosts x 1 ranks, carried to 17 hosts" not in r.stdout or \
            "17 host(s) x 1 rank(s)" not in r.stdout or not re.search(r"^allreduce +world", r.stdout, re.M):
        fail(f"17 hosts: {r.stdout[:1500]!r}")
    print("--explain: the table, its sources, the model file and the tuning file; 17 hosts carried from proxies")


def table_rows(stdout):
    """The aggregate rows: nccl-tests' 13 fields (comment lines, the per-group tables included, left out)."""
    return [r for r in rows(stdout) if len(r) >= 13]


def check_split_run(what, r, groups_of, np, backends=1):
    """Exit 0, nccl-tests' device lines with each rank's group, #wrong 0 on
    every row, and bandwidth per group: allreduce's busbw is algbw *
    2(g-1)/g for the group's g ranks, not for the job's np."""
    ok(what, r)
    for rank in range(np):
        want = rf"^#  Rank {rank:2d} Group {groups_of(rank):2d} Pid "
        if not re.search(want, r.stdout, re.M):
            fail(f"{what}: no line '{want}'\n{r.stdout}")
    table = table_rows(r.stdout)
    if [int(f[0]) for f in table] != [8 * 4 ** k for k in range(9) for _ in range(backends)]:
        fail(f"{what}: rows {[f[0] for f in table]}, want 8..524288 by 4")
    g = sum(1 for k in range(np) if groups_of(k) == groups_of(0))
    for f in table:
        if f[8] != "0" or f[12] != "0":
            fail(f"{what}: #wrong not 0 in {f}")
        for algbw, busbw in ((float(f[6]), float(f[7])), (float(f[10]), float(f[11]))):
            if algbw >= 0.1 and abs(busbw - algbw * 2 * (g - 1) / g) > 0.011 + 0.01 * algbw:
                fail(f"{what}: busbw {busbw} is not per group of {g} (algbw {algbw}) in {f}")
    if "# Out of bounds values : 0 OK" not in r.stdout:
        fail(f"{what}: no '0 OK' footer\n{r.stdout}")


def ompi_info_choices(call):
    """Open MPI's own list of a coll_tuned variable's algorithms (ompi_info), without 'ignore'."""
    r = run(["ompi_info", "--param", "coll", "tuned", "--level", "9"], timeout=60)
    m = re.search(r'parameter "coll_tuned_%s_algorithm".*?Valid values: ([^\n]*)' % call, r.stdout, re.S)
    if not m:
        fail(f"ompi_info lists no coll_tuned_{call}_algorithm")
    return [n for n in re.findall(r'\d+:"([\w-]+)"', m.group(1)) if n != "ignore"]


def test_mpi_algorithms():
    """--list-algorithms --backend mpi: per collective, the algorithms of the MPI call smddp-bench makes (its
    coll/tuned variable) as ompi_info lists them; every one of them runs forced (--backend mpi:NAME)."""
    r = ok("--list-algorithms --backend mpi", run([ARGS.bench, "--list-algorithms", "--backend", "mpi"]))
    listed = {}
    for line in r.stdout.splitlines()[1:]:
        coll, algo, variable = line.split()
        listed.setdefault(coll, ([], variable))[0].append(algo)
    # The call behind each collective: reducescatter is MPI_Reduce_scatter_block, broadcast MPI_Bcast.
    for coll, call in [("allreduce", "allreduce"), ("reducescatter", "reduce_scatter_block"),
                       ("broadcast", "bcast"), ("allgather", "allgather"), ("alltoall", "alltoall")]:
        algos, variable = listed.get(coll, ([], ""))
        if variable != f"coll_tuned_{call}_algorithm" or algos != ompi_info_choices(call):
            fail(f"{coll}: listed {algos} ({variable}); ompi_info's coll_tuned_{call}_algorithm: "
                 f"{ompi_info_choices(call)}")
    if "sendrecv" in listed:
        fail("sendrecv has no coll/tuned algorithm, yet it is listed")
    # Each one is accepted and runs: one job compares them all.
    algos = listed["reducescatter"][0]
    backends = ",".join(f"mpi:{a}" for a in algos)
    r = ok("forced", run(mpirun(3, "reducescatter", "-b", "8", "-e", "1K", "-f", "8", *SMALL, "--backend", backends),
                         timeout=120))
    for a in algos:
        if f"mpi:{a}" not in r.stdout:
            fail(f"no rows of mpi:{a}:\n{r.stdout}")
    print(f"{sum(len(a) for a, _ in listed.values())} algorithms of {len(listed)} collectives; "
          f"{len(algos)} reduce-scatter algorithms ran")


def test_split_groups():
    """NCCL_TESTS_SPLIT / NCCL_TESTS_SPLIT_MASK: groups run at once, shown as
    nccl-tests shows them, rows checked; --per-group, the JSON's group
    labels; bad values refused before any work."""
    # The command line, exactly.
    r = run(mpirun(4, "-b", "8", "-e", "1M", "-f", "4", "-c", "1"), env={"NCCL_TESTS_SPLIT": "MOD 2"}, timeout=240)
    check_split_run('NCCL_TESTS_SPLIT="MOD 2"', r, lambda k: k % 2, 4)
    if '# split groups (NCCL_TESTS_SPLIT="MOD 2"): 2 groups run at once' not in r.stdout:
        fail(f"no split line\n{r.stdout}")
    if "# Slowest group        : group " not in r.stdout:
        fail(f"no slowest-group footer\n{r.stdout}")

    # The mask, with MPI beside ours (each on the groups), --per-group and -J.
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "split.json")
        r = run(mpirun(4, "-b", "8", "-e", "1M", "-f", "4", "-c", "1", *SMALL, "--backend", "smddp,mpi", "--per-group",
                       "-J", out), env={"NCCL_TESTS_SPLIT_MASK": "0x1"}, timeout=240)
        check_split_run("NCCL_TESTS_SPLIT_MASK=0x1", r, lambda k: k & 1, 4, backends=2)
        for color, ranks in ((0, "0,2"), (1, "1,3")):
            head = f"# Group {color} (ranks {ranks}), as it alone would report its rows:"
            if head not in r.stdout:
                fail(f"--per-group: no '{head}'\n{r.stdout}")
        group_lines = [l for l in r.stdout.splitlines() if re.match(r"^# +\d+ +\d+ +float", l)]
        if len(group_lines) != 2 * 2 * 9:  # 2 groups x 2 backends x 9 sizes
            fail(f"--per-group: {len(group_lines)} group rows, want 36\n{r.stdout}")
        doc = json.load(open(out))
        if doc["split"] != {"setting": "NCCL_TESTS_SPLIT_MASK=0x1",
                            "groups": [{"group": 0, "ranks": [0, 2]}, {"group": 1, "ranks": [1, 3]}]}:
            fail(f"JSON split: {doc['split']}")
        if [dev["group"] for dev in doc["config"]["devices"]] != [0, 1, 0, 1]:
            fail(f"JSON devices' groups: {doc['config']['devices']}")
        for row in doc["rows"]:
            groups = row.get("groups", [])
            if [(g["group"], g["nranks"], g["wrong"]) for g in groups] != [(0, 2, 0), (1, 2, 0)]:
                fail(f"JSON row without its two groups: {row}")
            if row["slowest_group"]["group"] not in (0, 1):
                fail(f"JSON row's slowest group: {row}")

    # Bad values: one line from rank 0, exit 64, before any work.
    for env, needle in (({"NCCL_TESTS_SPLIT": "MOD 0"}, "divides by zero"),
                        ({"NCCL_TESTS_SPLIT": "XOR 2"}, "unknown operation"),
                        ({"NCCL_TESTS_SPLIT": ""}, "empty"),
                        ({"NCCL_TESTS_SPLIT": "MOD 2junk"}, "not a decimal digit"),
                        ({"NCCL_TESTS_SPLIT": "AND 0x100000000"}, "more than"),
                        ({"NCCL_TESTS_SPLIT_MASK": "10"}, "README"),
                        ({"NCCL_TESTS_SPLIT_MASK": "0x1", "NCCL_TESTS_SPLIT": "MOD 2"}, "both set")):
        r = run(mpirun(4, "-b", "8", "-e", "8", *SMALL), env=env, timeout=60)
        refused(f"mpirun {env}", r, needle, under_mpirun=True)
    r = run(mpirun(2, "-b", "8", "-e", "8", *SMALL, "--per-group"), timeout=60)
    refused("--per-group without a split", r, "--per-group", under_mpirun=True)
    # A root that one of the groups (3 ranks by MOD 2: 2 and 1) does not have.
    r = run(mpirun(3, "-b", "8", "-e", "8", *SMALL, "broadcast", "-r", "1"), env={"NCCL_TESTS_SPLIT": "MOD 2"},
            timeout=60)
    refused("-r 1 with a group of one rank", r, "every split group", under_mpirun=True)
    print("split groups: MOD 2 and the mask run and check; --per-group, JSON labels; bad values refused")


def a2av_rows(what, r):
    ok(what, r)
    table = table_rows(r.stdout)
    if not table or any(f[8] != "0" or f[12] != "0" for f in table):
        fail(f"{what}: rows missing or #wrong not 0\n{r.stdout}")
    return table


def test_alltoallv_variables():
    """nccl-tests' NCCL_TESTS_ALLTOALLV_SPREAD / _MATRIX_FILE / _MATRIX_SCALE:
    rows checked, the matrix's bytes as the row, --alltoallv-matrix first,
    conflicts and bad values one line."""
    with tempfile.TemporaryDirectory() as d:
        a2av = ["alltoallv", *SMALL, "-c", "1"]
        a2av_rows("SPREAD=0.5", run(mpirun(3, *a2av, "-b", "1K", "-e", "64K", "-f", "8"),
                                    env={"NCCL_TESTS_ALLTOALLV_SPREAD": "0.5"}, timeout=120))
        # 4 x 4 bytes on 3 ranks: the first 3 rows and columns, x2, down to 16 bytes.
        matrix = os.path.join(d, "traffic.txt")
        with open(matrix, "w") as f:
            f.write("100 200 150 999\n50 100 75 999\n300 150 200 999\n999 999 999 999\n")
        table = a2av_rows("MATRIX_FILE", run(mpirun(3, *a2av, "-b", "1M", "-e", "1M"),
                                             env={"NCCL_TESTS_ALLTOALLV_MATRIX_FILE": matrix,
                                                  "NCCL_TESTS_ALLTOALLV_MATRIX_SCALE": "2"}, timeout=120))
        # Rows x2 rounded: (192 400 288) (96 192 144) (592 288 400); the busiest rank's 1280 bytes.
        if [f[0] for f in table] != ["1280"]:
            fail(f"MATRIX_FILE: row sizes {[f[0] for f in table]}, want the busiest rank's 1280 bytes")
        # With split groups: each group of 2 takes the first 2 x 2.
        table = a2av_rows("MATRIX_FILE with MOD 2", run(mpirun(4, *a2av, "-b", "1M", "-e", "1M"),
                                                          env={"NCCL_TESTS_ALLTOALLV_MATRIX_FILE": matrix,
                                                               "NCCL_TESTS_SPLIT": "MOD 2"}, timeout=120))
        # Down to 16 bytes: (96 192) (48 96); the busiest rank sends 288.
        if [f[0] for f in table] != ["288"]:
            fail(f"MATRIX_FILE with MOD 2: row sizes {[f[0] for f in table]}, want 288")
        weights = os.path.join(d, "weights.txt")
        with open(weights, "w") as f:
            f.write("1 2 3\n3 2 1\n1 1 1\n")
        # --alltoallv-matrix wins over a spread (still checked: a bad one is refused).
        a2av_rows("flag over SPREAD", run(mpirun(3, *a2av, "-b", "1K", "-e", "1K", "--alltoallv-matrix", weights),
                                          env={"NCCL_TESTS_ALLTOALLV_SPREAD": "1"}, timeout=120))
        bad = os.path.join(d, "bad.txt")
        with open(bad, "w") as f:
            f.write("16 32\n48\n")
        for args, env, needle in (
                ([], {"NCCL_TESTS_ALLTOALLV_SPREAD": "1.5"}, "NCCL_TESTS_ALLTOALLV_SPREAD"),
                ([], {"NCCL_TESTS_ALLTOALLV_SPREAD": "lots"}, "NCCL_TESTS_ALLTOALLV_SPREAD"),
                (["--alltoallv-matrix", weights], {"NCCL_TESTS_ALLTOALLV_SPREAD": "-1"}, "NCCL_TESTS_ALLTOALLV_SPREAD"),
                ([], {"NCCL_TESTS_ALLTOALLV_MATRIX_SCALE": "2"}, "not set"),
                ([], {"NCCL_TESTS_ALLTOALLV_MATRIX_FILE": matrix, "NCCL_TESTS_ALLTOALLV_SPREAD": "0"}, "both set"),
                ([], {"NCCL_TESTS_ALLTOALLV_MATRIX_FILE": matrix, "NCCL_TESTS_ALLTOALLV_MATRIX_SCALE": "x"},
                 "NCCL_TESTS_ALLTOALLV_MATRIX_SCALE"),
                ([], {"NCCL_TESTS_ALLTOALLV_MATRIX_FILE": bad}, "line 2"),
                ([], {"NCCL_TESTS_ALLTOALLV_MATRIX_FILE": d}, "cannot read"),
                (["-e", "2M"], {"NCCL_TESTS_ALLTOALLV_MATRIX_FILE": matrix}, "-b equal to -e")):
            r = run(mpirun(3, *a2av, "-b", "1M", "-e", "1M", *args), env=env, timeout=60)
            refused(f"mpirun {args} {env}", r, needle, under_mpirun=True)
        # After the ranks connect: a 4 x 4 matrix on 5 ranks, the same on every rank.
        r = run(mpirun(5, *a2av, "-b", "1M", "-e", "1M"), env={"NCCL_TESTS_ALLTOALLV_MATRIX_FILE": matrix}, timeout=60)
        refused("a matrix smaller than the job", r, "this job has 5 ranks", under_mpirun=True)
    print("alltoallv variables: spread, byte matrix (with split groups), precedence, refusals")


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("test")
    ARGS = parser.parse_args()
    globals()["test_" + ARGS.test]()
    print("PASS", ARGS.test)


if __name__ == "__main__":
    main()
