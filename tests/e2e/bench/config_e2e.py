#!/usr/bin/env python3
"""The configuration table (collectives/core/src/core/config.cc) against the
sources, the README and the tools.

Usage: config_e2e.py --bench PATH --diag PATH --mpirun PATH --source DIR TEST
  sources  every SMDDP_ name the sources use is in --list-config; no getenv
           of an SMDDP_ name, and no SMDDP_ name passed to anything but a
           config accessor, outside the table
  readme   README.md's environment table is `smddp-bench --list-config --markdown`
  list     --list-config: exit 0, every setting, value and source
  invalid  each setting with invalid values: exit 64 and one line, from one
           process and (engine settings) from rank 0 only under mpirun -np 2
"""
import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

ARGS = None
README_BEGIN = "<!-- smddp-config:begin"
README_END = "<!-- smddp-config:end -->"
# Strings that name an SMDDP_ build option, not a variable.
NOT_VARIABLES = {"SMDDP_WITH_CUDA"}
ACCESSORS = {"is_set", "integer", "bytes", "seconds", "flag", "text", "secret", "add_check"}
COLLECTIVES = ["ALLREDUCE", "ALLGATHER", "REDUCESCATTER", "BROADCAST", "REDUCE", "ALLTOALL", "BARRIER"]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(cmd, env=None, timeout=60):
    full = {k: v for k, v in os.environ.items()
            if not k.startswith(("SMDDP_", "OMPI_COMM_WORLD", "PMIX_RANK", "PMI_RANK", "RANK", "SLURM_PROCID"))}
    full.update(env or {})
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full)


def markdown_rows():
    r = run([ARGS.bench, "--list-config", "--markdown"])
    if r.returncode != 0:
        fail(f"--list-config --markdown: exit {r.returncode}\n{r.stderr}")
    rows = []
    for line in r.stdout.splitlines():
        m = re.match(r"\| `(SMDDP_[A-Z0-9_<>]+)` \| (.*?) \| (.*?) \| (.*?) \|", line)
        if m:
            rows.append({"name": m[1], "accepts": m[2], "default": m[3], "users": m[4]})
    if len(rows) < 20:
        fail(f"only {len(rows)} settings in the table:\n{r.stdout}")
    return r.stdout, rows


def source_files():
    for top in ("collectives", "bench", "diag", "telemetry"):
        for root, _, files in os.walk(os.path.join(ARGS.source, top)):
            for f in files:
                if f.endswith((".cc", ".h", ".cu")):
                    yield os.path.join(root, f)


def split_source(text):
    """(code without comments, string literals) of a C++ file: a small scanner,
    so quotes in comments and char literals ('"') cannot pair up wrongly."""
    code, strings, i, n = [], [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            i = text.find("\n", i) if "\n" in text[i:] else n
        elif text.startswith("/*", i):
            i = text.find("*/", i + 2) + 2 if "*/" in text[i + 2:] else n
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            if c == '"':
                strings.append(text[i + 1:j])
            code.append(text[i:j + 1])
            i = j + 1
        else:
            code.append(c)
            i += 1
    return "".join(code), strings


def test_sources():
    _, rows = markdown_rows()
    table = {r["name"] for r in rows}
    prefixes = {n[: -len("<COLLECTIVE>")] for n in table if n.endswith("<COLLECTIVE>")}
    config_cc = os.path.join(ARGS.source, "collectives", "core", "src", "core", "config.cc")
    used, problems = set(), []
    for path in source_files():
        if os.path.samefile(path, config_cc):
            continue
        code, strings = split_source(open(path, encoding="utf-8").read())
        rel = os.path.relpath(path, ARGS.source)
        for m in re.finditer(r"getenv\s*\(\s*\"(SMDDP_[A-Z0-9_]*)", code):
            problems.append(f"{rel}: getenv(\"{m[1]}\") outside the configuration table")
        # An SMDDP_ name as a whole argument goes to a config accessor only
        # (a local env_int("SMDDP_X") would be another parser).
        for m in re.finditer(r"(\w+)\s*\(\s*\"(SMDDP_[A-Z0-9_]+)\"", code):
            if m[1] not in ACCESSORS:
                problems.append(f"{rel}: {m[1]}(\"{m[2]}\") is not a config accessor")
        for literal in strings:
            for name in re.findall(r"SMDDP_[A-Z0-9_]*", literal):
                if name in NOT_VARIABLES or name == "SMDDP_":
                    continue
                used.add(name)
                if name.endswith("_"):
                    if name not in prefixes:
                        problems.append(f"{rel}: prefix {name} is no pattern row of the table")
                elif name not in table and not any(name.startswith(p) and name[len(p):] in COLLECTIVES
                                                   for p in prefixes):
                    problems.append(f"{rel}: {name} is not in --list-config")
    # And no row the sources have stopped reading.
    for name in table:
        probe = name[: -len("<COLLECTIVE>")] if name.endswith("<COLLECTIVE>") else name
        if not any(u.startswith(probe) for u in used):
            problems.append(f"{name} is in the table but no source outside it names it")
    if problems:
        fail("\n".join(problems))
    print(f"{len(used)} SMDDP_ names in the sources, all in the {len(table)}-row table; no getenv outside it")


def test_readme():
    out, _ = markdown_rows()
    text = open(os.path.join(ARGS.source, "README.md"), encoding="utf-8").read()
    begin, end = text.find(README_BEGIN), text.find(README_END)
    if begin < 0 or end < begin:
        fail(f"README.md lacks the {README_BEGIN} ... {README_END} markers")
    section = text[text.index("\n", begin) + 1:end]
    if section.strip() != out.strip():
        fail("README.md's environment table differs from `smddp-bench --list-config --markdown`;\n"
             "regenerate it between the markers. Expected:\n" + out)
    print("README.md environment table matches the configuration table")


def test_list():
    _, rows = markdown_rows()
    for tool, users in ((ARGS.bench, "smddp-bench"), (ARGS.diag, "smddp-diag")):
        r = run([tool, "--list-config"], env={"SMDDP_TIMEOUT": "42", "SMDDP_ALGORITHM_ALLREDUCE": "ring"})
        if r.returncode != 0 or r.stderr:
            fail(f"{tool} --list-config: exit {r.returncode}\n{r.stderr}")
        lines = {l.split()[0]: l.split() for l in r.stdout.splitlines()[1:] if l.strip()}
        for row in rows:
            mine = "engine" in row["users"] or users in row["users"]
            if mine and row["name"] not in lines:
                fail(f"{tool} --list-config lacks {row['name']}:\n{r.stdout}")
        if lines["SMDDP_TIMEOUT"][1:3] != ["42", "environment"]:
            fail(f"SMDDP_TIMEOUT=42 listed as {lines['SMDDP_TIMEOUT']}")
        if lines["SMDDP_ALGORITHM_ALLREDUCE"][1:3] != ["ring", "environment"]:
            fail(f"SMDDP_ALGORITHM_ALLREDUCE=ring listed as {lines.get('SMDDP_ALGORITHM_ALLREDUCE')}")
        if lines["SMDDP_SHM_SLOT_BYTES"][1:3] != ["1M", "default"]:
            fail(f"SMDDP_SHM_SLOT_BYTES listed as {lines['SMDDP_SHM_SLOT_BYTES']}")
    print(f"--list-config of both tools lists the {len(rows)} settings with value and source")


def invalid_values(tmp):
    bad_rules = os.path.join(tmp, "bad.rules")
    with open(bad_rules, "w") as f:
        f.write("allreduce single inf no_such_algorithm\n")
    open_secret = os.path.join(tmp, "open.secret")
    with open(open_secret, "w") as f:
        f.write("a secret that is long enough\n")
    os.chmod(open_secret, 0o644)
    bad_topology = os.path.join(tmp, "bad.topology")
    with open(bad_topology, "w") as f:
        f.write("node-a rack-1\nnode-b\n")  # a line without its label
    values = {
        "SMDDP_TIMEOUT": ["soon", "0", "-1", "nan", "inf", "1e400"],
        "SMDDP_RANKS_PER_NODE": ["0", "two"],
        "SMDDP_TUNING_FILE": [tmp, os.path.join(tmp, "absent"), bad_rules],
        "SMDDP_MODEL_FILE": [tmp, os.path.join(tmp, "absent"), bad_rules],
        "SMDDP_REDUCE_ISA": ["sse9"],
        "SMDDP_SHM_SLOT_BYTES": ["12Q", "100", "4097", "2G"],
        "SMDDP_SHM_CELL_BYTES": ["-8", "64KB!"],
        "SMDDP_CMA": ["maybe"],
        "SMDDP_LINK_PROBE": ["sometimes"],
        "SMDDP_TRANSPORT": ["carrier-pigeon"],
        "SMDDP_FABRIC_PROVIDER": ["^psm2", "efa,tcp"],
        "SMDDP_FABRIC_MAX_MSG": ["0", "big"],
        "SMDDP_FABRIC_MR": ["sometimes"],
        "SMDDP_FABRIC_SPIN": ["lots", "-1"],
        "SMDDP_FABRIC_NAP_US": ["1000000", "1.5"],
        "SMDDP_FABRIC_VERBOSE": ["loud"],
        "SMDDP_CUDA_CHUNK_BYTES": ["512", "8G"],
        "SMDDP_SOCKET_ADDRESS": ["not an address"],
        "SMDDP_SOCKET_SETUP_TIMEOUT": ["soon", "0"],
        "SMDDP_STORE_PORT": ["70000", "port"],
        "SMDDP_BOOTSTRAP_TIMEOUT": ["soon", "nan"],
        "SMDDP_STORE_SECRET": ["short"],
        "SMDDP_STORE_SECRET_FILE": [open_secret, os.path.join(tmp, "absent"), tmp],
        "SMDDP_STORE_BIND_ADDR": ["not an address"],
        "SMDDP_STORE_HANDSHAKE_TIMEOUT": ["soon", "0"],
        "SMDDP_TEST_FLIP": ["1:2:3", "1:0:3:4", "-1:2:3:4", "1:2:3:64", "0x1:2:3:4", "1: 2:3:4", "1:2:3:4:5"],
        "SMDDP_SUPERVISE": ["nope"],
        "SMDDP_TEST_STALL_AT": ["150", "1:0", "-1:5", "a:b", "1:5x"],
        "SMDDP_BENCH_MEMORY": ["0", "lots", "-1G"],
        "SMDDP_NVML_LIBRARY": ["/nonexistent/libnvidia-ml.so.1", tmp],
        "SMDDP_SYSFS_ROOT": [os.path.join(tmp, "absent"), bad_rules],
        "SMDDP_PROFILE_DIR": [os.path.join(tmp, "absent")],
        "SMDDP_DIAG_FAULT": ["meteor"],
        "SMDDP_ISOLATE_TOPOLOGY": [tmp, os.path.join(tmp, "absent"), bad_topology],
    }
    for c in COLLECTIVES:
        values["SMDDP_ALGORITHM_" + c] = ["no_such_algorithm"]
    return values


def expect_one_line(cmd, env, name, mpi=False):
    r = run(cmd, env=env, timeout=120)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    where = "under mpirun -np 2" if mpi else "alone"
    if r.returncode != 64 or len(lines) != 1 or name not in lines[0]:
        return f"{env} {where}: exit {r.returncode}, stderr lines {lines}; want 64 and one line naming {name}"
    return None


def test_invalid():
    _, rows = markdown_rows()
    bench_cmd = [ARGS.bench, "allreduce", "-b", "8", "-e", "8", "-n", "1", "-w", "0"]
    diag_cmd = [ARGS.diag, "topo"]
    # --quiet: mpirun's own note on a non-zero exit is not the program's output.
    mpi_cmd = [ARGS.mpirun, "--quiet", "--oversubscribe", "--bind-to", "none", "-np", "2", *bench_cmd]
    with tempfile.TemporaryDirectory() as tmp:
        values = invalid_values(tmp)
        runs = []  # (command, environment, name, under mpirun)
        checked = 0
        for row in rows:
            names = ([row["name"].replace("<COLLECTIVE>", c) for c in COLLECTIVES]
                     if row["name"].endswith("<COLLECTIVE>") else [row["name"]])
            for name in names:
                if name not in values:
                    fail(f"{name}: no invalid value in this test; add one to invalid_values()")
                for value in values[name]:
                    env = {name: value}
                    if "engine" in row["users"] or "smddp-bench" in row["users"]:
                        runs.append((bench_cmd, env, name, False))
                    if "engine" in row["users"] or "smddp-diag" in row["users"]:
                        runs.append((diag_cmd, env, name, False))
                    checked += 1
                if "engine" in row["users"]:
                    runs.append((mpi_cmd, {name: values[name][0]}, name, True))
        # A pattern variable that names no collective is refused too.
        runs.append((bench_cmd, {"SMDDP_ALGORITHM_FROBNICATE": "ring"}, "SMDDP_ALGORITHM_FROBNICATE", False))
        # A few at a time: each refusal waits on process and MPI start far more than it computes.
        with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
            problems = [p for p in pool.map(lambda r: expect_one_line(*r), runs) if p]
    if problems:
        fail("\n".join(problems))
    print(f"{checked} invalid values refused with one line and exit 64 ({len(runs)} runs)")


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    for flag in ("--bench", "--diag", "--mpirun", "--source"):
        parser.add_argument(flag, required=True)
    parser.add_argument("test")
    ARGS = parser.parse_args()
    globals()["test_" + ARGS.test]()
    print("PASS", ARGS.test)


if __name__ == "__main__":
    main()
