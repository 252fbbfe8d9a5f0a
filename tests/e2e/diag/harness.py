"""What every smddp-diag e2e case uses: the command-line configuration,
the case registry, assertions, running smddp-diag (alone or under mpirun)
and servers that end with the test."""

import ctypes
import os
import resource
import signal
import socket
import subprocess
import time
import urllib.request


class _Args:
    bin = fake_nvml = mpirun = promtool = prometheus = None


ARGS = _Args()  # filled in by diag_e2e.main
HOST = socket.gethostname()
CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


class Failure(Exception):
    pass


def check(cond, what, detail=""):
    if not cond:
        raise Failure(what + (("\n--- detail ---\n" + detail) if detail else ""))


def equal(got, want, what):
    if got != want:
        raise Failure(f"{what}: got {got!r}, want {want!r}")


def die_with_parent():
    # A server this test starts ends with the test, even if CTest kills it.
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def diag(*args, env=None, timeout=120, memlock=None, check_rc=None, mpi=None):
    """Runs smddp-diag (under mpirun with `mpi` = list of per-rank extra env
    dicts, or an int rank count). Returns the CompletedProcess."""
    full_env = dict(os.environ)
    full_env.pop("SMDDP_SYSFS_ROOT", None)
    full_env.pop("SMDDP_NVML_LIBRARY", None)
    full_env.update(env or {})
    cmd = [ARGS.bin, *args]
    if mpi is not None:
        ranks = [{}] * mpi if isinstance(mpi, int) else mpi
        full = [ARGS.mpirun, "--oversubscribe", "--bind-to", "none"]
        for var in (env or {}):
            full += ["-x", var]
        for i, extra in enumerate(ranks):
            if i:
                full.append(":")
            full += ["-np", "1"]
            for k, v in extra.items():
                full += ["-x", f"{k}={v}"]
            full += cmd
        cmd = full

    def limits():
        die_with_parent()
        if memlock is not None:
            resource.setrlimit(resource.RLIMIT_MEMLOCK, (memlock, memlock))

    proc = subprocess.Popen(cmd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=limits)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        # SIGTERM first: mpirun then ends its ranks too.
        proc.terminate()
        try:
            proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
        raise Failure(f"{' '.join(cmd)}: still running after {timeout} s")
    p = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    if check_rc is not None and p.returncode != check_rc:
        raise Failure(f"{' '.join(cmd)}: exit {p.returncode}, want {check_rc}\n--- stdout ---\n{p.stdout}\n--- stderr ---\n{p.stderr}")
    return p


def host_has_nvml():
    """A real NVIDIA driver on the machine running the tests."""
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
        return True
    except OSError:
        return False


def host_has_efa():
    base = "/sys/class/infiniband"
    for dev in os.listdir(base) if os.path.isdir(base) else []:
        try:
            with open(os.path.join(base, dev, "device/vendor")) as f:
                if f.read().strip() == "0x1d0f":
                    return True
        except OSError:
            pass
    return False


def local_profile_skips():
    """The local profile accepts any GPU and EFA count, but on a machine with
    them their health is this host's, not the test's: leave those two out."""
    skips = [name for name, present in (("gpu_count", host_has_nvml()), ("efa_count", host_has_efa())) if present]
    return ["--skip", ",".join(skips)] if skips else []


def nvml_env(**values):
    env = {"SMDDP_NVML_LIBRARY": ARGS.fake_nvml}
    env.update({f"FAKE_NVML_{k.upper()}": str(v) for k, v in values.items()})
    return env


def lines_for(stdout, host):
    return [l for l in stdout.splitlines() if l.startswith(host + " | ")]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read().decode()


def mpi_env(extra=None):
    env = {"SMDDP_TIMEOUT": "60"}
    env.update(extra or {})
    return env


class Server:
    def __init__(self, cmd, env=None, log=None):
        self.log = open(log, "w") if log else subprocess.DEVNULL
        self.proc = subprocess.Popen(cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.log is not subprocess.DEVNULL:
            self.log.close()
        return self.proc.returncode


def wait_for(what, fn, timeout=30, interval=0.2):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            value = fn()
            if value:
                return value
        except Exception as e:  # noqa: BLE001 - retried until the deadline
            last = e
        time.sleep(interval)
    raise Failure(f"timed out waiting for {what} (last error: {last})")
