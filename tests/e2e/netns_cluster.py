"""A network-namespace cluster for the e2e tests (scripts/netns-cluster.sh).

Each cluster has its own name and /24, so cases never share one; it is
always torn down, and a namespace left behind fails the test. Cases need
root (CAP_NET_ADMIN): namespaces_possible() prints SKIP and exits 77
elsewhere.
"""
import os
import subprocess
import sys

SKIP = 77


def _fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def namespaces_possible():
    """Creates and deletes a throwaway namespace; exits 77 when impossible."""
    probe = f"smddpprobe{os.getpid()}"
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"SKIP: cannot create network namespaces here ({r.stderr.strip() or 'ip netns add failed'}); "
              "these tests need root / CAP_NET_ADMIN")
        sys.exit(SKIP)
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)


class Cluster:
    """`script`: netns-cluster.sh; `up_args` go to its `up` (e.g. --rate 1gbit);
    `env`: settings every run of the cluster gets."""

    def __init__(self, script, name, net, hosts=4, *up_args, env=None):
        self.script_path, self.name, self.net, self.hosts = script, name, net, hosts
        self.up_args = list(up_args)
        self.env = dict(os.environ, SMDDP_NETNS_NAME=name, SMDDP_NETNS_NET=str(net), **(env or {}))

    def script(self, *args, timeout=60):
        return subprocess.run([self.script_path, *args], env=self.env, capture_output=True, text=True, timeout=timeout)

    def __enter__(self):
        r = self.script("up", str(self.hosts), *self.up_args)
        if r.returncode != 0:
            _fail(f"netns-cluster.sh up failed ({r.returncode}):\n{r.stderr}")
        return self

    def __exit__(self, *exc):
        r = self.script("down")
        if r.returncode != 0:
            print(f"warning: netns-cluster.sh down failed: {r.stderr}")
        left = [n for n in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
                if n.startswith(self.name + "-")]
        if left:
            _fail(f"namespaces left behind: {left}")

    def host(self, i):
        return f"{self.name}-h{i}"

    def throttle(self, i, rate="40mbit"):
        """Shapes host i's link both ways (tbf: this kernel has no netem)."""
        for cmd in (["tc", "qdisc", "replace", "dev", f"{self.name}-v{i}"],
                    ["ip", "netns", "exec", self.host(i), "tc", "qdisc", "replace", "dev", "eth0"]):
            r = subprocess.run(cmd + ["root", "tbf", "rate", rate, "burst", "64kb", "latency", "50ms"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                _fail(f"tc: {r.stderr}")

    def command(self, *mpirun_args):
        return [self.script_path, "run", *mpirun_args]

    def run(self, *mpirun_args, extra_env=None, timeout=240):
        env = dict(self.env, **(extra_env or {}))
        return subprocess.run(self.command(*mpirun_args), env=env, capture_output=True, text=True, timeout=timeout)
