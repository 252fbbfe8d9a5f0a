#!/usr/bin/env python3
"""Seeded mutation fuzzing of the Python tools' readers (docs/testing.md,
"Fuzzing"): smddp-report's report, compare and analyze (on our JSON,
nccl-tests' JSON and logs, NCCL Inspector output), the SageMaker config reader
and the node-health job's report reader. Debian has no atheris, so this is
a mutation loop over the seed corpora in fuzz/python/corpus/: byte edits,
hostile JSON tokens, and JSON-aware replacements of one value (huge and
negative numbers, wrong types, deep nesting, long strings, lone surrogates).

A finding is an input for which a tool breaks its promise: an exit code it
does not document, more than one line on stderr with exit 64, an internal
error (70), an exception that escapes, or more than --input-seconds on one
input. Each finding is written to --findings and the run fails.

Usage: fuzz_python.py --root REPO [--seconds N] [--seed S] [--only TARGET] [--findings DIR]
"""
import argparse
import contextlib
import copy
import importlib.util
import io
import json
import os
import random
import signal
import sys
import tempfile
import time

MAX_MUTANT_BYTES = 8 << 20
HOSTILE_TOKENS = [b"NaN", b"Infinity", b"-Infinity", b"-1", b"1e999", b"-1e999", b"99999999999999999999999",
                  b"18446744073709551616", b'"\\ud800"', b"[" * 300, b"{}", b"[]", b"null", b"true", b'""',
                  b"\xff\xfe", b"0x10", b"1.5", b'"\\u0000"', b"\x00", b'"</script>"', b"1" * 5000]


def hostile_values(rng, sibling):
    deep = []
    node = deep
    for _ in range(rng.choice([10, 63, 65, 200])):
        node.append([])
        node = node[0]
    return [None, True, False, 0, -1, 1, 2 ** 31, 2 ** 63 - 1, 2 ** 64 - 1, -(2 ** 63), 1e308, -1e308, 5e-324,
            0.5, "", "x" * rng.choice([1, 300, 100000]), "algo-1", "\x00", "</script><script>", "NaN", "0x10",
            [], {}, deep, [sibling] * rng.choice([2, 1000]), {"": sibling}, "1e999", str(2 ** 70)]


def paths(value, limit=20000):
    """(path, value) of a JSON tree's nodes, the root first, at most `limit`
    of them and 40 levels deep."""
    out, todo = [], [((), value)]
    while todo and len(out) < limit:
        prefix, v = todo.pop()
        out.append((prefix, v))
        if len(prefix) >= 40:
            continue
        if isinstance(v, dict):
            todo += [(prefix + (k,), x) for k, x in v.items()]
        elif isinstance(v, list):
            todo += [(prefix + (i,), x) for i, x in enumerate(v[:50])]
    return out


def set_at(tree, path, value):
    if not path:
        return value
    node = tree
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value
    return tree


def mutate_json(rng, doc):
    doc = copy.deepcopy(doc)
    where, old = rng.choice(paths(doc))
    action = rng.random()
    if action < 0.15 and where:  # drop a key or an element
        parent = doc
        for p in where[:-1]:
            parent = parent[p]
        del parent[where[-1]]
        return doc
    if action < 0.25 and isinstance(old, list) and old:  # many copies of one element
        return set_at(doc, where, old + [old[0]] * rng.choice([1, 10, 2000]))
    if action < 0.35 and isinstance(old, dict):  # an unknown key
        old[rng.choice(["x", "rows", "nodes", "tool", "pingpong"])] = rng.choice(hostile_values(rng, old))
        return doc
    return set_at(doc, where, rng.choice(hostile_values(rng, old)))


def mutate_bytes(rng, data):
    data = bytearray(data)
    for _ in range(rng.choice([1, 1, 2, 4])):
        op = rng.random()
        pos = rng.randrange(len(data) + 1)
        if op < 0.25 and data:
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
        elif op < 0.45 and data:
            del data[pos:pos + rng.choice([1, 8, 64, 4096])]
        elif op < 0.75:
            data[pos:pos] = rng.choice(HOSTILE_TOKENS)
        else:
            n = rng.choice([1, 16, 256])
            data[pos:pos] = data[pos:pos + n] * rng.choice([2, 50])
    return bytes(data)


def mutant(rng, corpus):
    name, data = rng.choice(corpus)
    if rng.random() < 0.6:
        try:
            doc = json.loads(data)
        except ValueError:
            doc = None
        if doc is not None:
            text = None
            for _ in range(rng.choice([1, 1, 2, 3])):
                try:
                    mutated = json.dumps(mutate_json(rng, doc))
                except (ValueError, RecursionError):
                    break
                if len(mutated) > MAX_MUTANT_BYTES:
                    break
                text = mutated
                doc = json.loads(text)  # no shared subtrees: the next copy grows linearly
            if text is not None:
                return name, text.encode("utf-8", "surrogatepass")
    return name, mutate_bytes(rng, data)


class Finding(Exception):
    pass


def load_script(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def call(fn, *args):
    """(return value, stdout, stderr) of fn(*args) with both streams captured."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = fn(*args)
    return rc, out.getvalue(), err.getvalue()


def expect(rc, err, allowed):
    lines = [line for line in err.splitlines() if line.strip()]
    if rc not in allowed:
        raise Finding(f"exit {rc} (allowed {sorted(allowed)}): {err.strip()[:300]}")
    if rc == 64 and len(lines) != 1:
        raise Finding(f"exit 64 with {len(lines)} lines on stderr: {err.strip()[:300]}")


class Targets:
    def __init__(self, root, tmp):
        self.tmp = tmp
        sys.path[:0] = [os.path.join(root, "report"), os.path.join(root, "common", "python")]
        from smddp_report import cli
        self.report_cli = cli
        self.read_config = load_script(os.path.join(root, "scripts", "sagemaker", "read_config.py"), "read_config")
        self.health = load_script(os.path.join(root, "deploy", "kubernetes", "base", "smddp-node-health.py"),
                                       "node_health")
        import smddp_safeio
        self.safeio = smddp_safeio
        self.chartjs = os.path.join(tmp, "chart.js")
        with open(self.chartjs, "w") as f:
            f.write("/* a stand-in: the fuzzer checks the readers, not the page */\n")

    def _file(self, name, data):
        path = os.path.join(self.tmp, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def report(self, name, data, corpus):
        path = self._file("in-" + name, data)
        out = os.path.join(self.tmp, "report.html")
        rc, _, err = call(self.report_cli.main, [path, "-o", out, "--chartjs", self.chartjs])
        expect(rc, err, {0, 64})

    def compare(self, name, data, corpus):
        base = self._file("base.json", dict(corpus)["bench.json"])
        new = self._file("new-" + name, data)
        rc, _, err = call(self.report_cli.main, ["compare", base, new])
        expect(rc, err, {0, 2, 64})
        rc, _, err = call(self.report_cli.main, ["compare", new, base, "--markdown"])
        expect(rc, err, {0, 2, 64})

    def analyze(self, name, data, corpus):
        path = self._file("in-" + name, data)
        rc, _, err = call(self.report_cli.main, ["analyze", path, "--all"])
        expect(rc, err, {0, 64})

    def sagemaker(self, name, data, corpus):
        config = os.path.join(self.tmp, "config")
        os.makedirs(config, exist_ok=True)
        files = dict(corpus)
        files[name] = data
        for n, d in files.items():
            with open(os.path.join(config, n), "wb") as f:
                f.write(d)
        rc, _, err = call(self.safeio.run_main, "sagemaker-entry", self.read_config.main, [config])
        expect(rc, err, {0, 64})

    def node_health(self, name, data, corpus):
        path = self._file("report-" + name, data)
        for code in (0, 1, 3):
            result, labels, reason = self.health.outcome(code, path)
            for value in list(labels.values()) + [reason]:
                if value is not None and not isinstance(value, str):
                    raise Finding(f"a label or reason that is not text: {value!r:.100}")
            for value in labels.values():
                if value is not None and len(value) > 63:
                    raise Finding(f"a label value longer than 63: {value[:80]}")


TARGETS = {"report": "results", "compare": "results", "analyze": "results", "sagemaker": "sagemaker",
           "node_health": "results"}


def on_alarm(signum, frame):
    raise Finding("took longer than the per-input limit (a hang?)")


def fuzz(targets, target, corpus, args, rng):
    fn = getattr(targets, target)
    for name, data in corpus:  # the seeds themselves pass
        fn(name, data, corpus)
    deadline = time.monotonic() + args.seconds
    runs = 0
    while time.monotonic() < deadline:
        name, data = mutant(rng, corpus)
        runs += 1
        signal.setitimer(signal.ITIMER_REAL, args.input_seconds)
        try:
            fn(name, data, corpus)
        except Finding as e:
            return runs, name, data, str(e)
        except Exception as e:  # noqa: BLE001 - anything that escapes is a finding
            return runs, name, data, f"{type(e).__name__} escaped: {e}"[:400]
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    return runs, None, None, None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", required=True)
    p.add_argument("--seconds", type=float, default=10, help="per target")
    p.add_argument("--input-seconds", type=float, default=10, help="longest one input may take")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--only", choices=sorted(TARGETS))
    p.add_argument("--findings", default=None, help="directory for inputs that broke a promise")
    args = p.parse_args()
    signal.signal(signal.SIGALRM, on_alarm)
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        targets = Targets(args.root, tmp)
        for target, corpus_name in TARGETS.items():
            if args.only and target != args.only:
                continue
            directory = os.path.join(args.root, "fuzz", "python", "corpus", corpus_name)
            corpus = []
            for n in sorted(os.listdir(directory)):
                with open(os.path.join(directory, n), "rb") as f:
                    corpus.append((n, f.read()))
            rng = random.Random(f"{args.seed}/{target}")
            runs, name, data, why = fuzz(targets, target, corpus, args, rng)
            if why is None:
                print(f"fuzz {target}: {runs} inputs in {args.seconds:g} s (seed {args.seed}), nothing found")
                continue
            failed += 1
            print(f"fuzz {target}: FOUND after {runs} inputs (seed {args.seed}), a mutant of {name}: {why}")
            if args.findings:
                os.makedirs(args.findings, exist_ok=True)
                kept = os.path.join(args.findings, f"{target}-{args.seed}-{name}")
                with open(kept, "wb") as f:
                    f.write(data)
                print(f"  input kept: {kept}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
