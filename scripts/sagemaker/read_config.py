#!/usr/bin/env python3
"""Reads a SageMaker training job's cluster description for sagemaker-entry.sh.

Usage: read_config.py CONFIG_DIR

CONFIG_DIR is /opt/ml/input/config on SageMaker. The cluster comes from
CONFIG_DIR/resourceconfig.json (current_host, hosts, network_interface_name,
current_instance_type) or, without that file, from SM_HOSTS (a JSON list) and
SM_CURRENT_HOST; hyperparameters from CONFIG_DIR/hyperparameters.json when it
exists. Prints bash assignments (shell-quoted) for the entry script to eval:
current_host, interface, instance_type, hosts (array), hp_bench_args (array),
hp_profile, hp_preflight. A missing or malformed description is one line on
stderr and exit 64, before anything starts.
"""
import os
import re
import shlex
import sys

# smddp_safeio: PREFIX/lib/smddp/python once installed (this file is in
# PREFIX/share/smddp/scripts/sagemaker), or the source tree's common/python.
_HERE = os.path.dirname(os.path.realpath(__file__))
sys.path[:0] = [os.path.join(_HERE, "..", "..", "..", "..", "lib", "smddp", "python"),
                os.path.join(_HERE, "..", "..", "common", "python")]
from smddp_safeio import UsageError, load_json as _load_json, parse_json, run_main  # noqa: E402

MAX_CONFIG_BYTES = 1 << 20  # SageMaker's files are a few KiB
MAX_HOSTS = 10000  # far above SageMaker's largest training cluster
HOST_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]{0,252}$")
IFACE_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,15}$")


def fail(message):
    raise UsageError(message)


def load_json(path, what):
    return _load_json(path, what, max_bytes=MAX_CONFIG_BYTES)


def from_resource_config(path):
    doc = load_json(path, "resource configuration")
    if not isinstance(doc, dict):
        fail(f"{path}: expected a JSON object with current_host and hosts")
    for key in ("current_host", "hosts"):
        if key not in doc:
            fail(f"{path}: '{key}' is missing")
    iface = doc.get("network_interface_name", os.environ.get("SM_NETWORK_INTERFACE_NAME", "eth0"))
    return doc["current_host"], doc["hosts"], iface, doc.get("current_instance_type", ""), path


def from_environment():
    raw_hosts, current = os.environ.get("SM_HOSTS"), os.environ.get("SM_CURRENT_HOST")
    if not raw_hosts or not current:
        return None
    if len(raw_hosts) > MAX_CONFIG_BYTES:
        fail(f"SM_HOSTS: longer than {MAX_CONFIG_BYTES >> 20} MiB")
    hosts = parse_json(raw_hosts, "SM_HOSTS (a JSON list of host names)")
    iface = os.environ.get("SM_NETWORK_INTERFACE_NAME", "eth0")
    return current, hosts, iface, os.environ.get("SM_CURRENT_INSTANCE_TYPE", ""), "SM_HOSTS/SM_CURRENT_HOST"


def validate(current, hosts, iface, instance_type, source):
    if not isinstance(hosts, list) or not hosts or not all(isinstance(h, str) for h in hosts):
        fail(f"{source}: 'hosts' must be a non-empty list of host names")
    if len(hosts) > MAX_HOSTS:
        fail(f"{source}: {len(hosts)} hosts: at most {MAX_HOSTS}")
    for h in hosts:
        if not HOST_RE.match(h):
            fail(f"{source}: host name {h[:300]!r} is not a valid host name")
    if len(set(hosts)) != len(hosts):
        twice = sorted({h for h in hosts if hosts.count(h) > 1})
        fail(f"{source}: 'hosts' lists a host twice: {', '.join(twice[:5])}")
    if not isinstance(current, str) or current not in hosts:
        fail(f"{source}: current_host {str(current)[:300]!r} is not one of the {len(hosts)} hosts")
    if not isinstance(iface, str) or not IFACE_RE.match(iface):
        fail(f"{source}: network_interface_name {str(iface)[:300]!r} is not an interface name")
    if not isinstance(instance_type, str):
        fail(f"{source}: current_instance_type must be a string")


def hyperparameters(config_dir):
    path = os.path.join(config_dir, "hyperparameters.json")
    if not os.path.exists(path):
        return [], "", "1"
    doc = load_json(path, "hyperparameters")
    if not isinstance(doc, dict):
        fail(f"{path}: expected a JSON object")
    # SageMaker passes every hyperparameter as a string.
    bench = doc.get("bench-args", "")
    profile = doc.get("preflight-profile", "")
    preflight = doc.get("preflight", "true")
    if not isinstance(bench, str) or not isinstance(profile, str):
        fail(f"{path}: bench-args and preflight-profile must be strings")
    preflight = str(preflight).lower() if isinstance(preflight, (str, bool)) else None
    if preflight not in ("true", "false", "1", "0"):
        fail(f"{path}: preflight must be true or false")
    try:
        words = shlex.split(bench)
    except ValueError as e:
        fail(f"{path}: bench-args {bench!r}: {e}")
    return words, profile, "0" if preflight in ("false", "0") else "1"


def main(argv):
    if len(argv) != 1:
        fail("usage: read_config.py CONFIG_DIR")
    config_dir = argv[0]
    path = os.path.join(config_dir, "resourceconfig.json")
    if os.path.exists(path):
        cluster = from_resource_config(path)
    else:
        cluster = from_environment()
        if cluster is None:
            fail(f"no {path} and no SM_HOSTS/SM_CURRENT_HOST: not started by a SageMaker training job? "
                 "(--ml-root points at another /opt/ml)")
    validate(*cluster)
    current, hosts, iface, instance_type, _ = cluster
    bench, profile, preflight = hyperparameters(config_dir)
    q = shlex.quote
    print(f"current_host={q(current)}")
    print(f"interface={q(iface)}")
    print(f"instance_type={q(instance_type)}")
    print("hosts=(" + " ".join(q(h) for h in hosts) + ")")
    print("hp_bench_args=(" + " ".join(q(w) for w in bench) + ")")
    print(f"hp_profile={q(profile)}")
    print(f"hp_preflight={q(preflight)}")
    return 0


if __name__ == "__main__":
    sys.exit(run_main("sagemaker-entry", main))
