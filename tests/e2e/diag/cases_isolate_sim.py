"""smddp-diag isolate --simulate (docs/diag.md, "Simulation"): the schedule
and verdict of a real run over a simulated fabric, no mpirun; scored from
its JSON with scripts/isolate-sim-table.py's scoring (one definition)."""

import importlib.util
import json
import os

from harness import case, check, diag

_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts", "isolate-sim-table.py")
_spec = importlib.util.spec_from_file_location("isolate_sim_table", _SCRIPT)
table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(table)


def simulate(*args):
    p = diag("isolate", "--simulate", *args, "--json", "-", timeout=60)
    check(p.returncode in (0, 1), f"isolate --simulate {' '.join(args)}: exit 0 or 1", f"{p.returncode}\n{p.stderr}")
    doc = json.loads(p.stdout)
    return p, doc


def without_time(doc):
    doc = dict(doc)
    doc.pop("timestamp_ms", None)
    return json.dumps(doc, sort_keys=True)


@case
def isolate_simulate(tmp):
    p, doc = simulate("64", "--faults", "slow-node=1@2.0", "--seed", "1")
    fault = doc["simulation"]["faults"]
    check(len(fault) == 1 and fault[0]["kind"] == "slow-node" and fault[0]["factor"] == 2.0, "the injected truth", fault)
    per_kind, wrong = table.score(doc)
    check(per_kind == {"slow-node": (1, 1)} and wrong == 0 and p.returncode == 1,
          f"the slow node {fault[0]['host']} named alone, exit 1", json.dumps([n for n in doc["nodes"] if not n["healthy"]]))
    # The document of a real run: preflight's nodes and checks, the isolate object.
    check(len(doc["nodes"]) == 64 and all(n["checks"][0]["name"] == "isolate" for n in doc["nodes"]), "64 nodes, check isolate")
    rounds = doc["isolate"]["rounds"]
    check(2 < rounds <= 2 * 6 + 4 and doc["isolate"]["tests"][0]["round"] == 1, f"rounds within 2 ceil(log2 64) + 4: {rounds}")
    check(doc["isolate"]["limits"]["retries"] == 6 and doc["isolate"]["seed"] == 1, "the limits and seed", doc["isolate"]["limits"])
    # The seed decides everything; another seed, another draw.
    _, again = simulate("64", "--faults", "slow-node=1@2.0", "--seed", "1")
    check(without_time(again) == without_time(doc), "the same seed, the same document")
    _, other = simulate("64", "--faults", "slow-node=1@2.0", "--seed", "2")
    check(other["isolate"]["tests"] != doc["isolate"]["tests"], "another seed draws other pairs")
    # A slow uplink behind a rack of a --topology table: named as links across it.
    topo = os.path.join(tmp, "topology.txt")
    with open(topo, "w") as f:
        f.write("# host layer1 layer2 layer3\n")
        for i in range(32):
            f.write(f"node-{i:02d} nn-top nn-mid{i // 16} nn-rack{i // 8}\n")
    _, doc = simulate("32", "--topology", topo, "--faults", "slow-link=1@4.0", "--seed", "3")
    per_kind, wrong = table.score(doc)
    check(per_kind == {"slow-link": (1, 1)} and wrong == 0, "the slow link found, nothing else named",
          json.dumps({"faults": doc["simulation"]["faults"],
                      "named": {n["host"]: n["checks"][0]["reason"][:120] for n in doc["nodes"] if not n["healthy"]}}))
    check(doc["isolate"]["racks"] == 4, "four racks from the table", doc["isolate"]["racks"])
    # The text report: the verdict lines and the simulation's summary.
    p = diag("isolate", "--simulate", "16", "--faults", "stall=1", "--seed", "4", timeout=60)
    last = p.stdout.strip().splitlines()[-1]
    check(p.returncode == 1 and last.startswith("simulated: ") and "stall sim-" in last and
          p.stdout.count(" | ERROR: isolate: a rank did not answer") == 1, "text report with the summary", p.stdout[-2000:])
    # The comparison's schedule: every node paired, failures re-paired once.
    _, chs = simulate("64", "--faults", "slow-node=1@2.0", "--seed", "1", "--schedule", "chs")
    check(chs["simulation"]["schedule"] == "cluster-health-scanner" and chs["isolate"]["rounds"] <= 2, "chs: two passes",
          chs["isolate"]["rounds"])


@case
def isolate_simulate_bad_input(tmp):
    def write(name, text):
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    out = os.path.join(tmp, "never.json")
    cases = [
        (["--simulate", "1"], "--simulate 1: expected 2 to 100000 nodes"),
        (["--simulate", "100001"], "expected 2 to 100000 nodes"),
        (["--simulate", "1e3"], "--simulate '1e3'"),
        (["--simulate", "0x40"], "hexadecimal"),
        (["--simulate", "64", "--faults", "slow-node=1@0.5"], "expected a slowdown above 1"),
        (["--simulate", "64", "--faults", "slow-node=1@nan"], "--faults 'slow-node=1@nan'"),
        (["--simulate", "64", "--faults", "slow-node=-3"], "count '-3'"),
        (["--simulate", "64", "--faults", "meteor=1"], "unknown kind 'meteor'"),
        (["--simulate", "64", "--faults", "stall=1@2"], "stall takes no @FACTOR"),
        (["--simulate", "64", "--faults", "slow-node=1,,stall=1"], "an empty item"),
        (["--simulate", "64", "--faults", "slow-node=33"], "at most half the nodes"),
        (["--simulate", "64", "--racks", "4", "--faults", "slow-link=5"], "this fabric has 4 to choose from"),
        (["--simulate", "64", "--seed", "-1"], "--seed '-1'"),
        (["--simulate", "64", "--seed", "99999999999999999999999"], "--seed"),
        (["--simulate", "64", "--racks", "0"], "--racks 0"),
        (["--simulate", "64", "--racks", "2", "--topology", write("t.txt", "h1 r1\nh2 r2\n")], "give one"),
        (["--simulate", "64", "--topology", write("short.txt", "h1 r1\nh2 r2\n")], "lists 2 hosts"),
        (["--simulate", "4", "--topology", write("mixed.txt", "h1 a b\nh2 a\n")], "line 2: h2 has 1 labels"),
        (["--simulate", "4", "--topology", write("ec2.json", '{"Instances": [{"InstanceId": "i-1"}]}')], "Instances[0]"),
        (["--simulate", "4", "--topology", "/dev/zero"], "not a regular file"),
        (["--simulate", "4", "--noise", write("noise.txt", "1.0 1.0\n")], "1 samples; at least 10"),
        (["--simulate", "4", "--noise", write("noise2.txt", "1.0 fast\n")], "line 1: 'fast'"),
        (["--simulate", "4", "--schedule", "random"], "--schedule 'random'"),
        (["--simulate", "4", "--drain"], "--drain does not go with --simulate"),
        (["--faults", "slow-node=1"], "--faults is for --simulate"),
        (["--simulate", "4", "--faults", "slow-node=1", "--json", out, "--racks", "9"], "--racks 9"),
    ]
    for args, want in cases:
        p = diag("isolate", *args, timeout=60)
        err = p.stderr.strip().splitlines()
        check(p.returncode == 64 and len(err) == 1 and want in err[0] and p.stdout == "",
              f"smddp-diag isolate {' '.join(args)}: exit 64 and one line with {want!r}",
              f"exit {p.returncode}\nstdout: {p.stdout[:500]}\nstderr: {p.stderr}")
    check(not os.path.exists(out), "nothing written by a refused run")
