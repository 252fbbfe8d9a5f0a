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
import json
import os
import re
import shlex
import sys

HOST_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]{0,252}$")
IFACE_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,15}$")


def fail(message):
    print(f"sagemaker-entry: {message}", file=sys.stderr)
    sys.exit(64)


def load_json(path, what):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        fail(f"{path} is not valid JSON ({e.msg} at line {e.lineno} column {e.colno}): fix or remove the {what}")
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}")


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
    try:
        hosts = json.loads(raw_hosts)
    except json.JSONDecodeError as e:
        fail(f"SM_HOSTS is not a JSON list of host names ({e.msg}): {raw_hosts!r}")
    iface = os.environ.get("SM_NETWORK_INTERFACE_NAME", "eth0")
    return current, hosts, iface, os.environ.get("SM_CURRENT_INSTANCE_TYPE", ""), "SM_HOSTS/SM_CURRENT_HOST"


def validate(current, hosts, iface, instance_type, source):
    if not isinstance(hosts, list) or not hosts or not all(isinstance(h, str) for h in hosts):
        fail(f"{source}: 'hosts' must be a non-empty list of host names")
    for h in hosts:
        if not HOST_RE.match(h):
            fail(f"{source}: host name {h!r} is not a valid host name")
    if len(set(hosts)) != len(hosts):
        fail(f"{source}: 'hosts' lists a host twice: {hosts}")
    if not isinstance(current, str) or current not in hosts:
        fail(f"{source}: current_host {current!r} is not one of the hosts {hosts}")
    if not isinstance(iface, str) or not IFACE_RE.match(iface):
        fail(f"{source}: network_interface_name {iface!r} is not an interface name")
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
    preflight = str(doc.get("preflight", "true")).lower()
    if not isinstance(bench, str) or not isinstance(profile, str):
        fail(f"{path}: bench-args and preflight-profile must be strings")
    if preflight not in ("true", "false", "1", "0"):
        fail(f"{path}: preflight must be true or false, not {preflight!r}")
    try:
        words = shlex.split(bench)
    except ValueError as e:
        fail(f"{path}: bench-args {bench!r}: {e}")
    return words, profile, "0" if preflight in ("false", "0") else "1"


def main():
    if len(sys.argv) != 2:
        fail("usage: read_config.py CONFIG_DIR")
    config_dir = sys.argv[1]
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


if __name__ == "__main__":
    main()
