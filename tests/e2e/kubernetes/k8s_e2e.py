#!/usr/bin/env python3
"""The Kubernetes manifests (deploy/kubernetes) without a cluster.

Usage: k8s_e2e.py --root REPO TEST     (TEST: render, schema_selftest,
       prometheusrule, docs_commands, consistency, shellcheck)
       k8s_e2e.py --root REPO --print-commands   (the docs block, to paste)

Renders every overlay with `kubectl kustomize` (offline) and checks the
objects against their schemas (schema.py), the PrometheusRule against
dashboards/, the commands the pods run against docs/deploy.md, the facts that
several objects must agree on, and the embedded shell scripts with
shellcheck. Needs python3-kubernetes and python3-yaml (/usr/bin/python3).
Exit 77 (skipped) when kubectl is absent.
"""
import argparse
import copy
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import schema  # noqa: E402

ARGS = None
SKIP = 77
OVERLAYS = ("mpijob", "torchrun")
IMAGE = "smddp-bench"  # the name the manifests use; components/image maps it
DOCS_BEGIN = "<!-- k8s-commands: generated from the rendered manifests, checked by tests/e2e/kubernetes -->"
DOCS_END = "<!-- /k8s-commands -->"


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def k8s_dir(*parts):
    return os.path.join(ARGS.root, "deploy", "kubernetes", *parts)


def render(path):
    if not shutil.which("kubectl"):
        print("SKIP: kubectl not found (kubectl kustomize renders the manifests)")
        sys.exit(SKIP)
    r = subprocess.run(["kubectl", "kustomize", path], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        fail(f"kubectl kustomize {path}: {r.stderr}")
    return [d for d in yaml.safe_load_all(r.stdout) if d]


def rendered():
    return {o: render(k8s_dir("overlays", o)) for o in OVERLAYS}


def find(docs, kind, name=None):
    got = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    if len(got) != 1:
        fail(f"expected one {kind} {name or ''}, found {len(got)}")
    return got[0]


def pod_specs(obj):
    """(role, pod spec) of a workload object."""
    kind, spec = obj["kind"], obj.get("spec") or {}
    if kind in ("DaemonSet", "Deployment", "Job"):
        return [("", spec["template"]["spec"])]
    if kind == "CronJob":
        return [("", spec["jobTemplate"]["spec"]["template"]["spec"])]
    if kind == "MPIJob":
        return [(role, r["template"]["spec"]) for role, r in spec["mpiReplicaSpecs"].items()]
    return []


def containers(docs):
    for obj in docs:
        for role, spec in pod_specs(obj):
            for c in spec.get("containers", []) + spec.get("initContainers", []):
                yield obj, role, spec, c


def limits(c):
    return (c.get("resources") or {}).get("limits") or {}


# --- tests -----------------------------------------------------------------

def test_render():
    """Every overlay and the base render; every object validates; every manifest file is used."""
    docs = rendered()
    docs["base"] = render(k8s_dir("base"))
    count = 0
    for where, objs in docs.items():
        for obj in objs:
            errs = schema.validate(obj)
            if errs:
                fail(f"{where}: " + "\n  ".join(errs))
            count += 1
    used = set()
    for kfile in glob.glob(k8s_dir("**", "kustomization.yaml"), recursive=True):
        k = yaml.safe_load(open(kfile))
        for r in k.get("resources", []):
            used.add(os.path.normpath(os.path.join(os.path.dirname(kfile), r)))
    for f in glob.glob(k8s_dir("**", "*.yaml"), recursive=True):
        if os.path.basename(f) != "kustomization.yaml" and os.path.normpath(f) not in used:
            fail(f"{f} is in no kustomization")
    kinds = {o["kind"] for objs in docs.values() for o in objs}
    want = {"MPIJob", "DaemonSet", "Service", "ServiceMonitor", "PrometheusRule", "CronJob", "Job",
            "ClusterRole", "ClusterRoleBinding", "ServiceAccount"}
    if not want <= kinds:
        fail(f"kinds missing from the renderings: {want - kinds}")
    print(f"{count} objects valid in {', '.join(docs)}")


def test_schema_selftest():
    """The validator refuses what the API server would: each mutation of a valid object is caught."""
    docs = rendered()["mpijob"]
    base = {d["kind"]: d for d in docs}

    def mutated(kind, change):
        obj = copy.deepcopy(base[kind])
        change(obj)
        return schema.validate(obj)

    def worker(o):
        return o["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]

    cases = {
        "core unknown field": ("DaemonSet", lambda o: o["spec"]["template"]["spec"]["containers"][0].update(
            imagePullPolicyy="Always"), "unknown field"),
        "core wrong type": ("Deployment", lambda o: o["spec"].update(replicas="1"), "expected int"),
        "core missing required": ("DaemonSet", lambda o: o["spec"]["template"]["spec"].pop("containers"),
                                  "containers"),
        "pod template in a CRD": ("MPIJob", lambda o: worker(o).update(volumeMount=[]), "unknown field"),
        "CRD unknown field": ("MPIJob", lambda o: o["spec"].update(slotsPerNode=8), "unknown field"),
        "CRD enum": ("MPIJob", lambda o: o["spec"].update(launcherCreationPolicy="Eventually"), "not one of"),
        "CRD replica type": ("MPIJob", lambda o: o["spec"]["mpiReplicaSpecs"].update(
            Master=o["spec"]["mpiReplicaSpecs"]["Worker"]), "not one of"),
        "CRD missing required": ("ServiceMonitor", lambda o: o["spec"].pop("selector"), "missing required"),
        "CRD pattern": ("ServiceMonitor", lambda o: o["spec"]["endpoints"][0].update(interval="15 seconds"),
                        "does not match"),
        "CRD rule without expr": ("PrometheusRule", lambda o: o["spec"]["groups"][0]["rules"][0].pop("expr"),
                                  "missing required"),
        "unknown kind": ("MPIJob", lambda o: o.update(apiVersion="kubeflow.org/v1alpha9"), "no schema"),
    }
    for what, (kind, change, needle) in cases.items():
        errs = mutated(kind, change)
        if not any(needle in e for e in errs):
            fail(f"{what}: expected an error with '{needle}', got {errs}")
    print(f"{len(cases)} invalid variants refused")


def test_prometheusrule():
    """monitoring/prometheusrule.yaml is the generator's output, and its groups are dashboards' rules."""
    r = subprocess.run([sys.executable, k8s_dir("gen-prometheusrule.py"), "--check"], capture_output=True, text=True,
                       timeout=60)
    if r.returncode != 0:
        fail(f"gen-prometheusrule.py --check: exit {r.returncode}: {r.stderr}")
    rules = yaml.safe_load(open(os.path.join(ARGS.root, "dashboards", "prometheus", "smddp.rules.yml")))
    for overlay, docs in rendered().items():
        rule = find(docs, "PrometheusRule")
        if rule["spec"]["groups"] != rules["groups"]:
            fail(f"{overlay}: PrometheusRule groups differ from dashboards/prometheus/smddp.rules.yml")
    alerts = [r["alert"] for g in rules["groups"] for r in g["rules"]]
    if "SmddpPreflightFailed" not in alerts:
        fail(f"alerts {alerts}")
    print(f"PrometheusRule = dashboards' {len(alerts)} alerts")


def commands_markdown():
    """The docs block: each smddp-bench container's command, from the rendered manifests."""
    base_names = {(d["kind"], d["metadata"]["name"]) for d in render(k8s_dir("base"))}
    seen, out = set(), []
    for overlay, docs in rendered().items():
        for obj, role, _, c in containers(docs):
            if not c["image"].rsplit("/", 1)[-1].startswith(IMAGE + ":"):
                continue
            key = (obj["kind"], obj["metadata"]["name"], role, c["name"])
            if key in seen:
                continue
            seen.add(key)
            where = "base" if (obj["kind"], obj["metadata"]["name"]) in base_names else f"overlays/{overlay}"
            words = c.get("command", []) + c.get("args", [])
            title = f"# {obj['kind']} {obj['metadata']['name']}{' ' + role if role else ''} ({where})"
            if words[:1] == ["/bin/bash"] and words[1:2] == ["-c"] and len(words) == 3:
                body = f"{title}: bash -c\n{words[2].rstrip()}"
            else:
                # $(VAR) is Kubernetes' own expansion: shown as written.
                body = title + "\n" + " ".join(w if re.fullmatch(r"\$\([A-Z_]+\)", w) else shlex.quote(w) for w in words)
            out.append(f"```sh\n{body}\n```")
    return "\n\n".join(out) + "\n"


def test_docs_commands():
    """docs/deploy.md shows exactly the commands the rendered manifests run."""
    text = open(os.path.join(ARGS.root, "docs", "deploy.md"), encoding="utf-8").read()
    if text.count(DOCS_BEGIN) != 1 or text.count(DOCS_END) != 1:
        fail(f"docs/deploy.md: expected one '{DOCS_BEGIN}' ... '{DOCS_END}' block")
    shown = text.split(DOCS_BEGIN)[1].split(DOCS_END)[0].strip("\n") + "\n"
    want = commands_markdown()
    if shown != want:
        import difflib
        diff = "".join(difflib.unified_diff(shown.splitlines(True), want.splitlines(True), "docs", "manifests"))
        fail(f"docs/deploy.md's commands differ from the manifests (k8s_e2e.py --print-commands):\n{diff}")
    for needle in ("smddp-diag exporter", "smddp-diag preflight", "smddp-bench all", "/usr/sbin/sshd"):
        if needle not in want:
            fail(f"no '{needle}' among the commands")
    print(f"docs/deploy.md shows the {want.count('```sh')} commands of the manifests")


def profile_facts(name):
    prof = yaml.safe_load(open(os.path.join(ARGS.root, "diag", "profiles", f"{name}.yaml")))
    return prof["checks"]["gpu_count"]["expected"], prof["checks"]["efa_count"]["expected"]


def ours_taints():
    """The taint keys of docs/diag.md's action table (a unit test keeps that
    table equal to smddp-diag's): the taints smddp-node-health.py sets."""
    text = open(os.path.join(ARGS.root, "docs", "diag.md")).read()
    table = text[text.index("<!-- actions:begin -->"):text.index("<!-- actions:end -->")]
    keys = set(re.findall(r"`([a-z0-9.]+/[a-z0-9-]+)=CODE:NoSchedule`", table))
    if len(keys) < 3:
        fail(f"docs/diag.md's action table names taints {sorted(keys)}: expected three")
    return keys


def test_consistency():
    """What several objects must agree on: sizes, names, ports, paths, profile, RBAC."""
    docs = rendered()
    for overlay, objs in docs.items():
        config = find(objs, "ConfigMap", "smddp-config")["data"]
        profile = config["SMDDP_PREFLIGHT_PROFILE"]
        gpus, efas = profile_facts(profile)
        # Pods that hold a whole node: the profile's GPUs and EFA devices, a memory /dev/shm, its instance type.
        whole = [(o, s, c) for o, role, s, c in containers(objs) if role != "Launcher" and "nvidia.com/gpu" in limits(c)]
        if len(whole) != 2:
            fail(f"{overlay}: GPU pods {[(o['kind'], c['name']) for o, _, c in whole]}")
        for obj, spec, c in whole:
            what = f"{overlay} {obj['kind']} {obj['metadata']['name']}"
            if limits(c)["nvidia.com/gpu"] != str(gpus) or limits(c).get("vpc.amazonaws.com/efa") != str(efas):
                fail(f"{what}: limits {limits(c)}, profile {profile} has {gpus} GPUs and {efas} EFA")
            if spec.get("nodeSelector", {}).get("node.kubernetes.io/instance-type") != profile:
                fail(f"{what}: nodeSelector {spec.get('nodeSelector')} is not the profile's instance {profile}")
            shm = [m["name"] for m in c["volumeMounts"] if m["mountPath"] == "/dev/shm"]
            vols = {v["name"]: v for v in spec["volumes"]}
            if len(shm) != 1 or vols[shm[0]].get("emptyDir", {}).get("medium") != "Memory":
                fail(f"{what}: /dev/shm is not a memory emptyDir")
        for obj, role, _, c in containers(objs):
            uses = "SMDDP_PREFLIGHT_PROFILE" in " ".join(c.get("command", []) + c.get("args", []))
            if uses and not any(e.get("configMapRef", {}).get("name") == "smddp-config" for e in c.get("envFrom", [])):
                fail(f"{overlay} {obj['kind']} {role} {c['name']}: uses the profile without envFrom smddp-config")
        if sum("--profile" in " ".join(c.get("args", [])) for _, _, _, c in containers(objs)) < 2:
            fail(f"{overlay}: expected the preflight in the CronJob and the benchmark")
        # Pushgateway: the URL the benchmark pushes to is the Service.
        svc = find(objs, "Service", "smddp-pushgateway")
        url = f"http://{svc['metadata']['name']}:{svc['spec']['ports'][0]['port']}"
        scripts = [" ".join(c.get("command", []) + c.get("args", [])) for _, _, _, c in containers(objs)]
        pushes = [m for s in scripts for m in re.findall(r"--pushgateway (\S+)", s)]
        if not pushes or set(pushes) != {url}:
            fail(f"{overlay}: pushes to {pushes}, the Service is {url}")
        if overlay == "mpijob":
            job = find(objs, "MPIJob")
            worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
            if job["spec"]["slotsPerWorker"] != int(limits(worker)["nvidia.com/gpu"]):
                fail(f"slotsPerWorker {job['spec']['slotsPerWorker']} != worker GPUs {limits(worker)}")
            if worker["readinessProbe"]["tcpSocket"]["port"] != 22 or worker["command"][0] != "/usr/sbin/sshd":
                fail("MPIJob workers: sshd, ready on port 22 (launcherCreationPolicy WaitForWorkersReady)")
        else:
            job, hl = find(objs, "Job", "smddp-bench-torchrun"), find(objs, "Service", "smddp-bench-torchrun")
            spec, c = job["spec"]["template"]["spec"], job["spec"]["template"]["spec"]["containers"][0]
            env = {e["name"]: e.get("value") for e in c["env"]}
            name = job["metadata"]["name"]
            if not (job["spec"]["completions"] == job["spec"]["parallelism"] == int(env["NNODES"])):
                fail(f"torchrun: completions, parallelism and NNODES differ: {job['spec']}, {env}")
            if env["LOCAL_WORLD_SIZE"] != limits(c)["nvidia.com/gpu"]:
                fail(f"torchrun: LOCAL_WORLD_SIZE {env['LOCAL_WORLD_SIZE']} != GPUs {limits(c)}")
            if (hl["spec"].get("clusterIP") != "None" or spec["subdomain"] != hl["metadata"]["name"]
                    or env["MASTER_ADDR"] != f"{name}-0.{hl['metadata']['name']}"
                    or hl["spec"]["selector"] != {"batch.kubernetes.io/job-name": name}
                    or int(env["MASTER_PORT"]) != hl["spec"]["ports"][0]["port"]
                    or job["spec"]["completionMode"] != "Indexed"):
                fail(f"torchrun: MASTER_ADDR/PORT {env['MASTER_ADDR']}:{env['MASTER_PORT']} is not pod 0 of the "
                     f"headless Service {hl['spec']}")
        # The exporter reads the host's /sys and /proc under --sysfs-root, and the report the CronJob writes.
        ds = find(objs, "DaemonSet", "smddp-exporter")
        spec, c = ds["spec"]["template"]["spec"], ds["spec"]["template"]["spec"]["containers"][0]
        args = c["args"]
        root = args[args.index("--sysfs-root") + 1]
        vols = {v["name"]: v for v in spec["volumes"]}
        mounts = {m["mountPath"]: vols[m["name"]].get("hostPath", {}).get("path") for m in c["volumeMounts"]}
        if mounts.get(f"{root}/sys") != "/sys" or mounts.get(f"{root}/proc") != "/proc":
            fail(f"exporter: --sysfs-root {root} but mounts {mounts}")
        if "nvidia.com/gpu" in limits(c) or {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"} not in c["env"]:
            fail("exporter: NVML through the runtime (NVIDIA_VISIBLE_DEVICES=all), no GPU request")
        report = args[args.index("--preflight-report") + 1]
        cron = find(objs, "CronJob")
        cspec = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        cc = cspec["containers"][0]
        cargs = cc["args"]
        cvols = {v["name"]: v for v in cspec["volumes"]}
        cmounts = {m["mountPath"]: cvols[m["name"]].get("hostPath", {}).get("path") for m in cc["volumeMounts"]}
        if not (cargs[cargs.index("--report") + 1] == cargs[cargs.index("--json") + 1] == report):
            fail(f"CronJob writes {cargs}, the exporter reads {report}")
        if mounts.get(os.path.dirname(report)) != cmounts.get(os.path.dirname(report)) or not mounts.get(
                os.path.dirname(report)):
            fail(f"exporter and CronJob see different host directories for {report}: {mounts} {cmounts}")
        jt = cron["spec"]["jobTemplate"]["spec"]
        if jt["completions"] != jt["parallelism"]:
            fail("CronJob: completions != parallelism (one pod per node)")
        # RBAC: exactly the verbs the script uses, bound to the CronJob's account.
        role = find(objs, "ClusterRole", "smddp-node-health")
        if role["rules"] != [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]}]:
            fail(f"ClusterRole rules {role['rules']}")
        binding = find(objs, "ClusterRoleBinding", "smddp-node-health")
        ns = find(objs, "Namespace")["metadata"]["name"]
        if (binding["subjects"] != [{"kind": "ServiceAccount", "name": cspec["serviceAccountName"], "namespace": ns}]
                or binding["roleRef"]["name"] != role["metadata"]["name"]):
            fail(f"ClusterRoleBinding {binding}")
        tolerated = {t.get("key") for t in cspec["tolerations"] if t.get("operator") == "Exists"}
        if not ours_taints() <= tolerated:
            fail(f"the CronJob must tolerate its own taints to clear them: {sorted(ours_taints() - tolerated)}")
        # One image for every smddp container.
        images = {c["image"] for _, _, _, c in containers(objs) if "pushgateway" not in c["image"]}
        comp = yaml.safe_load(open(k8s_dir("components", "image", "kustomization.yaml")))["images"][0]
        if images != {f"{comp['newName']}:{comp['newTag']}"}:
            fail(f"{overlay}: images {images}")
    print("manifests agree on sizes, names, ports, paths, profile and RBAC")


def test_shellcheck():
    """shellcheck passes on the shell scripts the manifests run (and on any *.sh under deploy/kubernetes)."""
    if not shutil.which("shellcheck"):
        fail("shellcheck not found (scripts/install-deps.sh installs it)")
    n = 0
    for overlay, docs in rendered().items():
        for obj, role, _, c in containers(docs):
            words = c.get("command", []) + c.get("args", [])
            if words[:2] == ["/bin/bash", "-c"]:
                r = subprocess.run(["shellcheck", "-s", "bash", "-"], input=words[2], capture_output=True, text=True,
                                   timeout=60)
                if r.returncode != 0:
                    fail(f"{overlay} {obj['kind']} {obj['metadata']['name']} {role}:\n{r.stdout}{r.stderr}")
                n += 1
    files = glob.glob(k8s_dir("**", "*.sh"), recursive=True)
    if files:
        r = subprocess.run(["shellcheck", "-x", *files], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            fail(f"shellcheck:\n{r.stdout}{r.stderr}")
    if n < 2:
        fail(f"only {n} embedded scripts found")
    print(f"shellcheck clean: {n} embedded scripts, {len(files)} files")


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    p.add_argument("--print-commands", action="store_true")
    p.add_argument("test", nargs="?")
    ARGS = p.parse_args()
    if ARGS.print_commands:
        print(DOCS_BEGIN + "\n\n" + commands_markdown() + "\n" + DOCS_END)
        return
    fn = globals().get("test_" + (ARGS.test or ""))
    if not fn:
        fail(f"unknown test {ARGS.test}")
    fn()


if __name__ == "__main__":
    main()
