"""What the end-to-end scripts share: the seed of their generated data, a
failure as one line, a checked step, a subprocess behind a hang guard, and
the registry of a script's tests with the command line that runs one.

A script imports it as `from e2e_harness import ...` after putting
tests/e2e on sys.path (see report/report_e2e.py); named apart from
diag/harness.py, the smddp-diag cases' own."""
import argparse
import os
import signal
import subprocess
import sys

# Generated data takes this seed, printed first; SMDDP_TEST_SEED=N replays it.
SEED = int(os.environ.get("SMDDP_TEST_SEED") or int.from_bytes(os.urandom(4), "little"))


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def check(cond, what, detail=""):
    if not cond:
        fail(f"{what}\n{detail}" if detail else what)
    print("ok:", what)


def run(cmd, timeout=240, env=None, **kw):
    """`cmd` in a session of its own, so that on a time-out (a hang guard, not
    an assertion) the whole group goes (mpirun's ranks, chromium's helpers)
    and nothing can hang the suite. `env` adds to this process's environment."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    p = subprocess.Popen(cmd, stdout=kw.pop("stdout", subprocess.PIPE), stderr=kw.pop("stderr", subprocess.PIPE),
                         stdin=subprocess.DEVNULL, text=True, env=full_env, start_new_session=True, **kw)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        fail(f"timed out after {timeout} s (hang guard): {' '.join(cmd)}")
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


class Tests(dict):
    """A script's tests by name: `@tests` registers a function."""

    def __call__(self, fn):
        self[fn.__name__] = fn
        return fn


def parse_and_pick(tests, options, seed=False):
    """The command line `--OPTION VALUE... TEST`: `options` maps each option
    to whether it is required (or to its default, a string). Returns the
    parsed arguments and the test's function."""
    if seed:
        print(f"seed {SEED} (SMDDP_TEST_SEED={SEED} replays it)")
    parser = argparse.ArgumentParser()
    for name, spec in options.items():
        if isinstance(spec, str):
            parser.add_argument(name, default=spec)
        else:
            parser.add_argument(name, required=spec)
    parser.add_argument("test", choices=sorted(tests))
    args = parser.parse_args()
    return args, tests[args.test]


def main_of_tests(namespace, options):
    """A script's main() when its tests are its `test_NAME` functions, run
    without arguments: picks one by the command line (options as in
    parse_and_pick, seed printed), runs it, prints PASS. Returns the parsed
    arguments, which the script keeps as its ARGS before the test runs."""
    tests = Tests({name[len("test_"):]: fn for name, fn in namespace.items() if name.startswith("test_")})
    args, fn = parse_and_pick(tests, options, seed=True)
    namespace["ARGS"] = args
    fn()
    print("PASS", args.test)

