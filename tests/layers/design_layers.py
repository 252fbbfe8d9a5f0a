#!/usr/bin/env python3
"""docs/design.md's layer table against the build's own link graph.

The configure step writes every target with its folder and direct links
(cmake/LinkGraph.cmake). This test fails when a library of ours is missing
from the table or named there but gone, when a target links a layer above
its own, or when a tool links an engine-internal target.

usage: design_layers.py DESIGN_MD LINK_GRAPH_TSV SOURCE_DIR
"""
import os
import re
import sys

SCOPE = ("common", "collectives", "telemetry", "bench", "diag", "model", "results")


def table(design):
    text = open(design, encoding="utf-8").read()
    m = re.search(r"<!-- layers:begin -->(.*?)<!-- layers:end -->", text, re.S)
    if not m:
        sys.exit("design.md: no layers table between <!-- layers:begin --> and <!-- layers:end -->")
    rows = []
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 4 or cells[0] in ("layer", "") or set(cells[0]) <= set("-: "):
            continue
        rows.append((cells[0], re.findall(r"`([^`]+)`", cells[2]), re.findall(r"`([^`]+/)`", cells[3])))
    return rows


def graph(tsv):
    out = {}
    for line in open(tsv, encoding="utf-8"):
        name, kind, folder, links = (line.rstrip("\n").split("\t") + [""])[:4]
        toks = set()
        for tok in links.split():
            tok = re.sub(r"^\$<LINK_ONLY:(.*)>$", r"\1", tok)
            toks.add(tok.replace("smddp::", "smddp_"))
        out[name] = (kind, folder, toks)
    return out


def main():
    design, tsv, root = sys.argv[1:4]
    rows, targets = table(design), graph(tsv)
    problems = []
    layer_of, index = {}, {}
    for i, (layer, names, folders) in enumerate(rows):
        index[layer] = i
        for n in names:
            if n in layer_of:
                problems.append(f"{n}: in two rows of the table ({layer_of[n]}, {layer})")
            layer_of[n] = layer
            if n not in targets:
                problems.append(f"{n}: in design.md's {layer} row, but the build has no such target")
        for f in folders:
            if not os.path.isdir(os.path.join(root, f)):
                problems.append(f"{layer}: public header folder {f} does not exist")
    ours = {n for n, (kind, folder, _) in targets.items()
            if folder.split("/")[0] in SCOPE and kind != "EXECUTABLE" or n in layer_of}
    for n in sorted(ours - set(layer_of)):
        problems.append(f"{n} ({targets[n][1]}/): a target of ours missing from design.md's layer table")
    for n in sorted(ours & set(layer_of)):
        mine = index[layer_of[n]]
        for dep in sorted(targets[n][2] & set(layer_of)):
            if index[layer_of[dep]] > mine:
                problems.append(f"{n} ({layer_of[n]}) links {dep} ({layer_of[dep]}), a layer above it")
            if layer_of[n] == "tools" and dep.endswith("_internal"):
                problems.append(f"{n} (tools) links {dep}: the tools use public headers only")
    for p in problems:
        print("FAIL:", p)
    print(f"{len(ours)} targets in {len(rows)} layers checked; {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
