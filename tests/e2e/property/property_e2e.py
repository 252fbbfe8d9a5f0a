#!/usr/bin/env python3
"""Property tests of every tool's promise on bad input (issue 36,
docs/testing.md "Hostile input"): random invocations built from each tool's
own option table (its --help), with one or two options or positionals given
out-of-range, wrong-type, special-file or huge values. For each one:

- the exit code is one the tool documents (64 for bad input), never a signal;
- exit 64 comes with exactly one line on stderr; nothing prints a traceback
  or a libstdc++ message;
- a refused invocation changes no file and creates none; /dev/null stays a
  device; a symbolic link stays a link;
- it ends within the deadline (a server, the exporter, within seconds of
  SIGTERM), and leaves no process of its session behind.

Usage: property_e2e.py --bench B --diag D --model M --report R --root REPO
                       --mpirun MPIRUN [--seed S] [--runs N] GROUP
GROUP: bench, diag, model or python. --seed picks the invocations (printed;
CI runs two seeds).
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

DEADLINE_S = 30
SERVER_DEADLINE_S = 4
INT_VALUES = ["-1", "0x10", "1e3", "99999999999999999999", "-99999999999999999999", "nan", "", "1.5", "abc",
              "2147483648", "0", "+", "１"]
FLOAT_VALUES = ["nan", "inf", "-inf", "1e999", "0x10", "-1", "1e300", "", "abc", "0x1p3", "1e-320", "1,5"]
# Special files are named by key and made in the sandbox; the rest are literal.
TEXT_VALUES = ["@fifo", "@dir", "/dev/zero", "/dev/null", "@missing", "@hard", "@link", "@long", "\x01bad", "-", "",
               "1e999", "0x10", "-1", "99999999999999999999", "nan", "@results", "@deep"]
# Never a number, whatever the option: each must be refused with 64.
NOT_NUMBERS = {"0x10", "nan", "inf", "-inf", "1e999", "99999999999999999999", "-99999999999999999999", "", "abc",
               "0x1p3", "+", "１", "1,5"}
# A resource configuration for read_config.py: each must be refused with 64.
BAD_CONFIGS = ["@fifo", "@dir", "@deep", '{"current_host": "a", "hosts": ["a"], "x": NaN}',
               '{"current_host": "a", "hosts": ' + json.dumps([f"h{i}" for i in range(20000)]) + "}",
               '{"current_host": ["a"], "hosts": ["a"]}', '{"current_host": "a", "hosts": "a"}', "\udcff"]
LEAK_WORDS = ("Traceback (most recent call last)", "terminate called", "what():", "std::", "Segmentation fault",
              "AddressSanitizer", "core dumped")


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


# ---- option tables --------------------------------------------------------

CLI11_LINE = re.compile(r"^  (?P<names>-[^\s]+|[a-z][\w-]*)(?: (?P<type>[A-Z]+)(?:[=:]\S*)?(?: \.\.\.)?)?"
                        r"(?: REQUIRED)?(?:\s{2,}|$)")


def option_table(help_text):
    """[(names, kind)] from a CLI11 or argparse --help: kind is INT, FLOAT,
    TEXT, FLAG or POSITIONAL-TYPE; -h/--help left out."""
    table, section = [], None
    for line in help_text.splitlines():
        if re.match(r"^(Options|Positionals|options|positional arguments|optional arguments):", line):
            section = "positional" if line.lower().startswith("positional") else "options"
            continue
        if not line.strip() or not line.startswith("  ") or line.startswith("   ") and section != "options":
            continue
        m = CLI11_LINE.match(line)
        if m:
            names, kind = m.group("names"), m.group("type") or "FLAG"
        else:  # argparse: "  -o OUTPUT, --output OUTPUT   text" or "  --flag   text"
            m = re.match(r"^  (-[\w-]+(?: [A-Z_.]+)?(?:, --[\w-]+(?: [A-Z_.]+)?)?)(?:\s{2,}|$)", line)
            if not m:
                continue
            parts = m.group(1).split(", ")
            names = ",".join(p.split(" ")[0] for p in parts)
            kind = "TEXT" if " " in parts[-1] else "FLAG"
        flags = names.split(",")
        if "--help" in flags or "-h" in flags:
            continue
        if not flags[0].startswith("-"):
            continue  # positionals are mutated by value, below
        kind = {"UINT": "INT", "NUMBER": "FLOAT"}.get(kind, kind)
        table.append((flags[-1], kind if kind in ("INT", "FLOAT", "FLAG") else "TEXT"))
    return table


# ---- the sandbox ----------------------------------------------------------

class Sandbox:
    def __init__(self, root, results, model):
        self.dir = root
        shutil.copy(results, os.path.join(root, "good.json"))
        shutil.copy(model, os.path.join(root, "model.yaml"))
        os.mkfifo(os.path.join(root, "fifo"))
        os.mkdir(os.path.join(root, "dir"))
        with open(os.path.join(root, "target.txt"), "w") as f:
            f.write("keep me\n")
        os.link(os.path.join(root, "target.txt"), os.path.join(root, "hard.txt"))
        os.symlink("target.txt", os.path.join(root, "link.txt"))
        with open(os.path.join(root, "deep.json"), "w") as f:
            f.write("[" * 100000 + "]" * 100000)
        with open(os.path.join(root, "token"), "w") as f:
            f.write("t0ken\n")

    def value(self, v):
        special = {"@fifo": "fifo", "@dir": "dir", "@missing": "missing/file", "@hard": "hard.txt",
                   "@link": "link.txt", "@long": "x" * 5000, "@results": "good.json", "@deep": "deep.json"}
        return special.get(v, v)

    def snapshot(self):
        out = {}
        for name in os.listdir(self.dir):
            st = os.lstat(os.path.join(self.dir, name))
            out[name] = (stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns, st.st_ino)
        return out


# ---- one invocation -------------------------------------------------------

def session_processes(sid):
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":  # the 6th field: the session
            pids.append(int(entry))
    return pids


def run(cmd, cwd, env, server):
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
    timed_out = False
    try:
        out, err = p.communicate(timeout=SERVER_DEADLINE_S if server else DEADLINE_S)
    except subprocess.TimeoutExpired:
        timed_out = True
        p.send_signal(signal.SIGTERM)
        try:
            out, err = p.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            return p.returncode, out, err, "did not end within 5 s of SIGTERM"
        if not server:
            return p.returncode, out, err, f"still running after {DEADLINE_S} s (a hang or unbounded work)"
    time.sleep(0.05)
    left = session_processes(p.pid)
    if left:
        os.killpg(p.pid, signal.SIGKILL)
        return p.returncode, out, err, f"left processes {left} behind"
    return (0 if timed_out and p.returncode == -signal.SIGTERM else p.returncode), out, err, None


def check(name, cmd, sandbox, env, allowed, server, refuse=None):
    before = sandbox.snapshot()
    null_before = os.stat("/dev/null")
    rc, out, err, problem = run(cmd, sandbox.dir, env, server)
    text = err.decode("utf-8", "replace")
    lines = [line for line in text.splitlines() if line.strip()]
    shown = " ".join(repr(a) if not a or " " in a or not a.isprintable() else a for a in cmd[1:])[:400]
    if problem is None and rc not in allowed:
        problem = f"exit {rc}, not one of {sorted(allowed)}"
    if problem is None and refuse and rc != 64:
        problem = f"exit {rc}: accepted {refuse}"
    if problem is None and rc == 64 and len(lines) != 1:
        problem = f"exit 64 with {len(lines)} lines on stderr"
    if problem is None and any(w in text for w in LEAK_WORDS):
        problem = "a traceback, sanitizer or libstdc++ message"
    after = sandbox.snapshot()
    if problem is None and rc != 0 and after != before:
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        problem = f"refused, yet changed or created {changed}"
    if problem is None and not os.path.islink(os.path.join(sandbox.dir, "link.txt")):
        problem = "replaced a symbolic link instead of writing through it"
    now = os.stat("/dev/null")
    if problem is None and (not stat.S_ISCHR(now.st_mode) or now.st_rdev != null_before.st_rdev):
        problem = "replaced /dev/null"
    if problem:
        fail(f"{name}: {shown}\n  {problem}\n  stderr: {text.strip()[:1200]}")
    return rc


def restore(sandbox, results, model):
    """Puts back fixtures a successful run may legitimately rewrite."""
    for name in list(os.listdir(sandbox.dir)):
        if name not in ("good.json", "model.yaml", "fifo", "dir", "target.txt", "hard.txt", "link.txt", "deep.json",
                        "token", "config"):
            path = os.path.join(sandbox.dir, name)
            shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.unlink(path)
    with open(os.path.join(sandbox.dir, "target.txt"), "w") as f:
        f.write("keep me\n")


# ---- the tools --------------------------------------------------------------

def tools(args, group):
    py = sys.executable
    health = os.path.join(args.root, "deploy/kubernetes/base/smddp-node-health.py")
    config = os.path.join(args.root, "scripts/sagemaker/read_config.py")
    torch_py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else py
    table = {
        "bench": [("smddp-bench", [args.bench, "allreduce", "-b", "8", "-e", "8", "-n", "1", "-w", "0", "-c", "0"],
                   {0, 64}, False)],
        "diag": [("smddp-diag topo", [args.diag, "topo"], {0, 64, 69}, False),
                 ("smddp-diag fabric", [args.diag, "fabric", "--no-pingpong"], {0, 64, 69}, False),
                 ("smddp-diag preflight", [args.diag, "preflight", "-p", "local", "--checks", "memlock,disk_free"],
                  {0, 1, 64, 69}, False),
                 ("smddp-diag exporter", [args.diag, "exporter", "--listen", "127.0.0.1:0", "--exit-after", "1"],
                  {0, 64}, True),
                 ("smddp-diag baseline learn", [args.diag, "baseline", "learn", "good.json", "-o", "base.yaml"],
                  {0, 64}, False)],
        "model": [("smddp-model fit", [args.model, "fit", "good.json", "-o", "fitted.yaml"], {0, 64}, False),
                  ("smddp-model predict", [args.model, "predict", "model.yaml", "--hosts", "2", "--ranks-per-host",
                                           "2", "-b", "1K", "-e", "4K"], {0, 64}, False),
                  ("smddp-model check", [args.model, "check", "model.yaml", "good.json"], {0, 1, 64}, False),
                  ("smddp-model export", [args.model, "export", "model.yaml", "--simai", "busbw.yaml"], {0, 64},
                   False)],
        "python": [("smddp-report", [py, args.report, "good.json", "-o", "r.html"], {0, 64}, False),
                   ("smddp-report compare", [py, args.report, "compare", "good.json", "good.json"], {0, 2, 64},
                    False),
                   ("node-health label", [py, health, "label", "--node", "n1", "--exit-code", "0", "--api-server",
                                          "http://127.0.0.1:9", "--token-file", "token", "--timeout", "2"],
                    {64, 70}, False),
                   ("read_config.py", [py, config, "config"], {0, 64}, False),
                   # Debian's python3 has torch (python3-torch); 69 where a python has none.
                   ("smddp-bench-torch", [torch_py, os.path.join(args.root, "bench/torch/smddp-bench-torch"),
                                          "allreduce", "-b", "8", "-e", "8", "-n", "1", "-w", "0", "--backend",
                                          "gloo"], {0, 64, 69}, False)],
    }
    return table[group]


def help_of(base):
    """The option table of base's (sub)command: its words up to the first
    option or file, then --help."""
    words = base[:2] if base[0].endswith(("python3", os.path.basename(sys.executable))) else base[:1]
    for w in base[len(words):]:
        if not re.fullmatch(r"[a-z]+", w) or w in ("allreduce", "config"):
            break
        words.append(w)
    r = subprocess.run(words + ["--help"], capture_output=True, text=True, timeout=30)
    return option_table(r.stdout + r.stderr)


def hostile_config(rng, sandbox):
    """read_config.py reads files, not options: a hostile resource configuration."""
    path = os.path.join(sandbox.dir, "config", "resourceconfig.json")
    os.unlink(path) if not os.path.isdir(path) or os.path.islink(path) else os.rmdir(path)
    bad = rng.choice(BAD_CONFIGS)
    if bad == "@fifo":
        os.mkfifo(path)
    elif bad == "@dir":
        os.mkdir(path)
    elif bad == "@deep":
        shutil.copy(os.path.join(sandbox.dir, "deep.json"), path)
    else:
        with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(bad)
    return f"resourceconfig.json {bad[:40]!r}"


def good_config(sandbox):
    path = os.path.join(sandbox.dir, "config", "resourceconfig.json")
    os.unlink(path) if not os.path.isdir(path) or os.path.islink(path) else os.rmdir(path)
    with open(path, "w") as f:
        json.dump({"current_host": "algo-1", "hosts": ["algo-1"]}, f)


def invocation(rng, base, table, sandbox):
    """(argv, what must be refused or None)."""
    cmd, refuse = list(base), None
    positional = [i for i, w in enumerate(cmd) if i > 0 and w.endswith((".json", ".yaml")) and
                  cmd[i - 1] not in ("-o", "--simai")]
    for _ in range(rng.choice([1, 1, 2])):
        if positional and rng.random() < 0.25:
            cmd[rng.choice(positional)] = sandbox.value(rng.choice(TEXT_VALUES))
            continue
        if not table:
            continue
        flag, kind = rng.choice(table)
        if kind == "FLAG":
            cmd += [flag] if rng.random() < 0.5 else [f"{flag}={rng.choice(['x', '1', ''])}"]
            continue
        pool = {"INT": INT_VALUES, "FLOAT": FLOAT_VALUES}.get(kind, TEXT_VALUES)
        value = sandbox.value(rng.choice(pool))
        if kind in ("INT", "FLOAT") and value in NOT_NUMBERS:
            refuse = f"{flag} {value!r}"
        if flag in cmd:  # replace the base value, so the hostile one is the one read
            cmd[cmd.index(flag) + 1] = value
        else:
            cmd += [flag, value]
    return cmd, refuse


def main():
    p = argparse.ArgumentParser()
    for name in ("bench", "diag", "model", "report", "root", "mpirun"):
        p.add_argument(f"--{name}", required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--runs", type=int, default=10, help="invocations per tool")
    p.add_argument("group", choices=["bench", "diag", "model", "python"])
    args = p.parse_args()
    rng = random.Random(args.seed)
    print(f"seed {args.seed}, {args.runs} invocations per tool")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SMDDP_", "OMPI_COMM_", "PMIX_", "SM_"))}
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", PYTHONDONTWRITEBYTECODE="1")
    with tempfile.TemporaryDirectory(prefix="smddp-property-") as tmp:
        results = os.path.join(tmp, "results.json")
        r = subprocess.run([args.mpirun, "--oversubscribe", "--bind-to", "none", "-np", "2", args.bench, "allreduce",
                            "-b", "1K", "-e", "64K", "-n", "3", "-w", "1", "-J", results],
                           capture_output=True, text=True, timeout=120, env=env)
        if r.returncode != 0:
            fail(f"the fixture run failed: {r.stderr}")
        model = os.path.join(tmp, "model.yaml")
        r = subprocess.run([args.model, "fit", results, "-o", model], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            fail(f"the fixture model failed: {r.stderr}")
        box = os.path.join(tmp, "box")
        os.mkdir(box)
        sandbox = Sandbox(box, results, model)
        os.makedirs(os.path.join(box, "config"))
        with open(os.path.join(box, "config", "resourceconfig.json"), "w") as f:
            json.dump({"current_host": "algo-1", "hosts": ["algo-1"]}, f)
        for name, base, allowed, server in tools(args, args.group):
            table = help_of(base)
            if not table and name not in ("read_config.py",):
                fail(f"{name}: no options read from its --help")
            check(name + " (base)", base, sandbox, env, allowed, server)
            restore(sandbox, results, model)
            codes = {}
            for _ in range(args.runs):
                cmd, refuse = invocation(rng, base, table, sandbox)
                if name == "read_config.py":
                    refuse = hostile_config(rng, sandbox)
                rc = check(name, cmd, sandbox, env, allowed, server, refuse)
                codes[rc] = codes.get(rc, 0) + 1
                restore(sandbox, results, model)
                if name == "read_config.py":
                    good_config(sandbox)
            print(f"{name}: {args.runs} invocations from {len(table)} options, exits {dict(sorted(codes.items()))}")
    print("PASS")


if __name__ == "__main__":
    main()
